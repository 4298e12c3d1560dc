"""``ccmatic evaluate``: the B.6 grid (C × R × buffer) in parallel, plots, and a check
of every proved steady-state bound (:mod:`ccmatic.sim.grid`).

The bounds' constants come from the proof files: for each CCA with a proof, which
proof and which of its constants describe its steady state is listed in
:data:`PROOFS`; the values are the files' own (so a changed proof changes the check).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, TextIO

from ccmatic.cli.common import Subparsers, executor_options, jobs_arg, library
from ccmatic.core.errors import Loc, SpecError
from ccmatic.io.library import Library
from ccmatic.io.proofs import load_proof
from ccmatic.io.runs import run_in_order
from ccmatic.io.sim_args import (
    check_buffer,
    check_flows,
    check_milliseconds,
    check_seed,
    check_size,
    link_kind,
    load_sim_cca,
    out_dir,
    positive_number,
)
from ccmatic.io.sim_plots import plot_grid
from ccmatic.sim.grid import (
    GRID_BUFFER,
    GRID_C,
    GRID_R,
    ProvedBounds,
    Task,
    check_bounds,
    run_task,
)
from ccmatic.sim.records import SimConfig

#: CCA -> (proof, the steady state's form, its constants, the link it is proved on)
PROOFS: dict[str, tuple[str, Literal["rate_beliefs", "cbr_beliefs"], tuple[str, ...], str | None]] = {
    "cc_qdel": ("cc_qdel-ccac", "rate_beliefs", ("conv_lo", "conv_hi", "qbound", "util", "inflight"), None),
    "cc_probe_slow": ("cc_probe_slow-cbrdelay", "cbr_beliefs", ("conv", "util", "rtt"), "cbr_delay"),
}


def proved_bounds(lib: Library, cca: str) -> ProvedBounds | None:
    """What the CCA's proof guarantees, with the proof file's constants (None: no proof)."""
    if cca not in PROOFS:
        return None
    name, kind, keys, link = PROOFS[cca]
    path = lib.find("proofs", name)
    if path is None:
        return None
    proof = load_proof(path, lib)
    missing = [k for k in keys if k not in proof.constants]
    if missing:
        raise SpecError(Loc(str(path)), f"the proof has no constant {', '.join(missing)}, which evaluate checks")
    values = proof.values()
    buf = proof.scenario.model.buffer
    # a β ≥ k·C·(R + D) premise, with D = R on the grid: at least 2k BDP
    min_bdp = float(2 * buf.k) if buf.mode == "large" and buf.k is not None else None
    state = proof.states[proof.steady].source.text
    return ProvedBounds(str(path), f"{proof.steady}: {state}", kind, {k: float(values[k]) for k in keys},
                        min_bdp, link)


def bound_notes(ccas: list[str], bounds: dict[str, ProvedBounds], checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each CCA: which proved bounds were checked, on how many runs, or why none
    (no proof; the runs' link or buffer is not the proof's)."""
    notes = []
    for name in dict.fromkeys(ccas):
        pb = bounds.get(name)
        runs = len({(c["C_mbps"], c["R_ms"], c["buffer_bdp"]) for c in checks if c["cca"] == name})
        if pb is None:
            why = ("none (evaluate checks the steady-state bounds of "
                   + " and ".join(f"{c} (proof {p[0]})" for c, p in PROOFS.items()) + ")")
        elif runs == 0:
            where = [f"on the {pb.link} link" if pb.link else "",
                     f"with a buffer of at least {pb.min_buffer_bdp:g} BDP" if pb.min_buffer_bdp else ""]
            why = f"not checked: they apply only {' and '.join(w for w in where if w)}, and no run of this grid does"
        else:
            why = f"checked on {runs} run(s), above"
        notes.append({"cca": name, "proof": None if pb is None else pb.source,
                      "bounds": [] if pb is None else list(pb.names()), "runs_checked": runs, "note": why})
    return notes


