"""Time limits of checks in a long-lived solver (``ccmatic.engine.session.stop_at``).

Setting any parameter of a Z3 solver after its first check makes every later check
slower (G7-arbitrary's incremental verifier took 2.4x as long over 40 checks with its
time limit set again before each), so CEGIS's incremental verifier gets its limit once,
when it is built, and the run's budget stops a check in progress with a timer that
interrupts it instead."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import z3
from test_rival import pigeons

from ccmatic.core.options import RunOptions, SynthOptions
from ccmatic.engine.cegis import Synthesizer
from ccmatic.engine.session import Session, SolverUnknown, Unsat, answer, stop_at
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query

ROOT = Path(__file__).resolve().parent.parent


def test_a_timer_stops_a_hard_check_and_the_context_checks_again() -> None:
    """A pigeonhole problem far beyond 0.3 s is stopped at about 0.3 s (unknown), and
    the same context's next check is not cancelled by a leftover interrupt."""
    s = z3.SolverFor("QF_LRA")
    s.add(*pigeons(12))
    t0 = time.perf_counter()
    with stop_at(s.ctx, 0.3) as timer:
        r = answer(s)
    assert isinstance(r, SolverUnknown)
    assert timer is not None and timer.fired
    assert time.perf_counter() - t0 < 10
    easy = Session([("php", c) for c in pigeons(4)], 60, 0)
    assert isinstance(easy.check(), Unsat)


def test_a_timer_that_does_not_fire_leaves_the_answer() -> None:
    """The pair of the test above: a check done within its time gets its own answer."""
    s = z3.SolverFor("QF_LRA")
    s.add(*pigeons(4))
    with stop_at(s.ctx, 60) as timer:
        r = answer(s)
    assert isinstance(r, Unsat)
    assert timer is not None and not timer.fired


@contextmanager
def parameters_set_after_a_check() -> Iterator[list[int]]:
    """The solvers (by pointer) whose parameters were set after they had checked."""
    checked: set[int] = set()
    late: list[int] = []
    real_check, real_set = z3.Solver.check, z3.Solver.set

    def check(self: z3.Solver, *a: z3.ExprRef) -> z3.CheckSatResult:
        checked.add(self.solver.value)
        return real_check(self, *a)

    def set_(self: z3.Solver, *a: object, **k: object) -> None:
        if self.solver.value in checked:
            late.append(self.solver.value)
        real_set(self, *a, **k)

    mp = pytest.MonkeyPatch()
    mp.setattr(z3.Solver, "check", check)
    mp.setattr(z3.Solver, "set", set_)
    try:
        yield late
    finally:
        mp.undo()


def test_the_detector_sees_a_parameter_set_after_a_check() -> None:
    """The pair of the test below: the instrument reports what it is meant to."""
    with parameters_set_after_a_check() as late:
        s = z3.Solver()
        s.set("timeout", 1000)
        s.check()
        assert late == []
        s.set("timeout", 2000)
    assert late == [s.solver.value]


def test_the_incremental_verifier_is_configured_once() -> None:
    """A synthesis under a budget (each check's limit is what is left of it, below
    the check timeout) never sets a parameter of its verifier session after the
    session's first check."""
    lib = Library.default()
    q = load_query(ROOT / "queries" / "table4_1" / "G1-T5.toml", lib, load_objectives(lib))
    with parameters_set_after_a_check() as late:
        syn = Synthesizer(q, SynthOptions(run=RunOptions(timeout_s=300, seed=0), budget_s=120))
        res = syn.run()
    assert res.status == "complete" and len(res.solutions) == 4
    assert syn.checker.session.solver.solver.value not in late
