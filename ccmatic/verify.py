"""Bounded model checking of one CCA against a property (DESIGN.md: verify).

``check(network ∧ CCA ∧ assumptions ∧ ¬property)``:

* unsat → :class:`Proved` (for traces of T steps) — but only after confirming that
  network ∧ CCA ∧ assumptions admits *some* trace; a contradictory setup is
  reported as :class:`Unknown` ("vacuous"), never as proved;
* sat → :class:`Counterexample`, after every constraint and the negated property
  were re-evaluated with exact rationals (:mod:`ccmatic.recheck`);
* anything else → :class:`Unknown` with the solver's reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import z3

from ccmatic.beliefs import cbr_beliefs, rate_beliefs
from ccmatic.config import Query, RunOptions
from ccmatic.lang.cca import CcaProgram, compile_into, load_cca
from ccmatic.lang.expr import Val
from ccmatic.lang.query_scope import compile_bool
from ccmatic.network import encode_network
from ccmatic.network.common import periodic
from ccmatic.network.delay import qdel_bounds
from ccmatic.properties import cbr_consistent, objective_formula, series_fn
from ccmatic.recheck import Evaluator, RecheckError, recheck
from ccmatic.smt import Encoding, Sat, Session
from ccmatic.smt import Proved as _P
from ccmatic.smt import Unknown as _U
from ccmatic.trace import Trace


@dataclass(frozen=True)
class ConcreteTrace:
    """A counterexample with exact values.  ``flows[f][name][t]`` and
    ``aggregate[name][t]``; missing quantities are absent from the dicts."""

    T: int
    N: int
    params: dict[str, Fraction | None]
    aggregate: dict[str, list[Fraction]]
    flows: list[dict[str, list[Fraction | bool]]]
    extra: dict[str, Fraction | bool] = field(default_factory=dict)


@dataclass(frozen=True)
class Proved:
    T: int


@dataclass(frozen=True)
class Counterexample:
    trace: ConcreteTrace


@dataclass(frozen=True)
class Unknown:
    reason: str


Outcome = Proved | Counterexample | Unknown


@dataclass
class VerifyReport:
    query: Query
    outcome: Outcome
    encode_s: float
    solve_s: float
    n_constraints: int

    @property
    def result(self) -> str:
        return {Proved: "proved", Counterexample: "counterexample", Unknown: "unknown"}[type(self.outcome)]


@dataclass
class Problem:
    """A query compiled to constraints: base (network ∧ CCA ∧ assumptions) and the property."""

    trace: Trace
    cca: CcaProgram
    base: Encoding
    prop: z3.BoolRef
    holes: dict[str, Fraction] | None = None  # a concrete candidate of a template


def build(query: Query, cca: CcaProgram | None = None, holes: dict[str, Fraction | Val] | None = None,
          cca_enc: Encoding | None = None) -> Problem:
    """Compile a query.  For a template, ``holes`` gives a candidate (or symbolic
    holes), and ``cca_enc`` receives the CCA's constraints instead of the base."""
    if cca is None:
        cca = load_cca(query.cca_path)
    tr = Trace(query.model, query.T)
    for f in range(tr.N):
        compile_into(cca, tr, f, enc=cca_enc, holes=holes)
    encode_network(tr)
    if query.periodic is not None:
        periodic(tr, query.periodic)
    # properties first: they may create belief variables lazily
    prop = z3.And(*[objective_formula(tr, o) for o in query.objectives])
    base = Encoding()
    init = query.initial
    if init.no_initial_loss:
        for f in range(tr.N):
            base.add("query: no initial loss", tr.L_f[f][0] == 0, tr.Ld_f[f][0] == 0)
    if init.beliefs_consistent:
        if tr.built("rate_beliefs") or cca.uses("c_lo", "c_hi"):
            b = rate_beliefs(tr)
            for f in range(tr.N):
                base.add("query: initial beliefs consistent",
                         tr.MSS <= b.c_lo[f][0], b.c_lo[f][0] <= tr.C, tr.C <= b.c_hi[f][0])
        if tr.built("cbr_beliefs") or cca.uses("c_lo_lambda", "q_hi"):
            cbr_beliefs(tr)
            base.add("query: initial beliefs consistent", cbr_consistent(tr, 0))
    get = series_fn(tr)
    for src in query.assumptions:
        base.add(f"assume {src.text}", compile_bool(src, tr, get))
    full = Encoding()
    full.extend(tr.enc)
    full.extend(base)
    concrete = {k: v for k, v in (holes or {}).items() if isinstance(v, Fraction)}
    return Problem(tr, cca, full, prop, concrete if holes and len(concrete) == len(holes) else None)


