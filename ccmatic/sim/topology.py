"""Fine-mode topologies: the dumbbell (one bottleneck, :mod:`ccmatic.sim.bottleneck`)
and the parking lot (thesis Fig. 6.1, §6.5), both run by the compiled loop
(:mod:`ccmatic.sim.kernel`); here, what a parking lot may be and its per-hop metrics.

A parking lot of K hops carries K + 1 flows: flow 0 (the long flow) crosses every
bottleneck, flow i ≥ 1 only bottleneck i.  Every bottleneck has the link's rate C.
There is no propagation between hops: as on the dumbbell, the whole RTprop is on the
ACK path.  Within a tick the hops run in order: hop 1 takes flow 0's and flow 1's new
packets (spread over the tick as on the dumbbell), and each hop's deliveries of flow
0 become arrivals of the next hop at their delivery instants; only a flow's last hop
hands its packets to the ACK path.

Every hop has the link's buffer (drop-tail; infinite by default): a packet of flow 0
that a later hop drops is lost at that tick (its L grows then, and its loss is
detected one RTprop later, as at the first hop).  The rate is constant (no rate
schedule).
"""

from __future__ import annotations

from dataclasses import dataclass

from ccmatic.sim.records import SimConfig, SimResult

MAX_HOPS = 16


def check(cfg: SimConfig) -> None:
    """Refuse a parking lot the simulator cannot run (see the module doc)."""
    if cfg.topology == "dumbbell":
        return
    K = cfg.hops
    if not 1 <= K <= MAX_HOPS:
        raise ValueError(f"a parking lot has 1 to {MAX_HOPS} hops, got {K}")
    if len(cfg.flows) != K + 1:
        raise ValueError(f"a parking lot of {K} hops carries {K + 1} flows, got {len(cfg.flows)}")
    if cfg.link.schedule is not None:
        raise ValueError("a parking lot has a constant rate (no rate schedule)")


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
