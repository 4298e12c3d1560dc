"""Proof formulas: the query language plus the proof's constants, definitions,
states and progress terms.

Constants elaborate to their exact values, so every formula stays linear; a
constant search elaborates the formulas again with other values.  ``name(k)``
expands a one-step definition or state with ``t = k`` (negative k counts from the
end: ``-1`` is the last step).  A progress term is *at least one improves ∧ none
degrades* (§4.1.2), built here from its measures so that its form is right by
construction; each measure carries the bound it improves towards (checked by
``ccmatic prove``).
"""

from __future__ import annotations

import ast
from fractions import Fraction

from ccmatic.core.errors import SpecError
from ccmatic.core.proof import Progress, ProgressCase, Proof
from ccmatic.core.source import Definition, Source
from ccmatic.spec import ir
from ccmatic.spec.elaborate import Elaborator
from ccmatic.spec.formula import (
    DefinitionScope,
    QueryContext,
    body,
    check_available,
    condition,
    number,
)
from ccmatic.spec.typed import Typed


class ProofScope(DefinitionScope):
    def __init__(self, proof: Proof, source: Source, ctx: QueryContext, values: dict[str, Fraction],
                 pending: dict[int, tuple[ir.Expr, SpecError]] | None = None, stack: tuple[str, ...] = ()) -> None:
        constants = {k: Typed.num(values[k], c.unit) for k, c in proof.constants.items()}
        super().__init__(source, ctx, constants, proof.defines, pending, stack)
        self.proof = proof
        self.values = values

    def sub(self, source: Source, name: str) -> ProofScope:
        return ProofScope(self.proof, source, self.ctx, self.values, self.pending, (*self.stack, name))

    def at(self, source: Source) -> ProofScope:
        """A scope for another formula of the same proof."""
        return ProofScope(self.proof, source, self.ctx, self.values, self.pending, self.stack)

    def definition(self, fn: str) -> Definition | None:
        return self.proof.defines.get(fn) or self.proof.states.get(fn)

    def name(self, ident: str, node: ast.AST) -> Typed:
        if ident in self.constants or ident in self.proof.defines:
            return super().name(ident, node)
        if ident in self.proof.progress:
            return Typed(self.progress_formula(self.proof.progress[ident]), True)
        if ident in self.proof.states:
            raise self.err(node, f"state '{ident}' takes a step argument", f"write {ident}(0) or {ident}(-1)")
        return super().name(ident, node)

    # -- progress (at least one improves ∧ none degrades) -------------------------------
    def progress_formula(self, p: Progress) -> ir.Expr:
        parts: list[ir.Expr] = []
        for case in p.cases:
            improves, keeps, extra = self.case_terms(case)
            if case.lexicographic:
                # some measure improves and none ranked before it degrades
                ranked = [ir.Logic("and", (imp, *keeps[:i])) for i, imp in enumerate(improves)]
                b: ir.Expr = ir.Logic("and", (ir.Logic("or", tuple(ranked)), *extra))
            else:
                b = ir.Logic("and", (ir.Logic("or", tuple(improves)), *keeps, *extra))
            if case.when is not None:
                b = ir.Implies(self.condition(case.when), b)
            parts.append(b)
        return ir.Logic("and", tuple(parts))

    def case_terms(self, case: ProgressCase) -> tuple[list[ir.Expr], list[ir.Expr], list[ir.Expr]]:
        """The improvement and no-degradation conditions of one case's measures (one
        each, in order), and the no-degradation conditions of its ``keep`` list.  A
        measure ``q <= B`` improves as q(last) > k·q(first) (or q(last) ≥ q(first) +
        step) and keeps q(last) ≥ q(first); ``q >= b`` symmetrically."""
        first, last = self.proof.start, self.ctx.T - 1
        k = self.number(case.factor) if case.factor is not None else None
        s = self.number(case.step) if case.step is not None else None
        improves: list[ir.Expr] = []
        keeps: list[ir.Expr] = []
        for src in case.measures:
            up, q0, _b0 = self.measure(src, first)
            _up, qT, _bT = self.measure(src, last)
            if s is not None:
                if q0.unit is not None and s.unit is not None and q0.unit != s.unit:
                    raise SpecError(case.loc, f"the step of measure '{src.text}' has another unit than the measure")
                # additive progress: by at least the (positive) step
                improves.append(ir.Cmp("ge", qT.expr, ir.Arith("add", q0.expr, s.expr, case.loc)) if up
                                else ir.Cmp("le", qT.expr, ir.Arith("sub", q0.expr, s.expr, case.loc)))
            else:
                assert k is not None
                improves.append(ir.Cmp("gt", qT.expr, ir.Arith("mul", k.expr, q0.expr, case.loc)) if up
                                else ir.Cmp("lt", ir.Arith("mul", k.expr, qT.expr, case.loc), q0.expr))
            keeps.append(ir.Cmp("ge" if up else "le", qT.expr, q0.expr))
        extra: list[ir.Expr] = []
        for src in case.keep:
            up, q0, _b0 = self.measure(src, first)
            _up, qT, _bT = self.measure(src, last)
            extra.append(ir.Cmp("ge" if up else "le", qT.expr, q0.expr))
        return improves, keeps, extra

    def measure(self, src: Source, step: int) -> tuple[bool, Typed, Typed]:
        """(improves upwards?, the quantity, its bound) of a measure ``q <= B`` or
        ``q >= b`` at a step."""
        b = body(src)
        if not (isinstance(b, ast.Compare) and len(b.ops) == 1 and isinstance(b.ops[0], (ast.LtE, ast.GtE))):
            raise SpecError(src.node_loc(b), f"measure '{src.text}' must be 'quantity <= bound' (improves "
                            "upwards) or 'quantity >= bound' (improves downwards)",
                            "a progress measure needs a bound, or it could improve forever")
        elab = Elaborator(self.at(src))
        elab.loop_vars["t"] = step
        q = elab.num(b.left)
        bound = elab.num(b.comparators[0])
        elab.unify(q, bound, b, "compare")
        check_available(q.expr, self.pending)
        check_available(bound.expr, self.pending)
        return isinstance(b.ops[0], ast.LtE), q, bound

    # -- formulas of the proof ----------------------------------------------------------
    def condition(self, src: Source, t: int | None = None) -> ir.Expr:
        return condition(src, self.at(src), t)

    def number(self, src: Source) -> Typed:
        return number(src, self.at(src))


