"""Non-vacuity by a steady-state witness (``ccmatic.engine.witness``): a witness is
accepted only after the exact re-check, a wrong one is rejected and the solver's
check of the base constraints answers instead, and a contradictory setup stays
unknown ("vacuous") whichever way the check goes."""

from __future__ import annotations

from fractions import Fraction as F

import helpers
import pytest
import z3

from ccmatic.core.model import ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.results import Counterexample, Proved, Unknown
from ccmatic.engine import verify as verify_mod
from ccmatic.engine.recheck import recheck
from ccmatic.engine.session import Sat, Session, SolverUnknown, Unsat, out_of_resources
from ccmatic.engine.verify import build_query, query_cca, verify
from ccmatic.engine.witness import SOLVER, STEADY, confirm_trace, steady_state, witness_shapes
from ccmatic.io.report import verify_json

OPTS = RunOptions(timeout_s=60, seed=0)
CCAC = ModelConfig(name="ccac", family="ccac", compose=True, C=F(100), R=1, D=1, mss_max_bdp=F(1, 5))
SERVICE = "S[T-1] - S[0] <= C * (T - 1 + D)"


def test_steady_state_witness_is_accepted() -> None:
    """A setup with steady states: proved, its trace shown by a steady state that
    meets every base constraint exactly and is periodic as asked."""
    q = helpers.query(CCAC, 6, SERVICE)
    rep = verify(q, OPTS)
    assert isinstance(rep.outcome, Proved) and rep.outcome.trace_by == STEADY
    assert verify_json(rep)["nonvacuity"]["by"] == STEADY
    prob, _prop = build_query(q, query_cca(q))
    sess = Session(prob.base(), 60, 0)
    found = sess.check(steady_state(prob.trace, 2))
    assert isinstance(found, Sat)
    ev = recheck(found.model, prob.base())
    A = [ev.num(a) for a in prob.trace.A_f[0]]
    assert len({A[t + 2] - A[t] for t in range(4)}) == 1


def test_no_steady_state_falls_back_to_the_solver() -> None:
    """Premises that no steady state meets (A's growth must change) but some trace
    does: the solver's check finds the trace, and the answer is still proved."""
    rep = verify(helpers.query(CCAC, 6, SERVICE, assume=("A[2] - A[1] > A[1] - A[0] + 1",)), OPTS)
    assert isinstance(rep.outcome, Proved) and rep.outcome.trace_by == SOLVER


def test_wrong_witness_is_rejected() -> None:
    """A session that lacks constraints (a stand-in for a bug in how the witness is
    found) yields a steady state that violates them: the exact re-check rejects it
    and the solver's check of the base answers instead."""
    q = helpers.query(CCAC, 6, SERVICE, assume=("S[1] >= 1", "S[1] <= 0"))
    prob, _prop = build_query(q, query_cca(q))
    lacking = Session([(tag, c) for tag, c in prob.base() if not tag.startswith("assume")], 60, 0)
    found = confirm_trace(lacking, prob.base(), prob.trace, None)
    assert found.by == SOLVER and "exact re-check" in found.note
    whole = confirm_trace(Session(prob.base(), 60, 0), prob.base(), prob.trace, None)
    assert whole.by == SOLVER and isinstance(whole.answer, Unsat)


def test_contradictory_periodic_setup_is_vacuous() -> None:
    """A periodic question whose premises contradict the model (wasted tokens never
    decrease) is unknown, not proved; without the contradiction a steady state shows
    that its premises admit a trace."""
    ok = verify(helpers.query(CCAC, 6, SERVICE, assume=("L[T-1] == L[0]",), periodic=2), OPTS)
    assert isinstance(ok.outcome, Proved) and ok.outcome.trace_by == STEADY
    rep = verify(helpers.query(CCAC, 6, SERVICE, assume=("L[T-1] == L[0]", "W[T-1] < W[0]"), periodic=2), OPTS)
    assert isinstance(rep.outcome, Unknown) and "vacuous" in rep.outcome.reason


# --- the deciding check's steady-state counterexample search (witness.decide path)

UTIL = "S[T-1] - S[0] >= 0.9 * C * (T - 1 - D)"  # refuted on CCAC (the link may waste)


def test_steady_counterexample_when_the_first_slice_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A periodic question not decided within the first slice (forced here: a slice of
    one unit) is searched for a steady-state counterexample first: the one found is
    re-checked and replayed as every counterexample, and is a steady state."""
    monkeypatch.setattr(verify_mod, "FIRST_SLICE_RLIMIT", 1)
    q = helpers.query(CCAC, 8, UTIL, cca="const_cwnd", periodic=2)
    prob, prop = build_query(q, query_cca(q))
    sess = Session(prob.base(), 60, 0)
    neg = [("negated property", z3.Not(prop))]
    r = verify_mod.decide(sess, neg, prob)
    assert isinstance(r, Sat)
    ev = recheck(r.model, [*prob.base(), *neg])
    S = [ev.num(s) for s in prob.trace.S_f[0]]
    assert any(len({S[t + k] - S[t] for t in range(s0, 8 - k)}) == 1 for k, s0 in witness_shapes(8, 2))
    rep = verify(q, OPTS)
    assert isinstance(rep.outcome, Counterexample)


def test_no_steady_counterexample_then_the_whole_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A true property with the first slice spent: no steady state refutes it, the
    check resumes without a slice, and the answer is still proved (twin of the test
    above: the same setup with the property halved)."""
    monkeypatch.setattr(verify_mod, "FIRST_SLICE_RLIMIT", 1)
    rep = verify(helpers.query(CCAC, 8, SERVICE, cca="const_cwnd", periodic=2), OPTS)
    assert isinstance(rep.outcome, Proved)


def test_shapes_fit_the_horizon() -> None:
    """The query's period and twice it, from step 0 and after two periods, only where
    the horizon leaves a step to compare."""
    assert witness_shapes(20, 2) == [(2, 0), (4, 0), (2, 4), (4, 4)]
    assert witness_shapes(6, 2) == [(2, 0), (4, 0)]
    assert all(s0 + k < 5 for k, s0 in witness_shapes(6, 2))


def test_spent_budget_is_not_an_interrupt() -> None:
    """A check that used up its resource units is told apart from one interrupted
    (Z3 calls both "canceled"): only the former starts the steady-state search."""
    q = helpers.query(CCAC, 8, UTIL, cca="const_cwnd", periodic=2)
    prob, prop = build_query(q, query_cca(q))
    r = Session(prob.base(), 60, 0).check([("negated property", z3.Not(prop))], rlimit=1)
    assert isinstance(r, SolverUnknown) and out_of_resources(r)
    assert not out_of_resources(SolverUnknown("canceled"))
