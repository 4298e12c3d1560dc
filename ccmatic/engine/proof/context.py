"""Checking one proof question with the solver (thesis B.4).

* :class:`ProofContext` — a proof's scenario built once (:func:`ccmatic.encode.problem.build`,
  with everything the proof's formulas read), its ``[initial]`` conditions and
  invariants at a step, and its formulas elaborated for given constant values;
  :func:`context_of` builds it once per process (the lemmas a process checks share
  it, with the premises already shown to admit a trace);
* :class:`ModelSession` — a solver over that problem: unsat of a negated question
  → proved (after confirming that the scenario admits a trace); sat → a
  counterexample, re-checked with exact rationals and replayed; anything else →
  unknown;
* :class:`LemmaChecker` — a lemma ``premise ⇒ conclusion`` for any constant values,
  reusing one session (a constant search);
* :func:`logic_check` — a formula over the trace's variables with no network at
  all (coverage, stitching): valid in pure logic is valid on every model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import z3

from ccmatic.core.errors import EngineError
from ccmatic.core.options import RunOptions
from ccmatic.core.proof import Lemma, Proof
from ccmatic.core.results import (
    ConcreteTrace,
    Counterexample,
    Unknown,
    Verdict,
    trace_from_json,
    trace_to_json,
)
from ccmatic.core.source import Source
from ccmatic.encode.problem import Problem, build, initial_conditions
from ccmatic.encode.trace import SymbolicTrace, Tagged
from ccmatic.engine.proof.cache import ResultCache, constraints_digest, question_key
from ccmatic.engine.session import LOGIC, Sat, Session, Unsat, make_solver
from ccmatic.engine.verify import counterexample
from ccmatic.semantics.explain import Violation, explain
from ccmatic.semantics.z3domain import as_bool
from ccmatic.spec.cca import load_cca
from ccmatic.spec.formula import QueryContext
from ccmatic.spec.proofs import ProofScope, all_formulas, proof_scope, typecheck


@dataclass
class Check:
    """One solver question's answer.  ``method``: how it was settled (model, logic,
    cache, syntax); ``vacuous``: a lemma whose premise admits no trace."""

    verdict: Verdict
    time_s: float
    reason: str | None = None
    trace: ConcreteTrace | None = None
    vacuous: bool = False
    method: str = "model"

    def json(self) -> dict[str, Any]:
        """The answer as JSON: a result-cache entry, a worker's reply (with its name)."""
        return {"verdict": self.verdict, "reason": self.reason, "vacuous": self.vacuous,
                "trace": trace_to_json(self.trace) if self.trace is not None else None, "time_s": self.time_s}

    @staticmethod
    def from_json(d: dict[str, Any], method: str = "model") -> Check:
        tr = trace_from_json(d["trace"]) if d.get("trace") else None
        return Check(d["verdict"], float(d["time_s"]), d.get("reason"), tr, bool(d.get("vacuous")), method)


