"""``ccmatic simulate``'s topology flags: ``--topology parking-lot --hops K`` and
``--extra-delay MS[,MS...]`` (:mod:`ccmatic.sim.topology`, :attr:`ccmatic.sim.records.Flow.extra`).

Each option is checked here and refused with one ``error: ... (hint: ...)`` line:
the parking lot needs 1 ≤ K ≤ MAX_HOPS, K + 1 flows (the default with the option)
and a constant rate; every hop has the buffer (infinite by default)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.sim.records import SimConfig, Topology
from ccmatic.sim.topology import MAX_HOPS, HopMetrics

TOPOLOGIES: dict[str, Topology] = {"dumbbell": "dumbbell", "parking-lot": "parking_lot", "parking_lot": "parking_lot"}
DEFAULT_HOPS = 2


def topology(text: str, hops: int | None) -> tuple[Topology, int]:
    """``--topology`` and ``--hops``: the topology and its hop count (1 on a dumbbell)."""
    kind = TOPOLOGIES.get(text)
    if kind is None:
        raise SpecError(Loc("--topology"), f"unknown topology {text!r}", "use dumbbell or parking-lot")
    if kind == "dumbbell":
        if hops is not None:
            raise SpecError(Loc("--hops"), "--hops sets the hops of a parking lot", "add --topology parking-lot")
        return kind, 1
    K = DEFAULT_HOPS if hops is None else hops
    if not 1 <= K <= MAX_HOPS:
        raise SpecError(Loc("--hops"), f"a parking lot has 1 to {MAX_HOPS} hops, got {K}",
                        f"give --hops between 1 and {MAX_HOPS}")
    return kind, K


def flow_count(flows: int | None, kind: Topology, hops: int, named: int = 1) -> int:
    """``--flows``: on a dumbbell one flow per CCA named (``named``) by default,
    exactly hops + 1 on a parking lot."""
    if kind == "dumbbell":
        return named if flows is None else flows
    if flows is not None and flows != hops + 1:
        raise SpecError(Loc("--flows"), f"a parking lot of {hops} hops carries {hops + 1} flows (flow 0 across "
                        f"every hop, flow i on hop i), got {flows}", f"give --flows {hops + 1} or leave it out")
    return hops + 1


def constant_rate(kind: Topology, schedule: str | None) -> None:
    """Refuse ``--rate-schedule`` on a parking lot (its hops have a constant rate)."""
    if kind == "parking_lot" and schedule is not None:
        raise SpecError(Loc("--rate-schedule"), "a parking lot's hops have a constant rate",
                        "drop --rate-schedule, or use --topology dumbbell")


def buffer_text(text: str | None, kind: Topology, schedule: str | None) -> str:
    """``--buffer``'s text (default 1 BDP, infinite on a parking lot, where every hop
    has it); refuses a rate schedule on a parking lot."""
    constant_rate(kind, schedule)
    if text is None:
        return "inf" if kind == "parking_lot" else "1"
    return text


def extra_delays(text: str | None, nflows: int) -> list[float]:
    """``--extra-delay`` in seconds, one per flow (one value: the same for all)."""
    if text is None:
        return [0.0] * nflows
    hint = "give milliseconds, one for all or one per flow: 10 or 0,10"
    vals: list[float] = []
    for x in text.split(","):
        try:
            v = float(x)
        except ValueError:
            raise SpecError(Loc("--extra-delay"), f"expected a number of ms, got {x.strip()!r}", hint) from None
        if not 0 <= v < 1e6:
            raise SpecError(Loc("--extra-delay"), f"must be a non-negative number of ms, got {x.strip()}", hint)
        vals.append(v / 1000)
    if len(vals) == 1:
        return vals * nflows
    if len(vals) != nflows:
        raise SpecError(Loc("--extra-delay"), f"give one extra delay or one per flow ({nflows}), got {len(vals)}",
                        hint)
    return vals


def summary_keys(cfg: SimConfig) -> dict[str, Any]:
    """The ``--json`` config keys of a parking lot (none on a dumbbell)."""
    return {} if cfg.topology == "dumbbell" else {"topology": {"kind": cfg.topology, "hops": cfg.hops}}


def hops_json(hms: list[HopMetrics]) -> dict[str, Any]:
    """The ``--json`` metrics keys of a parking lot's hops (none on a dumbbell)."""
    return {"hops": [asdict(h) for h in hms]} if hms else {}


def hop_lines(hms: list[HopMetrics]) -> list[str]:
    """One text line per hop: its flows, utilization, flow 0's share, mean queue."""
    return [f"  hop {j + 1} (flows 0, {j + 1}): utilization {h.utilization:.1%}, flow 0's share {h.long_share:.1%}, "
            f"queue mean {h.queue_mean_delay * 1000:.2f} ms\n" for j, h in enumerate(hms)]
