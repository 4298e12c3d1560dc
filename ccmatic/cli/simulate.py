"""``ccmatic simulate``: run CCA files on a concrete link (fine mode, :mod:`ccmatic.sim.fine`).

Units on the command line are the networking ones: C in Mbit/s, R and D in ms,
the buffer in BDPs (C · R of the shortest flow), durations in seconds.

``--rate-schedule`` makes C change over the run (:class:`ccmatic.sim.links.RateSchedule`):
``T1:C1,T2:C2,...`` sets the rate to C_k Mbit/s from T_k seconds on (times strictly
increasing, after 0 and before the end of the run; --C before T1), and
``double-halve:P`` alternates 2·C and C every P seconds (C on [0, P), 2·C on [P, 2P),
C on [2P, 3P), ...), as App. B.6's convergence runs.  The buffer and the BDP units
stay those of the rate at t = 0.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import Subparsers, library, print_warnings
from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import PLOT_SUFFIXES, output_file
from ccmatic.core.limits import MAX_SIM_QUEUE
from ccmatic.io import sim_topology as topo
from ccmatic.io.sim_args import (
    ack_train,
    agg_kind,
    burst_size,
    check_buffer,
    check_flows,
    check_seed,
    check_size,
    check_warmup,
    describe_schedule,
    jitter_bounds,
    jitter_text,
    link_kind,
    load_sim_cca,
    milliseconds,
    named_flows,
    plot_state_names,
    positive_number,
    rate_schedule,
    tick_count,
)
from ccmatic.io.sim_plots import plot_run
from ccmatic.io.sim_report import flow_line, flows_text, metric_lines, schedule_json
from ccmatic.io.sim_series import SERIES_SUFFIXES, write_series
from ccmatic.sim.fine import QueueLimit, simulate, simulate_metrics
from ccmatic.sim.links import LINK_KINDS, Link
from ccmatic.sim.metrics import Metrics, metrics
from ccmatic.sim.records import Flow, SimConfig, SimResult, model_warnings
from ccmatic.sim.topology import hop_metrics
from ccmatic.spec.cca import CcaProgram


def buffer_bytes(text: str, bdp: float, mss: float) -> float | None:
    if text in ("inf", "infinite"):
        return None
    b = positive_number("--buffer", text, allow_zero=True)
    check_buffer(b, bdp, mss)
    return b * bdp


def plot_states(args: argparse.Namespace, progs: list[CcaProgram]) -> tuple[str, ...]:
    """The state variables ``--plot-state`` names: each must be one of some flow's CCA."""
    known = sorted({st.name for p in progs for st in p.states})
    return plot_state_names(args.plot_state, bool(args.plot), known, "no simulated CCA has a state variable",
                            "these CCAs have no state variables")


