"""The second solver of ``verify --jobs 2`` (``ccmatic.engine.rival``): its proof ends
the run's check (unsat), its sat is ignored (a counterexample comes from the run's
own checks), the run's context is usable after the
interrupt, and no thread or process is left behind, also when the run is stopped by
SIGTERM or killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from fractions import Fraction as F

import helpers
import pytest
import z3

from ccmatic.core.model import ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.results import Counterexample, Proved
from ccmatic.engine import verify as verify_mod
from ccmatic.engine.rival import Rival
from ccmatic.engine.session import Sat, Session, Unsat, answer
from ccmatic.engine.verify import verify

OPTS = RunOptions(timeout_s=60, seed=0)
CCAC = ModelConfig(name="ccac", family="ccac", compose=True, C=F(100), R=1, D=1, mss_max_bdp=F(1, 5))


def pigeons(n: int, ctx: z3.Context | None = None) -> list[z3.BoolRef]:
    """n + 1 pigeons in n holes: unsat, and hard for the solver from n = 9 or so."""
    p = [[z3.Bool(f"p{i}_{j}", ctx) for j in range(n)] for i in range(n + 1)]
    out = [z3.Or(*row) for row in p]
    out += [z3.Or(z3.Not(p[i][j]), z3.Not(p[k][j])) for j in range(n) for i in range(n + 1) for k in range(i)]
    return out


def rival_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ccmatic-rival"]


def living_children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` and that have not ended (a zombie has)."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError, IndexError):
            continue
        if int(ppid) == pid and state != "Z":
            out.append(int(d))
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc to see the rival's process")


def test_rival_proof_ends_the_runs_check() -> None:
    """The rival proves a small pigeonhole problem while the run's solver is inside a
    far harder one: the run's check returns unsat at once, and its context takes the
    next check normally (the interrupt was consumed)."""
    sess = Session([("php", c) for c in pigeons(6)], 60, 0)
    rival = Rival(sess, [])
    hard = z3.SolverFor("QF_LRA")
    hard.add(*pigeons(12))
    t0 = time.perf_counter()
    try:
        r = rival.run(hard, lambda: answer(hard))
    finally:
        rival.stop()
    assert isinstance(r, Unsat) and rival.decided()
    assert time.perf_counter() - t0 < 20  # the 12-hole problem alone takes far longer
    assert not alive(rival.pid)  # reaped
    again = z3.Solver()
    again.add(z3.Int("x") > 0)
    assert again.check() == z3.sat  # no interrupt left pending on the main context
    assert not rival_threads()


def test_rival_sat_is_ignored() -> None:
    """A rival whose check is sat proves nothing: the run's own answer stands."""
    x = z3.Real("x")
    sess = Session([("x", x > 0)], 60, 0)
    rival = Rival(sess, [])
    try:
        s = z3.SolverFor("QF_LRA")
        s.add(x > 1)
        r = rival.run(s, lambda: answer(s))
    finally:
        rival.stop()
    assert isinstance(r, Sat) and not rival.decided()
    assert not rival_threads()


def test_rival_proving_after_the_runs_sat_leaves_the_run_alone() -> None:
    """The run's check is sat (the rival disagrees, as a wrong solver would) and the
    rival proves only afterwards: the run keeps its sat, and the rival's proof does
    not interrupt the run's later calls (it no longer watches the run's context)."""
    sess = Session([("php", c) for c in pigeons(8)], 60, 0)
    rival = Rival(sess, [])
    try:
        s = z3.SolverFor("QF_LRA")
        s.add(z3.Real("y") > 0)
        r = rival.run(s, lambda: answer(s))
        for _ in range(600):
            if rival.decided():
                break
            time.sleep(0.05)
        assert rival.decided()
        s.push()  # would raise "canceled" if the rival had interrupted the main context
        s.pop()
    finally:
        rival.stop()
    assert isinstance(r, Sat)


@pytest.fixture
def rival_always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_mod, "RIVAL_MIN_CONSTRAINTS", 0)


def test_verify_with_a_rival_proves_the_same(rival_always: None) -> None:
    q = helpers.query(CCAC, 6, "S[T-1] - S[0] <= C * (T - 1 + D)")
    alone, raced = verify(q, OPTS), verify(q, replace(OPTS, rival=True))
    assert isinstance(alone.outcome, Proved) and isinstance(raced.outcome, Proved)
    assert not rival_threads()


def test_rival_does_not_turn_a_counterexample_into_a_proof(rival_always: None) -> None:
    """A rival's sat is ignored and the run's own check finds the counterexample
    (re-checked and replayed); a tight pair: the bound it breaks holds one step later."""
    broken = verify(helpers.query(CCAC, 6, "S[T-1] - S[0] <= C * (T - 2 - D)"), replace(OPTS, rival=True))
    assert isinstance(broken.outcome, Counterexample)
    holds = verify(helpers.query(CCAC, 6, "S[T-1] - S[0] <= C * (T - 1 + D)"), replace(OPTS, rival=True))
    assert isinstance(holds.outcome, Proved)
    assert not rival_threads()


@needs_proc
def test_a_stopped_rival_leaves_no_process() -> None:
    """stop() kills a rival still checking (a hard problem) and reaps it."""
    sess = Session([("php", c) for c in pigeons(13)], 600, 0)
    rival = Rival(sess, [])
    assert helpers.wait_until(lambda: rival.pid in living_children(os.getpid()), 5)
    t0 = time.perf_counter()
    rival.stop()
    assert time.perf_counter() - t0 < 5 and not alive(rival.pid) and not rival.decided()
    assert not rival_threads()


#: a run that starts a rival on a hard problem, says its pid, and waits
_ORPHAN = """
import sys, time
sys.path.insert(0, sys.argv[1])
from test_rival import pigeons
from ccmatic.engine.rival import Rival
from ccmatic.engine.session import Session
r = Rival(Session([("php", c) for c in pigeons(13)], 600, 0), [])
print(r.pid, flush=True)
time.sleep(600)
"""


@needs_proc
def test_the_rival_dies_with_a_killed_run() -> None:
    """SIGKILL of the run (no finally runs) still ends its rival (PR_SET_PDEATHSIG)."""
    run = subprocess.Popen([sys.executable, "-c", _ORPHAN, os.path.dirname(__file__)], stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout is not None
        child = int(run.stdout.readline())
        assert alive(child)
        run.kill()
        run.wait(10)
        assert helpers.wait_until(lambda: not alive(child), 5), f"rival {child} outlived its killed run"
    finally:
        run.kill()


@needs_proc
def test_sigterm_to_verify_ends_its_rival() -> None:
    """``ccmatic verify`` on a long question (cc_qdel on CCAC at T = 30, 8,000
    constraints: a rival) stopped by SIGTERM: exit 3, and its rival is gone."""
    argv = [sys.executable, "-m", "ccmatic.cli.main", "verify", "queries/verify/cc_qdel-ccac.toml", "--T", "30",
            "--jobs", "2"]
    run = subprocess.Popen(argv, cwd=os.path.dirname(os.path.dirname(__file__)), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert helpers.wait_until(lambda: bool(living_children(run.pid)), 60), "no rival started"
        child = living_children(run.pid)[0]
        run.send_signal(signal.SIGTERM)
        _out, err = run.communicate(timeout=30)
        assert run.returncode == 3 and "interrupted" in err and "Traceback" not in err, err
        assert helpers.wait_until(lambda: not alive(child), 5), f"rival {child} outlived its run"
    finally:
        run.kill()
