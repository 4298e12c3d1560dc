"""Fine mode: a small-time-step simulation for empirical runs (thesis §4.2.4, B.6).

The network runs in ticks of ``dt`` = (shortest RTprop) / ``ticks_per_rtt``: senders
decide at each tick how many packets they inject, the packets reach a drop-tail FIFO
served at C, each at its own instant within the tick, with service between arrivals
(:mod:`ccmatic.sim.bottleneck`), and each delivered packet's ACK returns to its sender
after its flow's RTprop plus the link's jitter (:mod:`ccmatic.sim.links`).  Bytes reach the bottleneck at once (as in CCAC,
the whole propagation delay is on the ACK path).  The bottleneck may be a parking lot of
several hops (:mod:`ccmatic.sim.topology`), and a flow's ACK path may carry a persistent
extra delay its CCA is not told about (:attr:`ccmatic.sim.records.Flow.extra`).

A CCA file keeps its step semantics: a flow's CCA runs once per *step* of one RTprop
(the models' time unit, R = 1 step), on that flow's own observations sampled at the
step boundaries — A, the losses detected one RTprop after they happened (Ld), the
bytes serviced (S), the queueing-delay bounds of the latest RTT sample in the
models' buckets, and the belief bounds (the models' rules,
:mod:`ccmatic.sim.beliefs`).  The models let the CCA at step t see S(t − R), the
bytes serviced by the end of step t − R, although their ACKs can arrive up to one
RTprop later; here they arrive when they do, so every ACK-based observation (S,
c_lo, c_hi, qdel_lo/hi, c_lo_lambda) reaches the CCA one step later than in the
models, and A, S and L stay consistent with one another.  The latest RTT sample
(``rtt``) is the measured one, in steps, which lies in the bucket reported with it; a
simulator-only file may also read the smallest and smoothed RTT and delivery-rate
samples (:mod:`ccmatic.sim.sampler`).  With several
flows, each flow's step grid starts at a random tick of its first RTprop.  Its rate (bytes per step) is
paced over the step; its cwnd limits A ≤ ACKed + detected lost + cwnd at every tick
(CCAC's sending rule).  Nothing is re-implemented: the CCA file runs through the one
step semantics (:mod:`ccmatic.semantics.cca`, over floats, compiled once per program
into one Python function that computes the same floats, :mod:`ccmatic.semantics.pycode`), the beliefs through the
models' rule (:mod:`ccmatic.semantics.beliefs`: periodic belief timeouts every
``belief_period`` steps, windows of at most twice that), the delay bounds through
Eq. 4.1.1's (:mod:`ccmatic.semantics.qdel`).  Seeds make every run reproducible.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.model import BeliefTimeouts
from ccmatic.core.quantities import (
    ACK_CLOCKED,
    OBSERVATIONS,
    OUTPUTS,
    QUANTITIES,
    SIM_OBSERVATIONS,
)
from ccmatic.semantics import beliefs, qdel
from ccmatic.semantics.cca import initial_values, run_step
from ccmatic.semantics.domain import FLOAT
from ccmatic.semantics.pycode import CompiledStep, compile_step
from ccmatic.sim.links import AckDelay
from ccmatic.sim.records import Flow, FlowRecord, RttSamples, SimConfig, SimResult
from ccmatic.sim.sampler import FlowSampler, Snapshot
from ccmatic.sim.topology import ParkingLot, network
from ccmatic.spec import ir
from ccmatic.spec.cca import CcaProgram

if TYPE_CHECKING:
    import numpy as np

CCA_T = 10  # the horizon a CCA file sees as T (Copa's delay buckets, 'qdel unknown')
Value = float | bool


class _Beliefs:
    """One flow's beliefs on its step grid, by the models' rules (the families the
    CCA reads: computing the others would only cost time)."""

    def __init__(self, prog: CcaProgram, cfg: SimConfig, D: int, multi_flow: bool,
                 series: beliefs.FlowSeries[float]) -> None:
        reads = prog.reads
        fam = {QUANTITIES[n].family for n in reads if n in QUANTITIES}
        self.rate = "rate_beliefs" in fam
        self.cbr = "cbr_beliefs" in fam
        P = max(1, cfg.belief_period)
        self.rule = beliefs.RateRule(D, Fraction(0), cfg.link.buffer is not None, False, not multi_flow,
                                     BeliefTimeouts(period=P, guard=None, invalid=True, max_expand=Fraction(2)),
                                     window=2 * P + 1)
        self.series = series
        self.D = D
        lo0, hi0 = cfg.mss, 1e9 * cfg.mss
        self.state: beliefs.RateState[float] = beliefs.RateState([lo0], [hi0], [k == 0 for k in range(P)])
        self.cl: list[float] = [lo0]
        self.qh: list[float] = [0.0]
        self.names = beliefs.Values()

    def step(self, en: int) -> tuple[float, float, float]:
        """c_lo, c_hi, c_lo_lambda at step en (S known up to en)."""
        if en > 0:
            if self.rate:
                beliefs.rate_step(FLOAT, self.names, self.rule, self.series, self.state, en, 0)
            else:
                self.state.c_lo.append(self.state.c_lo[-1])
                self.state.c_hi.append(self.state.c_hi[-1])
            if self.cbr:
                beliefs.cbr_lambda_step(FLOAT, self.names, self.series, self.cl, en, 1, self.D, 0)
            else:
                self.cl.append(self.cl[-1])
        return self.state.c_lo[en], self.state.c_hi[en], self.cl[en]

    def q_hi(self, t: int) -> float:
        """q_hi at step t (A known up to t, c_lo_lambda up to t - 1)."""
        if t > 0:
            beliefs.q_hi_step(FLOAT, self.names, self.series, self.cl, self.qh, t, 1, 0)
        return self.qh[t]


class _Sender:
    """One flow's sender state and its CCA, run at step boundaries."""

    def __init__(self, idx: int, flow: Flow, cfg: SimConfig, dt: float, rng: np.random.Generator,
                 compiled: dict[int, CompiledStep | None]) -> None:
        self.idx = idx
        self.flow = flow
        self.prog = flow.cca
        self.unit = flow.R  # one CCA step = one RTprop
        self.steps_per = max(1, round(flow.R / dt))
        # with several flows, each one's step grid starts at a random tick of its first
        # RTprop, so that flows' CCA steps (and their timers) are not aligned
        offset = int(rng.integers(self.steps_per)) if len(cfg.flows) > 1 else 0
        self.start_tick = round(flow.start / dt) + offset
        self.D_steps = round(flow.jitter(cfg.link) / flow.R)
        self.mss = cfg.mss
        self.rng = rng
        self.code = self.prog.code(1, self.D_steps, CCA_T, dict(flow.holes) or None)
        if id(self.code) not in compiled:  # one compilation per program (the codes are cached)
            compiled[id(self.code)] = compile_step(self.code)
        self.step = compiled[id(self.code)]
        self.A = 0.0
        self.S_ack = 0.0
        self.L = 0.0
        self.L_hist: list[float] = []
        self.sampler = FlowSampler(self.start_tick * dt)
        self.params = {"MSS": cfg.mss, "SECOND": 1.0 / flow.R}
        self.rate: float | None = cfg.init_rate_pkts * cfg.mss / flow.R if self.prog.sets_rate else None
        self.cwnd: float | None = cfg.init_cwnd_pkts * cfg.mss if self.prog.sets_cwnd else None
        self.pace_credit = 0.0
        # step-grid series the CCA reads (index = step); values in CCA units
        self.series: dict[str, list[Value]] = {n: [] for n in (*OBSERVATIONS, *SIM_OBSERVATIONS, *OUTPUTS)}
        self.L_grid: list[float] = []
        for st in self.prog.states:
            self.series[st.name] = []
        inits = initial_values(self.code, FLOAT, self._param, self._choose)
        self.state_init = {st.name: inits.get(st.name, False if st.unit is None else 0.0) for st in self.prog.states}
        grid = beliefs.FlowSeries(self.series["A"], self.series["S"], self.L_grid, self.series["Ld"],
                                  cfg.link.buffer)
        self.beliefs = _Beliefs(self.prog, cfg, self.D_steps, len(cfg.flows) > 1, grid)
        self.record = FlowRecord(state={st.name: array("d") for st in self.prog.states})
        self.warmup = self.code.warmup + 1

    def _param(self, name: str) -> float:
        return self.params[name]

    def _choose(self, opts: list[Value], node: ir.Choose) -> Value:
        if not opts:
            raise SpecError(Loc(self.prog.path), "choose() with no options leaves the value to the solver",
                            "a simulated CCA must compute its outputs (give choose() its options)")
        return opts[int(self.rng.integers(len(opts)))]

    def active(self, tick: int) -> bool:
        return tick >= self.start_tick

    def detected(self, tick: int) -> float:
        """Losses are detected one RTprop after they happen."""
        back = tick - self.start_tick - self.steps_per
        return self.L_hist[back] if back >= 0 else 0.0

    def _observe(self, k: int, Ld: float) -> None:
        """Append the observations of step k's boundary to the step-grid series."""
        ser = self.series
        ser["Ld"].append(Ld)
        ser["timeout"].append(False)
        if k >= 1:
            # the models' A(k-1) and L(k-1): sent and lost by the end of step k - 1
            ser["A"].append(self.A)
            self.L_grid.append(self.L)
        if k >= 2:
            # S(k-2): serviced by the end of step k - 2, whose ACKs have arrived by now
            # (one RTprop later); the beliefs and the delay sample of that step
            ser["S"].append(self.S_ack)
            qlo, qhi = self._qdel_bounds()
            ser["qdel_lo"].append(qlo)
            ser["qdel_hi"].append(qhi)
            c_lo, c_hi, cll = self.beliefs.step(k - 2)
            ser["c_lo"].append(c_lo)
            ser["c_hi"].append(c_hi)
            ser["c_lo_lambda"].append(cll)
            self._observe_acks()
        if k >= 1:
            ser["q_hi"].append(self.beliefs.q_hi(k - 1))

    def _observe_acks(self) -> None:
        """The RTT samples (``rtt``; the simulator-only ``rtt_min`` and ``srtt``) and the
        delivery rate since the previous step (:mod:`ccmatic.sim.sampler`), in steps
        and bytes per step."""
        v, u, ser = self.sampler.take_step(), self.unit, self.series
        for name, x in (("rtt", v.rtt), ("rtt_min", v.rtt_min), ("srtt", v.srtt)):
            ser[name].append(0.0 if math.isnan(x) else x / u)  # 0: no sample yet
        ser["delivery_rate"].append(v.delivery_rate * u)

    def on_boundary(self, tick: int, now: float) -> None:
        k = (tick - self.start_tick) // self.steps_per
        ser = self.series
        Ld = self.detected(tick)
        self._observe(k, Ld)
        # the CCA's step k
        if k < max(self.warmup, 1):
            out: dict[str, Value] = {"rate": self._unit_rate(), "cwnd": self.cwnd if self.cwnd is not None else 0.0}
            out.update(self.state_init if k == 0 else {st.name: ser[st.name][k - 1] for st in self.prog.states})
        else:
            def fetch(name: str, lag: int) -> Value:
                return ser[name][k - lag - (1 if name in ACK_CLOCKED else 0)]
            if self.step is not None:
                out = self.step(fetch, self._param, self._choose)
            else:
                out = run_step(self.code, FLOAT, fetch, self._param, self._choose)
        if self.prog.sets_rate:
            r = float(out["rate"])
            self.rate = max(0.0, r) / self.unit
            ser["rate"].append(r)
        else:
            ser["rate"].append(0.0)
        if self.prog.sets_cwnd:
            self.cwnd = max(0.0, float(out["cwnd"]))
            ser["cwnd"].append(self.cwnd)
        else:
            ser["cwnd"].append(0.0)
        for st in self.prog.states:
            ser[st.name].append(out[st.name])
        self._record(now, Ld, out)

    def _record(self, now: float, Ld: float, out: dict[str, Value]) -> None:
        ser, u, rec = self.series, self.unit, self.record
        rec.time.append(now)
        rec.rate.append(self.rate if self.rate is not None else math.nan)
        rec.cwnd.append(self.cwnd if self.cwnd is not None else math.nan)
        rec.A.append(self.A)
        rec.S.append(self.S_ack)
        rec.L.append(self.L)
        rec.Ld.append(Ld)
        for name, dst in (("c_lo", rec.c_lo), ("c_hi", rec.c_hi), ("c_lo_lambda", rec.c_lo_lambda)):
            dst.append(float(ser[name][-1]) / u if ser[name] else math.nan)
        rec.qdel_lo.append(float(ser["qdel_lo"][-1]) * u if ser["qdel_lo"] else math.nan)
        rec.rtt.append(self.sampler.rtt)
        for st in self.prog.states:
            rec.state[st.name].append(float(out[st.name]))

    def _qdel_bounds(self) -> tuple[float, float]:
        """Eq. 4.1.1 on the latest RTT sample, in the models' buckets
        (:func:`ccmatic.semantics.qdel.bounds`); before any sample, [0, 1)."""
        rtt = self.sampler.rtt
        if math.isnan(rtt):
            return 0.0, 1.0
        delay = max(0.0, rtt - self.flow.R)  # queueing + jitter of the latest ACKed packet
        dt = math.floor(delay / self.unit + 1e-9)
        return qdel.bounds(FLOAT, [d == dt for d in range(CCA_T)], self.D_steps)

    def _unit_rate(self) -> float:
        return (self.rate or 0.0) * self.unit

    def allowance(self, tick: int, dt: float) -> float:
        """Bytes the sender may inject in this tick."""
        allow = math.inf
        if self.rate is not None:
            self.pace_credit = min(self.pace_credit + self.rate * dt, self.rate * dt + self.mss)
            allow = self.pace_credit
        if self.cwnd is not None:
            allow = min(allow, max(0.0, self.S_ack + self.detected(tick) + self.cwnd - self.A))
        if math.isinf(allow):
            return 0.0
        return math.floor(allow / self.mss + 1e-9) * self.mss  # whole packets


