"""``ccmatic simulate``: run CCA files on a concrete link (fine mode, :mod:`ccmatic.sim.fine`).

Units on the command line are the networking ones: C in Mbit/s, R and D in ms,
the buffer in BDPs (C · R of the shortest flow), durations in seconds.
"""

from __future__ import annotations

import argparse
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import Subparsers, library
from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import PLOT_SUFFIXES, output_dir, output_file
from ccmatic.core.limits import (
    MAX_SIM_CELLS,
    MAX_SIM_FLOWS,
    MAX_SIM_TICKS,
    SIM_BYTES_PER_CELL,
)
from ccmatic.io.library import Library
from ccmatic.io.sim_plots import plot_run
from ccmatic.io.sim_series import SERIES_SUFFIXES, write_series
from ccmatic.sim.fine import simulate
from ccmatic.sim.links import LINK_KINDS, Link, LinkKind
from ccmatic.sim.metrics import metrics
from ccmatic.sim.records import Flow, SimConfig
from ccmatic.spec.cca import CcaProgram, load_cca

MODEL_ALIASES: dict[str, LinkKind] = {"ideal": "ideal", "cbr_delay": "cbr_delay", "cbr-delay": "cbr_delay",
                                      "ack_agg": "ack_agg", "ack-agg": "ack_agg", "aggregation": "ack_agg"}


