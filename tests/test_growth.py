"""Horizon benchmarks (issue 26): the growth fit of ``ccmatic bench --horizons``
(``ccmatic/io/growth.py``), its rows' assertion counts, and the pure parts of
``benchmarks/ccac_horizons.py`` (CCAC itself is not needed: its runs are a benchmark)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import run_cli as run

from ccmatic.io.growth import bench_growth, fit_growth, least_squares

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import ccac_horizons


def test_least_squares_recovers_a_line() -> None:
    slope, icpt, r2 = least_squares([1, 2, 3, 4], [3, 5, 7, 9])
    assert (slope, icpt, r2) == pytest.approx((2, 1, 1))
    with pytest.raises(ValueError):
        least_squares([2, 2], [1, 3])


def test_fit_tells_exponential_from_power_law() -> None:
    """Exact 0.3·1.6^T gives the factor 1.6 and prefers the exponential; exact
    0.01·T^3 gives the power 3 and prefers the power law."""
    exp = fit_growth("e", [(T, 0.3 * 1.6 ** T) for T in range(3, 12)])
    assert exp is not None
    assert exp.factor == pytest.approx(1.6) and exp.exp_r2 == pytest.approx(1)
    assert exp.better == "exponential" and exp.power_r2 < 0.999
    assert exp.exponential_at(5) == pytest.approx(0.3 * 1.6 ** 5)
    assert "x1.60 per step of T" in exp.text() and "T = 3..11" in exp.text()
    pw = fit_growth("p", [(T, 0.01 * T ** 3) for T in (10, 15, 20, 30)])
    assert pw is not None
    assert pw.power == pytest.approx(3) and pw.better == "power law" and pw.exp_r2 < pw.power_r2


def test_fit_needs_three_horizons_of_positive_time() -> None:
    assert fit_growth("q", [(3, 1.0), (4, 2.0)]) is None
    assert fit_growth("q", [(3, 1.0), (4, 2.0), (5, 0.0)]) is None
    assert fit_growth("q", [(3, 1.0), (3, 1.1), (4, 2.0)]) is None


def test_bench_growth_fits_answered_rows_per_query() -> None:
    """One fit per query, over its rows that ended with an answer: an unknown verify
    row (a timeout's time is only a lower bound) is left out."""
    rows = [{"query": "q/a.toml", "T": T, "process_s": 2.0 ** T, "verdict": "proved"} for T in (3, 4, 5)]
    rows += [{"query": "q/b.toml", "T": T, "process_s": 1.5 ** T, "status": "complete"} for T in (3, 4, 5)]
    rows += [{"query": "q/a.toml", "T": 6, "process_s": 1.0, "verdict": "unknown"}]
    fits = {g.name: g for g in bench_growth(rows)}
    assert set(fits) == {"a", "b"}
    assert fits["a"].Ts == (3, 4, 5) and fits["a"].factor == pytest.approx(2)
    assert fits["b"].factor == pytest.approx(1.5)


def test_bench_horizons_rows_carry_assertions_and_a_fit() -> None:
    """bench --horizons with three horizons: each verify row has the deciding check's
    assertion count (from verify --json), growing with T, and the run has a fit."""
    code, out, _ = run("bench", "const_rate-ccac", "--horizons", "3,4,5", "--repeat", "1", "--json")
    assert code == 0
    d = json.loads(out)
    counts = [r["n_constraints"] for r in d["rows"]]
    assert [r["T"] for r in d["rows"]] == [3, 4, 5]
    assert all(isinstance(n, int) and n > 0 for n in counts) and counts == sorted(set(counts))
    (fit,) = d["fits"]
    assert fit["query"] == "const_rate-ccac" and fit["T"] == [3, 4, 5]
    assert fit["better"] in ("exponential", "power law") and fit["factor_per_step"] > 0


def test_ccac_driver_flags_a_disagreement() -> None:
    """The side-by-side driver maps CCAC's sat/unsat to witness/no_witness, computes
    the speed-up from process walls, and says loudly when the verdicts differ."""
    row = {"row": "copa_low_util", "T": 10, "ccac": {"wall_s": 4.0, "verdict": "unsat", "assertions": 553},
           "ccmatic": {"wall_s": 1.0, "verdict": "no_witness", "assertions": 1048}}
    same = ccac_horizons.finish(row)
    assert same["agree"] is True and same["speedup"] == 4.0
    assert "DISAGREE" not in ccac_horizons.text_line(same)
    row = {"row": "bbr_low_util", "T": 10, "ccac": {"wall_s": 2.0, "verdict": "sat"},
           "ccmatic": {"wall_s": 1.0, "verdict": "no_witness"}}
    differ = ccac_horizons.finish(row)
    assert differ["agree"] is False and "DISAGREE" in ccac_horizons.text_line(differ)
    over = ccac_horizons.finish({"row": "bbr_low_util", "T": 30, "ccac": {"wall_s": 1830.0, "verdict": "over limit"},
                                 "ccmatic": {"wall_s": 9.0, "verdict": "witness"}})
    assert "agree" not in over and "over limit" in ccac_horizons.text_line(over)


def test_ccac_driver_rows_name_existing_queries() -> None:
    for name, row in ccac_horizons.ROWS.items():
        assert (ROOT / row.query).is_file(), name
        assert row.ccac or row.note, name  # a ccmatic-only row says why


def test_ccac_driver_does_not_repeat_a_run_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A side over the limit is run once, and not at a larger T; the other side is
    repeated (median) and goes on; --once-from runs long horizons once."""
    calls: list[tuple[str, int]] = []

    def fake_ccac(_dir: Path, name: str, T: int, limit: float, _env: dict[str, str]) -> dict[str, object]:
        calls.append(("ccac", T))
        return {"wall_s": limit + 1, "verdict": "over limit"} if T >= 15 else {"wall_s": 2.0, "verdict": "sat"}

    def fake_ccmatic(query: str, T: int, limit: float, _env: dict[str, str]) -> dict[str, object]:
        calls.append(("ccmatic", T))
        return {"wall_s": float(len(calls)), "verdict": "witness"}

    monkeypatch.setattr(ccac_horizons, "run_ccac", fake_ccac)
    monkeypatch.setattr(ccac_horizons, "run_ccmatic", fake_ccmatic)
    args = ccac_horizons.argparse.Namespace(ccac=Path("."), repeat=3, once_from=30, limit=10.0, env={})
    skip: set[tuple[str, str]] = set()
    rows = [ccac_horizons.measure(args, "bbr_low_util", T, skip) for T in (10, 15, 20, 30)]
    assert calls.count(("ccac", 10)) == 3 and calls.count(("ccac", 15)) == 1
    assert ("ccac", 20) not in calls and calls.count(("ccmatic", 20)) == 3 and calls.count(("ccmatic", 30)) == 1
    assert rows[0]["agree"] is True and len(rows[0]["ccmatic"]["wall_all_s"]) == 3
    assert rows[1]["ccac"]["verdict"] == "over limit" and rows[2]["ccac"]["verdict"].startswith("not run")


def test_ccac_driver_runs_both_sides_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both sides get one environment: Python's bytecode cached in the run's folder
    (as after an install), or none at all; the user's own setting of either is replaced."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    cached = ccac_horizons.child_env(tmp_path)
    assert cached["PYTHONPYCACHEPREFIX"] == str(tmp_path) and "PYTHONDONTWRITEBYTECODE" not in cached
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path))
    none = ccac_horizons.child_env(None)
    assert none["PYTHONDONTWRITEBYTECODE"] == "1" and "PYTHONPYCACHEPREFIX" not in none