def verify(query: Query, opts: RunOptions, cca: CcaProgram | None = None,
           on_encoded: Callable[[], None] | None = None) -> VerifyReport:
    """``on_encoded`` is called once the problem is built, i.e. once every input error
    (CCA, assumptions, objectives) has surfaced, before the solver starts."""
    t0 = time.perf_counter()
    prob = build(query, cca)
    encode_s = time.perf_counter() - t0
    if on_encoded is not None:
        on_encoded()
    t1 = time.perf_counter()
    outcome = solve(prob, opts)
    solve_s = time.perf_counter() - t1
    return VerifyReport(query, outcome, encode_s, solve_s, len(prob.base) + 1)


def solve(prob: Problem, opts: RunOptions) -> Outcome:
    sess = Session(prob.base, opts.timeout_s, opts.seed, prob.trace.logic)
    neg = Encoding()
    neg.add("negated property", z3.Not(prob.prop))
    r = sess.check(neg)
    if isinstance(r, _U):
        return Unknown(f"solver returned unknown ({r.reason})")
    if isinstance(r, Sat):
        try:
            ev = recheck(r.model, prob.base.constraints + neg.constraints)
        except RecheckError as e:
            return Unknown(f"counterexample failed the exact re-check: {e}")
        cex = extract(prob.trace, ev)
        from ccmatic.sim.exact import replay_problem

        bad = replay_problem(prob.cca, prob.trace.model, cex, prob.holes)
        if bad is not None:
            return Unknown(bad)
        return Counterexample(cex)
    # unsat: make sure the premises admit at least one trace (no vacuous proof)
    v = sess.check()
    if isinstance(v, Sat):
        return Proved(prob.trace.T)
    if isinstance(v, _P):
        return Unknown("vacuous: the model, CCA and assumptions admit no trace at all "
                       "(contradictory assumptions?), so nothing was proved")
    return Unknown(f"property unsat, but could not confirm the setup admits a trace ({v.reason})")


def extract(tr: Trace, ev: Evaluator) -> ConcreteTrace:
    T = tr.T

    def nums(terms: list[z3.ExprRef]) -> list[Fraction]:
        return [ev.num(x) for x in terms]

    m = tr.model
    params: dict[str, Fraction | None] = {
        "C": m.C, "R": Fraction(m.R), "D": Fraction(m.D), "MSS": ev.num(tr.MSS), "C0": ev.num(tr.C0),
        "buffer": ev.num(tr.buffer) if tr.buffer is not None else None,
    }
    agg = {
        "A": nums([tr.A(t) for t in range(T)]),
        "S": nums([tr.S(t) for t in range(T)]),
        "L": nums([tr.L(t) for t in range(T)]),
        "W": nums(list(tr.W)),
        "tokens": nums([tr.tokens(t) for t in range(T)]),
        "tokens_lo": nums([tr.tokens(t - m.D) for t in range(T)]),
        "queue": nums([tr.queue(t) for t in range(T)]),
        "bq": nums([tr.bq(t) for t in range(T)]),
    }
    flows: list[dict[str, list[Fraction | bool]]] = []
    for f in range(tr.N):
        d: dict[str, list[Fraction | bool]] = {
            "A": list(nums(tr.A_f[f])), "S": list(nums(tr.S_f[f])), "L": list(nums(tr.L_f[f])),
            "Ld": list(nums(tr.Ld_f[f])),
        }
        if tr.has_rate[f]:
            d["rate"] = list(nums(tr.rate_f[f]))
        if tr.has_cwnd[f]:
            d["cwnd"] = list(nums(tr.cwnd_f[f]))
        if tr.model.timeouts:
            d["timeout"] = [ev.boolean(x) for x in tr.timeout_f[f]]
        if tr.built("rate_beliefs"):
            b = rate_beliefs(tr)
            d["c_lo"] = list(nums(b.c_lo[f]))
            d["c_hi"] = list(nums(b.c_hi[f]))
        if tr.built("qdel"):
            lo, hi = qdel_bounds(tr)
            d["qdel_lo"] = list(nums(lo[f]))
            d["qdel_hi"] = list(nums(hi[f]))
        if tr.built("cbr_beliefs"):
            cb = cbr_beliefs(tr)
            d["c_lo_lambda"] = list(nums(cb.c_lo_lambda[f]))
            d["q_hi"] = list(nums(cb.q_hi[f]))
        for name, vs in tr.state_f[f].items():
            d[name] = [ev.ev(x) for x in vs]
        flows.append(d)
    return ConcreteTrace(T, tr.N, params, agg, flows)
