"""Metrics of a fine-mode run (thesis §4.2.4, Figs. B.3–B.4).

Measured over [warmup, duration) unless noted:

* utilization: bytes delivered / the bytes the link could serve in the window (C ·
  time; with a rate schedule, the integral of C(t));
* queue: mean and max bottleneck queue, in bytes, BDPs (C · shortest RTprop, with C
  the rate at t = 0 under a rate schedule) and seconds of delay (queue / C(t));
* loss: packets lost per RTprop — the mean, and the max over any window of one
  RTprop (the thesis' "at most k packets lost in any R"); loss rate lost/sent;
* RTT: mean and max RTT sample per flow, and their ratio to the RTprop;
* convergence time: the end of the first window of 10 RTprops that delivers at
  least 90% of the aggregate throughput of the measurement window (None if none
  does);
* Jain's index of the per-flow throughputs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ccmatic.sim.records import SimResult
from ccmatic.sim.tally import Tally

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class FlowMetrics:
    throughput: float      # bytes/s
    share: float           # of what the link could serve
    rtt_mean: float        # s
    rtt_max: float
    rtt_ratio: float       # mean RTT / RTprop
    loss_rate: float       # bytes lost / bytes sent
    loss_events: int       # loss episodes: losses at least one RTprop after the previous
    loss_event_rate: float  # loss episodes per packet sent (Mathis et al.'s p)


@dataclass(frozen=True)
class Metrics:
    utilization: float
    queue_mean_bytes: float
    queue_max_bytes: float
    queue_mean_bdp: float
    queue_max_bdp: float
    queue_mean_delay: float
    loss_per_R_mean: float   # packets per RTprop
    loss_per_R_max: float
    loss_rate: float
    convergence_time: float | None
    jain: float
    flows: tuple[FlowMetrics, ...]

    def json(self) -> dict[str, Any]:
        return _clean(asdict(self))  # type: ignore[no-any-return]


def _clean(v: Any) -> Any:
    """JSON has no NaN or infinity: those become null."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def jain(xs: list[float]) -> float:
    s, q = sum(xs), sum(x * x for x in xs)
    return 1.0 if q == 0 else s * s / (len(xs) * q)


def _window_sums(x: np.ndarray, w: int) -> np.ndarray:
    import numpy as np  # large, and only the simulator needs it

    if len(x) < w or w <= 0:
        return np.array([float(x.sum())])
    c = np.concatenate([[0.0], np.cumsum(x)])
    out: np.ndarray = c[w:] - c[:-w]
    return out


def metrics(res: SimResult, warmup: float = 0.0) -> Metrics:
    """The metrics of a whole recorded run (see the module doc)."""
    import numpy as np

    t = Tally(res.config, res.dt, len(res.queue), warmup)
    t.add_ticks(res.queue, res.queue_peak, res.delivered, res.sent, res.lost)
    for f, rs in enumerate(res.rtt_samples):
        t.add_rtts(f, np.frombuffer(rs.time, dtype=float), np.frombuffer(rs.rtt, dtype=float))
    return tallied(t)


def tallied(t: Tally) -> Metrics:
    """The metrics of a run from its :class:`~ccmatic.sim.tally.Tally`."""
    import numpy as np

    cfg, dt, i0 = t.cfg, t.dt, t.i0
    C = cfg.link.C
    rmin = min(f.R for f in cfg.flows)
    bdp = C * rmin  # under a rate schedule, the BDP at t = 0: queues in BDPs keep one unit
    n_ticks = len(t.queue)
    span = (n_ticks - i0) * dt
    q = np.frombuffer(t.queue, dtype=float)[i0:]
    sched = cfg.link.schedule
    if sched is None:
        C_mean, q_delay = C, float(q.mean()) / C
    else:
        # the mean rate over the window (the integral of C(t) over its length), and
        # each tick's queue (recorded at its end) over the rate in force then
        C_mean = cfg.link.capacity(i0 * dt, n_ticks * dt) / span if span > 0 else C
        ends = (np.arange(i0, n_ticks) + 1) * dt
        q_delay = float(np.mean(q / sched.rates(ends)))
    delivered = float(t.delivered.sum())
    util = delivered / (C_mean * span) if span > 0 else 0.0
    q_max = float(np.frombuffer(t.peak, dtype=float)[i0:].max())
    lost_all = np.frombuffer(t.lost_all, dtype=float)[i0:]
    sent_total = float(t.sent.sum())
    per_R = max(1, round(rmin / dt))
    lw = _window_sums(lost_all, per_R) / cfg.mss
    n_R = span / rmin
    # convergence: the first 10-RTprop window of the aggregate delivery that reaches
    # 90% of the measurement window's throughput
    w = max(1, round(10 * rmin / dt))
    target = 0.9 * delivered / span * (w * dt) if span > 0 else 0.0
    ws = _window_sums(np.frombuffer(t.delivered_all, dtype=float), w)
    conv: float | None = None
    if len(ws) and target > 0:
        hit = np.nonzero(ws >= target)[0]
        if len(hit):
            conv = float((hit[0] + w) * dt)
    flows: list[FlowMetrics] = []
    for f, fl in enumerate(cfg.flows):
        thr = float(t.delivered[f]) / span if span > 0 else 0.0
        n = int(t.rtt_n[f])
        rm = float(t.rtt_sum[f]) / n if n else math.nan
        rx = float(t.rtt_max[f]) if n else math.nan
        s_f, ev = float(t.sent[f]), int(t.episodes[f])
        flows.append(FlowMetrics(thr, thr / C_mean, rm, rx, rm / fl.R if n else math.nan,
                                 float(t.lost[f]) / s_f if s_f > 0 else 0.0,
                                 ev, ev / (s_f / cfg.mss) if s_f > 0 else 0.0))
    return Metrics(
        utilization=util,
        queue_mean_bytes=float(q.mean()), queue_max_bytes=q_max,
        queue_mean_bdp=float(q.mean()) / bdp, queue_max_bdp=q_max / bdp,
        queue_mean_delay=q_delay,
        loss_per_R_mean=float(lost_all.sum()) / cfg.mss / n_R if n_R > 0 else 0.0,
        loss_per_R_max=float(lw.max()) if len(lw) else 0.0,
        loss_rate=float(lost_all.sum()) / sent_total if sent_total > 0 else 0.0,
        convergence_time=conv,
        jain=jain([fm.throughput for fm in flows]),
        flows=tuple(flows),
    )
