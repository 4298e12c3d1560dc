"""The published models the simulator is compared with (ccmatic/sim/theory.py), and
the benchmark scripts that compare them (benchmarks/), on small runs so they cannot rot."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from ccmatic.sim import theory
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import sim_models
import sim_scale


def test_mathis() -> None:
    # 1500-byte packets, 100 ms, p = 1%: sqrt(3/2) * 1500 / (0.1 * 0.1)
    assert theory.mathis_throughput(1500, 0.1, 0.01) == pytest.approx(math.sqrt(1.5) * 150000)


def test_bbr_fluid_model_shallow_buffer_equilibrium() -> None:
    """Theorem 3: estimates 5C/(4N+1); the aggregate 5NC/(4N+1) loses its excess."""
    assert theory.bbr_shallow_buffer_estimate(1) == 1
    assert theory.bbr_shallow_buffer_estimate(4) == pytest.approx(5 / 17)
    for n in (1, 2, 4, 8):
        sent = n * theory.bbr_shallow_buffer_estimate(n)
        assert theory.bbr_shallow_buffer_loss(n) == pytest.approx(1 - 1 / sent)


def test_bbr_vs_cubic_model() -> None:
    """Mishra et al.'s Eq. 18-20: at B = 3 BDP the root is b_b = 3/2 and BBR gets half;
    BBR's share falls as the buffer deepens."""
    assert theory.bbr_vs_cubic_share(3) == pytest.approx(0.5, abs=1e-9)
    assert theory.bbr_vs_cubic_share(2) == pytest.approx(0.626, abs=1e-3)
    shares = [theory.bbr_vs_cubic_share(b) for b in (1.5, 2, 3, 4, 5, 10)]
    assert shares == sorted(shares, reverse=True)
    with pytest.raises(ValueError):
        theory.bbr_vs_cubic_share(1)


def test_scale_benchmark_counts_halvings_and_mathis_errors() -> None:
    assert sim_scale.halvings([10, 10, 5, 6, 7, 3.5, 4], [0, 1, 2, 3, 4, 5, 6], 0) == 2
    assert sim_scale.halvings([10, 10, 5, 6, 7, 3.5, 4], [0, 1, 2, 3, 4, 5, 6], 4) == 1
    reno = sim_scale.cca("reno")
    res = sim_scale.simulate(sim_scale.config([reno] * 4, 24, 40, 30))
    by_loss, by_halving = sim_scale.mathis_errors(res, 10)
    assert 0 <= by_halving < 0.3 and 0 <= by_loss < 1


def test_scale_benchmark_counts_a_gradual_reduction_once() -> None:
    """The kernel's recovery (PRR) lowers cwnd over a round trip, several samples of
    the testbed's series: one reduction, however many samples it spans."""
    t = list(range(8))
    assert sim_scale.halvings([20, 20, 14, 10, 11, 12, 6, 7], t, 0) == 2
    assert sim_scale.halvings([20, 16, 13, 13, 14], t[:5], 0) == 1  # no single step cuts a quarter
    assert sim_scale.halvings([20, 19, 19, 20], t[:4], 0) == 0


def test_mathis_table_reads_p_each_way() -> None:
    """A flow at exactly Mathis' throughput for p = halvings per packet sent, losing two
    packets per halving: the halving rate gives no error, the loss rate sqrt(2) - 1."""
    rtt, sent = 0.1, 1e6
    thr = theory.mathis_throughput(1500, rtt, 100 / sent)
    f = sim_scale.RenoFlow(thr, rtt, rtt / 2, sent, 200, 100, 100)
    table = {(p, r): (e, s, m) for p, r, e, s, m in sim_scale.mathis_table([f], 1500)}
    assert table[("halving rate", "mean RTT")][0] == pytest.approx(0, abs=1e-12)
    e, s, m = table[("loss rate", "mean RTT")]
    assert e == pytest.approx(math.sqrt(2) - 1) and s == pytest.approx(e) and m == pytest.approx(1 - 1 / math.sqrt(2))
    assert table[("halving rate", "RTprop")][1] == pytest.approx(-0.5)  # half the RTT doubles the prediction


def test_scale_benchmark_reads_a_runs_outputs(tmp_path: Path) -> None:
    """``mathis`` reads a run's --json and --series as ``run`` reads the simulation."""
    js, csv = tmp_path / "r.json", tmp_path / "r.csv"
    code, out, _err = run_cli("simulate", "reno", "--flows", "2", "--C", "10", "--R", "20", "--duration", "10",
                              "--json", "--series", csv)
    assert code == 0
    js.write_text(out)
    flows, mss = sim_scale.series_reno_flows(js, csv, "reno")
    direct = sim_scale.reno_flows(sim_scale.simulate(sim_scale.config([sim_scale.cca("reno")] * 2, 10, 20, 10)), 2)
    assert mss == 1500 and len(flows) == 2
    for a, b in zip(flows, direct, strict=True):
        assert a.halvings == b.halvings > 0
        # the series starts at the first step boundary after the warm-up, within an RTprop of it
        assert a.lost == pytest.approx(b.lost, rel=0.05) and a.sent == pytest.approx(b.sent, rel=0.01)


def test_models_benchmark_runs() -> None:
    _res, m = sim_models.run([sim_models.cca("reno")], 24, 20, 1, 5, 0)
    assert m.utilization > 0.5
