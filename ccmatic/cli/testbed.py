"""``ccmatic testbed``: real Linux TCP flows on an emulated dumbbell or parking lot
(docs/testbed.md), with ``simulate``'s flags, metrics and outputs.

Flows run the kernel's ``reno``, ``cubic`` or ``bbr`` (BBRv1) by name, or any CCA
file that ``ccmatic export`` can export (a path, or a library name other than
those three), registered for the run.  C in Mbit/s on the wire, R and D in ms, the
buffer in BDPs (C · R of the shortest flow), durations in seconds."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import Subparsers, library
from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import PLOT_SUFFIXES, output_file
from ccmatic.export.build import BuildError
from ccmatic.export.kernel import STEPS
from ccmatic.io import sim_topology as topo
from ccmatic.io.sim_args import (
    agg_kind,
    check_flows,
    check_seed,
    check_warmup,
    describe_schedule,
    jitter_bounds,
    jitter_text,
    link_kind,
    milliseconds,
    named_flows,
    plot_state_names,
    positive_number,
    rate_schedule,
)
from ccmatic.io.sim_plots import plot_run
from ccmatic.io.sim_report import flow_line, flows_text, metric_lines, schedule_json
from ccmatic.io.sim_series import SERIES_SUFFIXES, write_series
from ccmatic.sim.links import LINK_KINDS
from ccmatic.sim.metrics import metrics
from ccmatic.sim.topology import hop_metrics
from ccmatic.spec.cca import load_cca
from ccmatic.testbed.ccas import KERNEL, FlowCca
from ccmatic.testbed.netns import MAX_HOPS, NetError
from ccmatic.testbed.results import KERNEL_STATE_UNITS
from ccmatic.testbed.run import TestbedConfig, TestbedError, TestbedFlow, TestbedRun, run
from ccmatic.testbed.selfcheck import check
from ccmatic.testbed.trace_check import check_observations, check_text
from ccmatic.testbed.trace_csv import write_trace

#: the testbed's segment sizes (the links' MTU from 576 to 9,000 bytes)
MIN_MSS, MAX_MSS = 524, 8948
EXIT_MISSING = 2  # root or a tool is missing: one line, as bad input
EXIT_TOOL = 1     # a tool failed while running


def flow_cca(args: argparse.Namespace, name: str, D_steps: int) -> FlowCca:
    if name in KERNEL:
        return FlowCca(name, None)
    return FlowCca(name, load_cca(library(args).require("templates", name)), D_steps)


def config(args: argparse.Namespace) -> tuple[TestbedConfig, float]:
    """The run's configuration and the warm-up, from the flags (one line each when wrong)."""
    Rs = [r / 1000 for r in milliseconds("--R", args.R)]
    names = [args.cca] + list(args.with_cca or [])
    kind_t, hops = topo.topology(args.topology, args.hops)
    if hops > MAX_HOPS:
        raise SpecError(Loc("--hops"), f"the testbed's parking lot has at most {MAX_HOPS} hops, got {hops}",
                        f"give --hops between 1 and {MAX_HOPS}, or run it in ccmatic simulate")
    nflows = check_flows(named_flows(topo.flow_count(args.flows, kind_t, hops, len(names)), names))
    check_seed(args.seed)
    if len(Rs) not in (1, nflows):
        raise SpecError(Loc("--R"), f"give one RTprop or one per flow ({nflows}), got {len(Rs)}")
    C = positive_number("--C", args.C) * 1e6 / 8
    kind = link_kind(args.model)
    D, own_D = jitter_bounds(args.D, kind, Rs, nflows)
    agg = agg_kind(args.agg, kind)
    duration = positive_number("--duration", args.duration)
    topo.constant_rate(kind_t, args.rate_schedule)
    sched = None if args.rate_schedule is None else rate_schedule(args.rate_schedule, C, duration)
    stagger = positive_number("--stagger", args.stagger, allow_zero=True) if args.stagger else 0.0
    buffer = positive_number("--buffer", args.buffer) * C * min(Rs)
    extra = topo.extra_delays(args.extra_delay, nflows)
    flows = []
    progs: dict[tuple[str, int], FlowCca] = {}
    for i in range(nflows):
        name, R = names[i % len(names)], Rs[i % len(Rs)]
        Df = own_D[i]
        D_steps = round((D if Df is None else Df) / R)  # the CCA's D, in its steps
        if (name, D_steps) not in progs:
            progs[name, D_steps] = flow_cca(args, name, D_steps)
        flows.append(TestbedFlow(progs[name, D_steps], R, i * stagger, Df, extra[i]))
    warm = check_warmup(duration * 0.2 if args.warmup is None else
                        positive_number("--warmup", args.warmup, allow_zero=True), duration)
    if args.trace_cca and all(f.cca.kernel for f in flows):
        raise SpecError(Loc("--trace-cca"), "only an exported CCA file keeps a step trace (the kernel's own do not)",
                        "run a CCA file, e.g. templates/reno.cca")
    if args.steps != "ack" and all(f.cca.kernel for f in flows):
        raise SpecError(Loc("--steps"), "only an exported CCA file has steps (the kernel's own run on every ACK)",
                        "run a CCA file, e.g. templates/cc_qdel.cca")
    return TestbedConfig(C, round(buffer), tuple(flows), duration, kind, D, agg, args.seed, sched,
                         segment_size(args.mss), trace=bool(args.trace_cca), quickack=args.quickack, steps=args.steps,
                         topology=kind_t, hops=hops), warm


