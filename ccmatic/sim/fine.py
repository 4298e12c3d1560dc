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
step semantics (:mod:`ccmatic.semantics.cca`, over floats, compiled once per program into
one Python function that computes the same floats, :mod:`ccmatic.semantics.pycode`), the beliefs through the
models' rule (:mod:`ccmatic.semantics.beliefs`: periodic belief timeouts every
``belief_period`` steps, windows of at most twice that), the delay bounds through
Eq. 4.1.1's (:mod:`ccmatic.semantics.qdel`).  Seeds make every run reproducible.

The packets and every flow's per-tick work run compiled (:mod:`ccmatic.sim.kernel`,
over the arrays of :mod:`ccmatic.sim.state`); the loop returns here at each tick
where some flow's CCA steps, and :meth:`_Sender.on_boundary` runs that step.  A queue
of more than :attr:`ccmatic.sim.records.SimConfig.max_queue_packets` packets stops
the run (:class:`QueueLimit`).
"""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.quantities import (
    ACK_CLOCKED,
    OBSERVATIONS,
    OUTPUTS,
    SIM_OBSERVATIONS,
)
from ccmatic.semantics import beliefs, qdel
from ccmatic.semantics.cca import initial_values, run_step
from ccmatic.semantics.domain import FLOAT
from ccmatic.semantics.pycode import CompiledStep, compile_step
from ccmatic.sim import kernel as K
from ccmatic.sim.flow_beliefs import FlowBeliefs
from ccmatic.sim.history import History
from ccmatic.sim.metrics import Metrics, tallied
from ccmatic.sim.records import Flow, FlowRecord, SimConfig, SimResult
from ccmatic.sim.sampler import FlowSampler
from ccmatic.sim.state import RunState
from ccmatic.sim.tally import Tally
from ccmatic.sim.topology import check
from ccmatic.spec import ir

CCA_T = 10  # the horizon a CCA file sees as T (Copa's delay buckets, 'qdel unknown')
_item = list.__getitem__  # a History's storage, by its own index
Value = float | bool


class _Sender:
    """One flow's sender state and its CCA, run at step boundaries."""

    def __init__(self, idx: int, flow: Flow, cfg: SimConfig, dt: float, rng: np.random.Generator,
                 compiled: dict[int, CompiledStep | None], streamed: bool = False) -> None:
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
        self.rng = rng
        self.code = self.prog.code(1, self.D_steps, CCA_T, dict(flow.holes) or None)
        if id(self.code) not in compiled:  # one compilation per program (the codes are cached)
            compiled[id(self.code)] = compile_step(self.code)
        self.step = compiled[id(self.code)]
        self.run: RunState | None = None  # the arrays its per-tick state lives in (bind)
        self.sampler = FlowSampler(self.start_tick * dt)
        self.params = {"MSS": cfg.mss, "SECOND": 1.0 / flow.R}
        self.rate: float | None = cfg.init_rate_pkts * cfg.mss / flow.R if self.prog.sets_rate else None
        self.cwnd: float | None = cfg.init_cwnd_pkts * cfg.mss if self.prog.sets_cwnd else None
        # step-grid series the CCA reads (index = step); values in CCA units; a streamed
        # run's keep only what may be read back (History: slower to read)
        self.streamed = streamed  # and then no per-step record either
        Series: type[list[Any]] = History if streamed else list
        self.series: dict[str, list[Value]] = {n: Series() for n in (*OBSERVATIONS, *SIM_OBSERVATIONS, *OUTPUTS)}
        self.L_grid: list[float] = Series()
        for st in self.prog.states:
            self.series[st.name] = Series()
        inits = initial_values(self.code, FLOAT, self._param, self._choose)
        self.state_init = {st.name: inits.get(st.name, False if st.unit is None else 0.0) for st in self.prog.states}
        grid = beliefs.FlowSeries(self.series["A"], self.series["S"], self.L_grid, self.series["Ld"],
                                  cfg.link.buffer)
        self.beliefs = FlowBeliefs(self.prog, cfg, self.D_steps, len(cfg.flows) > 1, grid, Series)
        # the steps the CCA and the beliefs may read back, with room to spare (History)
        self.keep = 2 * (max(self.code.lags.values(), default=0) + self.beliefs.window + self.D_steps) + 16
        self._plan: list[tuple[list[Value], int]] | None = None
        self.histories = [h for h in (*self.series.values(), self.L_grid, *self.beliefs.lists())
                          if isinstance(h, History)]
        self.record = FlowRecord(state={st.name: array("d") for st in self.prog.states})
        self.warmup = self.code.warmup + 1
        self._qdel: dict[int, tuple[float, float]] = {}

    def bind(self, run: RunState) -> None:
        """Keep the per-tick state in ``run``'s arrays (row :attr:`idx`)."""
        self.run = run
        self.sampler = FlowSampler(self.start_tick * run.dt, run.smp[self.idx])
        self._outputs()

    def _outputs(self) -> None:
        """The rate and cwnd the compiled loop sends by (nan: not set)."""
        assert self.run is not None
        row = self.run.ff[self.idx]
        row[K.RATE] = math.nan if self.rate is None else self.rate
        row[K.CWND] = math.nan if self.cwnd is None else self.cwnd

    def _sent(self, what: int) -> float:
        """A (K.A), S (K.S_ACK) or L (K.L) now."""
        assert self.run is not None
        return float(self.run.ff[self.idx, what])

    def _reads(self, k: int) -> list[Value]:
        """The compiled step's reads at step k, taken from the series' storage directly
        (the hot path of a long run): a History keeps every step the CCA may read (its
        ``keep`` exceeds the deepest read by more than the 64 steps between trims)."""
        if self._plan is None:
            assert self.step is not None
            self._plan = [(self.series[n], lag + (1 if n in ACK_CLOCKED else 0)) for n, lag in self.step.reads]
        if self.streamed:
            return [_item(h, k - back - h.base) for h, back in self._plan]  # type: ignore[attr-defined]
        return [h[k - back] for h, back in self._plan]

    def _param(self, name: str) -> float:
        return self.params[name]

    def _choose(self, opts: list[Value], node: ir.Choose) -> Value:
        if not opts:
            raise SpecError(Loc(self.prog.path), "choose() with no options leaves the value to the solver",
                            "a simulated CCA must compute its outputs (give choose() its options)")
        return opts[int(self.rng.integers(len(opts)))]

    def detected(self, tick: int) -> float:
        """Losses are detected one RTprop after they happen."""
        assert self.run is not None
        return self.run.detected(self.idx, tick)

    def _observe(self, k: int, Ld: float) -> None:
        """Append the observations of step k's boundary to the step-grid series."""
        ser = self.series
        ser["Ld"].append(Ld)
        ser["timeout"].append(False)
        if k >= 1:
            # the models' A(k-1) and L(k-1): sent and lost by the end of step k - 1
            ser["A"].append(self._sent(K.A))
            self.L_grid.append(self._sent(K.L))
        if k >= 2:
            # S(k-2): serviced by the end of step k - 2, whose ACKs have arrived by now
            # (one RTprop later); the beliefs and the delay sample of that step
            ser["S"].append(self._sent(K.S_ACK))
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
                out = self.step(fetch, self._param, self._choose, self._reads(k))
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
        self._outputs()
        for st in self.prog.states:
            ser[st.name].append(out[st.name])
        if not self.streamed:
            self._record(now, Ld, out)
        if k % 64 == 0:
            for h in self.histories:
                h.trim(self.keep)

    def _record(self, now: float, Ld: float, out: dict[str, Value]) -> None:
        ser, u, rec = self.series, self.unit, self.record
        rec.time.append(now)
        rec.rate.append(self.rate if self.rate is not None else math.nan)
        rec.cwnd.append(self.cwnd if self.cwnd is not None else math.nan)
        rec.A.append(self._sent(K.A))
        rec.S.append(self._sent(K.S_ACK))
        rec.L.append(self._sent(K.L))
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
        if dt not in self._qdel:  # the bounds of a bucket do not change: computed once
            self._qdel[dt] = qdel.bounds(FLOAT, [d == dt for d in range(CCA_T)], self.D_steps)
        return self._qdel[dt]

    def _unit_rate(self) -> float:
        return (self.rate or 0.0) * self.unit


