"""Checking one proof question with the solver (thesis B.4).

* :class:`LemmaChecker` — a lemma ``premise ⇒ conclusion``: network ∧ CCA ∧
  assumptions is built once into a :class:`~ccmatic.smt.Session`; each check
  compiles ``premise ∧ ¬conclusion`` for the given constant values and runs it in a
  pushed scope, so a constant search reuses the solver.  unsat → proved (after
  confirming that the network and CCA admit a trace); sat → a counterexample,
  re-checked with exact rationals; anything else → unknown.
* :func:`logic_check` — a formula over the trace's variables with no network at
  all (coverage, stitching): valid in pure logic is valid on every model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import z3

from ccmatic.beliefs import cbr_beliefs, rate_beliefs
from ccmatic.config import RunOptions
from ccmatic.lang.cca import CcaProgram, compile_into, load_cca
from ccmatic.lang.source import Source
from ccmatic.network import encode_network
from ccmatic.network.common import periodic
from ccmatic.proof.cache import (
    ResultCache,
    constraints_digest,
    question_key,
    trace_from_json,
    trace_to_json,
)
from ccmatic.proof.scope import ProofScope, compile_formula
from ccmatic.proof.spec import Proof
from ccmatic.properties import cbr_consistent, series_fn
from ccmatic.recheck import RecheckError, recheck
from ccmatic.sim.exact import replay_problem
from ccmatic.smt import Encoding, Proved, Sat, Session, make_solver
from ccmatic.trace import Trace
from ccmatic.verify import ConcreteTrace, extract

Result = Literal["proved", "refuted", "unknown"]


@dataclass
class Outcome:
    """One solver question: proved (unsat of its negation), refuted (with an exactly
    re-checked trace), or unknown (never counted as proved)."""

    result: Result
    time_s: float
    reason: str | None = None
    trace: ConcreteTrace | None = None
    vacuous: bool = False
    method: str = "model"


class ProofContext:
    """The trace, CCA and network of a proof (built once)."""

    def __init__(self, proof: Proof, cca: CcaProgram | None = None) -> None:
        self.proof = proof
        self.cca = cca if cca is not None else load_cca(proof.cca_path)
        tr = Trace(proof.model, proof.T)
        for f in range(tr.N):
            compile_into(self.cca, tr, f)
        encode_network(tr)
        if proof.periodic is not None:
            periodic(tr, proof.periodic)
        self.tr = tr
        self.series = series_fn(tr)
        self.assumptions = Encoding()
        for tag, c in self.initial_at(proof.start):
            self.assumptions.add(tag, c)

    def initial_at(self, t: int) -> list[tuple[str, z3.BoolRef]]:
        """The proof's ``[initial]`` conditions and invariants at step t.  They are assumed at the
        first step of every lemma, so ``ccmatic prove`` also checks that they hold
        again at the last step (otherwise the lemmas could not be chained)."""
        tr, init, out = self.tr, self.proof.initial, []
        if init.no_initial_loss:
            for f in range(tr.N):
                out.append(("proof: no undetected loss", tr.L_f[f][t] == tr.Ld_f[f][t]))
                if t == 0:
                    out.append(("proof: no initial loss", tr.L_f[f][0] == 0))
        if init.beliefs_consistent and self.cca.uses("c_lo", "c_hi"):
            b = rate_beliefs(tr)
            for f in range(tr.N):
                out.append(("proof: beliefs consistent", z3.And(tr.MSS <= b.c_lo[f][t], b.c_lo[f][t] <= tr.C,
                                                                 tr.C <= b.c_hi[f][t])))
        if init.beliefs_consistent and self.cca.uses("c_lo_lambda", "q_hi"):
            cbr_beliefs(tr)
            out.append(("proof: beliefs consistent", cbr_consistent(tr, t)))
        out += self.invariants_at(t, self.proof.values())
        return out

    def invariants_at(self, t: int, values: dict[str, Fraction]) -> list[tuple[str, z3.BoolRef]]:
        """The proof's ``invariant`` formulas at step t, with these constant values."""
        return [(f"proof: invariant {src.text}",
                 ProofScope(self.proof, src, self.tr, self.series, values).compile_at(src, t))
                for src in self.proof.invariants]

    def formula(self, src: Source, values: dict[str, Fraction]) -> z3.BoolRef:
        return compile_formula(self.proof, src, self.tr, self.series, values)

    def constraints(self) -> list[tuple[str, z3.BoolRef]]:
        """Network ∧ CCA ∧ assumptions, including belief encodings created lazily by
        the formulas compiled so far."""
        return self.tr.enc.constraints + self.assumptions.constraints


