"""``ccmatic bench``: one row per query or proof — wall, encode and solve seconds and
the verdict (verify), iterations, solutions, generator and verifier seconds (synth),
or per-lemma times (prove).  Each row runs in a fresh process: Z3's global state
left by one question changes the solver's path on the next.  The times are
in-process phase times of that process; ``wall_s`` is the row's own time, not
process start to exit."""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import (
    EXIT_CEX,
    EXIT_OK,
    Subparsers,
    library,
    load_proof_arg,
    load_query_arg,
    resolve_query,
    run_options,
    solver_options,
)
from ccmatic.cli.synth import synth_options
from ccmatic.core.errors import Loc, SpecError
from ccmatic.engine.cegis import Synthesizer
from ccmatic.engine.parallel.executor import LocalExecutor
from ccmatic.engine.parallel.synth import synthesize_parallel
from ccmatic.engine.proof.prove import default_jobs, prove
from ccmatic.engine.verify import query_cca, verify
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


def cmd_bench(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    rows = []
    ctx = multiprocessing.get_context("spawn")
    for p in _files(args):
        if not is_proof(p):
            load_query_arg(args, str(p))  # input errors surface here, as one line
        with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as ex:
            row, line = ex.submit(bench_row, args, p).result()
        if not args.json:
            out.write(line)
        if args.synth_jobs and row.get("kind") == "synth":
            row["parallel"] = _bench_parallel(args, p, float(row["wall_s"]), out)
        rows.append(row)
        out.flush()
    if args.json:
        out.write(json.dumps({"rows": rows, "total_wall_s": round(sum(r["wall_s"] for r in rows), 3)}, indent=2) + "\n")
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


def _bench_parallel(args: argparse.Namespace, p: Path, seq_wall: float, out: TextIO) -> list[dict[str, Any]]:
    """Parallel synthesis of one row with each --synth-jobs worker count (local
    processes), with counterexample sharing and, for several workers, without."""
    q = load_query_arg(args, str(p))
    runs = []
    for j in _worker_counts(args.synth_jobs):
        for share in ([True, False] if j > 1 else [True]):
            ex = LocalExecutor(j)
            t0 = time.perf_counter()
            try:
                pr = synthesize_parallel(q, synth_options(args, False), ex, share=share)
            finally:
                ex.close()
            wall = time.perf_counter() - t0
            ps, res = pr.parallel, pr.result
            r = {"workers": j, "share": share, "status": res.status, "solutions": len(res.solutions),
                 "wall_s": round(wall, 3), "speedup": round(seq_wall / wall, 3) if wall > 0 else None,
                 "iterations": res.stats.iterations, "cubes": ps.cubes, "resplits": ps.resplits,
                 "shared_out": ps.shared_out, "shared_in": ps.shared_in, "exchange_s": round(ps.exchange_s, 3),
                 "busy_s": round(sum(ps.task_wall_s), 3)}
            runs.append(r)
            if not args.json:
                out.write(f"  {j} worker(s){'' if share else ', no sharing':13s} {res.status:9s} "
                          f"{len(res.solutions):4d} sol  wall {wall:7.2f}s  speed-up {seq_wall / wall:5.2f}x  "
                          f"iter {res.stats.iterations:4d}  cubes {ps.cubes:3d}  shared {ps.shared_out}/{ps.shared_in}"
                          f"  exchange {ps.exchange_s:5.2f}s\n")
                out.flush()
    return runs


def bench_row(args: argparse.Namespace, p: Path) -> tuple[dict[str, Any], str]:
    """One benchmark row (run in its own process): the row and its text line."""
    if is_proof(p):
        buf = io.StringIO()
        return _bench_proof(args, p, buf), buf.getvalue()
    q = load_query_arg(args, str(p))
    prog = query_cca(q)
    t0 = time.perf_counter()
    if prog.is_template:
        res = Synthesizer(q, synth_options(args, False), prog).run()
        wall = time.perf_counter() - t0
        st = res.stats
        row = {"query": str(p), "kind": "synth", "status": res.status, "solutions": len(res.solutions),
               "expect_solutions": q.expect_solutions, "thesis_solutions": q.thesis_solutions, "T": q.T,
               "wall_s": round(wall, 3), "iterations": st.iterations, "counterexamples": st.counterexamples,
               "encode_s": round(st.encode_s, 3), "generator_s": round(st.generator_s, 3),
               "verifier_s": round(st.verifier_s, 3), "reverify_s": round(st.reverify_s, 3),
               "result": f"{res.status}:{len(res.solutions)}",
               "ok": res.status == "complete" and q.expect_solutions in (None, len(res.solutions))}
        mark = "" if row["ok"] else f"  (expected {q.expect_solutions} solutions)"
        return row, (f"{p.stem:32s} {res.status:9s} {len(res.solutions):4d} sol  wall {wall:7.2f}s  "
                     f"iter {st.iterations:4d}  gen {st.generator_s:6.2f}s  ver {st.verifier_s:6.2f}s  "
                     f"re-verify {st.reverify_s:6.2f}s{mark}\n")
    rep = verify(q, run_options(args), prog)
    wall = time.perf_counter() - t0
    row = {"query": str(p), "kind": "verify", "verdict": rep.verdict, "expect": q.expect, "T": q.T,
           "wall_s": round(wall, 3), "encode_s": round(rep.encode_s, 3), "solve_s": round(rep.solve_s, 3),
           "constraints": rep.n_constraints, "ok": q.expect in (None, rep.verdict)}
    mark = "" if row["ok"] else f"  (expected {q.expect})"
    return row, (f"{p.stem:32s} {rep.verdict:15s} wall {wall:7.2f}s  encode {rep.encode_s:6.2f}s  "
                 f"solve {rep.solve_s:7.2f}s{mark}\n")


def _bench_proof(args: argparse.Namespace, p: Path, out: TextIO) -> dict[str, Any]:
    """One benchmark row: ``ccmatic prove`` on all cores, wall time and per-lemma times."""
    args.proof, args.set = str(p), None
    proof, _lib = load_proof_arg(args)
    jobs = getattr(args, "jobs", None) or default_jobs()
    t0 = time.perf_counter()
    rep = prove(proof, run_options(args), jobs)
    wall = time.perf_counter() - t0
    row = {"query": str(p), "kind": "prove", "verdict": rep.verdict, "expect": proof.expect, "T": proof.T,
           "wall_s": round(wall, 3), "jobs": rep.jobs,
           "lemmas": {lem.name: [lem.verdict, round(lem.time_s, 3)] for lem in rep.lemmas},
           "ok": proof.expect in (None, rep.verdict)}
    mark = "" if row["ok"] else f"  (expected {proof.expect})"
    slow = max(rep.lemmas, key=lambda lem: lem.time_s)
    out.write(f"{p.stem:32s} {rep.verdict:15s} wall {wall:7.2f}s  {len(rep.lemmas)} lemmas on {rep.jobs} "
              f"job(s), slowest {slow.name} {slow.time_s:.1f}s{mark}\n")
    return row


def add_parser(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    b = sub.add_parser("bench", parents=[common, solver_options()],
                       help="time queries: wall, encode and solve seconds")
    b.add_argument("paths", nargs="+", metavar="DIR_OR_FILE")
    b.add_argument("--budget", type=float, default=None, metavar="S", help="limit of each synthesis row (seconds)")
    b.add_argument("--synth-jobs", metavar="1,2", default=None,
                   help="also run each synthesis row in parallel with these worker counts (speed-up, sharing)")
    b.set_defaults(handler=cmd_bench)
