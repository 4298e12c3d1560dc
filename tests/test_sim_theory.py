"""The published models the simulator is compared with (ccmatic/sim/theory.py), and
the benchmark scripts that compare them (benchmarks/), on small runs so they cannot rot."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from ccmatic.sim import theory

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


def test_models_benchmark_runs() -> None:
    _res, m = sim_models.run([sim_models.cca("reno")], 24, 20, 1, 5, 0)
    assert m.utilization > 0.5