class ModelSession:
    """A solver over a :class:`ProofContext`'s constraints; constraints that formulas
    add later (lazy belief encodings) are added before the next check."""

    def __init__(self, ctx: ProofContext, opts: RunOptions, cache: ResultCache | None = None) -> None:
        self.ctx = ctx
        self.opts = opts
        self.cache = cache
        self.session: Session | None = None
        self.added = 0
        self._admits: bool | None = None
        self._digest: tuple[int, str] | None = None

    def _key(self, negated: z3.BoolRef, vacuity: bool) -> str:
        cs = self.ctx.constraints()
        if self._digest is None or self._digest[0] != len(cs):
            self._digest = (len(cs), constraints_digest(cs))
        return question_key(self._digest[1], negated, vacuity, self.opts.timeout_s, self.opts.seed,
                            self.ctx.tr.logic)

    def _sync(self) -> Session:
        cs = self.ctx.constraints()
        if self.session is None:
            base = Encoding()
            base.constraints = list(cs)
            self.session = Session(base, self.opts.timeout_s, self.opts.seed, self.ctx.tr.logic)
        else:
            for _tag, c in cs[self.added:]:
                self.session.solver.add(c)
        self.added = len(cs)
        return self.session

    def admits_a_trace(self) -> bool | None:
        """Do the network, CCA and assumptions admit a trace?  None if unknown."""
        if self._admits is None:
            r = self._sync().check()
            self._admits = True if isinstance(r, Sat) else (False if isinstance(r, Proved) else None)
        return self._admits

    def refute(self, negated: z3.BoolRef, premise: z3.BoolRef | None = None) -> Outcome:
        """Is ``negated`` (a lemma's premise ∧ ¬conclusion) unsatisfiable with the model?
        Definite answers are looked up in, and stored to, the result cache."""
        if self.cache is None:
            return self._refute(negated, premise)
        t0 = time.perf_counter()
        key = self._key(negated, premise is not None)
        hit = self.cache.get(key)
        if hit is not None:
            tr = trace_from_json(hit["trace"]) if hit.get("trace") else None
            return Outcome(hit["result"], time.perf_counter() - t0, hit.get("reason"), tr,
                           bool(hit.get("vacuous")), "cache")
        o = self._refute(negated, premise)
        self.cache.put(key, {"result": o.result, "reason": o.reason, "vacuous": o.vacuous,
                             "trace": trace_to_json(o.trace) if o.trace is not None else None,
                             "time_s": o.time_s})
        return o

    def _refute(self, negated: z3.BoolRef, premise: z3.BoolRef | None) -> Outcome:
        t0 = time.perf_counter()
        sess = self._sync()
        extra = Encoding()
        extra.add("negated lemma", negated)
        r = sess.check(extra)
        if isinstance(r, Sat):
            try:
                ev = recheck(r.model, self.ctx.constraints() + extra.constraints)
            except RecheckError as e:
                return Outcome("unknown", time.perf_counter() - t0, f"counterexample failed the exact re-check: {e}")
            cex = extract(self.ctx.tr, ev)
            bad = replay_problem(self.ctx.cca, self.ctx.tr.model, cex)
            if bad is not None:
                return Outcome("unknown", time.perf_counter() - t0, bad)
            return Outcome("refuted", time.perf_counter() - t0, trace=cex)
        if not isinstance(r, Proved):
            return Outcome("unknown", time.perf_counter() - t0, f"solver returned unknown ({r.reason})")
        admits = self.admits_a_trace()
        if admits is None:
            return Outcome("unknown", time.perf_counter() - t0,
                           "unsat, but could not confirm that the model and CCA admit a trace")
        if not admits:
            return Outcome("unknown", time.perf_counter() - t0,
                           "vacuous: the model, CCA and assumptions admit no trace, so nothing was proved")
        vacuous = False
        if premise is not None:
            pe = Encoding()
            pe.add("premise", premise)
            vacuous = isinstance(sess.check(pe), Proved)
        return Outcome("proved", time.perf_counter() - t0, vacuous=vacuous)


class LemmaChecker:
    """Checks one lemma for any constant values, reusing one solver session."""

    def __init__(self, ctx: ProofContext, name: str, opts: RunOptions, cache: ResultCache | None = None) -> None:
        self.ctx = ctx
        self.lemma = ctx.proof.lemma(name)
        self.model = ModelSession(ctx, opts, cache)

    def terms(self, values: dict[str, Fraction]) -> tuple[z3.BoolRef, z3.BoolRef]:
        return (self.ctx.formula(self.lemma.premise, values), self.ctx.formula(self.lemma.conclusion, values))

    def check(self, values: dict[str, Fraction], vacuity: bool = True) -> Outcome:
        premise, conclusion = self.terms(values)
        return self.model.refute(z3.And(premise, z3.Not(conclusion)), premise if vacuity else None)


def logic_check(negated: z3.BoolRef, opts: RunOptions, facts: list[z3.BoolRef] | None = None) -> Outcome:
    """Is ``negated`` unsatisfiable over free variables (no network)?  A model here
    is not a trace of the network, so 'refuted' only means 'not valid in pure
    logic'; callers then retry with the model (:meth:`ModelSession.refute`)."""
    t0 = time.perf_counter()
    s = make_solver(opts.timeout_s, opts.seed)
    for f in facts or []:
        s.add(f)
    s.add(negated)
    r = s.check()
    dt = time.perf_counter() - t0
    if r == z3.unsat:
        return Outcome("proved", dt, method="logic")
    if r == z3.sat:
        return Outcome("refuted", dt, method="logic")
    return Outcome("unknown", dt, s.reason_unknown(), method="logic")


def valid(ctx: ProofContext, formula: z3.BoolRef, model: ModelSession, opts: RunOptions) -> Outcome:
    """Validity of a stitching formula: in pure logic if possible, else on the model
    (sound either way: the lemmas were proved on the model)."""
    facts = [ctx.tr.MSS > 0]
    o = logic_check(z3.Not(formula), opts, facts)
    if o.result == "proved":
        return o
    m = model.refute(z3.Not(formula))
    m.time_s += o.time_s
    return m
