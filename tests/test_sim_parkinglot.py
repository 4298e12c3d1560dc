"""The fine mode's parking lot (``simulate --topology parking-lot --hops K``,
:mod:`ccmatic.sim.topology`) and persistent extra ACK delay (``--extra-delay``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli as run

from ccmatic.sim.fine import simulate
from ccmatic.sim.links import Link
from ccmatic.sim.metrics import metrics
from ccmatic.sim.records import Flow, SimConfig, SimResult
from ccmatic.sim.topology import hop_metrics
from ccmatic.spec.cca import load_cca

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
MBPS = 1e6 / 8
ERROR = re.compile(r"^--(hops|topology|flows|buffer|rate-schedule|extra-delay): error: .+ \(hint: .+\)$")


def _lot(cca: str, hops: int, duration: float, seed: int = 0, C: float = 100 * MBPS, R: float = 0.010) -> SimResult:
    prog = load_cca(TEMPLATES / f"{cca}.cca")
    flows = tuple(Flow(prog, R) for _ in range(hops + 1))
    return simulate(SimConfig(Link("ideal", C, 0.0, None), flows, duration, seed=seed,
                              topology="parking_lot", hops=hops))


def test_parking_lot_conserves_bytes() -> None:
    """On a 3-hop parking lot no hop serves more than C, the long flow never speeds up from hop to hop, and each short flow gets what its hop served of it."""
    res = _lot("contract_lin", 3, 4.0)
    rec = res.hop_record
    assert rec is not None and rec.served.shape[1] == 3
    C, dt, mss = res.config.link.C, res.dt, res.config.mss
    ends = (np.arange(len(res.queue)) + 1) * dt
    for j in range(3):
        # no hop serves more than C in any prefix of the run (one packet of slack)
        assert np.all(np.cumsum(rec.served[:, j]) <= C * ends + mss + 1e-6)
        assert rec.served[:, j].sum() > 0.9 * C * 4.0
    # flow 0 leaves a hop no faster than it got through the one before, and is
    # delivered no faster than it got through the first
    long_ = np.cumsum(rec.served_long, axis=0)
    assert np.all(long_[:, 1:] <= long_[:, :-1] + 1e-6)
    assert np.all(np.cumsum(res.delivered[:, 0]) <= long_[:, 0] + 1e-6)
    # short flow i is delivered exactly what hop i served of it
    for j in range(3):
        assert res.delivered[:, j + 1].sum() == pytest.approx(rec.served[:, j].sum() - rec.served_long[:, j].sum())


def test_a_later_hops_drop_is_the_long_flows_loss() -> None:
    """Finite buffers on every hop: flow 1 never starts, so hop 1 carries flow 0 alone
    and never fills, and flow 0's losses are hop 2's drops, counted in its L: it keeps
    its share of hop 2 against Reno flow 2, and what it has in flight at the end (A − L
    − S) is at most what its two queues and its ACK path can hold.  Counted nowhere,
    the drops would stay in flight for ever (153 packets against at most 123 in this
    run) and flow 0 would starve."""
    reno = load_cca(TEMPLATES / "reno.cca")
    C, R, dur = 24 * MBPS, 0.020, 30.0
    beta, mss = C * R, 1500.0
    flows = (Flow(reno, R), Flow(reno, R, start=dur), Flow(reno, R))
    res = simulate(SimConfig(Link("ideal", C, 0.0, beta), flows, dur, seed=0, topology="parking_lot", hops=2))
    rec = res.hop_record
    assert rec is not None
    assert rec.queue[:, 0].max() < beta - mss and rec.queue[:, 1].max() <= beta + 1e-6
    lost = res.lost.sum(axis=0)
    assert lost[0] > 30 * mss and lost[1] == 0
    in_flight = np.cumsum(res.sent - res.lost - res.delivered, axis=0)
    assert in_flight.min() >= -1e-6
    assert in_flight[-1, 0] <= 2 * beta + C * R + 2 * mss
    m = metrics(res, 5.0)
    assert m.flows[0].throughput > 0.35 * C and hop_metrics(res, 5.0)[1].utilization > 0.95


def test_long_flow_of_a_delay_based_cca_gets_less() -> None:
    """A delay-based CCA's long flow gets under 60% of the short flows' throughput and sees a longer RTT, with every hop over 95% busy."""
    res = _lot("contract_lin", 3, 8.0)
    m = metrics(res, 3.0)
    tput = [f.throughput for f in m.flows]
    assert tput[0] < 0.6 * min(tput[1:])
    hops = hop_metrics(res, 3.0)
    assert len(hops) == 3 and all(h.utilization > 0.95 for h in hops)
    # flow 0 sees every hop's queue
    assert m.flows[0].rtt_mean > max(f.rtt_mean for f in m.flows[1:])


@pytest.mark.parametrize("seed", [0, 1])
def test_contract_lin_two_hop_ratio_near_its_contract(seed: int) -> None:
    """Thesis Fig. 6.6: the 1/s contract predicts a ratio of k = 2 on 2 hops."""
    m = metrics(_lot("contract_lin", 2, 12.0, seed), 4.0)
    tput = [f.throughput for f in m.flows]
    ratio = (tput[1] + tput[2]) / 2 / tput[0]
    assert 2 / 1.3 < ratio < 2 * 1.3


def test_dumbbell_output_unchanged() -> None:
    """A dumbbell run gives the numbers it gave once losses were detected one RTprop
    after they happened (issue 28; before, the compiled loop gave other numbers with
    the same seed, and the Python loop those of commit 0e3cc8b): the packets each flow
    delivered exactly, the delays, queue and fairness to 1e-9; the neutral flags change
    nothing."""
    argv = ("simulate", "reno", "--model", "cbr_delay", "--flows", "2", "--duration", "5", "--seed", "3", "--json")
    code, out, _ = run(*argv)
    assert code == 0
    m = json.loads(out)["metrics"]
    # whole packets delivered in the 4 s after the 1 s warm-up
    assert [f["throughput"] for f in m["flows"]] == [7415 * 1500 / 4, 8226 * 1500 / 4]
    assert (m["utilization"], m["loss_rate"]) == (0.9775625, 0.0)
    near = {"queue_mean_bytes": 42126.51266245449, "queue_max_bytes": 141216.21983305374,
            "jain": 0.9973186924236934, "convergence_time": 0.752}
    assert {k: m[k] for k in near} == pytest.approx(near, rel=1e-9)
    rtts = [(f["rtt_mean"], f["rtt_max"]) for f in m["flows"]]
    assert rtts == [pytest.approx((0.08199783420102338, 0.09996108485882882), rel=1e-9),
                    pytest.approx((0.0820738610522068, 0.09664313188266682), rel=1e-9)]
    assert json.loads(run(*argv, "--topology", "dumbbell", "--extra-delay", "0")[1]) == json.loads(out)


@pytest.mark.parametrize("argv", [
    ("--topology", "parking-lot", "--hops", "0"),
    ("--topology", "parking-lot", "--hops", "-2"),
    ("--topology", "parking-lot", "--hops", "99"),
    ("--hops", "2"),                                   # no parking lot
    ("--topology", "ring"),
    ("--topology", "parking-lot", "--hops", "2", "--flows", "2"),
    ("--topology", "parking-lot", "--rate-schedule", "1:10"),
    ("--extra-delay", "1,2,3"),                        # neither one nor one per flow (2)
    ("--extra-delay", "-1"),
    ("--extra-delay", "x"),
    ("--extra-delay", "nan"),
])
def test_bad_topology_flags_are_one_line_errors(argv: tuple[str, ...]) -> None:
    """Bad --topology/--hops/--extra-delay combinations are refused in one error line with a hint (exit 2)."""
    flows = () if "--topology" in argv else ("--flows", "2")
    code, out, err = run("simulate", "reno", "--duration", "1", *flows, *argv)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and ERROR.match(lines[0]), err


def test_parking_lot_cli_text_and_json() -> None:
    """simulate on a parking lot reports the topology, one row per hop and the extra delays, in JSON and in text."""
    code, out, err = run("simulate", "contract_lin", "--topology", "parking-lot", "--hops", "2", "--C", "100",
                         "--R", "10", "--duration", "2", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["config"]["topology"] == {"kind": "parking_lot", "hops": 2} and len(d["config"]["flows"]) == 3
    assert d["config"]["buffer_bytes"] is None and len(d["metrics"]["hops"]) == 2
    code, out, err = run("simulate", "contract_lin", "--topology", "parking-lot", "--hops", "1", "--C", "100",
                         "--R", "10", "--duration", "2", "--buffer", "1", "--extra-delay", "0,2")
    assert code == 0, err
    lines = out.splitlines()
    assert "on a 1-hop parking lot (ideal)" in lines[0] and "extra delay 0,2 ms" in lines[0]
    assert sum(line.startswith("  hop ") for line in lines) == 1


def test_extra_delay_shifts_exactly_that_flows_rtt() -> None:
    """One packet per RTprop on an empty link: flow 1's RTT samples are flow 0's plus
    its extra delay, and its CCA still sees R = 40 ms."""
    prog = load_cca(TEMPLATES / "const_rate.cca")
    flows = (Flow(prog, 0.040), Flow(prog, 0.040, extra=0.005))
    res = simulate(SimConfig(Link("ideal", 48 * MBPS, 0.0, None), flows, 5.0, seed=0))
    pkt = 1500 / (48 * MBPS)
    clean, late = (np.asarray(res.rtt_samples[f].rtt) for f in (0, 1))
    assert len(clean) > 50 and len(late) > 50
    assert clean.min() >= 0.040 and clean.max() <= 0.040 + 2 * pkt + 1e-9
    assert late.min() >= 0.045 - 1e-12 and late.max() <= 0.045 + 2 * pkt + 1e-9
    assert np.isclose(late.mean() - clean.mean(), 0.005, atol=pkt)
    # the CCA's own R is unchanged: its rate stays one packet per 40 ms
    assert res.flows[1].rate[-1] == pytest.approx(1500 / 0.040)
