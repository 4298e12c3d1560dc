"""Interrupts and checkpoints neither lose nor invent results: resumed runs print
exactly the uninterrupted run's solutions, every stored solution is re-verified, a
checkpoint of another question is refused, an interrupted re-verification leaves its
candidate to be checked again, and Ctrl-C / SIGTERM stop every command with exit
code 3 (how fast: benchmarks/signal_latency.py, not a test, since it depends on the
machine)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from ccmatic.core.errors import SpecError
from ccmatic.core.files import atomic_write
from ccmatic.core.options import RunOptions, SynthOptions
from ccmatic.core.scenario import Query
from ccmatic.engine import checkpoint
from ccmatic.engine.cegis import Synthesizer, SynthResult
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query

ROOT = Path(__file__).resolve().parent.parent
T41 = ROOT / "queries" / "table4_1"
OPTS = SynthOptions(run=RunOptions(timeout_s=300, seed=0))


def _query(name: str) -> Query:
    lib = Library.default()
    return load_query(T41 / f"{name}.toml", lib, load_objectives(lib))


def _holes(res: SynthResult) -> set[tuple[tuple[str, Fraction], ...]]:
    return {tuple(sorted(s.holes.items())) for s in res.solutions}


@pytest.fixture(scope="module")
def g5_full() -> SynthResult:
    r = Synthesizer(_query("G5-infinite"), OPTS).run()
    assert r.status == "complete" and len(r.solutions) == 48
    return r


@pytest.mark.parametrize("stop_at", [10, 25, 60])
def test_resume_prints_the_uninterrupted_solutions(tmp_path: Path, g5_full: SynthResult, stop_at: int) -> None:
    """A G5 run stopped after some iterations and resumed from its checkpoint finds exactly the uninterrupted run's 48 solutions."""
    q = _query("G5-infinite")
    part = Synthesizer(q, OPTS)
    r1 = part.run(should_stop=lambda: part.stats.iterations >= stop_at)
    assert r1.status == "interrupted" and len(r1.solutions) < 48
    ck = tmp_path / "g5.json"
    checkpoint.save(part, ck)
    resumed = Synthesizer(q, OPTS)
    assert checkpoint.resume(resumed, ck) == []
    r2 = resumed.run()
    assert r2.status == "complete"
    assert _holes(r2) == _holes(g5_full)  # the same members, not just the same classes


def test_resume_reverifies_and_drops_a_planted_candidate(tmp_path: Path, g5_full: SynthResult) -> None:
    """A non-solution planted in a checkpoint fails re-verification on resume, is dropped and reported."""
    q = _query("G5-infinite")
    part = Synthesizer(q, OPTS)
    part.run(should_stop=lambda: part.stats.iterations >= 10)
    ck = tmp_path / "g5.json"
    checkpoint.save(part, ck)
    planted = {h: d[0] for h, d in part.domains.items()}
    assert tuple(sorted(planted.items())) not in _holes(g5_full)
    data = json.loads(ck.read_text())
    data["solutions"].append({h: str(v) for h, v in planted.items()})
    ck.write_text(json.dumps(data))
    resumed = Synthesizer(q, OPTS)
    assert checkpoint.resume(resumed, ck) == [planted]
    assert _holes(resumed.run()) == _holes(g5_full)


def test_resume_refuses_another_model(tmp_path: Path) -> None:
    """The fingerprint covers the model a name resolves to, not just the query's text."""
    q = _query("G5-infinite")
    s = Synthesizer(q, OPTS)
    s.run(should_stop=lambda: s.stats.iterations >= 3)
    ck = tmp_path / "g5.json"
    checkpoint.save(s, ck)
    other = replace(q, scenario=replace(q.scenario, model=replace(q.model, family="ccac", D=1)))
    with pytest.raises(SpecError, match="different question"):
        checkpoint.resume(Synthesizer(other, OPTS), ck)
    with pytest.raises(SpecError, match="different question"):
        checkpoint.resume(Synthesizer(replace(q, scenario=replace(q.scenario, T=q.T + 1)), OPTS), ck)


def test_interrupted_reverification_is_checked_again(tmp_path: Path, g5_full: SynthResult) -> None:
    """A stop during a solution's re-verification records nothing about it: not a
    solution, not unknown, not blocked; the resumed run accepts it."""
    q = _query("G5-infinite")
    s = Synthesizer(q, OPTS)
    stop = {"now": False}
    real = s.reverify

    def interrupted(cand: dict[str, Fraction]) -> bool:
        if s.solutions:  # let one solution through, interrupt the second one's re-check
            stop["now"] = True
            return False  # what an interrupted check answers (unknown)
        return real(cand)

    s.reverify = interrupted  # type: ignore[method-assign]
    r = s.run(should_stop=lambda: stop["now"])
    assert r.status == "interrupted" and len(r.solutions) == 1 and r.unknown_candidates == []
    ck = tmp_path / "g5.json"
    checkpoint.save(s, ck)
    assert "unknown" not in json.loads(ck.read_text())
    resumed = Synthesizer(q, OPTS)
    checkpoint.resume(resumed, ck)
    assert _holes(resumed.run()) == _holes(g5_full)


