"""``ccmatic contract CCA``: a CCA's contract rate = f(statistic), measured from
simulated dumbbell runs (thesis §5.2.1), and what it determines (Table 6.2, App. C):
:mod:`ccmatic.sim.contract`.  docs/contracts.md describes the fits and formulas.

Exit codes: 0 with or without a contract ("no contract" is a finding), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import Subparsers, executor_options, jobs_arg, library
from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import PLOT_SUFFIXES, output_file
from ccmatic.io.contract_plots import plot_contract
from ccmatic.io.runs import run_in_order
from ccmatic.io.sim_args import (
    check_buffer,
    check_flows,
    check_milliseconds,
    check_seed,
    check_size,
    link_kind,
    number_list,
    positive_number,
)
from ccmatic.io.sim_args import load_sim_cca as load_cca_arg
from ccmatic.sim.contract import (
    STATS,
    ContractTask,
    Question,
    analyze,
    run_contract_task,
)
from ccmatic.sim.records import SimConfig


def _flows(text: str) -> list[int]:
    vals = number_list("--flows", text)
    if not vals or any(v != int(v) for v in vals):
        raise SpecError(Loc("--flows"), f"expected a comma-separated list of whole flow counts, got {text!r}",
                        "e.g. --flows 2,4,8")
    return [check_flows(int(v)) for v in vals]


def _nonempty(flag: str, text: str) -> list[float]:
    vals = number_list(flag, text)
    if not vals:
        raise SpecError(Loc(flag), f"expected a comma-separated list of positive numbers, got {text!r}")
    return vals


def _jitter(text: str | None, n_default: int) -> tuple[int, int]:
    if text is None:
        return 1, n_default
    m, _, n = text.partition("/")
    if not (m.strip().isdigit() and n.strip().isdigit()) or not 0 < int(m) < int(n):
        raise SpecError(Loc("--jitter"), f"expected M/N with 0 < M < N flows, got {text!r}", "e.g. --jitter 1/3")
    return int(m), int(n)


def _buffer(text: str) -> float | None:
    return None if text in ("inf", "infinite") else positive_number("--buffer", text)


def tasks_of(args: argparse.Namespace) -> tuple[list[ContractTask], dict[str, Any]]:
    """The runs (C × R × N), checked, and the grid as JSON."""
    prog = load_cca_arg(library(args), args.cca)
    Cs, Rs, Ns = _nonempty("--C", args.C), check_milliseconds("--R", _nonempty("--R", args.R)), _flows(args.flows)
    if len(Cs) * len(Rs) * len(Ns) < 2:
        raise SpecError(Loc("--C"), "one run gives one fixed point: a contract needs at least 2 runs to fit",
                        "give several --C or --flows values, e.g. --C 24,48,96 --flows 2,4,8")
    buf = _buffer(args.buffer)
    if buf is not None:
        check_buffer(buf, min(Cs) * 1e6 / 8 * min(Rs) / 1000, SimConfig.mss)
    duration = positive_number("--duration", args.duration)
    check_size(duration, min(Rs) / 1000, max(Ns))
    check_seed(args.seed)
    kind = link_kind(args.model)
    tasks = [ContractTask(prog.path, prog.name, prog.source.text, kind, c, r, buf, n, duration, args.seed)
             for c in Cs for r in Rs for n in Ns]
    grid = {"cca": prog.name, "cca_file": str(Path(prog.path).resolve()), "model": kind, "C_mbps": Cs, "R_ms": Rs, "flows": Ns, "buffer_bdp": buf,
            "duration_s": duration, "seed": args.seed}
    return tasks, grid


def question(args: argparse.Namespace, grid: dict[str, Any]) -> Question:
    ds = None if args.delta_s is None else positive_number("--delta-s", args.delta_s)
    if args.hops < 1:
        raise SpecError(Loc("--hops"), f"a parking lot has at least 1 hop, got {args.hops}")
    n = max(grid["flows"]) if args.growth_n is None else args.growth_n
    if n < 2:
        raise SpecError(Loc("--growth-n"), f"congestion growth compares n ≥ 2 flows with one, got {n}")
    at = max(grid["C_mbps"]) if args.at is None else positive_number("--at", args.at)
    m, nj = _jitter(args.jitter, max(3, max(grid["flows"])))
    return Question(ds, args.hops, n, at, m, nj)


def jsonable(v: Any) -> Any:
    """JSON has no NaN or infinity: those become null."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return v


