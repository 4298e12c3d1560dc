"""Bounded model checking of one CCA against a query's property.

``check(network ∧ CCA ∧ initial conditions ∧ assumptions ∧ ¬property)``:

* unsat → proved (for traces of T steps) — but only after confirming that the
  setup admits *some* trace; a contradictory one is unknown ("vacuous"), never proved;
* sat → a counterexample, after every constraint and the negated property were
  re-evaluated with exact rationals (:mod:`ccmatic.engine.recheck`) and the trace
  replayed through the one CCA semantics (:mod:`ccmatic.sim.replay`);
* anything else → unknown, with the solver's reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import z3

from ccmatic.core.model import MODEL_PARTS
from ccmatic.core.options import RunOptions
from ccmatic.core.results import Counterexample, Outcome, Proved, Unknown, Verdict
from ccmatic.core.scenario import Query, Scenario
from ccmatic.encode.problem import Problem, build
from ccmatic.encode.trace import Tagged
from ccmatic.engine.extract import extract
from ccmatic.engine.recheck import FormulaCache, RecheckError, recheck
from ccmatic.engine.rival import RIVAL_MIN_CONSTRAINTS, start_rival
from ccmatic.engine.session import Answer, Sat, Session, SolverUnknown, Unsat, out_of_resources
from ccmatic.engine.smt2 import dump_check
from ccmatic.engine.witness import FIRST_SLICE_RLIMIT, confirm_trace, steady_counterexample
from ccmatic.semantics.explain import ObjectiveCheck, objective_checks
from ccmatic.semantics.z3domain import as_bool
from ccmatic.sim.replay import replay_problem
from ccmatic.spec import ir
from ccmatic.spec.cca import CcaProgram, load_cca
from ccmatic.spec.formula import QueryContext, QueryScope, condition
from ccmatic.spec.objectives import objective_condition
from ccmatic.spec.step import HoleValues


@dataclass
class VerifyReport:
    query: Query
    outcome: Outcome
    encode_s: float
    solve_s: float
    n_constraints: int
    smt2: Path | None = None  # where the deciding check was written (--dump-smt2)
    objectives: list[ObjectiveCheck] = field(default_factory=list)  # each objective against the outcome

    @property
    def verdict(self) -> Verdict:
        return self.outcome.verdict


def query_cca(query: Query) -> CcaProgram:
    return load_cca(query.scenario.cca_path, query.scenario.cca_text)


def property_conditions(query: Query, prog: CcaProgram) -> list[ir.Expr]:
    """The objectives' conditions (their conjunction is the property), or an exists
    question's (their conjunction is what a witness meets)."""
    ctx = QueryContext.of(query.scenario, prog)
    if query.exists:
        return [condition(src, QueryScope(src, ctx)) for src in query.exists]
    return [objective_condition(o, query.library, ctx) for o in query.objectives]


def build_query(query: Query, prog: CcaProgram, holes: HoleValues = None,
                hole_vars: Callable[[str], z3.ExprRef] | None = None) -> tuple[Problem, z3.BoolRef]:
    """The query's problem and its property; an exists question's property is
    that no trace meets its conditions (a counterexample to it is a witness)."""
    conds = property_conditions(query, prog)
    prob = build(query.scenario, prog, conds, holes, hole_vars)
    met = z3.And(*[as_bool(prob.formula(c)) for c in conds])
    return prob, (z3.Not(met) if query.exists else met)


def verify(query: Query, opts: RunOptions, prog: CcaProgram | None = None,
           on_encoded: Callable[[], None] | None = None) -> VerifyReport:
    """``on_encoded`` is called once the problem is built, i.e. once every input error
    (CCA, assumptions, objectives) has surfaced, before the solver starts."""
    t0 = time.perf_counter()
    prog = prog if prog is not None else query_cca(query)
    prob, prop = build_query(query, prog)
    encode_s = time.perf_counter() - t0
    dumped = dump_query(opts.dump_smt2, query, prob, prop) if opts.dump_smt2 is not None else None
    if on_encoded is not None:
        on_encoded()
    t1 = time.perf_counter()
    outcome = solve(prob, prop, opts)
    solve_s = time.perf_counter() - t1
    return VerifyReport(query, outcome, encode_s, solve_s, len(prob.base()) + 1, dumped,
                        explain_outcome(query, prog, outcome))


def explain_outcome(query: Query, prog: CcaProgram, outcome: Outcome) -> list[ObjectiveCheck]:
    """Each objective against the outcome: which ones a counterexample violates, and
    how (computed from its exact trace, after the solver)."""
    ctx = QueryContext.of(query.scenario, prog)
    if isinstance(outcome, Counterexample):
        return objective_checks(query, ctx, outcome.trace, False)
    return objective_checks(query, ctx, None, True if isinstance(outcome, Proved) else None)