class ProofContext:
    """The scenario, CCA and network of a proof (built once)."""

    def __init__(self, proof: Proof) -> None:
        self.proof = proof
        sc = proof.scenario
        self.prog = load_cca(sc.cca_path, sc.cca_text)
        self.qctx = QueryContext.of(sc, self.prog)
        typecheck(proof, self.qctx)
        self.problem: Problem = build(sc, self.prog, all_formulas(proof, self.scope(proof.values())))
        self.assumptions = self.invariants_at(proof.start, proof.values())
        # definite answers to "does a trace meet the constraints and this formula?"
        # (by the formula's SMT-LIB text): lemmas with the same premise ask once
        self.witnessed: dict[str, bool] = {}

    @property
    def tr(self) -> SymbolicTrace:
        return self.problem.trace

    def scope(self, values: dict[str, Fraction]) -> ProofScope:
        return proof_scope(self.proof, self.qctx, values)

    def formula(self, src: Source, values: dict[str, Fraction], t: int | None = None) -> z3.BoolRef:
        return as_bool(self.problem.formula(self.scope(values).condition(src, t)))

    def lemma_question(self, lemma: Lemma, values: dict[str, Fraction]) -> tuple[z3.BoolRef, z3.BoolRef]:
        """A lemma's premise ∧ ¬conclusion (unsat: the lemma holds) and its premise."""
        premise = self.formula(lemma.premise, values)
        return z3.And(premise, z3.Not(self.formula(lemma.conclusion, values))), premise

    def invariants_at(self, t: int, values: dict[str, Fraction]) -> list[Tagged]:
        """The proof's ``invariant`` formulas at step t, with these constant values."""
        return [(f"proof: invariant {src.text}", self.formula(src, values, t)) for src in self.proof.invariants]

    def initial_at(self, t: int) -> list[Tagged]:
        """``[initial]`` and the invariants at step t: assumed at the start of every
        lemma, so ``ccmatic prove`` also checks that they hold again at the last step
        (otherwise the lemmas could not be chained)."""
        init = initial_conditions(self.problem.trace, self.proof.scenario.initial, t).items
        return [*init, *self.invariants_at(t, self.proof.values())]

    def constraints(self) -> list[Tagged]:
        """Network ∧ CCA ∧ initial conditions ∧ assumptions ∧ invariants at the start."""
        return [*self.problem.base(), *self.assumptions]


_LAST: tuple[Proof, ProofContext] | None = None  # this process's last context


def context_of(proof: Proof) -> ProofContext:
    """The proof's context, built once per process: the lemmas that one process
    checks (all of them with ``--jobs 1``, several per worker otherwise) share one
    encoding of the network and the CCA, and its witnessed premises."""
    global _LAST
    if _LAST is None or _LAST[0] != proof:
        _LAST = (proof, ProofContext(proof))
    return _LAST[1]


class ModelSession:
    """A solver over a :class:`ProofContext`'s constraints, built on first use."""

    def __init__(self, ctx: ProofContext, opts: RunOptions, cache: ResultCache | None = None) -> None:
        self.ctx = ctx
        self.opts = opts
        self.cache = cache
        self._session: Session | None = None
        self._digest: str | None = None

    @property
    def session(self) -> Session:
        if self._session is None:
            self._session = Session(self.ctx.constraints(), self.opts.timeout_s, self.opts.seed)
        return self._session

    def _key(self, negated: z3.BoolRef, vacuity: bool) -> str:
        if self._digest is None:
            self._digest = constraints_digest(self.ctx.constraints())
        return question_key(self._digest, negated, vacuity, self.opts.timeout_s, self.opts.seed, LOGIC)

    def admits_a_trace(self, formula: z3.BoolRef | None = None) -> bool | None:
        """Do the network, CCA and assumptions admit a trace (that meets ``formula``)?
        None if unknown.  Definite answers are kept in the context."""
        key = formula.sexpr() if formula is not None else ""
        known = self.ctx.witnessed.get(key)
        if known is not None:
            return known
        r = self.session.check([("premise", formula)] if formula is not None else [])
        if isinstance(r, Sat | Unsat):
            self.ctx.witnessed[key] = isinstance(r, Sat)
            if isinstance(r, Sat):
                self.ctx.witnessed[""] = True  # a trace that meets the formula is a trace
            return isinstance(r, Sat)
        return None

    def refute(self, negated: z3.BoolRef, premise: z3.BoolRef | None = None) -> Check:
        """Is ``negated`` (a lemma's premise ∧ ¬conclusion) unsatisfiable with the model?
        Definite answers are looked up in, and stored to, the result cache."""
        if self.cache is None:
            return self._refute(negated, premise)
        t0 = time.perf_counter()
        key = self._key(negated, premise is not None)
        hit = self.cache.get(key)
        if hit is not None:
            return replace(Check.from_json(hit, "cache"), time_s=time.perf_counter() - t0)
        o = self._refute(negated, premise)
        self.cache.put(key, o.json())
        return o

    def _refute(self, negated: z3.BoolRef, premise: z3.BoolRef | None) -> Check:
        t0 = time.perf_counter()
        extra: list[Tagged] = [("negated question", negated)]
        r = self.session.check(extra)
        if isinstance(r, Sat):
            o = counterexample(self.ctx.problem, r.model, [*self.ctx.constraints(), *extra])
            if isinstance(o, Counterexample):
                return Check("counterexample", time.perf_counter() - t0, trace=o.trace)
            assert isinstance(o, Unknown)
            return Check("unknown", time.perf_counter() - t0, o.reason)
        if not isinstance(r, Unsat):
            return Check("unknown", time.perf_counter() - t0, f"solver returned unknown ({r.reason})")
        # the non-vacuity checks: the premise first, since a trace that meets it also
        # shows that the model admits a trace (one check instead of two)
        vacuous = premise is not None and self.admits_a_trace(premise) is False
        admits = self.admits_a_trace()
        if admits is None:
            return Check("unknown", time.perf_counter() - t0,
                         "unsat, but could not confirm that the model and CCA admit a trace")
        if not admits:
            return Check("unknown", time.perf_counter() - t0,
                         "vacuous: the model, CCA and assumptions admit no trace, so nothing was proved")
        return Check("proved", time.perf_counter() - t0, vacuous=vacuous)


