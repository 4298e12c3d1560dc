"""The simulation commands' arguments (``simulate``, ``evaluate``, ``contract``):
numbers and lists of numbers in the command line's units, the checks of a run's size,
seed, flows and buffer, the link model's name, and the CCA file to simulate.  Each
refusal is one :class:`SpecError` line naming the flag."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import output_dir
from ccmatic.core.limits import (
    MAX_ACK_TRAIN_US,
    MAX_BURST,
    MAX_SIM_CELLS,
    MAX_SIM_FLOWS,
    MAX_SIM_TICKS,
    MAX_TICKS_PER_RTT,
    SIM_BYTES_PER_CELL,
)
from ccmatic.io.library import Library
from ccmatic.sim.links import AGG_KINDS, LINK_KINDS, AggKind, LinkKind, RateSchedule
from ccmatic.sim.records import SimConfig
from ccmatic.spec.cca import CcaProgram, load_cca

MODEL_ALIASES: dict[str, LinkKind] = {"ideal": "ideal", "cbr_delay": "cbr_delay", "cbr-delay": "cbr_delay",
                                      "ack_agg": "ack_agg", "ack-agg": "ack_agg", "aggregation": "ack_agg"}


def finite_number(text: str) -> float | None:
    """A finite number, or None."""
    try:
        v = float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return v if math.isfinite(v) else None


def positive_number(flag: str, text: str, allow_zero: bool = False, hint: str | None = None) -> float:
    v = finite_number(text)
    if v is None:
        raise SpecError(Loc(flag), f"expected a finite number, got {text!r}", hint)
    if v < 0 or (v == 0 and not allow_zero):
        raise SpecError(Loc(flag), f"must be {'non-negative' if allow_zero else 'positive'}, got {text}", hint)
    return v


def number_list(flag: str, text: str, allow_zero: bool = False, hint: str | None = None) -> list[float]:
    return [positive_number(flag, x.strip(), allow_zero, hint) for x in text.split(",") if x.strip()]


def check_milliseconds(flag: str, values: list[float]) -> list[float]:
    """``--R``/``--D`` are in milliseconds: a value between 0 and 1 is almost surely
    seconds (0.04 for 40 ms), and the simulator takes no delay under 1 ms."""
    for v in values:
        if 0 < v < 1:
            raise SpecError(Loc(flag), f"{v:g} ms is less than 1 ms: {flag} is in milliseconds",
                            f"{flag} {v * 1000:g} for {v * 1000:g} ms")
    return values


def milliseconds(flag: str, text: str, allow_zero: bool = False, hint: str | None = None) -> list[float]:
    """A comma-separated list of delays in ms (see :func:`check_milliseconds`)."""
    return check_milliseconds(flag, number_list(flag, text, allow_zero, hint))


def check_seed(seed: int) -> int:
    if seed < 0:
        raise SpecError(Loc("--seed"), f"the seed must be a non-negative integer, got {seed}")
    return seed


def check_flows(n: int) -> int:
    if n < 1:
        raise SpecError(Loc("--flows"), f"need at least one flow, got {n}")
    if n > MAX_SIM_FLOWS:
        raise SpecError(Loc("--flows"), f"{n:,} flows is over the simulator's limit of {MAX_SIM_FLOWS:,}")
    return n


def named_flows(n: int, names: Sequence[str]) -> int:
    """``n`` flows for the CCAs named (the command's and each ``--with``), which the
    flows take in turn: each CCA named must run at least one flow."""
    if n < len(names):
        raise SpecError(Loc("--flows"), f"{n} flow(s) for the {len(names)} CCAs named ({', '.join(names)}): "
                        "each runs at least one flow", f"give --flows {len(names)} or more, or leave it out")
    return n


def check_size(duration: float, R_min: float, flows: int, ticks_per_rtt: int = SimConfig.ticks_per_rtt) -> None:
    """Refuse a run whose tick count or series would not fit, before allocating."""
    ticks = math.ceil(duration / (R_min / ticks_per_rtt))
    if ticks > MAX_SIM_TICKS or ticks * flows > MAX_SIM_CELLS:
        raise SpecError(Loc("--duration"), f"{duration:g} s at R = {R_min * 1000:g} ms is {ticks:,} ticks of R/"
                        f"{ticks_per_rtt} for {flows} flow(s), over the simulator's limit of {MAX_SIM_TICKS:,} ticks "
                        f"and {MAX_SIM_CELLS:,} ticks × flows (about "
                        f"{MAX_SIM_CELLS * SIM_BYTES_PER_CELL / 2**30:.1f} GiB)",
                        "shorten --duration or lengthen --R" if ticks_per_rtt == SimConfig.ticks_per_rtt
                        else "shorten --duration, lengthen --R or lower --ticks")


def check_warmup(warmup: float, duration: float) -> float:
    if warmup >= duration:
        raise SpecError(Loc("--warmup"), f"warmup {warmup:g} s leaves nothing of the {duration:g} s run to measure",
                        "make --warmup shorter than --duration")
    return warmup


def out_dir(text: str) -> Path:
    return output_dir("--out", text)


def link_kind(text: str) -> LinkKind:
    k = MODEL_ALIASES.get(text)
    if k is None:
        raise SpecError(Loc("--model"), f"unknown link model {text!r}", f"use one of {', '.join(LINK_KINDS)}")
    return k


def agg_kind(text: str, kind: LinkKind) -> AggKind:
    """``--agg``: how the ack_agg link spaces its releases."""
    if text not in AGG_KINDS:
        raise SpecError(Loc("--agg"), f"unknown aggregation {text!r}", f"use one of {', '.join(AGG_KINDS)}")
    if text != "uniform" and kind != "ack_agg":
        raise SpecError(Loc("--agg"), f"--agg {text} spaces the releases of the ack_agg link, not of {kind}",
                        "add --model ack_agg")
    return text


def ack_train(text: str | None, kind: LinkKind) -> float:
    """``--ack-train``: µs between two ACKs of one ack_agg batch, in seconds (0: the
    batch arrives at once)."""
    if text is None:
        return 0.0
    us = positive_number("--ack-train", text, allow_zero=True)
    if us > 0 and kind != "ack_agg":
        raise SpecError(Loc("--ack-train"), f"--ack-train spaces the ACKs of the ack_agg link's batches, not of {kind}",
                        "add --model ack_agg")
    if us > MAX_ACK_TRAIN_US:
        raise SpecError(Loc("--ack-train"), f"{us:g} µs between two ACKs of a batch is over {MAX_ACK_TRAIN_US:g} µs",
                        "a batch's ACKs leave an aggregating link back to back: give microseconds, e.g. 10")
    return us / 1e6


def tick_count(n: int | None) -> int:
    """``--ticks``: ticks per RTprop of the shortest flow."""
    if n is None:
        return SimConfig.ticks_per_rtt
    if not 1 <= n <= MAX_TICKS_PER_RTT:
        raise SpecError(Loc("--ticks"), f"{n} ticks per RTprop is outside 1..{MAX_TICKS_PER_RTT:,}",
                        f"leave it out for the default {SimConfig.ticks_per_rtt}")
    return n


def burst_size(n: int | None) -> int:
    """``--burst``: packets an unpaced sender sends back to back."""
    if n is None:
        return SimConfig.burst
    if not 1 <= n <= MAX_BURST:
        raise SpecError(Loc("--burst"), f"a burst of {n} packets is outside 1..{MAX_BURST}",
                        "2 is Linux's: its receiver ACKs every second segment")
    return n


def jitter_bounds(text: str | None, kind: LinkKind, Rs: list[float], nflows: int) -> tuple[float, list[float | None]]:
    """``--D`` in seconds: the link's D, and each flow's own (None: the link's and its
    shared jitter box).  One value (or none) is the link's; a list gives every flow
    its own."""
    if text is None:
        return (0.0 if kind == "ideal" else min(Rs)), [None] * nflows
    Ds = [d / 1000 for d in milliseconds("--D", text, True, "give milliseconds, 0 for no jitter: 32 or 32,0,0")]
    if len(Ds) == 1:
        return Ds[0], [None] * nflows
    if len(Ds) != nflows:
        raise SpecError(Loc("--D"), f"give one jitter bound or one per flow ({nflows}), got {len(Ds)}",
                        f"e.g. --D 32 for all, or {','.join(['32'] + ['0'] * (nflows - 1))} for flow 0 only")
    return max(Ds), list(Ds)


def jitter_text(D: float, own_D: list[float | None], agg: AggKind) -> str:
    """``--D`` as a run's first line shows it, in ms: the link's, or each flow's."""
    text = f"{D * 1000:g}" if own_D[0] is None else ",".join(f"{d * 1000:g}" for d in own_D if d is not None)
    return text + ("" if agg == "uniform" else f" ({agg} aggregation)")


def check_buffer(b: float, bdp: float, mss: float) -> None:
    """A drop-tail buffer admits whole packets: one that holds none drops everything,
    and a run on it means nothing."""
    if b * bdp < mss:
        raise SpecError(Loc("--buffer"), f"a buffer of {b:g} BDP is {b * bdp:.0f} bytes, less than one packet "
                        f"({mss:g} bytes): every packet would be dropped",
                        f"give at least {mss / bdp:.3g} BDP (one packet) here, or 'inf'")


def plot_state_names(text: str | None, plotting: bool, known: Sequence[str], unknown: str,
                     none: str) -> tuple[str, ...]:
    """``--plot-state NAME[,NAME]`` (``simulate`` and ``testbed``, with ``--plot``): the
    names, each one of ``known``; another is refused with ``unknown`` and the name, and
    the hint lists ``known`` (``none`` when it is empty)."""
    if text is None:
        return ()
    if not plotting:
        raise SpecError(Loc("--plot-state"), "--plot-state adds panels to a plot", "give --plot FILE.png too")
    names = tuple(n.strip() for n in text.split(","))
    for n in names:
        if n not in known:
            raise SpecError(Loc("--plot-state"), f"{unknown} {n!r}", f"use one of {', '.join(known)}" if known else none)
    return names


def load_sim_cca(lib: Library, name: str) -> CcaProgram:
    prog = load_cca(lib.require("templates", name))
    if prog.is_template:
        first = next(iter(prog.holes.values()))
        raise SpecError(first.loc, f"'{prog.name}' is a template with holes", "simulate a concrete CCA (a synth solution)")
    return prog


# the rate schedules of 'simulate' and 'testbed' (--rate-schedule)
MAX_RATE_CHANGES = 10_000
SCHEDULE_FORMS = "give T1:C1,T2:C2,... (seconds:Mbit/s, e.g. 10:96,20:48) or double-halve:P (P seconds)"


def rate_schedule(text: str, C: float, duration: float) -> RateSchedule:
    """``--rate-schedule`` (docs/simulation.md) for a link of rate C (bytes/s) at t = 0."""
    def bad(what: str, hint: str | None = SCHEDULE_FORMS) -> SpecError:
        return SpecError(Loc("--rate-schedule"), what, hint)

    head, _, rest = text.strip().partition(":")
    if head.strip() == "double-halve":
        P = finite_number(rest)
        if P is None or P <= 0:
            raise bad(f"double-halve needs a positive period in seconds, got {rest!r}", "e.g. double-halve:20")
        n = math.ceil(duration / P) - 1  # change points k·P < duration
        if n < 1:
            raise bad(f"a period of {P:g} s makes no change before the end of the {duration:g} s run",
                      "give a period shorter than --duration")
        if n > MAX_RATE_CHANGES:
            raise bad(f"a period of {P:g} s makes {n:,} rate changes in {duration:g} s, over the limit of "
                      f"{MAX_RATE_CHANGES:,}", "lengthen the period")
        return RateSchedule(((0.0, C), *((k * P, 2 * C if k % 2 else C) for k in range(1, n + 1))))
    entries = [e.strip() for e in text.split(",")]
    if not text.strip() or len(entries) > MAX_RATE_CHANGES:
        raise bad(f"expected 1 to {MAX_RATE_CHANGES:,} changes T:C, got {text!r}")
    points = [(0.0, C)]
    for e in entries:
        t_text, colon, c_text = e.partition(":")
        t, c = finite_number(t_text), finite_number(c_text)
        if not colon or t is None:
            raise bad(f"expected T:C (seconds:Mbit/s), got {e!r}")
        if c is None or c <= 0:
            raise bad(f"the rate of {e!r} must be a positive number of Mbit/s, got {c_text.strip()!r}")
        if t <= 0:
            raise bad(f"the time of {e!r} must be after 0 s (--C is the rate at t = 0)")
        if t <= points[-1][0]:
            raise bad(f"the times must increase strictly: {e!r} comes after a change at {points[-1][0]:g} s", None)
        if t >= duration:
            raise bad(f"the change {e!r} is not before the end of the {duration:g} s run",
                      "give times before --duration")
        points.append((t, c * 1e6 / 8))
    return RateSchedule(tuple(points))


def describe_schedule(sched: RateSchedule, spec: str, shown: int = 4) -> str:
    """The schedule for the header: 'rate schedule SPEC: 96 Mbit/s at 20 s, 48 at 40 s, ...'."""
    ch = [f"{c * 8 / 1e6:g}{' Mbit/s' if i == 0 else ''} at {t:g} s" for i, (t, c) in enumerate(sched.points[1:])]
    more = f", ... ({len(ch)} changes)" if len(ch) > shown else ""
    return f"rate schedule {spec}: {', '.join(ch[:shown])}{more}"
