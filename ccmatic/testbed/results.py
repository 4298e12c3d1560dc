"""The senders' ``tcp_info`` samples as a :class:`ccmatic.sim.records.SimResult`, so
that :func:`ccmatic.sim.metrics.metrics`, the series and the plots of ``simulate``
read a testbed run unchanged.

Per tick of R/20 (the simulator's grid) and flow: bytes delivered (``bytes_acked``),
sent (``bytes_sent``, retransmissions included) and lost (``bytes_retrans``: each
retransmitted byte counts as one lost; a drop-tail path retransmits what it dropped),
interpolated linearly between samples.  The RTT samples are the socket's smoothed RTT
(``tcpi_rtt``: Linux exposes no single sample; its gain of 1/8 per ACK lags a few
ACKs, ~1 ms at these rates).  The queue is the queueing delay RTT − RTprop (− the flow's
extra delay) times C
(the rate then, under a schedule),
the smallest over the flows sending: all of them wait in the bottleneck's one FIFO,
and what else lengthens one flow's RTT (the receiver's delayed ACKs of a slow flow,
the ACK path's jitter) only adds; its peak per tick is the same value (nothing is
seen within a tick).  On a parking lot the queue of hop j is flow j's
(only it and flow 0 queue there, and it queues nowhere else), and the run's queue
is their sum, as the simulator records a parking lot.  All bytes are TCP payload: C is the payload a
full-sized frame carries at the link's rate (``payload_rate``)."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ccmatic.sim.records import FlowRecord, HopRecord, RttSamples, SimConfig, SimResult
from ccmatic.testbed.tcpinfo import SAMPLE

if TYPE_CHECKING:
    import numpy as np

#: per frame on the wire, beside the payload: Ethernet 14, IPv4 20, TCP 20 + 12 (timestamps)
HEADERS = 66  # netns.MTU_OVER_MSS + netns.ETHERNET
#: the kernel's own state in the series (``state.NAME``, SI units), where the flow has
#: it: the slow-start threshold (bytes; once a reduction set it) and Linux BBR's
#: estimates and gains; per sample column, its name in the series and how ``testbed
#: --plot-state`` shows it (scale from its SI unit, the plot's unit)
KERNEL_STATE = {"snd_ssthresh": ("linux_ssthresh_B", 1e-3, "kB"), "bbr_bw": ("linux_btl_bw_Bps", 8e-6, "Mbit/s"),
                "bbr_min_rtt": ("linux_rtprop_s", 1e3, "ms"), "bbr_pacing_gain": ("linux_pacing_gain", 1.0, "gain"),
                "bbr_cwnd_gain": ("linux_cwnd_gain", 1.0, "gain")}
#: the series' names of :data:`KERNEL_STATE`, each with its (scale, unit) for plots
KERNEL_STATE_UNITS = {name: (scale, unit) for name, scale, unit in KERNEL_STATE.values()}


def payload_rate(wire_bytes_per_s: float, mss: float) -> float:
    """The TCP payload a link of this rate carries in full-sized frames."""
    return wire_bytes_per_s * mss / (mss + HEADERS)


@dataclass(frozen=True)
class Samples:
    """One flow's samples: ``cols[name]`` is a column of :data:`~ccmatic.testbed.tcpinfo.SAMPLE`."""

    cols: dict[str, np.ndarray]

    @staticmethod
    def of(rows: list[list[float]]) -> Samples:
        import numpy as np  # large, and only the simulation commands need it

        a = np.array(rows, dtype=float).reshape(-1, len(SAMPLE))
        return Samples({c: a[:, i] for i, c in enumerate(SAMPLE)})

    def at(self, name: str, t: np.ndarray) -> np.ndarray:
        import numpy as np

        ts = self.cols["t"]
        out: np.ndarray = np.interp(t, ts, self.cols[name], left=0.0) if len(ts) else np.zeros(len(t))
        return out

    def reord_seen(self) -> int:
        r = self.cols["reord_seen"]
        return int(r[-1]) if len(r) else 0


def _per_tick(s: Samples, name: str, ends: np.ndarray) -> np.ndarray:
    import numpy as np

    cum = s.at(name, ends)
    out: np.ndarray = np.diff(cum, prepend=0.0)
    return out


def _queues(cfg: SimConfig, samples: list[Samples], ends: np.ndarray) -> np.ndarray:
    """Per tick and flow, its queueing delay times C (nan before its first sample)."""
    import numpy as np

    q = np.full((len(ends), len(samples)), np.nan)
    sched = cfg.link.schedule
    C = np.full(len(ends), cfg.link.C) if sched is None else sched.rates(ends)
    for f, (fl, s) in enumerate(zip(cfg.flows, samples)):
        if len(s.cols["t"]):
            on = ends >= s.cols["t"][0]
            q[on, f] = np.maximum(0.0, s.at("srtt", ends[on]) - fl.R - fl.extra) * C[on]
    return q