class QueueLimit(SpecError):
    """A run stopped because its queues passed :attr:`SimConfig.max_queue_packets`;
    :attr:`result` holds the run up to that tick (:attr:`metrics`, streamed, and
    :attr:`at_s`, when it was)."""

    def __init__(self, message: str, hint: str, result: SimResult | None, metrics: Metrics | None = None,
                 at_s: float = 0.0) -> None:
        super().__init__(Loc("--max-queue"), message, hint)
        self.result, self.metrics, self.at_s = result, metrics, at_s


#: ticks of records a streamed run keeps at a time
CHUNK = 256


def simulate(cfg: SimConfig) -> SimResult:
    """Run the fine-mode simulation (see module doc)."""
    run, senders, ticks = _start(cfg, None)
    status = _drive(run, senders, ticks, None)
    if status == K.LIMIT:
        raise _limit(run, senders, cfg, _result(run, senders, run.tick))
    return _result(run, senders, ticks)


def simulate_metrics(cfg: SimConfig, warmup: float) -> Metrics:
    """The metrics of a run measured after ``warmup``, streamed: the run keeps a chunk
    of :data:`CHUNK` ticks of records at a time and no per-step records, so its memory
    does not grow with its length (:mod:`ccmatic.sim.tally`).  A dumbbell only."""
    if cfg.topology != "dumbbell":
        raise ValueError("only a dumbbell run is streamed")
    run, senders, ticks = _start(cfg, CHUNK)
    tally = Tally(cfg, run.dt, ticks, warmup)
    status = _drive(run, senders, ticks, tally)
    run.flush(tally)
    if status == K.LIMIT:
        raise _limit(run, senders, cfg, None, tallied(tally) if run.tick * run.dt > warmup else None)
    return tallied(tally)


