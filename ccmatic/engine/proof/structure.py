"""The structure of a proof: coverage of the states, the stitching of the lemmas
into the declared transitions, the progress conditions (thesis §4.1.2, B.4).

Stitching: for each state X with transitions ``to``/``loop`` justified ``by`` some
lemmas, X(start) ∧ (each lemma, premise ⇒ conclusion) implies one of the declared
exits at the last step — a state in ``to``, or X again with one of its loop terms —
and implies X's ``guarantees``.  These are formulas over the trace's variables,
checked in pure logic first (valid without any network), else on the network and
CCA.  A progress term is only as good as its cases: X(start) must imply that one of
the cases' conditions holds, so the progress is never vacuous.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

from ccmatic.core.options import RunOptions
from ccmatic.core.proof import Progress, Proof
from ccmatic.core.results import ConcreteTrace, Verdict, trace_to_json
from ccmatic.engine.proof.cache import ResultCache
from ccmatic.engine.proof.context import (
    Check,
    ModelSession,
    ProofContext,
    logic_check,
    valid,
)
from ccmatic.semantics.z3domain import as_bool
from ccmatic.spec import ir
from ccmatic.spec.proofs import ProofScope


@dataclass
class CheckReport:
    """Coverage, a stitching condition, a guarantee, or a progress condition."""

    what: str
    verdict: Verdict
    time_s: float
    method: str
    detail: str = ""
    trace: ConcreteTrace | None = None

    def json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"what": self.what, "verdict": self.verdict, "time_s": round(self.time_s, 3),
                             "method": self.method}
        if self.detail:
            d["detail"] = self.detail
        if self.trace is not None:
            d["trace"] = trace_to_json(self.trace)
        return d


def _report(what: str, o: Check, detail: str = "") -> CheckReport:
    return CheckReport(what, o.verdict, o.time_s, o.method, detail, o.trace)


class _Checker:
    def __init__(self, ctx: ProofContext, opts: RunOptions, cache: ResultCache | None) -> None:
        self.ctx, self.opts, self.proof = ctx, opts, ctx.proof
        self.model = ModelSession(ctx, opts, cache)
        self.sc: ProofScope = ctx.scope(self.proof.values())
        self.first, self.last = self.proof.start, self.proof.T - 1
        self.out: list[CheckReport] = []

    def term(self, e: ir.Expr) -> z3.BoolRef:
        return as_bool(self.ctx.problem.formula(e))

    def state_at(self, name: str, step: int) -> z3.BoolRef:
        return self.term(self.sc.condition(self.proof.states[name].source, step))

    def lemma(self, name: str) -> z3.BoolRef:
        lem = self.proof.lemma(name)
        return z3.Implies(self.term(self.sc.condition(lem.premise)), self.term(self.sc.condition(lem.conclusion)))

    def valid(self, what: str, formula: z3.BoolRef) -> None:
        self.out.append(_report(what, valid(self.ctx, formula, self.model, self.opts)))

    def coverage(self) -> CheckReport:
        o = valid(self.ctx, z3.Or(*[self.state_at(x, self.first) for x in self.proof.states]), self.model, self.opts)
        return _report("coverage: " + " ∨ ".join(self.proof.states), o)

    def transitions(self) -> None:
        pr = self.proof
        for x, t in pr.transitions.items():
            hyp = z3.And(self.state_at(x, self.first), *[self.lemma(n) for n in t.by])
            exits = [self.state_at(y, self.last) for y in t.to]
            loops = [self.term(self.sc.progress_formula(pr.progress[n])) if n in pr.progress
                     else self.term(self.sc.condition(pr.defines[n].source)) for n in t.loop]
            if x == pr.steady:
                exits.append(self.state_at(x, self.last))
            elif loops:
                exits.append(z3.And(self.state_at(x, self.last), z3.Or(*loops)))
            desc = " ∨ ".join([*t.to, *([f"{x} with {' or '.join(t.loop)}"] if t.loop else []),
                               *([x] if x == pr.steady else [])]) or "(nothing)"
            by = ", ".join(t.by)
            self.valid(f"stitching: {x} --[{by}]--> {desc}", z3.Implies(hyp, z3.Or(*exits)) if exits else z3.Not(hyp))
            for g in t.guarantees:
                self.valid(f"guarantee: {x} --[{by}]--> {g}", z3.Implies(hyp, self.term(self.sc.condition(pr.defines[g].source))))
            for name in t.loop:
                if name in pr.progress:
                    self.progress_in(x, pr.progress[name])

    def progress_in(self, x: str, p: Progress) -> None:
        """In state X, a case of p applies, and each measure is within its bound."""
        whens = [self.term(self.sc.condition(c.when)) if c.when is not None else z3.BoolVal(True) for c in p.cases]
        here = self.state_at(x, self.first)
        self.valid(f"progress: in {x}, a case of '{p.name}' applies", z3.Implies(here, z3.Or(*whens)))
        for case, when in zip(p.cases, whens):
            for src in case.measures:
                up, q0, b0 = self.sc.measure(src, self.first)
                q, b = self.ctx.problem.formula(q0.expr), self.ctx.problem.formula(b0.expr)
                facts = z3.And(here, when)
                self.valid(f"progress: in {x}, measure '{src.text}' of '{p.name}' is within its bound",
                           z3.Implies(facts, q <= b if up else q >= b))
                if case.factor is not None:
                    # multiplicative progress needs q ≥ 0 upwards, a positive bound downwards
                    self.valid(f"progress: in {x}, measure '{src.text}' of '{p.name}' "
                               + ("is non-negative" if up else "has a positive bound"),
                               z3.Implies(facts, q >= 0 if up else b > 0))

    def constants(self) -> None:
        """Each measure's bound, factor and step is a constant of the proof (the same
        in every period); factors exceed 1 and steps 0."""
        mss = [self.ctx.problem.trace.MSS > 0]
        for p in self.proof.progress.values():
            for case in p.cases:
                for src in case.measures:
                    _up, _q0, b0 = self.sc.measure(src, self.first)
                    _up, _qT, bT = self.sc.measure(src, self.last)
                    same = z3.eq(z3.simplify(self.ctx.problem.formula(b0.expr)),
                                 z3.simplify(self.ctx.problem.formula(bT.expr)))
                    fixed = same and _params_only(b0.expr)
                    self.out.append(CheckReport(f"progress: bound of '{src.text}' in '{p.name}' is a constant",
                                                "proved" if fixed else "counterexample", 0.0, "syntax",
                                                "" if fixed else "the bound must not depend on the trace"))
                for what, sx, lower in (("factor", case.factor, 1), ("step", case.step, 0)):
                    if sx is None:
                        continue
                    v = self.sc.number(sx)
                    if not _params_only(v.expr):
                        self.out.append(CheckReport(f"progress: {what} of '{p.name}' ({sx.text}) is a constant",
                                                    "counterexample", 0.0, "syntax", "it must not depend on the trace"))
                    o = logic_check(z3.Not(self.ctx.problem.formula(v.expr) > lower), self.opts, mss)
                    self.out.append(_report(f"progress: {what} of '{p.name}' ({sx.text}) > {lower}", o))


def _params_only(e: ir.Expr) -> bool:
    """Reads no trace quantity: only numbers, MSS and the buffer size, which are the
    same in every period."""
    return not any(isinstance(n, ir.At) or (isinstance(n, ir.Param) and n.name not in ("MSS", "buffer"))
                   for n in ir.walk(e))


def check_structure(ctx: ProofContext, opts: RunOptions,
                    cache: ResultCache | None = None) -> tuple[CheckReport, list[CheckReport]]:
    """Coverage, and the stitching, guarantee and progress conditions (no lemma
    solving)."""
    c = _Checker(ctx, opts, cache)
    coverage = c.coverage()
    c.transitions()
    c.constants()
    return coverage, c.out


__all__ = ["CheckReport", "Proof", "check_structure"]
