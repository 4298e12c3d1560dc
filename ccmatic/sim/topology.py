"""Fine-mode topologies: the dumbbell (one :class:`ccmatic.sim.bottleneck.Bottleneck`)
and the parking lot (thesis Fig. 6.1, §6.5).

A parking lot of K hops carries K + 1 flows: flow 0 (the long flow) crosses every
bottleneck, flow i ≥ 1 only bottleneck i.  Every bottleneck has the link's rate C.
There is no propagation between hops: as on the dumbbell, the whole RTprop is on the
ACK path.  Within a tick the hops run in order: hop 1 takes flow 0's and flow 1's new
packets (spread over the tick as on the dumbbell), and each hop's deliveries of flow
0 become arrivals of the next hop at their delivery instants; only a flow's last hop
hands its packets to the ACK path.

Limits: the buffers after the first hop are infinite (a drop there would remove a
packet from the middle of its flow's in-flight packets, which the per-flow snapshot
queue of :mod:`ccmatic.sim.fine` cannot express), so a finite buffer needs K = 1; the
rate is constant (no rate schedule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ccmatic.sim.bottleneck import Bottleneck, Delivered, spread
from ccmatic.sim.records import HopRecord, SimConfig, SimResult

if TYPE_CHECKING:
    import numpy as np

MAX_HOPS = 16


class Network(Protocol):
    """What the fine mode's loop needs of a topology."""

    qbytes: float
    peak: float

    def tick(self, start: float, dt: float, packets: list[int], rng: np.random.Generator) -> list[int]: ...


def check(cfg: SimConfig) -> None:
    """Refuse a parking lot the simulator cannot run (see the module doc)."""
    if cfg.topology == "dumbbell":
        return
    K = cfg.hops
    if not 1 <= K <= MAX_HOPS:
        raise ValueError(f"a parking lot has 1 to {MAX_HOPS} hops, got {K}")
    if len(cfg.flows) != K + 1:
        raise ValueError(f"a parking lot of {K} hops carries {K + 1} flows, got {len(cfg.flows)}")
    if cfg.link.buffer is not None and K > 1:
        raise ValueError("a parking lot of more than one hop needs infinite buffers")
    if cfg.link.schedule is not None:
        raise ValueError("a parking lot has a constant rate (no rate schedule)")


class ParkingLot:
    """K bottlenecks in series (see the module doc); :attr:`record` holds each hop's
    served bytes and queue per tick."""

    def __init__(self, cfg: SimConfig, on_delivered: Delivered, ticks: int) -> None:
        import numpy as np  # large, and only the simulator needs it

        check(cfg)
        self.K = K = cfg.hops
        self.mss = cfg.mss
        self.on_delivered = on_delivered
        buf = math.inf if cfg.link.buffer is None else cfg.link.buffer
        self.hops = [Bottleneck(cfg.link.C, buf if j == 0 else math.inf, cfg.mss, self._delivered_at(j))
                     for j in range(K)]
        # flow 0's packets on their way to hop j + 1 in this tick: (time, flow, sent at)
        self.forward: list[tuple[float, int, float]] = []
        self.record = HopRecord(np.zeros((ticks, K)), np.zeros((ticks, K)), np.zeros((ticks, K)))
        self.i = 0  # the tick
        self.qbytes = 0.0
        self.peak = 0.0

    def _delivered_at(self, j: int) -> Delivered:
        last = j == self.K - 1

        def delivered(f: int, at: float, sent: float) -> None:
            self.record.served[self.i, j] += self.mss
            if f == 0:
                self.record.served_long[self.i, j] += self.mss
                if not last:
                    self.forward.append((at, 0, sent))
                    return
            self.on_delivered(f, at, sent)
        return delivered

    def tick(self, start: float, dt: float, packets: list[int], rng: np.random.Generator) -> list[int]:
        """Run one tick on every hop in order; returns the packets admitted per flow
        (only at their first hop: later hops never drop)."""
        n = len(packets)
        admitted = [0] * n
        qsum = peak = 0.0
        for j, hop in enumerate(self.hops):
            entering = [0] * n
            if j == 0:
                entering[0] = packets[0]
            entering[j + 1] = packets[j + 1]
            arrivals = [(t, f, t) for t, f in spread(start, dt, entering, rng)] + self.forward
            self.forward = []
            got = hop.tick_at(start + dt, arrivals, n)
            for f in (0, j + 1) if j == 0 else (j + 1,):
                admitted[f] = got[f]
            qsum += hop.qbytes
            peak += hop.peak
            self.record.queue[self.i, j] = hop.qbytes
        self.qbytes, self.peak = qsum, peak
        self.i += 1
        return admitted


def network(cfg: SimConfig, on_delivered: Delivered, ticks: int) -> Bottleneck | ParkingLot:
    """The topology's network: one bottleneck, or a parking lot."""
    if cfg.topology == "parking_lot":
        return ParkingLot(cfg, on_delivered, ticks)
    link = cfg.link
    return Bottleneck(link.C, math.inf if link.buffer is None else link.buffer, cfg.mss, on_delivered,
                      schedule=link.schedule)


@dataclass(frozen=True)
class HopMetrics:
    utilization: float      # bytes served / C · time
    long_share: float       # flow 0's part of what it served
    queue_mean_bytes: float
    queue_mean_delay: float  # s


def hop_metrics(res: SimResult, warmup: float) -> list[HopMetrics]:
    """Per hop, over [warmup, duration): utilization, flow 0's share of the served
    bytes, and the mean queue (empty on a dumbbell)."""
    rec = res.hop_record
    if rec is None:
        return []
    C = res.config.link.C
    i0 = min(int(warmup / res.dt), len(res.queue) - 1)
    span = (len(res.queue) - i0) * res.dt
    out = []
    for j in range(rec.served.shape[1]):
        served = float(rec.served[i0:, j].sum())
        q = float(rec.queue[i0:, j].mean())
        out.append(HopMetrics(served / (C * span) if span > 0 else 0.0,
                              float(rec.served_long[i0:, j].sum()) / served if served > 0 else 0.0, q, q / C))
    return out