def _positive(flag: str, text: str, allow_zero: bool = False) -> float:
    try:
        v = float(Fraction(text))
    except (ValueError, ZeroDivisionError, OverflowError):
        raise SpecError(Loc(flag), f"expected a finite number, got {text!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise SpecError(Loc(flag), f"must be {'non-negative' if allow_zero else 'positive'}, got {text}")
    return v


def _list(flag: str, text: str, allow_zero: bool = False) -> list[float]:
    return [_positive(flag, x.strip(), allow_zero) for x in text.split(",") if x.strip()]


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


def check_size(duration: float, R_min: float, flows: int, ticks_per_rtt: int = SimConfig.ticks_per_rtt) -> None:
    """Refuse a run whose tick count or series would not fit, before allocating."""
    ticks = math.ceil(duration / (R_min / ticks_per_rtt))
    if ticks > MAX_SIM_TICKS or ticks * flows > MAX_SIM_CELLS:
        raise SpecError(Loc("--duration"), f"{duration:g} s at R = {R_min * 1000:g} ms is {ticks:,} ticks of R/"
                        f"{ticks_per_rtt} for {flows} flow(s), over the simulator's limit of {MAX_SIM_TICKS:,} ticks "
                        f"and {MAX_SIM_CELLS:,} ticks × flows (about "
                        f"{MAX_SIM_CELLS * SIM_BYTES_PER_CELL / 2**30:.1f} GiB)",
                        "shorten --duration or lengthen --R")


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


def buffer_bytes(text: str, bdp: float, mss: float) -> float | None:
    if text in ("inf", "infinite"):
        return None
    b = _positive("--buffer", text, allow_zero=True)
    check_buffer(b, bdp, mss)
    return b * bdp


def check_buffer(b: float, bdp: float, mss: float) -> None:
    """A drop-tail buffer admits whole packets: one that holds none drops everything,
    and a run on it means nothing."""
    if b * bdp < mss:
        raise SpecError(Loc("--buffer"), f"a buffer of {b:g} BDP is {b * bdp:.0f} bytes, less than one packet "
                        f"({mss:g} bytes): every packet would be dropped",
                        f"give at least {mss / bdp:.3g} BDP (one packet) here, or 'inf'")


def load_sim_cca(lib: Library, name: str) -> CcaProgram:
    p = lib.find("templates", name)
    if p is None:
        raise SpecError(Loc(name), "CCA file not found", "give a path or a name from 'ccmatic list'")
    prog = load_cca(p)
    if prog.is_template:
        first = next(iter(prog.holes.values()))
        raise SpecError(first.loc, f"'{prog.name}' is a template with holes", "simulate a concrete CCA (a synth solution)")
    return prog


def cmd_simulate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    lib = library(args)
    names = [args.cca] + list(args.with_cca or [])
    progs = [load_sim_cca(lib, n) for n in names]
    Rs = [r / 1000 for r in _list("--R", args.R)]
    nflows = check_flows(args.flows)
    check_seed(args.seed)
    if len(Rs) not in (1, nflows):
        raise SpecError(Loc("--R"), f"give one RTprop or one per flow ({nflows}), got {len(Rs)}")
    C = _positive("--C", args.C) * 1e6 / 8
    kind = link_kind(args.model)
    D = (_positive("--D", args.D, allow_zero=True) / 1000 if args.D is not None
         else 0.0 if kind == "ideal" else min(Rs))
    bdp = C * min(Rs)
    duration = _positive("--duration", args.duration)
    stagger = _positive("--stagger", args.stagger, allow_zero=True) if args.stagger else 0.0
    flows = tuple(Flow(progs[i % len(progs)], Rs[i % len(Rs)], i * stagger) for i in range(nflows))
    check_size(duration, min(Rs), nflows)
    warm = check_warmup(duration * 0.2 if args.warmup is None else
                        _positive("--warmup", args.warmup, allow_zero=True), duration)
    mss = _positive("--mss", args.mss)
    cfg = SimConfig(Link(kind, C, D, buffer_bytes(args.buffer, bdp, mss)), flows, duration, mss=mss, seed=args.seed)
    if args.plot:
        output_file("--plot", args.plot, PLOT_SUFFIXES)
    series = output_file("--series", args.series, SERIES_SUFFIXES) if args.series else None
    res = simulate(cfg)
    m = metrics(res, warm)
    if args.plot:
        plot_run(res, args.plot)
    if series is not None:
        write_series(res, series)
    summary = run_summary(cfg, names, warm)
    if args.json:
        out.write(json.dumps({"config": summary, "metrics": m.json()}, indent=2) + "\n")
        return 0
    out.write(f"{', '.join(sorted(set(names)))} x{nflows} on {cfg.link.kind}: C={args.C} Mbit/s, "
              f"R={args.R} ms, D={D * 1000:g} ms, buffer={args.buffer} BDP, {duration:g} s, seed {args.seed}\n")
    out.write(f"  utilization {m.utilization:.1%}   queue mean {m.queue_mean_bdp:.2f} BDP, max {m.queue_max_bdp:.2f} BDP"
              f"   loss {m.loss_per_R_mean:.2f} pkts/R (max {m.loss_per_R_max:.1f} in one R), rate {m.loss_rate:.2%}\n")
    conv = "never" if m.convergence_time is None else f"{m.convergence_time:.2f} s"
    out.write(f"  convergence {conv}   Jain's index {m.jain:.3f}   (measured after {warm:g} s)\n")
    out.writelines(f"  flow {i} ({flows[i].cca.name}, R={flows[i].R * 1000:g} ms): throughput {fm.throughput * 8 / 1e6:.2f} "
                  f"Mbit/s ({fm.share:.1%}), RTT mean {fm.rtt_mean * 1000:.1f} ms ({fm.rtt_ratio:.2f} RTprop), "
                  f"max {fm.rtt_max * 1000:.1f} ms\n" for i, fm in enumerate(m.flows))
    if args.plot:
        out.write(f"  plot: {args.plot}\n")
    if series is not None:
        out.write(f"  series: {series}\n")
    return 0


def run_summary(cfg: Any, names: list[str], warmup: float) -> dict[str, Any]:
    return {
        "ccas": names, "link": cfg.link.kind, "C_bytes_per_s": cfg.link.C, "D_s": cfg.link.D,
        "buffer_bytes": cfg.link.buffer, "flows": [{"cca": f.cca.name, "R_s": f.R, "start_s": f.start} for f in cfg.flows],
        "duration_s": cfg.duration, "mss": cfg.mss, "seed": cfg.seed, "warmup_s": warmup,
    }


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    s = sub.add_parser("simulate", parents=[common], help=summary)
    s.add_argument("cca", help="CCA file or name (see 'ccmatic list')")
    s.add_argument("--with", dest="with_cca", action="append", metavar="CCA",
                   help="another CCA; flows take the CCAs in turn (repeatable)")
    s.add_argument("--model", default="ideal", help=f"link: {', '.join(LINK_KINDS)} (default ideal)")
    s.add_argument("--C", default="48", help="link rate, Mbit/s (default 48)")
    s.add_argument("--R", default="40", help="RTprop in ms, or one per flow: 20,40 (default 40)")
    s.add_argument("--D", default=None, help="jitter / aggregation bound in ms (default: R; 0 on the ideal link)")
    s.add_argument("--buffer", default="1", help="buffer in BDPs of the shortest flow, or inf (default 1)")
    s.add_argument("--duration", default="30", help="seconds (default 30)")
    s.add_argument("--flows", type=int, default=1, help="number of flows (default 1)")
    s.add_argument("--stagger", default=None, help="start flow i at i*S seconds (default 0)")
    s.add_argument("--mss", default="1500", help="bytes (default 1500)")
    s.add_argument("--warmup", default=None, help="seconds excluded from the metrics (default 20%% of the run)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--plot", metavar="FILE.png", help="plot rates, cwnd, queue and RTT")
    s.add_argument("--series", metavar="FILE.csv", help="per-flow time series, one row per CCA step: rate, cwnd, "
                   "bytes sent, ACKed and lost, RTT, queue and the CCA's state (.csv or .json)")
    s.set_defaults(handler=cmd_simulate)