def simulate(cfg: SimConfig) -> SimResult:
    """Run the fine-mode simulation (see module doc)."""
    if not cfg.flows:
        raise ValueError("at least one flow")
    rmin = min(f.R for f in cfg.flows)
    dt = rmin / cfg.ticks_per_rtt
    ticks = math.ceil(cfg.duration / dt)
    N = len(cfg.flows)
    import numpy as np  # large, and only the simulator needs it

    rng = np.random.default_rng(cfg.seed)
    compiled: dict[int, CompiledStep | None] = {}
    senders = [_Sender(i, fl, cfg, dt, rng, compiled) for i, fl in enumerate(cfg.flows)]
    link = cfg.link
    acks = AckDelay(link, [f.D for f in cfg.flows], rng)
    # per flow, the ACKs on their way: (ACK time, cumulative delivered, sent at, snapshot)
    pending: list[deque[tuple[float, float, float, Snapshot]]] = [deque() for _ in range(N)]
    # per flow, the snapshots of the packets in the queue, in FIFO order: [count, snapshot]
    queued: list[deque[list[Any]]] = [deque() for _ in range(N)]
    delivered_cum = [0.0] * N
    queue = np.zeros(ticks)
    peak = np.zeros(ticks)
    delivered = np.zeros((ticks, N))
    sent = np.zeros((ticks, N))
    lost = np.zeros((ticks, N))
    rtts = [RttSamples() for _ in range(N)]
    tick = 0  # the loop's tick, which on_delivered reads

    def on_delivered(f: int, at: float, arrived: float) -> None:
        delivered_cum[f] += cfg.mss
        delivered[tick, f] += cfg.mss
        run = queued[f][0]
        run[0] -= 1
        if not run[0]:
            queued[f].popleft()
        fl = senders[f].flow
        pending[f].append((acks.ack_time(f, at, fl.R + fl.extra), delivered_cum[f], arrived, run[1]))

    bottleneck = network(cfg, on_delivered, ticks)
    for tick in range(ticks):
        now = tick * dt
        for f, snd in enumerate(senders):
            _take_acks(snd, pending[f], rtts[f], now)
        offered = [0.0] * N
        for f, snd in enumerate(senders):
            if not snd.active(tick):
                continue
            if (tick - snd.start_tick) % snd.steps_per == 0:
                snd.on_boundary(tick, now)
            offered[f] = snd.allowance(tick, dt)
        counts = [round(o / cfg.mss) for o in offered]
        runs = [_queue_run(snd, queued[f], counts[f], tick, now) for f, snd in enumerate(senders)]
        admitted = bottleneck.tick(now, dt, counts, rng)
        for f, snd in enumerate(senders):
            o = offered[f]
            if snd.active(tick) and o > 0:
                _drop_from_run(queued[f], runs[f], counts[f] - admitted[f])
                ok = admitted[f] * cfg.mss
                if snd.rate is not None:
                    snd.pace_credit -= o
                snd.A += o
                snd.L += o - ok
                sent[tick, f] = o
                lost[tick, f] = o - ok
            snd.L_hist.append(snd.L)
        queue[tick] = bottleneck.qbytes
        peak[tick] = bottleneck.peak
    hops = bottleneck.record if isinstance(bottleneck, ParkingLot) else None
    return SimResult(cfg, dt, queue, delivered, sent, lost, rtts, [s.record for s in senders], peak, hops)