class LemmaChecker:
    """Checks one lemma for any constant values, reusing one solver session."""

    def __init__(self, ctx: ProofContext, name: str, opts: RunOptions, cache: ResultCache | None = None) -> None:
        self.ctx = ctx
        self.lemma = ctx.proof.lemma(name)
        self.model = ModelSession(ctx, opts, cache)

    def terms(self, values: dict[str, Fraction]) -> tuple[z3.BoolRef, z3.BoolRef]:
        return self.ctx.formula(self.lemma.premise, values), self.ctx.formula(self.lemma.conclusion, values)

    def check(self, values: dict[str, Fraction], vacuity: bool = True) -> Check:
        negated, premise = self.ctx.lemma_question(self.lemma, values)
        return self.model.refute(negated, premise if vacuity else None)


def explain_lemma(ctx: ProofContext, lemma: Lemma, values: dict[str, Fraction], trace: ConcreteTrace) -> Violation:
    """How a counterexample to a lemma violates its conclusion (with these constant
    values), computed from its exact trace."""
    why = explain(ctx.scope(values).condition(lemma.conclusion), trace)
    if why is None:
        raise EngineError(f"the counterexample to lemma {lemma.name} meets its conclusion when evaluated exactly")
    return why


def logic_check(negated: z3.BoolRef, opts: RunOptions, facts: list[z3.BoolRef] | None = None) -> Check:
    """Is ``negated`` unsatisfiable over free variables (no network)?  A model here
    is not a trace of the network, so a counterexample only means 'not valid in
    pure logic'; callers then ask the model (:meth:`ModelSession.refute`)."""
    t0 = time.perf_counter()
    s = make_solver(opts.timeout_s, opts.seed, None)
    for f in facts or []:
        s.add(f)
    s.add(negated)
    r = s.check()
    dt = time.perf_counter() - t0
    if r == z3.unsat:
        return Check("proved", dt, method="logic")
    if r == z3.sat:
        return Check("counterexample", dt, method="logic")
    return Check("unknown", dt, s.reason_unknown(), method="logic")


def valid(ctx: ProofContext, formula: z3.BoolRef, model: ModelSession, opts: RunOptions) -> Check:
    """Validity of a stitching formula: in pure logic if possible, else on the model
    (sound either way: the lemmas were proved on the model)."""
    o = logic_check(z3.Not(formula), opts, [ctx.problem.trace.MSS > 0])
    if o.verdict == "proved":
        return o
    m = model.refute(z3.Not(formula))
    m.time_s += o.time_s
    return m