def proof_scope(proof: Proof, ctx: QueryContext, values: dict[str, Fraction]) -> ProofScope:
    """The scope of a proof's formulas, with these constant values."""
    anchor = proof.states[proof.steady].source
    return ProofScope(proof, anchor, ctx, values)


def typecheck(proof: Proof, ctx: QueryContext) -> None:
    """Elaborate every formula with the file's values and with each constant at a
    non-zero stand-in value, so that a unit error surfaces whatever value a search or
    ``--set`` gives (a zero would be accepted with any unit)."""
    stand_in = {k: (v if v != 0 else Fraction(1)) for k, v in proof.values().items()}
    for values in (proof.values(), stand_in):
        all_formulas(proof, proof_scope(proof, ctx, values))


def all_formulas(proof: Proof, sc: ProofScope) -> list[ir.Expr]:
    """Every formula of the proof, elaborated (what the proof reads): invariants and
    states at the proof's start, lemmas, definitions without a step argument (the
    others are elaborated where they are used), progress terms."""
    out: list[ir.Expr] = [sc.condition(src, proof.start) for src in proof.invariants]
    out += [sc.condition(d.source, proof.start) for d in proof.states.values()]
    for lem in proof.lemmas:
        out += [sc.condition(lem.premise), sc.condition(lem.conclusion)]
    for d in proof.defines.values():
        if d.params:
            continue
        e = Elaborator(sc.sub(d.source, d.name)).expr(body(d.source)).expr
        check_available(e, sc.pending)
        out.append(e)
    out += [sc.progress_formula(p) for p in proof.progress.values()]
    return out