def _grid(flag: str, text: str | None, default: tuple[Any, ...], frac: bool = False) -> list[Any]:
    if text is None:
        return list(default)
    try:
        vals = [Fraction(x.strip()) for x in text.split(",") if x.strip()]
        floats = [float(v) for v in vals]
    except (ValueError, ZeroDivisionError, OverflowError):
        raise SpecError(Loc(flag), f"expected a comma-separated list of finite numbers, got {text!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise SpecError(Loc(flag), f"values must be positive, got {text!r}")
    return vals if frac else floats


def cmd_evaluate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    lib = library(args)
    progs = [load_sim_cca(lib, n) for n in args.ccas]
    kind = link_kind(args.model)
    Cs, Rs = _grid("--C", args.C, GRID_C), check_milliseconds("--R", _grid("--R", args.R, GRID_R))
    Bs = _grid("--buffer", args.buffer, GRID_BUFFER, frac=True)
    check_buffer(float(min(Bs)), min(Cs) * 1e6 / 8 * min(Rs) / 1000, SimConfig.mss)  # the grid's smallest
    duration = positive_number("--duration", args.duration)
    check_size(duration, min(Rs) / 1000, args.flows)
    check_flows(args.flows)
    check_seed(args.seed)
    jobs = jobs_arg(args, os.cpu_count() or 1)
    outdir = out_dir(args.out)
    bounds = {p.name: b for p in progs if (b := proved_bounds(lib, p.name)) is not None}
    tasks = [Task(p.path, p.name, kind, c, r, b, duration, args.flows, args.seed, p.source.text, bounds.get(p.name))
             for p in progs for c in Cs for r in Rs for b in Bs]
    t0 = time.perf_counter()
    ordered = run_in_order(run_task, tasks, jobs, args.executor, args.address, None if args.json else err)
    wall = time.perf_counter() - t0
    checks = check_bounds(ordered, bounds)
    notes = bound_notes([p.name for p in progs], bounds, checks)
    inputs = {"cca": [str(Path(p.path).resolve()) for p in progs]}
    data = {"grid": {"C_mbps": Cs, "R_ms": Rs, "buffer_bdp": [str(b) for b in Bs], "model": args.model,
                     "duration_s": duration, "flows": args.flows, "seed": args.seed, "executor": args.executor},
            "wall_s": wall, "runs": ordered, "bounds": checks, "bound_checks": notes,
            "inputs": inputs}
    (outdir / "evaluate.json").write_text(json.dumps(data, indent=2) + "\n")
    plots = plot_grid(ordered, outdir)
    _report(args, out, outdir, ordered, checks, notes, plots, wall, jobs, inputs)
    return 1 if any(c["holds"] is False for c in checks) else 0


def _report(args: argparse.Namespace, out: TextIO, outdir: Any, rows: list[dict[str, Any]],
            checks: list[dict[str, Any]], notes: list[dict[str, Any]], plots: list[Any], wall: float,
            jobs: int, inputs: dict[str, Any]) -> None:
    violated = [c for c in checks if c["holds"] is False]
    unreached = [c for c in checks if c["holds"] is None]
    if args.json:
        out.write(json.dumps({"out": str(outdir), "runs": len(rows), "wall_s": wall, "bounds_checked": len(checks),
                              "bounds_violated": violated, "bounds_not_reached": len(unreached),
                              "bound_checks": notes, "inputs": inputs,
                              "plots": [str(p) for p in plots]}, indent=2) + "\n")
        return
    out.write(f"{len(rows)} runs in {wall:.1f} s ({jobs} jobs) -> {outdir / 'evaluate.json'}\n")
    for name in sorted({r["cca"] for r in rows}):
        mine = [r for r in rows if r["cca"] == name]
        u = [r["metrics"]["utilization"] for r in mine]
        lpr = [r["metrics"]["loss_per_R_mean"] for r in mine]
        q = [r["metrics"]["queue_mean_bdp"] for r in mine]
        out.write(f"  {name:16s} utilization {min(u):.0%}..{max(u):.0%}   mean queue {min(q):.2f}..{max(q):.2f} BDP"
                  f"   loss {min(lpr):.2f}..{max(lpr):.2f} pkts/R\n")
    if checks:
        held = len(checks) - len(violated) - len(unreached)
        out.write(f"  proved bounds (in the proofs' steady states): {held}/{len(checks)} checks hold, "
                  f"{len(violated)} violated, {len(unreached)} runs did not reach the steady state\n")
        out.writelines(f"    VIOLATED {c['cca']} {c['bound']} at C={c['C_mbps']} R={c['R_ms']} "
                       f"buffer={c['buffer_bdp']} ({c['source']})\n" for c in violated)
    for n in notes:
        what = f" ({', '.join(n['bounds'])}; {n['proof']})" if n["bounds"] else ""
        out.write(f"  proved bounds of {n['cca']}{what}: {n['note']}\n")
    out.writelines(f"  plot: {p}\n" for p in plots)


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    e = sub.add_parser("evaluate", parents=[common], help=summary)
    e.add_argument("ccas", nargs="+", metavar="CCA")
    e.add_argument("--out", required=True, metavar="DIR", help="folder for evaluate.json and the plots")
    e.add_argument("--model", default="ack_agg", help="link model (default ack_agg, as in B.6)")
    e.add_argument("--C", default=None, help="link rates, Mbit/s (default 24,48,96)")
    e.add_argument("--R", default=None, help="RTprops, ms (default 20,40,80); D = R")
    e.add_argument("--buffer", default=None, help="buffers, BDP (default 1/16,1/8,...,16)")
    e.add_argument("--duration", default="60", help="seconds per run (default 60; metrics over the second half)")
    e.add_argument("--flows", type=int, default=1)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--jobs", type=int, default=None, help="parallel runs (default: cores)")
    executor_options(e)
    e.set_defaults(handler=cmd_evaluate)