def _queue_run(snd: _Sender, queued: deque[list[Any]], n: int, tick: int, now: float) -> list[Any] | None:
    """The snapshot the tick's ``n`` packets of a flow carry, queued behind the
    flow's earlier packets (:mod:`ccmatic.sim.sampler`)."""
    if not n:
        return None
    empty = snd.A - snd.S_ack - snd.detected(tick) <= 0
    run: list[Any] = [n, snd.sampler.snapshot(now, empty)]
    queued.append(run)
    return run


def _drop_from_run(queued: deque[list[Any]], run: list[Any] | None, dropped: int) -> None:
    """Dropped packets carry no snapshot into the queue (they are never ACKed)."""
    if run is None or not dropped:
        return
    run[0] -= dropped
    if not run[0]:
        queued.pop()  # the newest run: nothing of it was delivered


def _take_acks(snd: _Sender, pend: deque[tuple[float, float, float, Snapshot]], rtts: RttSamples,
               now: float) -> None:
    """The ACKs that have reached the sender by ``now``: S, the RTT and delivery-rate
    samples (packets ACKed at the same instant are one ACK)."""
    smp = snd.sampler
    while pend and pend[0][0] <= now + 1e-12:
        at, cum, sent_at, snap = pend.popleft()
        snd.S_ack = cum
        rtts.append(at, at - sent_at)
        smp.packet_acked(cum, sent_at, snap)
        if not pend or pend[0][0] != at:
            smp.ack_done(at)
