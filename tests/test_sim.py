"""The simulator (ccmatic/sim): exact replay of counterexamples, and the fine-mode
results of issue 5 at small scale (the full B.6 grid is a benchmark).

Every counterexample that verify and prove produce is replayed before it is shown
(ccmatic.sim.replay.replay_problem; a mismatch turns it into 'unknown'), so every
counterexample test in this suite is also a replay test.  The tests here check that
replay recomputes values (and catches a tampered trace), and the issue's empirical
claims, each with a contrast that could fail.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

from ccmatic.cli.evaluate import proved_bounds
from ccmatic.core.errors import Loc
from ccmatic.core.options import RunOptions
from ccmatic.core.results import ConcreteTrace, Counterexample
from ccmatic.core.scenario import Initial, Objective, Query
from ccmatic.core.source import Source
from ccmatic.engine.verify import verify
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query
from ccmatic.sim.fine import simulate
from ccmatic.sim.grid import Task, check_bounds, run_task
from ccmatic.sim.links import Link
from ccmatic.sim.metrics import metrics
from ccmatic.sim.records import Flow, SimConfig
from ccmatic.sim.replay import replay, replay_problem
from ccmatic.spec.cca import load_cca

ROOT = Path(__file__).resolve().parent.parent
OPTS = RunOptions(60.0, 0)
MBPS = 1e6 / 8


def load(query: str) -> Query:
    lib = Library.default()
    return load_query(ROOT / "queries" / "verify" / f"{query}.toml", lib, load_objectives(lib))


def cex(query: str, **changes: object) -> tuple[Query, ConcreteTrace]:
    q = load(query)
    if changes:
        q = replace(q, scenario=replace(q.scenario, **changes))  # type: ignore[arg-type]
    out = verify(q, OPTS).outcome
    assert isinstance(out, Counterexample), out
    return q, out.trace


# -- exact mode: replay ---------------------------------------------------------------------------

@pytest.mark.parametrize("query", ["aimd-ccac-premature-loss", "bbr-ccac-lowutil", "const_rate-ccac"])
def test_counterexamples_replay_exactly(query: str) -> None:
    q, tr = cex(query)
    res = replay(load_cca(q.scenario.cca_path), q.model, tr)
    assert res.ok, [m.describe() for m in res.mismatches]
    # the CCA's outputs and A at every step, and the aggregate curves, were recomputed
    assert res.compared >= tr.T * 4
    for name in ("A", "tokens", "queue", "bq"):
        assert [F(x) for x in res.aggregate[name]] == tr.aggregate[name]


def test_two_flow_counterexample_replays() -> None:
    q0 = load("const_rate-ccac")
    q = replace(q0, scenario=replace(q0.scenario, model=replace(q0.model, N=2), T=5, initial=Initial()),
                objectives=(Objective("expr", {}, Loc("<test>"),
                                      Source("<test>", "S[0, T-1] - S[0, 0] == S[1, T-1] - S[1, 0]"), "property"),))
    out = verify(q, OPTS).outcome
    assert isinstance(out, Counterexample)
    res = replay(load_cca(q.scenario.cca_path), q.model, out.trace)
    assert res.ok and len(res.flows) == 2


@pytest.mark.parametrize("what", ["cwnd", "A", "W"])
def test_replay_catches_a_tampered_trace(what: str) -> None:
    q, tr = cex("aimd-ccac-premature-loss")
    prog = load_cca(q.scenario.cca_path)
    t = tr.T - 1
    flows = [dict(fl) for fl in tr.flows]
    agg = dict(tr.aggregate)
    if what == "W":
        agg["W"] = list(agg["W"])
        agg["W"][t] += F(1, 7)
    else:
        flows[0][what] = list(flows[0][what])
        flows[0][what][t] += F(1, 7)  # type: ignore[operator]
    bad = ConcreteTrace(tr.T, tr.N, tr.params, agg, flows)
    res = replay(prog, q.model, bad)
    assert not res.ok
    names = {(m.name, m.t) for m in res.mismatches}
    expect = {"cwnd": ("cwnd", t), "A": ("A", t), "W": ("tokens", t)}[what]
    assert expect in names, names
    msg = replay_problem(prog, q.model, bad)
    assert msg is not None and "replay" in msg


def test_replay_picks_the_recorded_choice(tmp_path: Path) -> None:
    """A CCA that chooses between two rates: the counterexample takes the second at
    some step (the property forbids it), replay finds it, and a rate that is no
    option fails."""
    cca = tmp_path / "two_rates.cca"
    cca.write_text("rate = choose(MSS / R, 2 * MSS / R)\n")
    q0 = load("const_rate-ccac")
    prop = "all(rate[t] <= MSS / R for t in range(1, T))"
    q = replace(q0, scenario=replace(q0.scenario, cca_path=str(cca), cca_text=cca.read_text()),
                objectives=(Objective("expr", {}, Loc("<test>"), Source("<test>", prop), "property"),))
    out = verify(q, OPTS).outcome
    assert isinstance(out, Counterexample)
    prog = load_cca(cca)
    assert replay(prog, q.model, out.trace).ok
    rates = out.trace.flows[0]["rate"]
    mss = out.trace.params["MSS"]
    t = next(i for i in range(1, q.T) if rates[i] == 2 * mss)  # type: ignore[operator]
    flows = [dict(fl) for fl in out.trace.flows]
    flows[0]["rate"] = list(rates)
    flows[0]["rate"][t] = 3 * mss  # type: ignore[operator]
    bad = ConcreteTrace(out.trace.T, out.trace.N, out.trace.params, out.trace.aggregate, flows)
    assert ("rate", t) in {(m.name, m.t) for m in replay(prog, q.model, bad).mismatches}


# -- fine mode: the results ----------------------------------------------------------------

def run(cca: str, *, C: float = 48, R: float = 40, buffer: float | None = 1.0, model: str = "ideal",
        duration: float = 30, flows: int = 1, seed: int = 0, D: float | None = None) -> tuple[object, object]:
    prog = load_cca(ROOT / "templates" / f"{cca}.cca")
    c, r = C * MBPS, R / 1000
    d = (0.0 if model == "ideal" else r) if D is None else D / 1000
    cfg = SimConfig(Link(model, c, d, None if buffer is None else buffer * c * r),  # type: ignore[arg-type]
                    tuple(Flow(prog, r) for _ in range(flows)), duration, seed=seed)
    res = simulate(cfg)
    return res, metrics(res, duration * 0.2)


def mathis_ratio(cca: str) -> float:
    _res, m = run(cca, duration=200)
    f = m.flows[0]  # type: ignore[attr-defined]
    predicted = math.sqrt(1.5) * 1500 / (f.rtt_mean * math.sqrt(f.loss_rate))
    return float(f.throughput / predicted)


def test_reno_matches_the_mathis_model() -> None:
    """One Reno flow, 1-BDP buffer: throughput = 1.22 MSS / (RTT sqrt(p)) within 10%
    (p: packets lost / packets sent, RTT: mean sample).  aimd_incr_every_step.cca adds 1 MSS per
    step, i.e. per RTprop instead of per RTT, so it grows faster than Reno while
    the queue is long and misses the model by more than 15%."""
    assert abs(mathis_ratio("reno") - 1) <= 0.10
    assert mathis_ratio("aimd_incr_every_step") > 1.15


def loss_events(res: object, after: float, mss: float = 1500) -> tuple[int, float]:
    """Flow 0's loss events after ``after`` s (losses less than 0.2 s apart are one), and
    the packets lost in them."""
    fl = res.flows[0]  # type: ignore[attr-defined]
    events, packets, last = 0, 0.0, -math.inf
    for t, prev, cur in zip(fl.time[1:], fl.L[:-1], fl.L[1:]):
        if cur > prev and t > after:
            events += t - last >= 0.2
            packets += (cur - prev) / mss
            last = t
    return events, packets


def test_reno_in_pairs_loses_two_packets_per_event_as_linux_does() -> None:
    """One Reno flow, 24 Mbit/s, 20 ms, 1 BDP (docs/testbed.md (c)): the kernel lost about
    two packets per loss event (75 in 38), in as many events as the simulator, whose
    evenly spread sender loses one.  Sent in pairs (``burst = 2``, as after each of
    Linux's delayed ACKs) it loses about two: the pair that meets the last free slot."""
    prog = load_cca(ROOT / "templates" / "reno.cca")
    per_event = []
    for burst in (1, 2):
        c, r = 24 * MBPS, 0.020
        res = simulate(SimConfig(Link("ideal", c, 0.0, c * r), (Flow(prog, r),), 60.0, burst=burst))
        events, packets = loss_events(res, 12.0)
        assert events > 20, (burst, events)
        per_event.append(packets / events)
    assert per_event[0] < 1.2 and per_event[1] > 1.6, per_event


def test_bbr_keeps_a_standing_queue_of_about_one_bdp() -> None:
    """BBRv1 with 2 and 4 flows on a 4-BDP buffer: a standing queue of about 1 BDP,
    RTT about 2 RTprop (Scherrer et al., Theorems 1-2); one flow keeps almost none."""
    for n in (2, 4):
        _res, m = run("bbr1", buffer=4, flows=n, duration=60, seed=1)
        assert 0.6 <= m.queue_mean_bdp <= 1.4, (n, m.queue_mean_bdp)  # type: ignore[attr-defined]
        for f in m.flows:  # type: ignore[attr-defined]
            assert 1.6 <= f.rtt_ratio <= 2.4, (n, f.rtt_ratio)
    _res, m = run("bbr1", buffer=4, flows=1, duration=60, seed=1)
    assert m.queue_mean_bdp < 0.3  # type: ignore[attr-defined]


def steady_step_loss(res: object, C: float) -> float:
    """Largest per-step loss (packets) of cc_probe_slow after c_lo_lambda >= 2/5 C
    (its proof's steady state)."""
    fl = res.flows[0]  # type: ignore[attr-defined]
    cll = np.array(fl.c_lo_lambda)
    assert (cll >= 0.4 * C).any(), "never reached the steady state"
    k0 = int(np.argmax(cll >= 0.4 * C))
    return float(np.diff(np.array(fl.L))[k0:].max() / 1500)


def test_shallow_buffer_loss_bounded_for_cc_probe_slow_but_grows_for_bbr() -> None:
    """1/16-BDP buffer: quadrupling the BDP (24 -> 96 Mbit/s) leaves cc_probe_slow's
    loss bounded on the CBR-delay link (<= 2 packets per step, its proved bound) while
    BBRv1's loss per RTprop grows about 4x (ProbeBW's extra quarter of a BDP does not
    fit); BBR on the ideal link here, on the CBR-delay link below."""
    bbr = [run("bbr1", C=c, buffer=1 / 16, duration=20)[1].loss_per_R_mean  # type: ignore[attr-defined]
           for c in (24, 96)]
    assert bbr[0] > 1 and bbr[1] > 3 * bbr[0], bbr
    for c in (24, 96):
        res, m = run("cc_probe_slow", C=c, R=20, buffer=1 / 16, model="cbr_delay", duration=40)
        assert steady_step_loss(res, c * MBPS) <= 2
        assert m.loss_per_R_mean <= 1  # type: ignore[attr-defined]


def test_bbr_shallow_buffer_loss_grows_with_bdp_on_the_cbr_delay_link() -> None:
    """Thesis B.6's contrast on its own link: BBRv1's loss per RTprop on a 1/16-BDP
    buffer grows about 4x when the BDP does (mean of three seeds; one run's ratio
    ranges from 2.2 to 3.8).  With the ACK-window delivery-rate sample of before
    Linux's rate sampler (issue 15, item 2) BBR lost 10-15 packets per RTprop at both
    rates."""
    def mean_loss(c: int) -> float:
        return sum(run("bbr1", C=c, buffer=1 / 16, model="cbr_delay", duration=20, seed=s)[1]
                   .loss_per_R_mean for s in range(3)) / 3  # type: ignore[attr-defined]
    lo, hi = mean_loss(24), mean_loss(96)
    assert 1 < lo < 6 and hi > 2.5 * lo, (lo, hi)


def test_ack_trains_let_bbr_overestimate_the_link_and_lose_in_proportion_to_the_bdp() -> None:
    """ACK aggregation, 1/4-BDP buffer (docs/testbed.md (d)): when a batch's ACKs
    arrive a few µs apart and the sender acts between them, the packets it sends early
    in a batch carry a delivery-rate snapshot taken before the rest of the batch, so
    their samples count that rest over the next interval.  BBRv1's BtlBw then exceeds
    C (the kernel's did by up to 8%) and its losses grow with the BDP; a batch that
    arrives at once gives samples at C and a loss that does not grow."""
    prog = load_cca(ROOT / "templates" / "bbr1.cca")

    def one(c_mbps: float, train: float) -> tuple[float, float]:
        c, r = c_mbps * MBPS, 0.040
        cfg = SimConfig(Link("ack_agg", c, r, 0.25 * c * r, train=train), (Flow(prog, r),), 20.0,
                        ticks_per_rtt=200)
        res = simulate(cfg)
        bw = np.asarray(res.flows[0].state["btl_bw"])[len(res.flows[0].time) // 2:] / r / c
        return float(np.median(bw)), float(metrics(res, 10.0).loss_per_R_mean)
    bw_lo, loss_lo = one(24, 3e-6)
    bw_hi, loss_hi = one(96, 3e-6)
    assert bw_lo > 1.02 and bw_hi > 1.02, (bw_lo, bw_hi)
    assert loss_hi > 3 * loss_lo > 3, (loss_lo, loss_hi)
    bw0, loss0 = one(96, 0.0)
    assert bw0 < 1.01 and loss0 < 1, (bw0, loss0)


def test_bbr_long_term_mode_holds_the_slow_flows_at_their_measured_rate() -> None:
    """Linux's long-term ("policer") mode (docs/testbed.md (b)): four BBRv1 flows on a
    1/4-BDP buffer lose over 50/256 of what they deliver in some intervals of 4-16
    round trips; two such intervals that agree put a flow at their mean rate, with
    gain 1, for 48 round trips.  The flows that measured a low rate keep it, as the
    kernel's two slowest did for over half a run, and the fastest never enters the
    mode.  On a 2-BDP buffer nothing is lost and no flow enters it."""
    prog = load_cca(ROOT / "templates" / "bbr1.cca")

    def one(buffer_bdp: float) -> tuple[list[float], float]:
        c, r = 50 * MBPS, 0.040
        res = simulate(SimConfig(Link("ideal", c, r, buffer_bdp * c * r), (Flow(prog, r),) * 4, 30.0))
        held = [float(np.mean(np.asarray(f.state["lt_use"])[len(f.time) // 3:])) for f in res.flows]
        return sorted(held), float(metrics(res, 10.0).jain)
    held, jain = one(0.25)
    assert held[-2] > 0.5 and held[0] < 0.1 and jain < 0.75, (held, jain)
    held, jain = one(2)
    assert held == [0.0] * 4 and jain > 0.9, (held, jain)


def test_synthesized_ccas_stay_within_their_proved_bounds() -> None:
    """A small slice of the B.6 grid (the full grid is `ccmatic evaluate`, a
    benchmark): every run that reaches a proof's steady state keeps its bounds."""
    lib = Library.default()
    bounds = {cca: pb for cca in ("cc_probe_slow", "cc_qdel") if (pb := proved_bounds(lib, cca)) is not None}
    assert set(bounds) == {"cc_probe_slow", "cc_qdel"}

    def task(cca: str, b: str) -> Task:
        path = ROOT / "templates" / f"{cca}.cca"
        return Task(str(path), cca, "cbr_delay", 24, 20, F(b), 30, 1, 0, path.read_text(), bounds[cca])

    rows = [run_task(task(cca, b)) for cca, b in (("cc_probe_slow", "1/16"), ("cc_probe_slow", "4"), ("cc_qdel", "8"))]
    checks = check_bounds(rows, bounds)
    assert {c["cca"] for c in checks} == {"cc_probe_slow", "cc_qdel"}
    assert all(c["holds"] is True for c in checks), checks
    # the checker does flag a violation: the same rows with a worse outcome
    worse = [dict(r, steady={"from_s": 1.0, "metrics": dict(r["steady"]["metrics"], utilization=0.1)}) for r in rows]
    assert any(c["holds"] is False for c in check_bounds(worse, bounds))


def test_seeds_make_runs_reproducible() -> None:
    a = run("cc_qdel", model="ack_agg", buffer=8, duration=5, seed=3)[0]
    b = run("cc_qdel", model="ack_agg", buffer=8, duration=5, seed=3)[0]
    c = run("cc_qdel", model="ack_agg", buffer=8, duration=5, seed=4)[0]
    assert np.array_equal(a.queue, b.queue)  # type: ignore[attr-defined]
    assert not np.array_equal(a.queue, c.queue)  # type: ignore[attr-defined]