def _start(cfg: SimConfig, chunk: int | None) -> tuple[RunState, list[_Sender], int]:
    if not cfg.flows:
        raise ValueError("at least one flow")
    check(cfg)
    rmin = min(f.R for f in cfg.flows)
    dt = rmin / cfg.ticks_per_rtt
    ticks = math.ceil(cfg.duration / dt)
    rng = np.random.default_rng(cfg.seed)
    compiled: dict[int, CompiledStep | None] = {}
    senders = [_Sender(i, fl, cfg, dt, rng, compiled, chunk is not None) for i, fl in enumerate(cfg.flows)]
    run = RunState(cfg, [s.start_tick for s in senders], [s.steps_per for s in senders], dt, ticks, chunk)
    for snd in senders:
        snd.bind(run)
    return run, senders, ticks


def _drive(run: RunState, senders: list[_Sender], ticks: int, tally: Tally | None) -> int:
    """The compiled loop until the end or the queue limit (K.DONE or K.LIMIT), with
    the CCA steps at their boundaries and the records' chunks flushed to ``tally``."""
    while True:
        status = run.advance(ticks)
        if status == K.BOUNDARY:
            for f in run.boundary_flows():
                senders[f].on_boundary(run.tick, run.tick * run.dt)
        elif status == K.FLUSH:
            assert tally is not None
            run.flush(tally)
        elif status in (K.LIMIT, K.DONE):
            return status


def _result(run: RunState, senders: list[_Sender], upto: int) -> SimResult:
    """The run's records up to tick ``upto``."""
    return SimResult(run.cfg, run.dt, run.rec[0, :upto], run.delivered[:upto], run.sent[:upto], run.lost[:upto],
                     run.rtt_samples(), [s.record for s in senders], run.rec[1, :upto], run.hop_record(upto))


def _num(x: float) -> str:
    """Three significant digits, without an exponent."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _limit(run: RunState, senders: list[_Sender], cfg: SimConfig, result: SimResult | None,
           metrics: Metrics | None = None) -> QueueLimit:
    by_flow = run.queued_by_flow()
    f = int(by_flow.argmax())
    n = int(by_flow.sum())
    t = run.tick * run.dt
    return QueueLimit(f"at t = {t:.3g} s the queue holds {n:,} packets ({_num(n * cfg.mss / 1e6)} MB, "
                      f"{_num(n * cfg.mss / cfg.link.C)} s at C), {int(by_flow[f]):,} of them flow {f}'s "
                      f"({senders[f].prog.name}), over the simulator's limit of {cfg.max_queue_packets:,} packets",
                      "give a finite --buffer, a shorter --duration, or a CCA that does not overload the link",
                      result, metrics, t)
