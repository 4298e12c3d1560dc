"""``ccmatic evaluate``: the B.6 grid (thesis Appendix B.6, Figs. B.3–B.4).

Every CCA runs on every grid point — C ∈ {24, 48, 96} Mbit/s, R ∈ {20, 40, 80} ms,
D = R, β ∈ {1/16 … 16} BDP — as independent tasks in local processes.  The results
go to ``OUT/evaluate.json``; utilization, queue and loss against the buffer are
plotted to ``OUT/utilization.png``, ``OUT/queue.png`` and ``OUT/loss.png``.

Where a CCA has a proof in ``proofs/`` (:data:`PROVED_BOUNDS`), each run whose
network meets the proof's premise is checked against the proved bounds, measured
from the time the run enters the proof's steady state (the bounds are steady-state
guarantees); a run that does not get there in time is reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TextIO

from ccmatic.errors import Loc, SpecError
from ccmatic.library import Library
from ccmatic.parallel.executor import Executor, make_executor, map_unordered

GRID_C = (24.0, 48.0, 96.0)                  # Mbit/s
GRID_R = (20.0, 40.0, 80.0)                  # ms
STEADY_FROM = 0.5  # metrics over the second half of each run (the steady state)
GRID_BUFFER = tuple(Fraction(2) ** k for k in range(-4, 5))  # 1/16 .. 16 BDP


@dataclass(frozen=True)
class Task:
    cca_path: str
    cca_name: str
    model: str
    C_mbps: float
    R_ms: float
    buffer_bdp: Fraction
    duration: float
    flows: int
    seed: int
    cca_text: str | None = None  # the file's text, so that remote workers need no files


@dataclass(frozen=True)
class Bound:
    """A proved bound: ``holds(metrics)`` on runs where ``applies(row)`` (the proof's
    premise on the network), measured from the time the run enters the proof's
    steady state."""

    name: str
    applies: Callable[[dict[str, Any]], bool]
    holds: Callable[[dict[str, Any], dict[str, Any]], bool]


@dataclass(frozen=True)
class ProvedBounds:
    """What a proof in ``proofs/`` guarantees in its steady state, and when a run is
    in that state (``steady(res)``: the first time, or None)."""

    source: str
    steady_state: str
    steady: Callable[[Any], float | None]
    bounds: tuple[Bound, ...]


def _first_time(res: Any, ok: Callable[[Any, int, int], bool]) -> float | None:
    """The first step time at which ``ok(flow record, flow, step)`` holds for every flow."""
    recs = res.flows
    n = min(len(r.time) for r in recs)
    for k in range(n):
        if all(ok(r, f, k) for f, r in enumerate(recs)):
            return float(max(r.time[k] for r in recs))
    return None


def _qdel_steady(res: Any) -> float | None:
    C = res.config.link.C
    dt = res.dt

    def ok(r: Any, f: int, k: int) -> bool:
        R = res.config.flows[f].R
        q = res.queue[min(len(res.queue) - 1, int(r.time[k] / dt))]
        return bool(r.c_lo[k] >= 27 / 40 * C and r.c_hi[k] <= 3 * C and q <= 3 * C * (R + res.config.link.D))
    return _first_time(res, ok)


def _probe_steady(res: Any) -> float | None:
    C = res.config.link.C
    return _first_time(res, lambda r, f, k: bool(r.c_lo_lambda[k] >= 2 / 5 * C))


def _rtt_ok(row: dict[str, Any], m: dict[str, Any], k: float) -> bool:
    R = row["R_ms"] / 1000
    pkt = row["mss"] / (row["C_mbps"] * 1e6 / 8)
    return all(f["rtt_max"] is None or f["rtt_max"] <= k * (R + R) + pkt + 1e-9 for f in m["flows"])


def _deep(row: dict[str, Any]) -> bool:
    return float(Fraction(row["buffer_bdp"])) >= 6  # beta >= 3 C (R + D) with D = R


PROVED_BOUNDS: dict[str, ProvedBounds] = {
    "cc_qdel": ProvedBounds(
        "proofs/cc_qdel-ccac.toml", "IV: c_lo >= 27/40 C, c_hi <= 3 C, queue <= 3 C (R + D)", _qdel_steady, (
            Bound("utilization >= 83%", _deep, lambda r, m: m["utilization"] >= 0.83),
            Bound("queue <= 9/2 C (R + D)", _deep, lambda r, m: m["queue_max_bdp"] <= 9.0),
        )),
    "cc_probe_slow": ProvedBounds(
        "proofs/cc_probe_slow-cbrdelay.toml", "c_lo_lambda >= 2/5 C", _probe_steady, (
            Bound("utilization >= 5/18", lambda r: r["model"] == "cbr_delay", lambda r, m: m["utilization"] >= 5 / 18),
            Bound("RTT <= 8/5 (R + D) + 1 packet", lambda r: r["model"] == "cbr_delay",
                  lambda r, m: _rtt_ok(r, m, 8 / 5)),
        )),
}


def run_task(task: Task) -> dict[str, Any]:
    """Worker: one simulation, its metrics as a JSON-able row."""
    from ccmatic.lang.cca import load_cca
    from ccmatic.sim.commands import link_kind
    from ccmatic.sim.fine import Flow, SimConfig, simulate
    from ccmatic.sim.links import Link
    from ccmatic.sim.metrics import metrics

    prog = load_cca(task.cca_path, text=task.cca_text)
    C = task.C_mbps * 1e6 / 8
    R = task.R_ms / 1000
    cfg = SimConfig(Link(link_kind(task.model), C, R, float(task.buffer_bdp) * C * R),
                    tuple(Flow(prog, R) for _ in range(task.flows)), task.duration, seed=task.seed)
    t0 = time.perf_counter()
    res = simulate(cfg)
    m = metrics(res, task.duration * STEADY_FROM)
    steady: dict[str, Any] | None = None
    pb = PROVED_BOUNDS.get(task.cca_name)
    if pb is not None:
        t_in = pb.steady(res)
        # measured from the steady state on, if the run spends at least 10% of it there
        if t_in is not None and t_in <= 0.9 * task.duration:
            steady = {"from_s": t_in, "metrics": metrics(res, t_in).json()}
        else:
            steady = {"from_s": None, "metrics": None}
    return {"cca": task.cca_name, "model": task.model, "C_mbps": task.C_mbps, "R_ms": task.R_ms,
            "buffer_bdp": str(task.buffer_bdp), "flows": task.flows, "seed": task.seed, "duration_s": task.duration,
            "mss": cfg.mss, "wall_s": time.perf_counter() - t0, "metrics": m.json(), "steady": steady}


def check_bounds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every (row, bound) where a proved bound applies: does it hold in the steady
    state ("holds": true/false), or did the run not reach it ("holds": null)?"""
    out = []
    for r in rows:
        pb = PROVED_BOUNDS.get(r["cca"])
        if pb is None:
            continue
        for b in pb.bounds:
            if not b.applies(r):
                continue
            st = r.get("steady") or {}
            m = st.get("metrics")
            out.append({"cca": r["cca"], "C_mbps": r["C_mbps"], "R_ms": r["R_ms"], "buffer_bdp": r["buffer_bdp"],
                        "bound": b.name, "source": pb.source, "steady_from_s": st.get("from_s"),
                        "holds": None if m is None else bool(b.holds(r, m))})
    return out