def cmd_simulate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    lib = library(args)
    names = [args.cca] + list(args.with_cca or [])
    progs = [load_sim_cca(lib, n) for n in names]
    print_warnings(err, [w for p in progs for w in p.warnings])
    Rs = [r / 1000 for r in milliseconds("--R", args.R)]
    kind_t, hops = topo.topology(args.topology, args.hops)
    nflows = check_flows(named_flows(topo.flow_count(args.flows, kind_t, hops, len(names)), names))
    check_seed(args.seed)
    if len(Rs) not in (1, nflows):
        raise SpecError(Loc("--R"), f"give one RTprop or one per flow ({nflows}), got {len(Rs)}")
    C = positive_number("--C", args.C) * 1e6 / 8
    kind = link_kind(args.model)
    D, own_D = jitter_bounds(args.D, kind, Rs, nflows)
    agg = agg_kind(args.agg, kind)
    train = ack_train(args.ack_train, kind)
    ticks = tick_count(args.ticks)
    burst = burst_size(args.burst)
    bdp = C * min(Rs)
    duration = positive_number("--duration", args.duration)
    sched = None if args.rate_schedule is None else rate_schedule(args.rate_schedule, C, duration)
    stagger = positive_number("--stagger", args.stagger, allow_zero=True) if args.stagger else 0.0
    buffer = topo.buffer_text(args.buffer, kind_t, args.rate_schedule)
    extra = topo.extra_delays(args.extra_delay, nflows)
    flows = tuple(Flow(progs[i % len(progs)], Rs[i % len(Rs)], i * stagger, D=own_D[i], extra=extra[i])
                  for i in range(nflows))
    # without --plot or --series a dumbbell run keeps only its metrics (streamed): no
    # per-tick, per-flow records to size
    streamed = not (args.plot or args.series) and kind_t == "dumbbell"
    check_size(duration, min(Rs), 1 if streamed else nflows + (3 * hops if kind_t == "parking_lot" else 0), ticks)
    warm = check_warmup(duration * 0.2 if args.warmup is None else
                        positive_number("--warmup", args.warmup, allow_zero=True), duration)
    mss = positive_number("--mss", args.mss)
    max_queue = MAX_SIM_QUEUE if args.max_queue is None else check_max_queue(args.max_queue)
    cfg = SimConfig(Link(kind, C, D, buffer_bytes(buffer, bdp, mss), sched, agg, train), flows, duration, mss=mss,
                    seed=args.seed, ticks_per_rtt=ticks, burst=burst, topology=kind_t, hops=hops, max_queue_packets=max_queue)
    states = plot_states(args, progs)
    if args.plot:
        output_file("--plot", args.plot, PLOT_SUFFIXES)
    series = output_file("--series", args.series, SERIES_SUFFIXES) if args.series else None
    warnings = model_warnings(cfg)
    err.writelines(f"warning: {w}\n" for w in warnings)
    if streamed:
        m, ran_s, stopped = run_streamed(cfg, warm)
        hms = []
    else:
        res, stopped = run_recorded(cfg, warm)
        m, hms, ran_s = metrics(res, warm), hop_metrics(res, warm), len(res.queue) * res.dt
        if args.plot:
            plot_run(res, args.plot, states)
        if series is not None:
            write_series(res, series)
    summary = run_summary(cfg, names, warm, warnings, args.rate_schedule)
    if stopped is not None:
        summary["stopped_s"] = ran_s
    if args.json:
        inputs = {"cca": [str(Path(p.path).resolve()) for p in progs]}
        out.write(json.dumps({"config": summary, "metrics": {**m.json(), **topo.hops_json(hms)}, "inputs": inputs},
                             indent=2) + "\n")
        if stopped is not None:
            raise stopped
        return 0
    rates = f"C={args.C} Mbit/s" + ("" if sched is None else f" ({describe_schedule(sched, args.rate_schedule)})")
    Dtext = jitter_text(D, own_D, agg)
    where = cfg.link.kind if kind_t == "dumbbell" else f"a {hops}-hop parking lot ({cfg.link.kind})"
    xtra = ("" if args.extra_delay is None else f", extra delay {args.extra_delay} ms") + \
        (f", ACK trains {train * 1e6:g} µs apart" if train else "") + \
        (f", unpaced bursts of {burst}" if burst > 1 else "")
    out.write(f"{flows_text([f.cca.name for f in flows])} on {where}: {rates}, "
              f"R={args.R} ms, D={Dtext} ms{xtra}, buffer={buffer} BDP, {duration:g} s, seed {args.seed}\n")
    out.writelines(metric_lines(m, warm, "utilization" if kind_t == "dumbbell" else "delivered/C"))
    out.writelines(flow_line(i, flows[i].cca.name, flows[i].R, fm) for i, fm in enumerate(m.flows))
    out.writelines(topo.hop_lines(hms))
    if args.plot:
        out.write(f"  plot: {args.plot}\n")
    if series is not None:
        out.write(f"  series: {series}\n")
    if stopped is not None:
        out.write(f"  stopped at {ran_s:g} s: the metrics are over [{warm:g}, {ran_s:g}) s\n")
        raise stopped
    return 0


def check_max_queue(n: int) -> int:
    if n < 1:
        raise SpecError(Loc("--max-queue"), f"--max-queue must be at least 1 packet, got {n}",
                        f"the default is {MAX_SIM_QUEUE:,}")
    return n


def run_recorded(cfg: SimConfig, warmup: float) -> tuple[SimResult, QueueLimit | None]:
    """The run with its records, or, when its queue passed the limit after the warm-up,
    the run up to then and the limit (raised after the report); before the warm-up,
    the limit."""
    try:
        return simulate(cfg), None
    except QueueLimit as e:
        if e.result is None or e.at_s <= warmup:
            raise
        return e.result, e


def run_streamed(cfg: SimConfig, warmup: float) -> tuple[Metrics, float, QueueLimit | None]:
    """The run's metrics streamed (its length; the limit as for :func:`run_recorded`)."""
    try:
        return simulate_metrics(cfg, warmup), cfg.duration, None
    except QueueLimit as e:
        if e.metrics is None:
            raise
        return e.metrics, e.at_s, e


