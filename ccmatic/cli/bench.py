"""``ccmatic bench``: one row per query or proof, timed the way a user waits for it.

Each row runs the real command (``ccmatic verify|synth|prove FILE --json``) in its own
process, ``--repeat`` times; ``process_s`` is the median wall time from process start
to exit (interpreter start-up, imports, loading, solving, output), and the row's other
figures are the in-process phase times that command reports in its JSON, from the run
with the median wall time.  A fresh process per run also keeps Z3's global state from
one question from steering the solver on the next."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import (
    EXIT_CEX,
    EXIT_OK,
    Subparsers,
    library,
    load_query_arg,
    resolve_query,
    solver_options,
)
from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import output_file
from ccmatic.engine.verify import query_cca
from ccmatic.io.charts import plot_bench
from ccmatic.io.growth import MIN_POINTS, bench_growth
from ccmatic.io.toml import TomlDoc


def is_proof(p: Path) -> bool:
    """A proof file (it has [[lemma]] tables), not a query."""
    try:
        return "lemma" in TomlDoc(p).data
    except SpecError:
        return False


def _files(args: argparse.Namespace) -> list[Path]:
    files: list[Path] = []
    for item in args.paths:
        p = Path(item)
        if p.is_dir():
            files += sorted(p.rglob("*.toml"))
        elif p.is_file() and is_proof(p):
            files.append(p)
        else:
            found = library(args).find("proofs", item)
            files.append(found if found is not None and is_proof(found) else resolve_query(args, item))
    if not files:
        raise SpecError(Loc(" ".join(args.paths)), "no query files found")
    return files


def _kind(args: argparse.Namespace, p: Path) -> str:
    """prove, synth or verify; input errors surface here, as one line."""
    if is_proof(p):
        return "prove"
    return "synth" if query_cca(load_query_arg(args, str(p))).is_template else "verify"


def _horizons(text: str | None) -> list[int | None]:
    """``--horizons 3-11`` or ``3,5,7``: one row per horizon (None: the file's)."""
    if text is None:
        return [None]
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            out = list(range(lo, hi + 1))
        else:
            out = [int(x) for x in text.split(",")]
    except ValueError:
        raise SpecError(Loc("--horizons"), f"expected horizons like 3-11 or 3,5,7, got {text!r}") from None
    if not out or min(out) < 2:
        raise SpecError(Loc("--horizons"), f"horizons must be at least 2, got {text!r}")
    return list(out)


def _command(args: argparse.Namespace, kind: str, p: Path, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "ccmatic.cli.main", kind, str(p), "--json", "--seed", str(args.seed)]
    for d in args.lib:
        cmd += ["--lib", d]
    if args.timeout is not None:
        cmd += ["--timeout", str(args.timeout)]
    if kind == "synth" and args.budget is not None:
        cmd += ["--budget", str(args.budget)]
    if args.T is not None and kind != "prove" and "--T" not in extra:
        cmd += ["--T", str(args.T)]
    return cmd + extra


def run_timed(cmd: list[str]) -> tuple[float, dict[str, Any], int]:
    """Process wall seconds, the command's JSON report, and its exit code."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SpecError(Loc(" ".join(cmd[3:5])), f"the benchmarked command failed (exit {done.returncode}): "
                        f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'no output'}") from None
    return wall, report, done.returncode


def measure(args: argparse.Namespace, kind: str, p: Path, extra: list[str]) -> dict[str, Any]:
    """``--repeat`` runs; the median run's report with its process wall, and every wall."""
    runs = [run_timed(_command(args, kind, p, extra)) for _ in range(args.repeat)]
    walls = [w for w, _r, _c in runs]
    median = statistics.median_low(walls)
    wall, report, _code = runs[walls.index(median)]
    return {"process_s": round(wall, 3), "process_all_s": [round(w, 3) for w in walls], "report": report}


def row_of(kind: str, p: Path, m: dict[str, Any]) -> dict[str, Any]:
    r = m["report"]
    row: dict[str, Any] = {"query": str(p), "kind": kind, "process_s": m["process_s"],
                           "process_all_s": m["process_all_s"], "wall_s": r.get("time_s"), "T": r.get("T")}
    if kind == "verify":  # an exists question's expect is in its own words (answer)
        row.update(verdict=r["verdict"], expect=r.get("expect"), encode_s=r.get("encode_s"),
                   solve_s=r.get("solve_s"), n_constraints=r.get("n_constraints"),
                   ok=r.get("expect") in (None, r.get("answer", r["verdict"])))
        if "answer" in r:
            row["answer"] = r["answer"]
    elif kind == "prove":
        row.update(verdict=r["verdict"], expect=r.get("expect"), jobs=r.get("jobs"),
                   lemmas={lem["name"]: [lem["verdict"], lem["time_s"]] for lem in r.get("lemmas", [])},
                   ok=r.get("expect") in (None, r["verdict"]))
    else:
        n = len(r["solutions"])
        row.update(status=r["status"], solutions=n, expect_solutions=r.get("expect_solutions"),
                   result=f"{r['status']}:{n}", **{k: r.get(k) for k in (
                       "iterations", "counterexamples", "encode_s", "generator_s", "verifier_s", "reverify_s",
                       "fresh_checks")},
                   ok=r["status"] == "complete" and r.get("expect_solutions") in (None, n))
    return row


def line_of(row: dict[str, Any]) -> str:
    name, kind = f"{Path(row['query']).stem} T={row['T']}", row["kind"]
    head = f"{name:32s} process {row['process_s']:7.2f}s  in-process {row['wall_s'] or 0:7.2f}s  "
    if kind == "verify":
        tail = (f"{row.get('answer', row['verdict']):15s} encode {row['encode_s']:6.2f}s  solve {row['solve_s']:7.2f}s"
                f"  {row['n_constraints']} asserts")
        miss = "" if row["ok"] else f"  (expected {row['expect']})"
    elif kind == "prove":
        slow = max(row["lemmas"].items(), key=lambda kv: kv[1][1], default=("-", ["", 0.0]))
        tail = f"{row['verdict']:15s} {len(row['lemmas'])} lemmas on {row['jobs']} job(s), slowest {slow[0]} " \
               f"{slow[1][1]:.1f}s"
        miss = "" if row["ok"] else f"  (expected {row['expect']})"
    else:
        tail = (f"{row['status']:9s} {row['solutions']:4d} sol  iter {row['iterations']:4d}  "
                f"gen {row['generator_s']:6.2f}s  ver {row['verifier_s']:6.2f}s  re-verify {row['reverify_s']:6.2f}s")
        miss = "" if row["ok"] else f"  (expected {row['expect_solutions']} solutions)"
    return head + tail + miss + "\n"


def cmd_bench(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.repeat < 1:
        raise SpecError(Loc("--repeat"), f"--repeat must be at least 1, got {args.repeat}")
    workers = _worker_counts(args.synth_jobs) if args.synth_jobs else []
    horizons = _horizons(args.horizons)
    if args.plot:
        output_file("--plot", args.plot, (".png", ".pdf", ".svg"))
    rows = []
    for p in _files(args):
        kind = _kind(args, p)
        for T in horizons if kind != "prove" else [None]:
            row = row_of(kind, p, measure(args, kind, p, [] if T is None else ["--T", str(T)]))
            if not args.json:
                out.write(line_of(row))
                out.flush()
            if workers and kind == "synth":
                row["parallel"] = _bench_parallel(args, p, workers, float(row["process_s"]), out)
            rows.append(row)
    fits = bench_growth(rows) if len(horizons) >= MIN_POINTS else []
    if not args.json:
        out.writelines(f"fit {g.text()}\n" for g in fits)
    if args.plot:
        plot_bench(rows, args.plot, fits)
    if args.json:
        out.write(json.dumps({"rows": rows, "repeat": args.repeat,
                              **({"fits": [g.json() for g in fits]} if fits else {}),
                              "total_process_s": round(sum(r["process_s"] for r in rows), 3),
                              **({"plot": args.plot} if args.plot else {})}, indent=2) + "\n")
    elif args.plot:
        out.write(f"plot: {args.plot}\n")
    return EXIT_OK if all(r["ok"] for r in rows) else EXIT_CEX


def _worker_counts(text: str) -> list[int]:
    counts = []
    for item in text.split(","):
        try:
            j = int(item)
        except ValueError:
            raise SpecError(Loc("--synth-jobs"), f"expected worker counts like 1,2, got {text!r}") from None
        if j < 1:
            raise SpecError(Loc("--synth-jobs"), f"worker counts must be at least 1, got {j}")
        counts.append(j)
    return counts


def _bench_parallel(args: argparse.Namespace, p: Path, workers: list[int], seq: float,
                    out: TextIO) -> list[dict[str, Any]]:
    """``synth --jobs j`` for each worker count, with counterexample sharing and, for
    several workers, without; process wall against the sequential row's."""
    runs = []
    for j in workers:
        for share in ([True, False] if j > 1 else [True]):
            m = measure(args, "synth", p, ["--jobs", str(j), *([] if share else ["--no-share"])])
            r, ps = m["report"], m["report"].get("parallel", {})
            wall = m["process_s"]
            run = {"workers": j, "share": share, "status": r["status"], "solutions": len(r["solutions"]),
                   "process_s": wall, "speedup": round(seq / wall, 3) if wall > 0 else None,
                   "iterations": r["iterations"], **{k: ps.get(k) for k in ("cubes", "resplits", "shared_out",
                                                                            "shared_in", "exchange_s")}}
            runs.append(run)
            if not args.json:
                out.write(f"  {j} worker(s){'' if share else ', no sharing':13s} {r['status']:9s} "
                          f"{run['solutions']:4d} sol  process {wall:7.2f}s  speed-up {seq / wall:5.2f}x  "
                          f"iter {r['iterations']:4d}  cubes {ps.get('cubes', 0):3d}  "
                          f"shared {ps.get('shared_out', 0)}/{ps.get('shared_in', 0)}\n")
                out.flush()
    return runs


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    b = sub.add_parser("bench", parents=[common, solver_options()], help=summary)
    b.add_argument("paths", nargs="+", metavar="DIR_OR_FILE")
    b.add_argument("--budget", type=float, default=None, metavar="S", help="limit of each synthesis row (seconds)")
    b.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run each row N times and report the median process wall (default 1)")
    b.add_argument("--horizons", metavar="3-11", default=None,
                   help="one row per horizon T for each query (a range 3-11 or a list 3,5,7)")
    b.add_argument("--plot", metavar="FILE.png", default=None,
                   help="plot process and phase seconds against T (with --horizons)")
    b.add_argument("--synth-jobs", metavar="1,2", default=None,
                   help="also run each synthesis row with these worker counts (speed-up, sharing)")
    b.set_defaults(handler=cmd_bench)
