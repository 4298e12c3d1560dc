"""Interrupts and checkpoints neither lose nor invent results: resumed runs print
exactly the uninterrupted run's solutions, every stored solution is re-verified, a
checkpoint of another question is refused, an interrupted re-verification leaves its
candidate to be checked again, and Ctrl-C / SIGTERM stop every command within a
second with exit code 3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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
    ck = tmp_path / "c.json"
    ck.write_text(text)
    p = subprocess.run([sys.executable, "-m", "ccmatic.cli.main", "synth", str(T41 / "G1-T4.toml"),
                        "--resume", str(ck)], check=False, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "checkpoint" in p.stderr and "Traceback" not in p.stderr


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "ck.json"
    atomic_write(f, "old")

    def broken(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        atomic_write(f, "new")
    assert f.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["ck.json"]


def _signal_after(argv: list[str], sig: int, delay: float, cwd: Path) -> tuple[int, str, float]:
    """Run ccmatic, send ``sig`` after ``delay`` seconds; (exit code, stderr, seconds to exit)."""
    p = subprocess.Popen([sys.executable, "-m", "ccmatic.cli.main", *argv], cwd=cwd, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay)
    assert p.poll() is None, "finished before the signal"
    t0 = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    return p.returncode, err, time.monotonic() - t0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_a_long_verify(sig: int) -> None:
    code, err, took = _signal_after(["verify", "cc_probe_fast-ccac-small"], sig, 4.0, ROOT)
    assert code == 3 and "interrupted" in err and "Traceback" not in err
    assert took < 1.5


def test_sigterm_stops_prove_workers() -> None:
    code, err, took = _signal_after(["prove", "cc_qdel-ccac", "--jobs", "2"], signal.SIGTERM, 6.0, ROOT)
    assert code == 3 and "interrupted (SIGTERM)" in err and "Traceback" not in err
    assert took < 2.0


def test_sigterm_flushes_the_synth_checkpoint(tmp_path: Path) -> None:
    ck = tmp_path / "g6.json"
    code, err, took = _signal_after(["synth", str(T41 / "G6.toml"), "--checkpoint", str(ck), "--json"],
                                    signal.SIGTERM, 5.0, ROOT)
    assert code == 3 and "Traceback" not in err and took < 2.0
    data = json.loads(ck.read_text())
    assert data["stats"]["iterations"] > 0


@pytest.mark.parametrize("argv", [
    ["search", "cc_qdel-ccac", "--lemma", "B.4.7", "--constant", "util"],
    ["evaluate", "reno", "--jobs", "2", "--out", "{tmp}"],
])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_search_and_evaluate(tmp_path: Path, argv: list[str], sig: int) -> None:
    code, err, took = _signal_after([a.replace("{tmp}", str(tmp_path / "ev")) for a in argv], sig, 5.0, ROOT)
    assert code == 3 and "interrupted" in err.splitlines()[-1] and "Traceback" not in err
    assert took < 1.5