def dump_query(folder: Path, query: Query, prob: Problem, prop: z3.BoolRef) -> Path:
    """The check that decides the verdict (every constraint and the negated
    property) as ``folder/<query>.smt2``: unsat = proved, sat = counterexample."""
    cca = query.scenario.cca_name
    answers = [f"unsat = proved for all traces of T={query.T} steps, sat = counterexample"] if not query.exists else \
        [f"unsat = no witness (no trace of T={query.T} steps meets the exists conditions), sat = a witness"]
    comment = "\n".join([
        f"ccmatic verify {query.name} ({query.path}): cca {cca} on {query.model.summary()}, T={query.T}",
        *model_parts_note(query.scenario),
        f"network, CCA, initial conditions and assumptions, and {'the exists conditions' if query.exists else 'the negated property'}:",
        *answers,
        "(ccmatic also checks that the constraints without the negated property are sat, i.e. not vacuous)"])
    goal = prop.arg(0) if query.exists else z3.Not(prop)  # exists: prop is Not(conditions)
    return dump_check(folder / f"{query.name}.smt2", [c for _tag, c in prob.base()] + [goal], comment)


def model_parts_note(sc: Scenario) -> list[str]:
    """A line naming the model parts left out, if any (so that no answer hides it)."""
    left = [p for p in MODEL_PARTS if p not in sc.parts]
    if not left:
        return []
    kept = ", ".join(p for p in MODEL_PARTS if p in sc.parts) or "none"
    note = (f"model parts assumed: {kept} (left out: {', '.join(left)}; a trace found may not be one of the "
            "whole model, a proof holds for it too)")
    return [note]


def solve(prob: Problem, prop: z3.BoolRef, opts: RunOptions, network: Session | None = None) -> Outcome:
    """``network``: a session that holds ``prob``'s constraints but the CCA's and never
    checked; the check then runs in a fork of it (as fresh, and cheaper to build)."""
    sess = Session(prob.base(), opts.timeout_s, opts.seed) if network is None else \
        network.fork(prob.cca.constraints.items, opts.timeout_s)
    neg: list[Tagged] = [("negated property", z3.Not(prop))]
    rival = start_rival(sess, neg) if opts.rival and len(prob.base()) >= RIVAL_MIN_CONSTRAINTS else None
    sess.guard = rival
    try:
        r = decide(sess, neg, prob)
    finally:
        sess.guard = None
        if rival is not None:
            rival.stop()
    if isinstance(r, SolverUnknown):
        return Unknown(f"solver returned unknown ({r.reason})")
    if isinstance(r, Sat):
        return counterexample(prob, r.model, [*prob.base(), *neg])
    return confirm_proved(sess, prob)


def decide(sess: Session, neg: list[Tagged], prob: Problem) -> Answer:
    """The deciding check.  A periodic question (a steady state asked about, as CCAC
    asks it) not decided within a first slice is first searched for a steady-state
    counterexample, which the solver finds far sooner than an arbitrary trace when
    there is one (:func:`ccmatic.engine.witness.steady_counterexample`); then the
    whole check runs under the run's own limit, in a fresh solver: resumed in the
    session of the spent slice it took 3x as long (CCAC's Copa question at T = 30,
    idle: 39 s against 13 s, docs/performance.md).  Every slice is bounded in Z3's
    resource units, so the answer does not depend on the machine's load.  Every check
    runs under ``sess.guard`` (a :class:`~ccmatic.engine.rival.Rival`, if any)."""
    period = prob.scenario.periodic
    if not period:
        return sess.check(neg)
    first = sess.check(neg, rlimit=FIRST_SLICE_RLIMIT)
    if not (isinstance(first, SolverUnknown) and out_of_resources(first)):
        return first
    found = steady_counterexample(prob.base(), neg, prob.trace, period, sess.timeout_s, sess.seed, sess.guard)
    if found is not None:
        return found
    return Session(prob.base(), sess.timeout_s, sess.seed, guard=sess.guard).check(neg)


def confirm_proved(sess: Session, prob: Problem) -> Outcome:
    """After unsat: make sure the premises admit at least one trace (no vacuous proof):
    a steady state re-checked exactly, else the solver (:mod:`ccmatic.engine.witness`)."""
    found = confirm_trace(sess, prob.base(), prob.trace, prob.scenario.periodic)
    v = found.answer
    if isinstance(v, Sat):
        return Proved(prob.trace.T, found.by, found.seconds)
    if isinstance(v, Unsat):
        return Unknown("vacuous: the model, CCA and assumptions admit no trace at all "
                       "(contradictory assumptions?), so nothing was proved")
    return Unknown(f"property unsat, but could not confirm the setup admits a trace ({v.reason})")


def counterexample(prob: Problem, model: z3.ModelRef, constraints: list[Tagged],
                   cache: FormulaCache | None = None) -> Outcome:
    """A solver model as a counterexample: re-checked exactly, extracted, replayed."""
    try:
        ev = recheck(model, constraints, cache)
    except RecheckError as e:
        return Unknown(f"counterexample failed the exact re-check: {e}")
    cex = extract(prob.trace, ev)
    bad = replay_problem(prob.prog, prob.trace.model, cex, prob.holes, prob.scenario.parts)
    if bad is not None:
        return Unknown(bad)
    return Counterexample(cex)