def run_summary(cfg: Any, names: list[str], warmup: float, warnings: list[str],
                schedule_spec: str | None = None) -> dict[str, Any]:
    sched = cfg.link.schedule
    # the keys of per-flow D and fixed aggregation appear only where used, so that
    # earlier runs' output is unchanged
    extra = any(f.extra for f in cfg.flows)
    flows = [{"cca": f.cca.name, "R_s": f.R, "start_s": f.start, **({} if f.D is None else {"D_s": f.D}),
              **({"extra_delay_s": f.extra} if extra else {})} for f in cfg.flows]
    return {
        "ccas": names, "link": cfg.link.kind, "C_bytes_per_s": cfg.link.C, "D_s": cfg.link.D,
        **({} if cfg.link.agg == "uniform" else {"agg": cfg.link.agg}),
        **({"ack_train_s": cfg.link.train} if cfg.link.train else {}),
        **({} if cfg.ticks_per_rtt == SimConfig.ticks_per_rtt else {"ticks_per_rtt": cfg.ticks_per_rtt}),
        **({} if cfg.burst == SimConfig.burst else {"burst": cfg.burst}),
        **topo.summary_keys(cfg),
        "rate_schedule": schedule_json(sched, schedule_spec),
        "buffer_bytes": cfg.link.buffer, "flows": flows,
        "duration_s": cfg.duration, "mss": cfg.mss, "seed": cfg.seed, "warmup_s": warmup,
        "warnings": warnings,
    }


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    s = sub.add_parser("simulate", parents=[common], help=summary)
    s.add_argument("cca", help="CCA file or name (see 'ccmatic list')")
    s.add_argument("--with", dest="with_cca", action="append", metavar="CCA",
                   help="another CCA; flows take the CCAs in turn (repeatable)")
    s.add_argument("--model", default="ideal", help=f"link: {', '.join(LINK_KINDS)} (default ideal)")
    s.add_argument("--C", default="48", help="link rate, Mbit/s (default 48)")
    s.add_argument("--rate-schedule", metavar="SPEC", default=None,
                   help="C over time: T1:C1,T2:C2,... (seconds:Mbit/s; --C before T1), or double-halve:P "
                   "(C, 2C, C, 2C, ... switching every P seconds)")
    s.add_argument("--R", default="40", help="RTprop in ms (at least 1), or one per flow: 20,40 (default 40)")
    s.add_argument("--D", default=None, help="jitter / aggregation bound in ms (default: R; 0 on the ideal link); "
                   "one per flow, e.g. 32,0,0, gives each flow its own jitter box (0: none)")
    s.add_argument("--agg", default="uniform", help="ack_agg releases: uniform (every agg_k, uniform in [0, D); "
                   "default) or fixed (exactly every D)")
    s.add_argument("--ack-train", metavar="US", default=None, help="ack_agg: µs between two ACKs of one batch "
                   "(default 0: a batch arrives at once); with --ticks fine enough, senders act between them")
    s.add_argument("--ticks", type=int, default=None, help=f"simulator ticks per RTprop of the shortest flow "
                   f"(default {SimConfig.ticks_per_rtt})")
    s.add_argument("--burst", type=int, default=None, help="an unpaced (window-limited) sender's packets leave N "
                   "back to back, as after each of Linux's delayed ACKs (2; default 1: evenly over each tick)")
    s.add_argument("--buffer", default=None, help="buffer in BDPs of the shortest flow, or inf (default 1; inf "
                   "on a parking lot)")
    s.add_argument("--duration", default="30", help="seconds (default 30)")
    s.add_argument("--flows", type=int, default=None, help="number of flows (default one per CCA named; hops + 1 on a parking lot)")
    s.add_argument("--topology", default="dumbbell", help="dumbbell (default) or parking-lot: flow 0 crosses "
                   "every hop, flow i only hop i, all at rate C")
    s.add_argument("--hops", type=int, default=None, help="with --topology parking-lot: the hops K >= 1 "
                   f"(default {topo.DEFAULT_HOPS}); the flows are K + 1")
    s.add_argument("--extra-delay", metavar="MS[,MS...]", default=None, help="a persistent delay on each flow's "
                   "ACK path (one for all, or one per flow), not told to its CCA (thesis §6.5's δs)")
    s.add_argument("--stagger", default=None, help="start flow i at i*S seconds (default 0)")
    s.add_argument("--mss", default="1500", help="bytes (default 1500)")
    s.add_argument("--warmup", default=None, help="seconds excluded from the metrics (default 20%% of the run)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--max-queue", type=int, default=None, metavar="PACKETS",
                   help=f"stop the run (one error line, exit 2, the metrics so far) when the queues hold more "
                   f"packets (default {MAX_SIM_QUEUE:,})")
    s.add_argument("--plot", metavar="FILE.png", help="plot rates, cwnd, queue, RTT and losses over time")
    s.add_argument("--plot-state", metavar="NAME[,NAME]", help="with --plot: a panel per CCA state variable "
                   "(e.g. btl_bw,rtprop for bbr1)")
    s.add_argument("--series", metavar="FILE.csv", help="per-flow time series, one row per CCA step: rate, cwnd, "
                   "bytes sent, ACKed and lost, RTT, queue and the CCA's state (.csv or .json)")
    s.set_defaults(handler=cmd_simulate)