def evaluate(tasks: list[Task], ex: Executor, progress: Callable[[int, int], None] | None = None
             ) -> list[dict[str, Any]]:
    """Every task on the executor; rows in task order."""
    rows: dict[int, dict[str, Any]] = {}
    for n, (i, row) in enumerate(map_unordered(ex, run_task, tasks), start=1):
        rows[i] = row
        if progress:
            progress(n, len(tasks))
    return [rows[i] for i in range(len(tasks))]


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
    from ccmatic.sim.commands import (
        _positive,
        check_flows,
        check_seed,
        link_kind,
        load_sim_cca,
        out_dir,
    )

    lib = Library.default(args.lib)
    progs = [load_sim_cca(lib, n) for n in args.ccas]
    link_kind(args.model)
    Cs = _grid("--C", args.C, GRID_C)
    Rs = _grid("--R", args.R, GRID_R)
    Bs = _grid("--buffer", args.buffer, GRID_BUFFER, frac=True)
    duration = _positive("--duration", args.duration)
    if args.jobs is not None and args.jobs < 1:
        raise SpecError(Loc("--jobs"), f"need at least one job, got {args.jobs}")
    check_flows(args.flows)
    check_seed(args.seed)
    jobs = args.jobs or (os.cpu_count() or 1)
    outdir = out_dir(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    tasks = [Task(p.path, p.name, args.model, c, r, b, duration, args.flows, args.seed, p.source.text)
             for p in progs for c in Cs for r in Rs for b in Bs]

    def progress(done: int, total: int) -> None:
        if not args.json:
            err.write(f"\r  {done}/{total} runs")
            if done == total:
                err.write("\n")

    t0 = time.perf_counter()
    ex = make_executor(args.executor, jobs, args.address)
    try:
        rows = evaluate(tasks, ex, progress)
    finally:
        ex.close()
    wall = time.perf_counter() - t0
    checks = check_bounds(rows)
    data = {"grid": {"C_mbps": Cs, "R_ms": Rs, "buffer_bdp": [str(b) for b in Bs], "model": args.model,
                     "duration_s": duration, "flows": args.flows, "seed": args.seed, "executor": args.executor},
            "wall_s": wall, "runs": rows, "bounds": checks}
    (outdir / "evaluate.json").write_text(json.dumps(data, indent=2) + "\n")
    from ccmatic.sim.plots import plot_grid

    plots = plot_grid(rows, outdir)
    violated = [c for c in checks if c["holds"] is False]
    unreached = [c for c in checks if c["holds"] is None]
    if args.json:
        out.write(json.dumps({"out": str(outdir), "runs": len(rows), "wall_s": wall, "bounds_checked": len(checks),
                              "bounds_violated": violated, "bounds_not_reached": len(unreached), "plots": [str(p) for p in plots]}, indent=2) + "\n")
    else:
        out.write(f"{len(rows)} runs in {wall:.1f} s ({jobs} jobs) -> {outdir / 'evaluate.json'}\n")
        for name in sorted({r['cca'] for r in rows}):
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
        out.writelines(f"  plot: {p}\n" for p in plots)
    return 1 if violated else 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    e = sub.add_parser("evaluate", parents=[common], help="run CCAs over the B.6 grid (C, R, buffer) in parallel")
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
    e.add_argument("--executor", default="local", help="local (processes, default) or ray")
    e.add_argument("--address", default=None, help="Ray cluster address ('auto', 'ray://host:10001')")
    e.set_defaults(handler=cmd_evaluate)