def cmd_contract(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    tasks, grid = tasks_of(args)
    q = question(args, grid)
    if args.plot:
        output_file("--plot", args.plot, PLOT_SUFFIXES)
    jobs = jobs_arg(args, os.cpu_count() or 1)
    t0 = time.perf_counter()
    rows = run_in_order(run_contract_task, tasks, jobs, args.executor, args.address, None if args.json else err)
    wall = time.perf_counter() - t0
    res = analyze(rows, q)
    if args.plot:
        plot_contract(rows, res, args.plot, grid)
    if args.json:
        out.write(json.dumps(jsonable({"grid": grid, "wall_s": wall, "jobs": jobs, "runs": rows, **res}), indent=2)
                  + "\n")
    else:
        out.write(report(grid, rows, res, wall, jobs, args.plot))
    return 0


# -- text ----------------------------------------------------------------------------------------

def _num(x: float | None, spec: str = ".3g") -> str:
    return "-" if x is None or not math.isfinite(x) else format(x, spec)


def _sum_only(x: float | None) -> str:
    """A bound the thesis derives only for statistics that add up along a path."""
    return "n/a (derived for delays, which add up per hop)" if x is None else _num(x)


def _runs_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["      C     N   R   rate/flow Mbit/s     ratio   p50 delay ms   avg delay ms   loss rate   util  fair"]
    for r in rows:
        fl = r["per_flow"]
        rates = [f["rate_mbps"] for f in fl]

        def mean(key: str, fl: list[dict[str, Any]] = fl) -> float | None:
            xs = [f[key] for f in fl if f[key] is not None]
            return sum(xs) / len(xs) if xs else None
        lines.append(f"  {r['C_mbps']:5g} {r['flows']:5d} {r['R_ms']:3g}   {_num(sum(rates) / len(rates)):>6} "
                     f"({_num(min(rates))}..{_num(max(rates))})   {_num(r['ratio'], '.2f'):>5}   "
                     f"{_num(mean('p50_delay')):>12}   {_num(mean('avg_delay')):>12}   {_num(mean('loss_rate')):>9}"
                     f"   {r['utilization']:.0%}  {'no' if r['unfair'] else 'yes'}")
    return lines


def _fits_table(fits: dict[str, Any]) -> list[str]:
    lines = [f"  {'statistic':10s}  {'power a·s^-p':30s}  {'shifted a·(s-c)^-p':34s}  {'linear a-b·s':28s}"]
    for stat, fs in fits.items():
        cells = []
        for fam in ("power", "shifted", "linear"):
            f = fs[fam]
            if f is None:
                cells.append("n/a")
                continue
            par = (f"a={f['a']:.3g} b={f['b']:.3g}" if fam == "linear" else
                   f"a={f['a']:.3g} p={f['p']:.3g}" + (f" c={f['c']:.3g}" if fam == "shifted" else ""))
            cells.append(f"{par} ({_num(f['mse_log'])})")
        lines.append(f"  {STATS[stat][0]:10s}  {cells[0]:30s}  {cells[1]:34s}  {cells[2]:28s}")
    return lines


def _determines(c: dict[str, Any]) -> list[str]:
    d = c["determines"]
    name, unit, _ = STATS[c["statistic"]]
    u = f" {unit}" if unit else ""
    b, pr = d["bounds"], d["predictions"]
    lines = [(f"what it determines over {name} in [{_num(d['s_min'])}, {_num(d['s_max'])}]{u} "
             f"(rates {_num(d['c_min_mbps'])}..{_num(d['c_max_mbps'])} Mbit/s):"),
             f"  robustness error for δs = {d['delta_s']:g}{u} (Eq. 6.1.1)   {_num(d['robustness'])}×",
             f"  unfairness on a {d['hops']}-hop parking lot (Eq. 6.1.5)  {_num(d['unfairness'])}×",
             f"  congestion growth with n = {d['n']} flows (Eq. 6.1.6)  {_num(d['growth'])}×",
             f"  range of bandwidths f(S_min)/f(S_max)       {_num(d['range'])}×",
             "App. C bounds (the contract against the Pareto frontier):",
             (f"  C.1.1 robustness ⇒ growth({d['n']}) ≥ {_num(b['C.1.1_growth_at_least'])}   "
             f"(contract: {_num(d['growth'])}; floor of log n/log ε_r, docs/contracts.md)"),
             f"  C.1.2 robustness ⇒ range ≤ {_num(b['C.1.2_range_at_most'])}   (contract: {_num(d['range'])})",
             (f"  C.1.3 unfairness ⇒ growth({d['n']}) ≥ {_sum_only(b['C.1.3_growth_at_least'])}   "
             f"(contract: {_num(d['growth'])})"),
             f"  C.1.4 unfairness ⇒ range ≤ {_sum_only(b['C.1.4_range_at_most'])}   (contract: {_num(d['range'])})",
             f"operating points at C = {pr['C_mbps']:g} Mbit/s:"]
    db, jt, pl = pr["dumbbell"], pr["jitter"], pr["parking_lot"]
    lines.append(f"  dumbbell, {db['n']} flows: {name} {_num(db['s'])}{u}")
    if "ratio" in jt:
        lines.append(f"  {jt['m']} of {jt['n']} flows with δs = {jt['delta_s']:g}{u}: {name} {_num(jt['s'])}{u}, "
                     f"clean {_num(jt['rate_clean'])} Mbit/s, jittered {_num(jt['rate_jittered'])} Mbit/s, "
                     f"ratio {_num(jt['ratio'])}×")
    if "ratio" in pl:
        lines.append(f"  {pl['hops']}-hop parking lot: short flows {_num(pl['rate_short'])} Mbit/s at "
                     f"{_num(pl['s_short'])}{u}, long flow {_num(pl['rate_long'])} Mbit/s at {_num(pl['s_long'])}{u},"
                     f" ratio {_num(pl['ratio'])}×")
    return lines


def report(grid: dict[str, Any], rows: list[dict[str, Any]], res: dict[str, Any], wall: float, jobs: int,
           plot: str | None) -> str:
    buf = "inf" if grid["buffer_bdp"] is None else f"{grid['buffer_bdp']:g}"
    lines = [(f"{grid['cca']} on a dumbbell ({grid['model']}): C {','.join(f'{c:g}' for c in grid['C_mbps'])} Mbit/s "
             f"× N {','.join(map(str, grid['flows']))}, R {','.join(f'{r:g}' for r in grid['R_ms'])} ms, buffer {buf} "
             f"BDP, {grid['duration_s']:g} s per run (second half measured), seed {grid['seed']}"),
             f"{len(rows)} runs in {wall:.1f} s ({jobs} jobs); {res['unfair_runs']} unfair (max/min rate > 1.5)",
             *_runs_table(rows),
             f"fits on {res['fitted_runs']} runs (in brackets: mean squared error of log rate):",
             *_fits_table(res["fits"])]
    c = res["contract"]
    if c is None:
        lines.append(f"no contract: {res['no_contract']}")
    else:
        unit = STATS[c["statistic"]][1]
        lines.append(f"contract: {c['text']} Mbit/s{f', s in {unit}' if unit else ''} "
                     f"(mse of log rate {_num(c['mse_log'])}, {c['points']} points)")
        lines += _determines(c)
    if plot:
        lines.append(f"plot: {plot}")
    return "\n".join(lines) + "\n"


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    c = sub.add_parser("contract", parents=[common], help=summary)
    c.add_argument("cca", metavar="CCA", help="CCA file or name (see 'ccmatic list')")
    c.add_argument("--C", default="24,48,96", help="link rates, Mbit/s (default 24,48,96)")
    c.add_argument("--R", default="40", help="RTprops, ms (default 40)")
    c.add_argument("--buffer", default="4", help="buffer in BDPs, or inf (default 4; the thesis uses 1 for Cubic)")
    c.add_argument("--flows", default="2,4,8", help="flow counts (default 2,4,8)")
    c.add_argument("--duration", default="60", help="seconds per run (default 60; the second half is measured)")
    c.add_argument("--model", default="ideal", help="link model (default ideal)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--jobs", type=int, default=None, help="parallel runs (default: cores)")
    c.add_argument("--delta-s", default=None, metavar="X", help="persistent error δs in the statistic's unit "
                   "(default 10 ms for delays, 0.001 for the loss rate)")
    c.add_argument("--hops", type=int, default=2, help="parking-lot hops k (default 2)")
    c.add_argument("--growth-n", type=int, default=None, metavar="N", help="flows for congestion growth "
                   "(default the largest --flows)")
    c.add_argument("--at", default=None, metavar="C", help="link rate of the operating points, Mbit/s "
                   "(default the largest --C)")
    c.add_argument("--jitter", default=None, metavar="M/N", help="operating point: M of N flows see δs "
                   "(default 1 of max(3, largest --flows))")
    c.add_argument("--plot", metavar="FILE.png", help="log-log plot of (statistic, rate) with the fits")
    executor_options(c)
    c.set_defaults(handler=cmd_contract)
