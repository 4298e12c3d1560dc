"""The metrics gathered in chunks as a run goes (sim/tally.py) are the metrics of the
whole record: the same numbers however the ticks and RTT samples are cut."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ccmatic.sim.fine import CHUNK, simulate, simulate_metrics
from ccmatic.sim.links import Link
from ccmatic.sim.metrics import Metrics, metrics, tallied
from ccmatic.sim.records import Flow, SimConfig, SimResult
from ccmatic.sim.tally import Tally
from ccmatic.spec.cca import load_cca

ROOT = Path(__file__).resolve().parent.parent
MBPS = 1e6 / 8


@pytest.fixture(scope="module")
def lossy() -> SimResult:
    """Three Reno flows of different RTprops on a half-BDP buffer: losses in every flow."""
    reno = load_cca(ROOT / "templates" / "reno.cca")
    C = 12 * MBPS
    flows = tuple(Flow(reno, R) for R in (0.02, 0.04, 0.06))
    return simulate(SimConfig(Link("ideal", C, 0.0, 0.5 * C * 0.02), flows, 8.0, seed=3))


def _chunked(res: SimResult, warmup: float, seed: int) -> Metrics:
    rng = np.random.default_rng(seed)
    t = Tally(res.config, res.dt, len(res.queue), warmup)
    cuts = np.sort(rng.choice(np.arange(1, len(res.queue)), size=12, replace=False))
    for a, b in zip([0, *cuts], [*cuts, len(res.queue)], strict=True):
        t.add_ticks(res.queue[a:b], res.queue_peak[a:b], res.delivered[a:b], res.sent[a:b], res.lost[a:b])
    for f, rs in enumerate(res.rtt_samples):
        times, rtts = np.frombuffer(rs.time, dtype=float), np.frombuffer(rs.rtt, dtype=float)
        for part in np.array_split(np.arange(len(rtts)), 5):
            t.add_rtts(f, times[part], rtts[part])
    return tallied(t)


@pytest.mark.parametrize("warmup", [0.0, 1.3, 4.0])
def test_chunks_give_the_whole_records_metrics(lossy: SimResult, warmup: float) -> None:
    whole = metrics(lossy, warmup)
    assert sum(f.loss_events for f in whole.flows) > 3 and whole.loss_rate > 0  # the case is exercised
    for seed in range(3):
        got = _chunked(lossy, warmup, seed)
        for name in ("utilization", "queue_mean_bytes", "queue_max_bytes", "loss_per_R_mean", "loss_per_R_max",
                     "loss_rate", "convergence_time", "jain"):
            assert getattr(got, name) == getattr(whole, name), name
        for a, b in zip(got.flows, whole.flows, strict=True):
            assert (a.throughput, a.loss_rate, a.loss_events, a.rtt_max) == (b.throughput, b.loss_rate, b.loss_events,
                                                                                b.rtt_max)
            assert math.isclose(a.rtt_mean, b.rtt_mean, rel_tol=1e-12)  # sums of RTTs in another order


def test_a_streamed_run_has_the_recorded_runs_metrics(lossy: SimResult) -> None:
    """simulate_metrics keeps 256 ticks of records at a time and no per-step records;
    its metrics are the recorded run's (the same random stream), RTT means to the
    last bit."""
    whole = metrics(lossy, 1.3)
    got = simulate_metrics(lossy.config, 1.3)
    assert len(lossy.queue) > 3 * CHUNK  # several chunks
    assert (got.utilization, got.loss_rate, got.loss_per_R_max, got.jain, got.queue_mean_bytes) == (
        whole.utilization, whole.loss_rate, whole.loss_per_R_max, whole.jain, whole.queue_mean_bytes)
    for a, b in zip(got.flows, whole.flows, strict=True):
        assert (a.throughput, a.loss_events, a.rtt_max) == (b.throughput, b.loss_events, b.rtt_max)
        assert math.isclose(a.rtt_mean, b.rtt_mean, rel_tol=1e-12)
