"""benchmarks/kernel_yardstick.py (docs/testbed.md, "The kernel as yardstick"): its
helpers, its refusals, and a small simulator-only run, so that the script cannot rot
where the kernel's runs cannot be made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import kernel_yardstick as ky
import yardstick_parking as yp
import yardstick_runs as yr


def test_slope_tells_linear_from_square_root_growth() -> None:
    xs = [40.0, 80.0, 160.0, 320.0]
    linear, root = ky.slope(xs, [0.02 * x for x in xs]), ky.slope(xs, [x ** 0.5 for x in xs])
    assert linear is not None and abs(linear - 1) < 1e-9
    assert root is not None and abs(root - 0.5) < 1e-9
    assert ky.slope([40.0], [1.0]) is None and ky.slope(xs, [0.0] * 4) is None


def test_figures_show_runs_and_spread() -> None:
    assert ky.fig([]) == "–"
    assert ky.fig([0.384]) == "0.38"
    assert ky.fig([0.3, 0.5]) == "0.40 ± 0.10 (2)"


def test_bbr_estimates_from_either_series(tmp_path: Path) -> None:
    """Each flow's mean BBR estimate after the warm-up, over the payload rate: the
    kernel's in bytes per second and seconds, the simulator's in bytes per step and
    steps (R = 40 ms); rows before the warm-up and flows without the state left out."""
    kernel = tmp_path / "k.csv"
    kernel.write_text("flow,cca,time_s,state.linux_btl_bw_Bps,state.linux_rtprop_s\n"
                      "0,bbr,0.5,9000000,0.1\n0,bbr,2.0,3000000,0.040\n0,bbr,3.0,1500000,0.042\n"
                      "1,cubic,2.0,,\n")
    k = ky.bbr_estimates({"config": {"C_payload_bytes_per_s": 6e6, "warmup_s": 1.0}}, kernel, "testbed")
    assert k["btl_bw_over_C"] == pytest.approx([0.375]) and k["rtprop_s"] == pytest.approx([0.041])
    sim = tmp_path / "s.csv"
    # in the long-term mode the estimate is lt_bw, as Linux's bbr_bw() reports it
    sim.write_text("flow,cca,time_s,state.btl_bw,state.rtprop,state.lt_use,state.lt_bw\n"
                   "0,bbr1,2.0,120000,1.0,0,0\n1,bbr1,2.0,60000,1.5,0,0\n1,bbr1,3.0,60000,1.5,1,30000\n")
    cfg = {"C_bytes_per_s": 6e6, "warmup_s": 1.0, "flows": [{"R_s": 0.04}, {"R_s": 0.04}]}
    s = ky.bbr_estimates({"config": cfg}, sim, "simulate")
    assert s["btl_bw_over_C"] == pytest.approx([0.5, 0.1875]) and s["rtprop_s"] == pytest.approx([0.04, 0.06])


def test_held_counts_only_long_stretches_at_one_rate_and_gain_one() -> None:
    """(b)'s long-term mode from outside: 1.5 s at one rate with gain 1 counts; the
    gain cycle's short stretches, and a long one at another gain, do not."""
    steady = [(t / 10, 5.0, True) for t in range(16)]            # 0.0-1.5 s at one rate
    cycling = [(1.6 + t / 10, 6.0 + t % 8, True) for t in range(20)]  # 1.6-3.5 s, changing
    probing = [(3.6 + t / 10, 7.0, False) for t in range(15)]    # 3.6-5.0 s at gain 1.25
    rows = steady + cycling + probing
    assert yr.held_fraction(rows) == pytest.approx(1.5 / 5.0)
    assert yr.held_fraction(cycling) == 0.0 and yr.held_fraction(steady[:1]) == 0.0
    assert yr.held_fraction(steady[:10]) == 0.0  # 0.9 s: too short


def test_parking_lot_unfairness_is_short_over_long() -> None:
    """(f)'s figure: the short flows' mean throughput over the long flow's (flow 0)."""
    doc = {"metrics": {"flows": [{"throughput": 2.0}, {"throughput": 5.0}, {"throughput": 7.0}]}}
    assert yp.unfairness(doc) == 3.0
    assert yp.unfairness({"metrics": {"flows": [{"throughput": 0.0}, {"throughput": 1.0}]}}) == float("inf")


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "kernel_yardstick.py"), *argv],
                          capture_output=True, text=True, cwd=ROOT, check=False)


def test_unknown_experiment_or_side_is_refused() -> None:
    for argv in (["--only", "z"], ["--sides", "kernel,ns2"], ["--seeds", "0"]):
        p = _run(*argv)
        assert p.returncode == 2 and "error:" in p.stderr, (argv, p.stderr)


@pytest.mark.slow
def test_simulator_side_of_reno_vs_mathis(tmp_path: Path) -> None:
    """(c) with the simulator alone, 3 s runs: a table row per path, JSON per run (each
    path's run twice: evenly spread and in pairs, ``--burst 2``)."""
    out = tmp_path / "y.json"
    p = _run("--only", "c", "--sides", "sim", "--sim-seeds", "1", "--duration", "3", "--json", str(out))
    assert p.returncode == 0, p.stderr
    rows = [line for line in p.stdout.splitlines() if line.startswith(("| 24 ", "| 96 "))]
    assert len(rows) == 3
    doc = json.loads(out.read_text())
    assert [r["command"].split()[1] for r in doc["runs"]] == ["simulate"] * 6
    assert sum(r["command"].endswith("--burst 2 --seed 0") for r in doc["runs"]) == 3
    assert all(r["rc"] == 0 and 0.5 < r["metrics"]["utilization"] <= 1.01 for r in doc["runs"])