def _fifo_queue(q: np.ndarray) -> np.ndarray:
    """The one FIFO's queue per tick: the smallest of the flows' (:func:`_queues`)."""
    import numpy as np

    any_on = ~np.all(np.isnan(q), axis=1)
    out = np.zeros(len(q))
    out[any_on] = np.nanmin(q[any_on], axis=1)
    return out


def _record(s: Samples, R: float) -> FlowRecord:
    """The per-step series (one row per RTprop): rate, window, counters, RTT, and the
    kernel's state where the flow has it (:data:`KERNEL_STATE`)."""
    rec = FlowRecord()
    ts = s.cols["t"]
    kernel = [c for c in KERNEL_STATE if not all(math.isnan(x) for x in s.cols[c])]
    nxt = ts[0] if len(ts) else math.inf
    for i, t in enumerate(ts):
        if t < nxt:
            continue
        nxt = t + R
        c = {k: float(v[i]) for k, v in s.cols.items()}
        rec.time.append(float(t))
        rec.rate.append(c["pacing_rate"])
        rec.cwnd.append(c["snd_cwnd"] * c["snd_mss"])
        rec.A.append(c["bytes_sent"])
        rec.S.append(c["bytes_acked"])
        rec.L.append(c["bytes_retrans"])
        rec.Ld.append(c["bytes_retrans"])
        for lst in (rec.c_lo, rec.c_hi, rec.c_lo_lambda, rec.qdel_lo):
            lst.append(math.nan)
        rec.rtt.append(c["srtt"] if c["srtt"] > 0 else math.nan)
        for name in kernel:
            scale = c["snd_mss"] if name == "snd_ssthresh" else 1.0
            rec.state.setdefault(KERNEL_STATE[name][0], array("d")).append(c[name] * scale)
    return rec


def sim_result(cfg: SimConfig, rows: list[list[list[float]]]) -> SimResult:
    """The run as the simulator records one (see the module doc)."""
    import numpy as np

    dt = min(f.R for f in cfg.flows) / cfg.ticks_per_rtt
    ends = (np.arange(math.ceil(cfg.duration / dt - 1e-9)) + 1) * dt
    samples = [Samples.of(r) for r in rows]
    cols = {name: np.stack([_per_tick(s, name, ends) for s in samples], axis=1)
            for name in ("bytes_acked", "bytes_sent", "bytes_retrans")}
    q = _queues(cfg, samples, ends)
    hops = _hops(cfg.hops, q, cols["bytes_acked"]) if cfg.topology == "parking_lot" else None
    queue = _fifo_queue(q) if hops is None else hops.queue.sum(axis=1)
    rtts = []
    for s in samples:
        rs = RttSamples()
        for t, r in zip(s.cols["t"], s.cols["srtt"]):
            if r > 0:
                rs.append(float(t), float(r))
        rtts.append(rs)
    return SimResult(config=cfg, dt=dt, queue=queue, delivered=cols["bytes_acked"], sent=cols["bytes_sent"],
                     lost=cols["bytes_retrans"], rtt_samples=rtts,
                     flows=[_record(s, f.R) for s, f in zip(samples, cfg.flows)], queue_peak=queue.copy(),
                     hop_record=hops)


def _hops(K: int, q: np.ndarray, delivered: np.ndarray) -> HopRecord:
    """A K-hop parking lot's hops (see the module doc), from the flows' queues
    (:func:`_queues`): hop j served flow 0's and flow j's deliveries; its queue is flow
    j's."""
    import numpy as np

    served = delivered[:, :1] + delivered[:, 1:]
    return HopRecord(served, np.repeat(delivered[:, :1], K, axis=1), np.nan_to_num(q[:, 1:], nan=0.0))


def reordering(rows: list[list[list[float]]]) -> list[int]:
    """Per flow, the reordering events its sender detected (``tcpi_reord_seen``)."""
    return [Samples.of(r).reord_seen() for r in rows]


def summary(rows: list[list[list[float]]]) -> dict[str, Any]:
    """Per flow: its samples, the reordering the kernel saw, and its segment size."""
    mss = SAMPLE.index("snd_mss")
    return {"samples": [len(r) for r in rows], "reord_seen": reordering(rows),
            "snd_mss": [int(r[-1][mss]) if r else None for r in rows]}
