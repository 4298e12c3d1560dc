"""Non-vacuity by a steady-state witness (``ccmatic.engine.witness``): a witness is
accepted only after the exact re-check, a wrong one is rejected and the solver's
check of the base constraints answers instead, and a contradictory setup stays
unknown ("vacuous") whichever way the check goes."""

from __future__ import annotations

from fractions import Fraction as F

import helpers

from ccmatic.core.model import ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.results import Proved, Unknown
from ccmatic.engine.recheck import recheck
from ccmatic.engine.session import Sat, Session, Unsat
from ccmatic.engine.verify import build_query, query_cca, verify
from ccmatic.engine.witness import SOLVER, STEADY, confirm_trace, steady_state
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
