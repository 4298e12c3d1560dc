"""Compiling proof formulas: the query language (every trace quantity, hidden state
included) plus the proof's constants, definitions, states and progress terms.

Constants compile to their exact values, so every formula stays linear; a constant
search recompiles the formulas with other values.  ``name(k)`` expands a one-step
definition or state with ``t = k`` (negative k counts from the end: ``-1`` is the
last step).  A progress term compiles to *at least one improves ∧ none degrades*
(§4.1.2), built here from its measures so that its form is right by construction;
each measure carries the bound it improves towards (checked by ``ccmatic prove``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from fractions import Fraction

import z3

from ccmatic.errors import SpecError
from ccmatic.lang.expr import Compiler, Val
from ccmatic.lang.query_scope import QueryScope
from ccmatic.lang.source import Source, parse
from ccmatic.proof.spec import Definition, Progress, ProgressCase, Proof
from ccmatic.trace import Trace


class ProofScope(QueryScope):
    def __init__(self, proof: Proof, source: Source, tr: Trace,
                 series: Callable[[str, int | None, int], z3.ExprRef],
                 values: dict[str, Fraction], stack: tuple[str, ...] = ()) -> None:
        super().__init__(source, tr, series)
        self.proof = proof
        self.values = values
        self.stack = stack

    # -- names ------------------------------------------------------------------------
    def name(self, ident: str, node: ast.AST) -> Val:
        pr = self.proof
        if ident in pr.constants:
            return Val.num(self.values[ident], pr.constants[ident].unit)
        if ident in pr.defines:
            d = pr.defines[ident]
            if d.params:
                raise self.err(node, f"'{ident}' takes a step argument", f"write {ident}(0) or {ident}(-1)")
            return self._expand(d, None, node)
        if ident in pr.progress:
            return Val(self.progress_formula(pr.progress[ident]), True)
        if ident in pr.states:
            raise self.err(node, f"state '{ident}' takes a step argument", f"write {ident}(0) or {ident}(-1)")
        return super().name(ident, node)

    def call(self, fn: str, node: ast.Call, comp: Compiler) -> Val | None:
        pr = self.proof
        d = pr.defines.get(fn) or pr.states.get(fn)
        if d is None:
            return None
        if len(node.args) != len(d.params):
            want = "one step argument" if d.params else "no argument"
            raise self.err(node, f"'{fn}' takes {want}")
        step = None
        if d.params:
            v = comp.static_int(node.args[0], allow_t=False)
            assert isinstance(v, int)
            step = v + self.tr.T if v < 0 else v
            if not 0 <= step < self.tr.T:
                raise self.err(node, f"step {v} is outside the trace (0..{self.tr.T - 1})")
        return self._expand(d, step, node)

    def _expand(self, d: Definition, step: int | None, node: ast.AST) -> Val:
        if d.name in self.stack:
            chain = " -> ".join((*self.stack, d.name))
            raise self.err(node, f"definition cycle: {chain}")
        inner = ProofScope(self.proof, d.source, self.tr, self.series, self.values, (*self.stack, d.name))
        comp = Compiler(inner)
        if step is not None:
            comp.loop_vars[d.params[0]] = step
        tree = parse(d.source, "eval")
        assert isinstance(tree, ast.Expression)
        return comp.expr(tree.body)

    # -- progress (at least one improves ∧ none degrades) -------------------------------
    def progress_formula(self, p: Progress) -> z3.BoolRef:
        parts = []
        for case in p.cases:
            improves, keeps, extra = self.case_terms(case)
            if case.lexicographic:
                # some measure improves and none ranked before it degrades
                ranked = [z3.And(imp, *keeps[:i]) for i, imp in enumerate(improves)]
                body = z3.And(z3.Or(*ranked), *extra)
            else:
                body = z3.And(z3.Or(*improves), *keeps, *extra)
            if case.when is not None:
                body = z3.Implies(self.compile_bool(case.when), body)
            parts.append(body)
        return z3.And(*parts)

    def case_terms(self, case: ProgressCase) -> tuple[list[z3.BoolRef], list[z3.BoolRef], list[z3.BoolRef]]:
        """The improvement and no-degradation literals of one case's measures (one
        each, in order), and the no-degradation literals of its ``keep`` list.  A
        measure ``q <= B`` improves as q(last) > k·q(0) (or q(last) ≥ q(0) + step)
        and keeps q(last) ≥ q(0); ``q >= b`` symmetrically."""
        last = self.tr.T - 1
        k = self.compile_num(case.factor) if case.factor is not None else None
        s = self.compile_num(case.step) if case.step is not None else None
        improves: list[z3.BoolRef] = []
        keeps: list[z3.BoolRef] = []
        for src in case.measures:
            up, q0, _b0 = self.measure(src, self.proof.start)
            _up, qT, _bT = self.measure(src, last)
            if s is not None:
                if q0.unit is not None and s.unit is not None and q0.unit != s.unit:
                    raise SpecError(case.loc, f"the step of measure '{src.text}' has another unit than the measure")
                # additive progress: by at least the (positive) step
                improves.append(qT.term >= q0.term + s.term if up else qT.term <= q0.term - s.term)
            else:
                assert k is not None
                improves.append(qT.term > k.term * q0.term if up else k.term * qT.term < q0.term)
            keeps.append(qT.term >= q0.term if up else qT.term <= q0.term)
        extra: list[z3.BoolRef] = []
        for src in case.keep:
            up, q0, _b0 = self.measure(src, self.proof.start)
            _up, qT, _bT = self.measure(src, last)
            extra.append(qT.term >= q0.term if up else qT.term <= q0.term)
        return improves, keeps, extra

    def measure(self, src: Source, step: int) -> tuple[bool, Val, Val]:
        """(improves upwards?, the quantity, its bound) of a measure ``q <= B`` or
        ``q >= b`` at a step."""
        tree = parse(src, "eval")
        assert isinstance(tree, ast.Expression)
        body = tree.body
        if not (isinstance(body, ast.Compare) and len(body.ops) == 1
                and isinstance(body.ops[0], (ast.LtE, ast.GtE))):
            raise SpecError(src.node_loc(body), f"measure '{src.text}' must be 'quantity <= bound' (improves "
                            "upwards) or 'quantity >= bound' (improves downwards)",
                            "a progress measure needs a bound, or it could improve forever")
        comp = Compiler(ProofScope(self.proof, src, self.tr, self.series, self.values, self.stack))
        comp.loop_vars["t"] = step
        q = comp.num(body.left)
        b = comp.num(body.comparators[0])
        comp._unify(q, b, body, "compare")
        return isinstance(body.ops[0], ast.LtE), q, b

    def compile_at(self, src: Source, step: int) -> z3.BoolRef:
        """A condition of one step t, at ``step``."""
        comp = Compiler(ProofScope(self.proof, src, self.tr, self.series, self.values, self.stack))
        comp.loop_vars["t"] = step
        tree = parse(src, "eval")
        assert isinstance(tree, ast.Expression)
        return comp.boolean(tree.body).term

    def compile_num(self, src: Source) -> Val:
        comp = Compiler(ProofScope(self.proof, src, self.tr, self.series, self.values, self.stack))
        tree = parse(src, "eval")
        assert isinstance(tree, ast.Expression)
        return comp.num(tree.body)

    def compile_bool(self, src: Source) -> z3.BoolRef:
        comp = Compiler(ProofScope(self.proof, src, self.tr, self.series, self.values, self.stack))
        tree = parse(src, "eval")
        assert isinstance(tree, ast.Expression)
        return comp.boolean(tree.body).term


def compile_formula(proof: Proof, src: Source, tr: Trace, series: Callable[[str, int | None, int], z3.ExprRef],
                    values: dict[str, Fraction]) -> z3.BoolRef:
    return ProofScope(proof, src, tr, series, values).compile_bool(src)


def compile_number(proof: Proof, src: Source, tr: Trace, series: Callable[[str, int | None, int], z3.ExprRef],
                   values: dict[str, Fraction]) -> Val:
    return ProofScope(proof, src, tr, series, values).compile_num(src)
