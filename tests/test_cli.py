"""The ``ccmatic`` command: exit codes, --json shapes, plots, list, bench."""

from __future__ import annotations

import io
import json
import time
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import run_cli as run
from helpers import solver_gives_up

from ccmatic.cli.verify import Heartbeat
from ccmatic.engine import session

ROOT = Path(__file__).resolve().parent.parent




def test_verify_proved_exit_0_and_json() -> None:
    """A proved query exits 0; its JSON has the verdict, the horizon, a time and no trace."""
    code, out, _ = run("verify", "cc_qdel-ccac", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["verdict"] == "proved" and d["T"] == 5
    assert isinstance(d["time_s"], float) and d["time_s"] >= 0
    assert "trace" not in d


def test_verify_counterexample_exit_1_exact_json() -> None:
    """A counterexample exits 1; its JSON trace holds exact rational strings that satisfy S <= A - L."""
    code, out, _ = run("verify", "const_rate-ccac", "--json")
    assert code == 1
    d = json.loads(out)
    assert d["verdict"] == "counterexample"
    tr = d["trace"]
    assert tr["T"] == 5 and len(tr["flows"]) == 1
    S = [Fraction(x) for x in tr["aggregate"]["S"]]  # exact rational strings
    A = [Fraction(x) for x in tr["flows"][0]["A"]]
    L = [Fraction(x) for x in tr["flows"][0]["L"]]
    assert all(s <= a - l for s, a, l in zip(S, A, L))
    assert all(isinstance(x, str) for x in tr["flows"][0]["rate"])


def test_verify_text_table_has_columns() -> None:
    """The text report of a proof names the horizon; a counterexample's table has the A, S, L, W, queue and rate columns."""
    code, out, _ = run("verify", "cc_probe_slow-cbrdelay", "--T", "4")
    assert code == 0 and "PROVED for all traces of T=4 steps" in out
    code, out, _ = run("verify", "const_rate-ccac")
    assert code == 1
    header = next(line for line in out.splitlines() if line.strip().startswith("t "))
    for col in ("A", "S", "L", "W", "queue", "rate"):
        assert f" {col} " in f" {header} "


def test_verify_T_override() -> None:
    """--T overrides the query's horizon (and the proof is for that horizon)."""
    code, out, _ = run("verify", "cc_qdel-ccac", "--T", "6", "--json")
    assert code == 0 and json.loads(out)["T"] == 6


def test_verify_unknown_exit_3_on_tiny_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that does not finish within --timeout (made deterministic: Z3's resource
    limit too) gives verdict unknown with a reason, exit code 3."""
    solver_gives_up(monkeypatch)
    code, out, _ = run("verify", "cc_probe_drain-ccac-arbitrary", "--timeout", "0.001", "--json")
    assert code == 3
    d = json.loads(out)
    assert d["verdict"] == "unknown" and "reason" in d


def test_verify_has_no_default_check_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify's checks run until decided unless --timeout is given (other commands keep
    300 s): the solver is configured with Z3's "no limit"."""
    seen: list[float | None] = []
    real = session.set_timeout
    monkeypatch.setattr(session, "set_timeout", lambda s, t: (seen.append(t), real(s, t))[1])
    code, _out, _ = run("verify", "const_rate-ccac", "--json")
    assert code == 1 and seen and all(t is None for t in seen)
    seen.clear()
    code, _out, _ = run("verify", "const_rate-ccac", "--json", "--timeout", "40")
    assert code == 1 and seen and all(t == 40 for t in seen)


def test_verify_heartbeat_says_still_checking() -> None:
    """While a check runs, verify writes a 'still checking' line every BEAT_S seconds,
    and none once stopped."""
    err = io.StringIO()
    beat = Heartbeat(err, None, every_s=0.02)
    beat.start()
    time.sleep(0.15)
    beat.stop()
    lines = err.getvalue().splitlines()
    assert lines and all("still checking after" in ln and "no limit" in ln for ln in lines)
    time.sleep(0.05)
    assert err.getvalue().splitlines() == lines
    quiet = io.StringIO()
    Heartbeat(quiet, 300, every_s=0.02).stop()  # never started (--json): nothing
    assert quiet.getvalue() == ""


def test_plot_writes_png(tmp_path: Path) -> None:
    """--plot writes a PNG of a counterexample."""
    png = tmp_path / "cex.png"
    code, _out, _ = run("verify", "aimd-ccac-premature-loss", "--plot", str(png))
    assert code == 1
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_plot_not_written_for_proof(tmp_path: Path) -> None:
    """--plot writes nothing for a proof and says so."""
    png = tmp_path / "none.png"
    code, out, _ = run("verify", "cc_qdel-ccac", "--plot", str(png))
    assert code == 0 and not png.exists() and "nothing to plot" in out


def test_list_json_finds_library() -> None:
    """list --json names the shipped models, CCAs and queries, none of them invalid."""
    code, out, _ = run("list", "--json")
    assert code == 0
    d = json.loads(out)
    names = {k: {x["name"] for x in v} for k, v in d.items()}
    assert {"ccac", "ccac_noncompose", "cbr_delay", "ideal"} <= names["models"]
    assert {"cc_qdel", "aimd", "copa", "bbr", "const_rate"} <= names["templates"]
    assert "cc_qdel-ccac" in names["queries"]
    assert all("invalid" not in x["description"] for v in d.values() for x in v)


def test_bench_json_rows(tmp_path: Path) -> None:
    """bench --json gives one row per query, in order, with its times and the expected verdict."""
    q = ROOT / "queries" / "verify"
    code, out, _ = run("bench", str(q / "cc_qdel-ccac.toml"), str(q / "const_rate-ccac.toml"), "--json")
    assert code == 0
    d = json.loads(out)
    assert [Path(r["query"]).stem for r in d["rows"]] == ["cc_qdel-ccac", "const_rate-ccac"]
    for r in d["rows"]:
        assert {"process_s", "wall_s", "encode_s", "solve_s", "verdict"} <= set(r)
        assert r["verdict"] == r["expect"]
        # process start to exit includes the in-process time (and start-up)
        assert r["process_s"] > r["wall_s"] > 0


def test_bench_repeat_takes_the_median(tmp_path: Path) -> None:
    """bench --repeat 3 reports the median of three runs; --repeat 0 is refused."""
    code, out, _ = run("bench", "const_rate-ccac", "--repeat", "3", "--json")
    assert code == 0
    (r,) = json.loads(out)["rows"]
    assert len(r["process_all_s"]) == 3 and sorted(r["process_all_s"])[1] == r["process_s"]
    assert run("bench", "const_rate-ccac", "--repeat", "0")[0] == 2


def test_check_reports_reads() -> None:
    """check --json says which outputs a CCA sets and which observations it reads."""
    code, out, _ = run("check", "copa", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["sets_cwnd"] and d["sets_rate"]
    assert "qdel_hi" in d["reads"] and "C" not in d["reads"]


@pytest.mark.parametrize("argv", [["--version"], ["verify", "--help"]])
def test_help_and_version_exit_0(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """--version and verify --help exit 0."""
    assert run(*argv)[0] == 0