def segment_size(text: str) -> int:
    """``--mss``: the TCP payload of a full segment, bytes (the links' MTU follows)."""
    mss = positive_number("--mss", text)
    if mss != int(mss) or not MIN_MSS <= mss <= MAX_MSS:
        raise SpecError(Loc("--mss"), f"the testbed's MSS is a whole number of bytes in {MIN_MSS}..{MAX_MSS}, "
                        f"got {text}", "1448 is Ethernet's (MTU 1500)")
    return int(mss)


def cmd_testbed(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    cfg, warm = config(args)
    if args.plot:
        output_file("--plot", args.plot, PLOT_SUFFIXES)
    states = plot_state_names(args.plot_state, bool(args.plot), tuple(KERNEL_STATE_UNITS),
                              "the testbed samples no state", "")
    series = output_file("--series", args.series, SERIES_SUFFIXES) if args.series else None
    traced = output_file("--trace-cca", args.trace_cca, (".csv",)) if args.trace_cca else None

    def say(line: str) -> None:
        err.write(line + "\n")

    try:
        r = run(cfg, say)
    except TestbedError as e:
        err.write(f"error: {e}\n")
        return EXIT_MISSING
    except (BuildError, NetError) as e:
        err.write(f"error: {str(e).splitlines()[0]}\n")
        return EXIT_TOOL
    m, hms = metrics(r.result, warm), hop_metrics(r.result, warm)
    dl = check(r)
    if not r.delay_line.get("realtime", False):
        say("warning: the delay line ran without a real-time priority (SCHED_FIFO refused): on a busy machine its "
            "frames may leave late (see its 'late p99')")
    if args.plot:
        plot_run(r.result, args.plot, states, "testbed", KERNEL_STATE_UNITS)
    if series is not None:
        write_series(r.result, series)
    obs = None
    if traced is not None:
        write_trace(r, cfg, traced)
        obs = check_observations(r, len(cfg.flows), a_upper=cfg.steps == "ack")
    if args.json:
        doc: dict[str, Any] = {"config": summary(cfg, args, warm, r), "metrics": {**m.json(), **topo.hops_json(hms)},
                               "delay_line": dl.json(), "bottleneck": r.bottleneck, "bottlenecks": r.bottlenecks,
                               "senders": r.senders, "raw": r.delay_line}
        if obs is not None:
            doc["trace_check"] = [asdict(c) for c in obs]
        out.write(json.dumps(doc, indent=2) + "\n")
        return 0
    rates = f"C={args.C} Mbit/s" + ("" if cfg.schedule is None else
                                   f" ({describe_schedule(cfg.schedule, args.rate_schedule)})")
    xtra = "" if args.extra_delay is None else f", extra delay {args.extra_delay} ms"
    own_D = [f.D for f in cfg.flows]
    where = cfg.model if cfg.topology == "dumbbell" else f"a {cfg.hops}-hop parking lot, {cfg.model}"
    out.write(f"{flows_text([f.cca.name for f in cfg.flows])} on the testbed ({where}): {rates}, R={args.R} ms, "
              f"D={jitter_text(cfg.D, own_D, cfg.agg)} ms{xtra}, buffer={args.buffer} BDP ({cfg.buffer:,} bytes), "
              f"MSS {cfg.mss} bytes{', an ACK per segment' if cfg.quickack else ''}"
              f"{', exported steps on a fixed grid' if cfg.steps == 'grid' else ''}, {cfg.duration:g} s\n")
    out.writelines(metric_lines(m, warm, "utilization" if cfg.topology == "dumbbell" else "delivered/C"))
    out.writelines(flow_line(i, f"{f.cca.name} as {r.kernel_names[i]}", f.R, fm)
                   for i, (f, fm) in enumerate(zip(cfg.flows, m.flows)))
    out.writelines(topo.hop_lines(hms))
    for j, b in enumerate(r.bottlenecks):
        which = "bottleneck" if len(r.bottlenecks) == 1 else f"hop {j + 1}'s bottleneck"
        out.write(f"  {which} (tbf): {b.get('packets', 0):,} frames sent, {b.get('drops', 0):,} dropped\n")
    out.write(f"  {dl.line()}\n")
    if args.plot:
        out.write(f"  plot: {args.plot}\n")
    if series is not None:
        out.write(f"  series: {series}\n")
    if traced is not None and obs is not None:
        out.write(f"  step trace: {traced}\n  {check_text(obs)}\n")
    return 0


def summary(cfg: TestbedConfig, args: argparse.Namespace, warm: float, r: TestbedRun) -> dict[str, Any]:
    flows = [{"cca": f.cca.name, "kernel_name": n, "R_s": f.R, "start_s": f.start,
              **({} if f.D is None else {"D_s": f.D}), **({"extra_delay_s": f.extra} if f.extra else {}),
              **({} if f.cca.program is None else {"file": str(Path(f.cca.program.path).resolve())})}
             for f, n in zip(cfg.flows, r.kernel_names)]
    return {"link": cfg.model, "C_bytes_per_s": cfg.C, "C_payload_bytes_per_s": r.result.config.link.C,
            "D_s": cfg.D, **({} if cfg.agg == "uniform" else {"agg": cfg.agg}),
            "rate_schedule": schedule_json(cfg.schedule, args.rate_schedule),
            "buffer_bytes": cfg.buffer, "flows": flows, "duration_s": cfg.duration, "mss": cfg.mss,
            **({"quickack": True} if cfg.quickack else {}), **({"steps": cfg.steps} if cfg.steps != "ack" else {}),
            **topo.summary_keys(r.result.config), "seed": cfg.seed, "warmup_s": warm, "removed_stale": r.removed_stale}


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    s = sub.add_parser("testbed", parents=[common], help=summary, description=__doc__)
    s.add_argument("cca", help=f"{', '.join(KERNEL)} (the kernel's), or a CCA file or name to export")
    s.add_argument("--with", dest="with_cca", action="append", metavar="CCA",
                   help="another CCA; flows take the CCAs in turn (repeatable)")
    s.add_argument("--model", default="ideal", help=f"link: {', '.join(LINK_KINDS)} (default ideal)")
    s.add_argument("--C", default="48", help="bottleneck rate, Mbit/s on the wire (default 48)")
    s.add_argument("--rate-schedule", metavar="SPEC", default=None,
                   help="C over time: T1:C1,T2:C2,... (seconds:Mbit/s), or double-halve:P")
    s.add_argument("--R", default="40", help="RTprop in ms, or one per flow: 20,40 (default 40)")
    s.add_argument("--D", default=None, help="jitter / aggregation bound on the ACK path in ms "
                   "(default: R; 0 on the ideal link); one per flow, e.g. 32,0,0, gives each flow its own "
                   "jitter box (0: none)")
    s.add_argument("--agg", default="uniform", help="ack_agg releases: uniform (default) or fixed")
    s.add_argument("--buffer", default="1", help="drop-tail buffer in BDPs of the shortest flow (default 1)")
    s.add_argument("--duration", default="30", help="seconds (default 30)")
    s.add_argument("--flows", type=int, default=None, help="number of flows (default one per CCA named; hops + 1 "
                   "on a parking lot)")
    s.add_argument("--topology", default="dumbbell", help="dumbbell (default) or parking-lot: flow 0 crosses "
                   "every hop, flow i only hop i; each hop has the rate C and its own --buffer")
    s.add_argument("--hops", type=int, default=None, help=f"with --topology parking-lot: the hops K, 1 to {MAX_HOPS} "
                   f"(default {topo.DEFAULT_HOPS})")
    s.add_argument("--extra-delay", metavar="MS[,MS...]", default=None, help="a persistent delay on each flow's "
                   "path (one for all, or one per flow), not told to an exported CCA (its RTprop stays R)")
    s.add_argument("--mss", default="1448", help="TCP payload of a full segment, bytes; the links' MTU is "
                   "MSS + 52 (default 1448: MTU 1500)")
    s.add_argument("--quickack", action="store_true", help="the receiver ACKs every segment, as the simulator's "
                   "and the models' do (default: Linux's delayed ACKs, one ACK per two segments)")
    s.add_argument("--stagger", default=None, help="start flow i at i*S seconds (default 0)")
    s.add_argument("--warmup", default=None, help="seconds excluded from the metrics (default 20%% of the run)")
    s.add_argument("--seed", type=int, default=0, help="seed of the delay line's random delays")
    s.add_argument("--plot", metavar="FILE.png", help="plot rates, cwnd, queue, RTT and losses over time")
    s.add_argument("--plot-state", metavar="NAME[,NAME]", help="with --plot: a panel per kernel state variable "
                   f"({', '.join(KERNEL_STATE_UNITS)}), for the flows that have it")
    s.add_argument("--series", metavar="FILE.csv", help="per-flow time series, one row per RTprop (.csv or .json)")
    s.add_argument("--trace-cca", metavar="FILE.csv", help="the exported CCAs' steps as the kernel ran them: "
                   "each step's length, observations, beliefs and decisions")
    s.add_argument("--steps", choices=STEPS, default="ack", help="where an exported CCA's steps begin: at the first "
                   "ACK an RTprop after the last (default), or on a fixed grid (docs/export.md)")
    s.set_defaults(handler=cmd_testbed)
