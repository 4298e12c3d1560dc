"""How a run's metrics read, in text and JSON: one form for ``simulate`` and
``testbed``, whose metrics come from the same code (:mod:`ccmatic.sim.metrics`)."""

from __future__ import annotations

from typing import Any

from ccmatic.sim.links import RateSchedule
from ccmatic.sim.metrics import FlowMetrics, Metrics


def flows_text(ccas: list[str]) -> str:
    """The flows and their CCAs in a run's first line: ``1 reno flow``, ``4 bbr1
    flows``, ``3 flows (2 cubic, 1 reno)`` (in the order the CCAs first appear)."""
    counts: dict[str, int] = {}
    for c in ccas:
        counts[c] = counts.get(c, 0) + 1
    n = len(ccas)
    plural = "" if n == 1 else "s"
    if len(counts) == 1:
        return f"{n:,} {ccas[0]} flow{plural}"
    return f"{n:,} flows ({', '.join(f'{k:,} {c}' for c, k in counts.items())})"


def metric_lines(m: Metrics, warm: float, util: str = "utilization") -> list[str]:
    """The aggregate lines: utilization (or ``util``), queue and loss; convergence and
    Jain's index."""
    conv = "never" if m.convergence_time is None else f"{m.convergence_time:.2f} s"
    load = (f"  {util} {m.utilization:.1%}   queue mean {m.queue_mean_bdp:.2f} BDP, max {m.queue_max_bdp:.2f} BDP"
            f"   loss {m.loss_per_R_mean:.2f} pkts/R (max {m.loss_per_R_max:.1f} in one R), rate {m.loss_rate:.2%}\n")
    return [load,
            f"  convergence {conv}   Jain's index {m.jain:.3f}   (measured after {warm:g} s)\n"]


def flow_line(i: int, who: str, R: float, fm: FlowMetrics) -> str:
    """Flow i's line: ``who`` (its CCA), its RTprop ``R`` (s), throughput and RTT."""
    return (f"  flow {i} ({who}, R={R * 1000:g} ms): throughput {fm.throughput * 8 / 1e6:.2f} Mbit/s "
            f"({fm.share:.1%}), RTT mean {fm.rtt_mean * 1000:.1f} ms ({fm.rtt_ratio:.2f} RTprop), "
            f"max {fm.rtt_max * 1000:.1f} ms\n")


def schedule_json(sched: RateSchedule | None, spec: str | None) -> dict[str, Any] | None:
    """``config.rate_schedule`` of ``--json``: the spec given and its change points."""
    if sched is None:
        return None
    return {"spec": spec, "points": [{"time_s": t, "C_bytes_per_s": c} for t, c in sched.points]}