@pytest.mark.parametrize("text", ["[]", "{}", "not json", '{"format": 2}', '{"format": 1, "fingerprint": "x"}',
                                  ('{"format": 2, "fingerprint": "x", "counterexamples": [], "solutions": [1], '
                                   '"stats": {}}')])
def test_bad_checkpoint_is_one_line(tmp_path: Path, text: str) -> None:
    """A malformed checkpoint given to --resume is refused in one error line (exit 2), no traceback."""
    ck = tmp_path / "c.json"
    ck.write_text(text)
    p = subprocess.run([sys.executable, "-m", "ccmatic.cli.main", "synth", str(T41 / "G1-T4.toml"),
                        "--resume", str(ck)], check=False, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "checkpoint" in p.stderr and "Traceback" not in p.stderr


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails (fsync raises) leaves the old checkpoint intact and no temporary file behind."""
    f = tmp_path / "ck.json"
    atomic_write(f, "old")

    def broken(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        atomic_write(f, "new")
    assert f.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["ck.json"]


sys.path.insert(0, str(ROOT / "benchmarks"))
import signal_latency as latency  # benchmarks/ is no package


def _stop(name: str, sig: int, tmp: Path) -> tuple[int, str, str]:
    """Run the long command ``name`` of benchmarks/signal_latency.py, send ``sig`` once
    it is busy; (exit code, stdout, stderr).  How fast it stops is measured by that
    script; here it must stop within its generous hang limit (HANG_S)."""
    case = latency.CASES[name]
    r = latency.run_and_signal([a.replace("{tmp}", str(tmp)) for a in case.argv], sig, case.ready, case.settle_s)
    assert r.seconds < latency.HANG_S
    return r.code, r.out, r.err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_a_long_verify(tmp_path: Path, sig: int) -> None:
    """A signal during a long Z3 check (after "verifying ...") ends verify with exit 3
    and "interrupted", no traceback."""
    code, _out, err = _stop("verify", sig, tmp_path)
    assert code == 3 and "interrupted" in err and "Traceback" not in err


def test_sigterm_stops_prove_workers(tmp_path: Path) -> None:
    """SIGTERM while prove's two workers check lemmas: exit 3, "interrupted (SIGTERM)"."""
    code, _out, err = _stop("prove", signal.SIGTERM, tmp_path)
    assert code == 3 and "interrupted (SIGTERM)" in err and "Traceback" not in err


def test_sigterm_flushes_the_synth_checkpoint(tmp_path: Path) -> None:
    """SIGTERM after synth has checked candidates: exit 3, and the checkpoint written on
    the way out holds the run's final statistics (those of its JSON report)."""
    ck = tmp_path / "ck.json"
    case = latency.CASES["synth"]
    r = latency.run_and_signal([a.replace("{tmp}", str(tmp_path)) for a in case.argv], signal.SIGTERM,
                               latency.file_exists(ck))
    assert r.code == 3 and "Traceback" not in r.err and r.seconds < latency.HANG_S
    data = json.loads(ck.read_text())
    report = json.loads(r.out)
    assert report["status"] == "interrupted"
    assert data["stats"]["iterations"] == report["iterations"] > 0


@pytest.mark.parametrize("name", ["search", "evaluate"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_search_and_evaluate(tmp_path: Path, name: str, sig: int) -> None:
    """A signal during search (bisection) or evaluate (simulation workers): exit 3, the
    last stderr line says "interrupted", no traceback."""
    code, _out, err = _stop(name, sig, tmp_path)
    assert code == 3 and "interrupted" in err.splitlines()[-1] and "Traceback" not in err


def test_a_signal_waits_for_a_critical_section() -> None:
    """SIGTERM inside ``critical()`` (a worker being spawned) raises nothing there; it
    raises KeyboardInterrupt soon after the section ends, with the signal recorded."""
    import time

    from ccmatic.engine.interrupt import Interrupts, critical

    with Interrupts() as stop:
        with critical():
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 0.2
            while time.monotonic() < deadline:  # bytecodes run: the handler is called, and defers
                pass
        assert stop()
        with pytest.raises(KeyboardInterrupt):
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                time.sleep(0.005)
    assert stop.signum == signal.SIGTERM
