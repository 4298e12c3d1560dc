"""The ``ccmatic`` command.

Every handler is a pure function ``(args, out, err) -> int``; :func:`main` parses
arguments, maps :class:`SpecError` to one line on stderr with exit code 2 (no
traceback unless ``--debug``), and returns the handler's exit code.

Exit codes: 0 proved / success, 1 counterexample, 2 bad input, 3 unknown/timeout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn, TextIO

from ccmatic import __version__
from ccmatic.config import Query, RunOptions
from ccmatic.errors import Loc, SpecError
from ccmatic.library import Library

EXIT_OK, EXIT_CEX, EXIT_INPUT, EXIT_UNKNOWN = 0, 1, 2, 3

Handler = Callable[[argparse.Namespace, TextIO, TextIO], int]


def _lib(args: argparse.Namespace) -> Library:
    return Library.default(args.lib)


def _resolve_query(args: argparse.Namespace, name: str) -> Path:
    lib = _lib(args)
    if Path(name).suffix == ".cca":
        raise SpecError(Loc(name), "this is a CCA file, not a query",
                        "write a query .toml that names it (cca = \"...\"), or use 'ccmatic check' on the CCA")
    p = lib.find("queries", name)
    if p is None:
        raise SpecError(Loc(name), "query file not found", "give a path, or a query name from 'ccmatic list'")
    return p


def _load_query(args: argparse.Namespace, name: str) -> Query:
    from ccmatic.loader import load_query

    q = load_query(_resolve_query(args, name), _lib(args))
    if getattr(args, "T", None) is not None:
        if args.T < 2:
            raise SpecError(Loc("--T"), f"T must be at least 2, got {args.T}")
        if q.periodic is not None and q.periodic >= args.T:
            raise SpecError(Loc("--T"), f"T={args.T} must exceed the query's periodic = {q.periodic}")
        q = replace(q, T=args.T)
    return q


def run_options(args: argparse.Namespace) -> RunOptions:
    """--timeout and --seed, validated (shared by every solving command)."""
    t = args.timeout
    if t is not None and not (math.isfinite(t) and t > 0):
        raise SpecError(Loc("--timeout"), f"timeout must be a positive number of seconds, got {t}")
    return RunOptions(timeout_s=t, seed=args.seed)


def cmd_verify(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ccmatic.report import verify_json, verify_text
    from ccmatic.verify import Counterexample, Proved, verify

    opts = run_options(args)
    q = _load_query(args, args.query)
    if args.cca:
        found = _lib(args).find("templates", args.cca)
        if found is None:
            raise SpecError(Loc(args.cca), "CCA file not found", "give a path or a name from 'ccmatic list'")
        q = replace(q, cca_path=str(found))

    def progress() -> None:  # only once encoded, so that an input error stays one line
        if not args.json:
            err.write(f"verifying {q.name} (T={q.T}) ...\n")

    rep = verify(q, opts, on_encoded=progress)
    if args.plot and isinstance(rep.outcome, Counterexample):
        from ccmatic.plot import plot_trace

        plot_trace(rep.outcome.trace, args.plot, title=f"{q.name}: counterexample")
    if args.json:
        out.write(json.dumps(verify_json(rep), indent=2) + "\n")
    else:
        out.write(verify_text(rep) + "\n")
        if args.plot:
            if isinstance(rep.outcome, Counterexample):
                out.write(f"  plot: {args.plot}\n")
            else:
                out.write("  (no counterexample, nothing to plot)\n")
    if isinstance(rep.outcome, Proved):
        return EXIT_OK
    if isinstance(rep.outcome, Counterexample):
        return EXIT_CEX
    return EXIT_UNKNOWN


def cmd_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ccmatic.lang.cca import load_cca
    from ccmatic.lang.source import read_source
    from ccmatic.loader import TomlDoc

    lib = _lib(args)
    rows: dict[str, list[dict[str, Any]]] = {"models": [], "templates": [], "queries": [], "proofs": []}
    for kind, kind_rows in rows.items():
        for p in lib.listing(kind):
            desc = ""
            try:
                if p.suffix == ".toml":
                    desc = str(TomlDoc(p).data.get("description", ""))
                else:
                    first = next((ln for ln in read_source(p, "CCA file").splitlines() if ln.startswith("#")), "")
                    desc = first.lstrip("# ").strip()
                    load_cca(p)  # only list CCA files that load
            except SpecError as e:
                desc = f"(invalid: {e.render()})"
            kind_rows.append({"name": p.stem,
                              "path": str(p), "description": desc})
    if args.json:
        out.write(json.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    titles = {"models": "Models", "templates": "CCAs and templates", "queries": "Queries", "proofs": "Proofs"}
    for kind, items in rows.items():
        out.write(f"{titles[kind]} ({len(items)}):\n")
        for it in items:
            where = Path(it["path"]).parent.name
            name = it["name"] if kind != "queries" else f"{where}/{it['name']}"
            out.write(f"  {name:28s} {it['description']}\n")
    return EXIT_OK


def cmd_bench(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    files: list[Path] = []
    for item in args.paths:
        p = Path(item)
        if p.is_dir():
            files += sorted(p.rglob("*.toml"))
        elif p.is_file() and _is_proof(p):
            files.append(p)
        else:
            found = _lib(args).find("proofs", item)
            files.append(found if found is not None and _is_proof(found) else _resolve_query(args, item))
    if not files:
        raise SpecError(Loc(" ".join(args.paths)), "no query files found")
    # each row in a fresh process: Z3's global state (term ids, caches) left by one
    # query changes the solver's path on the next, so shared-process timings drift
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    rows = []
    ctx = multiprocessing.get_context("spawn")
    for p in files:
        if not _is_proof(p):
            _load_query(args, str(p))  # input errors surface here, as one line
        with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as ex:
            row, line = ex.submit(_bench_row, args, p).result()
        if not args.json:
            out.write(line)
        if args.synth_jobs and row.get("kind") == "synth":
            row["parallel"] = _bench_parallel(args, p, float(row["wall_s"]), out)
        rows.append(row)
        out.flush()
    if args.json:
        out.write(json.dumps({"rows": rows, "total_wall_s": round(sum(r["wall_s"] for r in rows), 3)}, indent=2) + "\n")
    return EXIT_OK if all(r["ok"] for r in rows) else EXIT_CEX


def _bench_parallel(args: argparse.Namespace, p: Path, seq_wall: float, out: TextIO) -> list[dict[str, Any]]:
    """Parallel synthesis of one row with each --synth-jobs worker count (local
    processes), with counterexample sharing and, for several workers, without."""
    from ccmatic.cegis import SynthOptions
    from ccmatic.parallel.executor import LocalExecutor
    from ccmatic.parallel.synth import synthesize_parallel

    q = _load_query(args, str(p))
    runs = []
    for text in args.synth_jobs.split(","):
        try:
            j = int(text)
        except ValueError:
            raise SpecError(Loc("--synth-jobs"), f"expected worker counts like 1,2, got {args.synth_jobs!r}") from None
        if j < 1:
            raise SpecError(Loc("--synth-jobs"), f"worker counts must be at least 1, got {j}")
        for share in ([True, False] if j > 1 else [True]):
            ex = LocalExecutor(j)
            t0 = time.perf_counter()
            try:
                pr = synthesize_parallel(q, SynthOptions(timeout_s=args.timeout, seed=args.seed), ex, share=share)
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


def _bench_row(args: argparse.Namespace, p: Path) -> tuple[dict[str, Any], str]:
    """One benchmark row (run in its own process): the row and its text line."""
    import io

    from ccmatic.lang.cca import load_cca
    from ccmatic.verify import verify

    if _is_proof(p):
        buf = io.StringIO()
        row = _bench_proof(args, p, buf)
        return row, buf.getvalue()
    q = _load_query(args, str(p))
    prog = load_cca(q.cca_path)
    t0 = time.perf_counter()
    if prog.is_template:
        from ccmatic.cegis import Synthesizer, SynthOptions

        syn = Synthesizer(q, SynthOptions(timeout_s=args.timeout, seed=args.seed, record_counterexamples=False), prog)
        res = syn.run()
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
    rep = verify(q, run_options(args))
    wall = time.perf_counter() - t0
    row = {"query": str(p), "kind": "verify", "result": rep.result, "expect": q.expect, "T": q.T,
           "wall_s": round(wall, 3), "encode_s": round(rep.encode_s, 3), "solve_s": round(rep.solve_s, 3),
           "constraints": rep.n_constraints, "ok": q.expect in (None, rep.result)}
    mark = "" if row["ok"] else f"  (expected {q.expect})"
    return row, (f"{p.stem:32s} {rep.result:15s} wall {wall:7.2f}s  encode {rep.encode_s:6.2f}s  "
                 f"solve {rep.solve_s:7.2f}s{mark}\n")


def _is_proof(p: Path) -> bool:
    """A proof file (it has [[lemma]] tables), not a query."""
    from ccmatic.loader import TomlDoc

    try:
        return "lemma" in TomlDoc(p).data
    except SpecError:
        return False


def _bench_proof(args: argparse.Namespace, p: Path, out: TextIO) -> dict[str, Any]:
    """One benchmark row: ``ccmatic prove`` on all cores, wall time and per-lemma times."""
    from ccmatic.proof.prove import default_jobs, prove
    from ccmatic.proof.spec import load_proof

    lib = _lib(args)
    proof = load_proof(p, lib)
    if args.T is not None:
        proof = replace(proof, T=args.T)
    jobs = getattr(args, "jobs", None) or default_jobs()
    t0 = time.perf_counter()
    rep = prove(proof, tuple(str(r) for r in lib.roots), run_options(args), jobs)
    wall = time.perf_counter() - t0
    row = {"query": str(p), "kind": "prove", "result": rep.result, "expect": proof.expect, "T": proof.T,
           "wall_s": round(wall, 3), "jobs": rep.jobs,
           "lemmas": {lem.name: [lem.result, round(lem.time_s, 3)] for lem in rep.lemmas},
           "ok": proof.expect in (None, rep.result)}
    mark = "" if row["ok"] else f"  (expected {proof.expect})"
    slow = max(rep.lemmas, key=lambda lem: lem.time_s)
    out.write(f"{p.stem:32s} {rep.result:15s} wall {wall:7.2f}s  {len(rep.lemmas)} lemmas on {rep.jobs} "
                  f"job(s), slowest {slow.name} {slow.time_s:.1f}s{mark}\n")
    return row


def cmd_synth(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """CEGIS over a template: every CCA in it that meets the query."""

    import z3

    from ccmatic.cegis import Synthesizer, SynthOptions

    q = _load_query(args, args.query)
    if args.timeout is not None and not (0 < args.timeout < float("inf")):
        raise SpecError(Loc("--timeout"), f"timeout must be a positive number of seconds, got {args.timeout}")
    if args.resume and not Path(args.resume).is_file():
        raise SpecError(Loc(args.resume), "checkpoint file not found")
    outdir = Path(args.out) if args.out else None
    if outdir is not None and outdir.exists() and not outdir.is_dir():
        raise SpecError(Loc(str(outdir)), "--out must be a folder")
    if args.jobs < 1:
        raise SpecError(Loc("--jobs"), f"need at least one job, got {args.jobs}")
    parallel: dict[str, Any] | None = None
    if args.jobs > 1 or args.executor != "local":
        if args.checkpoint or args.resume:
            raise SpecError(Loc("--checkpoint" if args.checkpoint else "--resume"),
                            "checkpoints are for sequential synthesis", "drop --jobs/--executor, or the checkpoint")
        res, parallel = _synth_parallel(args, q, err)
        return _synth_report(args, q, res, parallel, outdir, out)
    syn = Synthesizer(q, SynthOptions(timeout_s=args.timeout, check_timeout_s=args.check_timeout, seed=args.seed,
                                      record_counterexamples=bool(args.checkpoint)))
    if args.resume:
        syn.resume(args.resume)
    stop = {"flag": False}

    def on_sigint(signum: int, frame: object) -> None:
        stop["flag"] = True
        z3.main_ctx().interrupt()

    tty = hasattr(err, "isatty") and err.isatty()
    last = {"t": 0.0}

    def progress(s: Synthesizer, elapsed: float) -> None:
        if args.checkpoint:
            s.checkpoint(args.checkpoint)
        if args.json or args.quiet:
            return
        st = s.stats
        line = (f"iter {st.iterations}  solutions {len(s.solutions)}  counterexamples {st.counterexamples}  "
                f"unknown {st.unknown}  {elapsed:.1f}s")
        if tty:
            err.write("\r" + line.ljust(78))
            err.flush()
        elif elapsed - last["t"] >= 5.0:
            err.write(line + "\n")
            last["t"] = elapsed

    if not args.json and not args.quiet:
        err.write(f"synthesizing {q.name}: template {Path(syn.prog.path).name}, {len(syn.domains)} holes, "
                  f"{syn.search_space():,} candidates before unit checks, T={q.T}\n")
    # Python runs signal handlers only between bytecodes, never inside a long Z3 call:
    # the wakeup fd is written by the C-level handler at once, and a watcher thread
    # turns it into a Z3 interrupt, so Ctrl-C stops even a long check.
    old = signal.signal(signal.SIGINT, on_sigint) if _main_thread() else None
    watch = _InterruptWatcher(stop) if old is not None else None
    try:
        res = syn.run(progress, lambda: stop["flag"])
    finally:
        if watch is not None:
            watch.close()
        if old is not None:
            signal.signal(signal.SIGINT, old)
        if stop["flag"]:
            from ccmatic.smt import clear_interrupt

            clear_interrupt()  # a late interrupt must not cancel the caller's next Z3 call
    if tty and not args.json and not args.quiet:
        err.write("\n")
    if args.checkpoint:
        syn.checkpoint(args.checkpoint)
    return _synth_report(args, q, res, None, outdir, out)


def _synth_parallel(args: argparse.Namespace, q: Query, err: TextIO) -> tuple[Any, dict[str, Any]]:
    """Cube-and-conquer CEGIS on an executor (ccmatic/parallel/synth.py)."""
    from ccmatic.cegis import SynthOptions
    from ccmatic.parallel.executor import make_executor
    from ccmatic.parallel.synth import synthesize_parallel

    if args.slice is not None and not (0 < args.slice < float("inf")):
        raise SpecError(Loc("--slice"), f"must be a positive number of seconds, got {args.slice}")
    ex = make_executor(args.executor, args.jobs, args.address)
    t0 = time.perf_counter()

    def progress(done: int, left: int, sols: int) -> None:
        if not args.json and not args.quiet:
            err.write(f"  cubes done {done}, queued/running {left}, solutions {sols}, "
                      f"{time.perf_counter() - t0:.1f}s\n")

    if not args.json and not args.quiet:
        err.write(f"synthesizing {q.name} on {ex.jobs} {args.executor} worker(s), T={q.T}\n")
    try:
        pr = synthesize_parallel(q, SynthOptions(timeout_s=args.timeout, check_timeout_s=args.check_timeout,
                                                 seed=args.seed),
                                 ex, cubes_per_worker=args.cubes_per_worker, slice_s=args.slice,
                                 share=not args.no_share, progress=progress)
    finally:
        ex.close()
    ps = pr.parallel
    return pr.result, {"executor": args.executor, "workers": ps.workers, "cubes": ps.cubes, "resplits": ps.resplits,
                       "shared_out": ps.shared_out, "shared_in": ps.shared_in,
                       "exchange_s": round(ps.exchange_s, 4), "share": not args.no_share}


def _synth_report(args: argparse.Namespace, q: Query, res: Any, parallel: dict[str, Any] | None,
                  outdir: Path | None, out: TextIO) -> int:
    files = []
    if outdir is not None:
        outdir.mkdir(parents=True, exist_ok=True)
        for i, sol in enumerate(res.solutions, start=1):
            f = outdir / f"{q.name}-sol{i:03d}.cca"
            f.write_text(sol.text)
            files.append(str(f))
    st = res.stats
    if args.json:
        out.write(json.dumps({
            "query": q.path, "status": res.status, "T": q.T,
            "solutions": [s.text for s in res.solutions],
            "holes": [{k: str(v) for k, v in s.holes.items()} for s in res.solutions],
            "files": files,
            "iterations": st.iterations, "counterexamples": st.counterexamples,
            "unknown_candidates": [{k: str(v) for k, v in c.items()} for c in res.unknown_candidates],
            "time_s": round(res.time_s, 4), "generator_s": round(st.generator_s, 4),
            "verifier_s": round(st.verifier_s, 4), "reverify_s": round(st.reverify_s, 4),
            "encode_s": round(st.encode_s, 4), "expect_solutions": q.expect_solutions,
            **({"parallel": parallel} if parallel is not None else {}),
        }, indent=2) + "\n")
    else:
        for i, sol in enumerate(res.solutions, start=1):
            out.write(f"--- solution {i}" + (f" ({files[i - 1]})" if files else "") + "\n" + sol.text)
        verdict = {"complete": "search complete", "interrupted": "INTERRUPTED (partial results)",
                   "timeout": "TIMEOUT (partial results)"}[res.status]
        none = " -- no CCA in this template meets the query" if res.status == "complete" and not res.solutions else ""
        out.write(f"{q.name}: {verdict}: {len(res.solutions)} solution(s){none}; {st.iterations} iterations, "
                  f"{st.counterexamples} counterexamples, {st.unknown} unknown; "
                  f"{res.time_s:.2f}s (generator {st.generator_s:.2f}s, verifier {st.verifier_s:.2f}s, "
                  f"re-verify {st.reverify_s:.2f}s)\n")
        if res.unknown_candidates:
            out.write(f"  {len(res.unknown_candidates)} candidate(s) got 'unknown' and were NOT accepted\n")
        if parallel is not None:
            out.write(f"  {parallel['workers']} {parallel['executor']} worker(s), {parallel['cubes']} cube tasks "
                      f"({parallel['resplits']} re-split), counterexamples shared {parallel['shared_out']} out / "
                      f"{parallel['shared_in']} in, {parallel['exchange_s']:.2f}s exchanging\n")
    return EXIT_OK if res.status == "complete" else EXIT_UNKNOWN


class _InterruptWatcher:
    """Turns SIGINT into ``z3 interrupt`` while the main thread is inside Z3."""

    def __init__(self, stop: dict[str, bool]) -> None:
        import threading

        self.stop = stop
        self.r, self.w = os.pipe()
        os.set_blocking(self.w, False)
        self.old_fd = signal.set_wakeup_fd(self.w)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import z3

        while True:
            try:
                data = os.read(self.r, 1)
            except OSError:
                return
            if not data:
                return
            self.stop["flag"] = True
            z3.main_ctx().interrupt()

    def close(self) -> None:
        signal.set_wakeup_fd(self.old_fd)
        os.close(self.w)
        self.thread.join(timeout=1)
        os.close(self.r)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Load and validate a CCA file (or a query) without solving."""
    from ccmatic.lang.cca import load_cca
    from ccmatic.verify import build

    p = Path(args.file)
    if p.suffix == ".toml":
        q = _load_query(args, args.file)
        prog = load_cca(q.cca_path)
        if prog.is_template:
            from ccmatic.cegis import Synthesizer, SynthOptions

            syn = Synthesizer(q, SynthOptions(), prog)  # encodes once: checks holes, units, objectives
            res = {"file": str(p), "ok": True, "kind": "synthesis query", "holes": list(syn.domains),
                   "candidates_before_unit_checks": syn.search_space()}
        else:
            build(q, prog)  # encode without solving: checks the CCA, assumptions and objectives
            res = {"file": str(p), "ok": True, "kind": "query"}
    else:
        lib = _lib(args)
        found = lib.find("templates", args.file)
        prog = load_cca(found or p)
        res = {"file": str(found or p), "ok": True, "kind": "template" if prog.is_template else "cca",
               "sets_rate": prog.sets_rate, "sets_cwnd": prog.sets_cwnd, "reads": sorted(prog.reads),
               "warmup_steps": prog.warmup(1), "holes": list(prog.holes)}
    if args.json:
        out.write(json.dumps(res) + "\n")
    else:
        out.write(f"{res['file']}: ok\n")
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one SpecError line, like every other input error."""

    def error(self, message: str) -> NoReturn:
        raise SpecError(Loc(self.prog), message, f"see '{self.prog} --help'")


def _common(top: bool) -> argparse.ArgumentParser:
    """--json/--lib/--debug, accepted before and after the command.  Subcommands
    must not reset what was given before the command, so they default to SUPPRESS."""
    common = argparse.ArgumentParser(add_help=False)
    off = False if top else argparse.SUPPRESS
    common.add_argument("--json", action="store_true", default=off, help="machine-readable output")
    common.add_argument("--lib", action="append", default=[] if top else argparse.SUPPRESS, metavar="DIR",
                        help="extra library folder (with models/, templates/, queries/)")
    common.add_argument("--debug", action="store_true", default=off, help="show tracebacks")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common(top=False)
    solver = argparse.ArgumentParser(add_help=False)
    solver.add_argument("--timeout", type=float, default=120.0, metavar="S", help="solver timeout per check (s)")
    solver.add_argument("--seed", type=int, default=0, help="solver random seed")
    solver.add_argument("--T", type=int, default=None, metavar="N", help="override the horizon T")

    # typed as the base class so that plain ArgumentParsers are accepted as subcommand
    # parents (typeshed ties them to the parser class; the subparsers are _Parser too)
    p: argparse.ArgumentParser = _Parser(
        prog="ccmatic", description="Verify and synthesize congestion control algorithms with SMT.",
        parents=[_common(top=True)])
    p.add_argument("--version", action="version", version=f"ccmatic {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = sub.add_parser("verify", parents=[common, solver], help="check a CCA against a query: proved / counterexample / unknown")
    v.add_argument("query", help="query file or name (see 'ccmatic list')")
    v.add_argument("--plot", metavar="FILE.png", help="plot the counterexample to this file")
    v.add_argument("--cca", metavar="FILE", help="check this CCA instead of the query's (e.g. a synth solution)")
    v.set_defaults(handler=cmd_verify)

    ls = sub.add_parser("list", parents=[common], help="list models, CCAs, queries and proofs")
    ls.set_defaults(handler=cmd_list)

    b = sub.add_parser("bench", parents=[common, solver], help="time queries: wall, encode and solve seconds")
    b.add_argument("paths", nargs="+", metavar="DIR_OR_FILE")
    b.add_argument("--synth-jobs", metavar="1,2", default=None,
                   help="also run each synthesis row in parallel with these worker counts (speed-up, sharing)")
    b.set_defaults(handler=cmd_bench)

    sy = sub.add_parser("synth", parents=[common], help="synthesize every CCA in a template that meets a query (CEGIS)")
    sy.add_argument("query", help="query file or name, with a template as its cca")
    sy.add_argument("--out", metavar="DIR", help="write each solution as a CCA file into DIR")
    sy.add_argument("--timeout", type=float, default=None, metavar="S", help="stop after S seconds (status timeout)")
    sy.add_argument("--check-timeout", type=float, default=300.0, metavar="S", help="timeout of one verifier check")
    sy.add_argument("--seed", type=int, default=0)
    sy.add_argument("--T", type=int, default=None, metavar="N", help="override the horizon T")
    sy.add_argument("--checkpoint", metavar="FILE", help="save progress to FILE after every iteration")
    sy.add_argument("--resume", metavar="FILE", help="continue from a checkpoint")
    sy.add_argument("--quiet", action="store_true", help="no progress line")
    sy.add_argument("--jobs", type=int, default=1, help="workers: > 1 splits the hole space into cubes (default 1)")
    sy.add_argument("--executor", default="local", help="local (processes, default) or ray")
    sy.add_argument("--address", default=None, help="Ray cluster address ('auto', 'ray://host:10001')")
    sy.add_argument("--cubes-per-worker", type=int, default=4, help="initial cubes per worker (default 4)")
    sy.add_argument("--slice", type=float, default=30.0, metavar="S",
                    help="a cube task runs at most S seconds, then the rest is re-split (default 30)")
    sy.add_argument("--no-share", action="store_true", help="do not share counterexamples between workers")
    sy.set_defaults(handler=cmd_synth)

    from ccmatic.proof.commands import add_parsers as add_proof_parsers

    add_proof_parsers(sub, common, solver)

    from ccmatic.tradeoff import add_parser as add_tradeoff_parser

    add_tradeoff_parser(sub, [common])

    from ccmatic.sim.commands import add_parsers as add_sim_parsers

    add_sim_parsers(sub, common)

    c = sub.add_parser("check", parents=[common], help="load and validate a CCA file or query without solving")
    c.add_argument("file")
    c.set_defaults(handler=cmd_check)
    return p


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SpecError as e:  # a usage error (see _Parser)
        err.write(e.render() + "\n")
        return EXIT_INPUT
    except SystemExit as e:  # --help / --version
        return EXIT_INPUT if e.code not in (0, None) else EXIT_OK
    try:
        return int(args.handler(args, out, err))
    except SpecError as e:
        if args.debug:
            raise
        err.write(e.render() + "\n")
        return EXIT_INPUT
    except BrokenPipeError:  # e.g. `ccmatic list | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- stays open as the new stdout
        except OSError:
            pass
        return EXIT_OK
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return EXIT_UNKNOWN


if __name__ == "__main__":
    sys.exit(main())
