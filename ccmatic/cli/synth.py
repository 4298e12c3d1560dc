"""``ccmatic synth``: every CCA in a template that meets a query (CEGIS, thesis §4.1).

``--timeout`` limits one solver check, as in every command; ``--budget`` limits the
whole search (status ``timeout`` when it runs out; the solutions found so far were
each re-verified).  Ctrl-C stops cleanly (status ``interrupted``) and keeps the
solutions; ``--checkpoint``/``--resume`` continue a long run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import (
    EXIT_OK,
    EXIT_UNKNOWN,
    Subparsers,
    executor_options,
    input_lines,
    jobs_arg,
    load_query_arg,
    positive_seconds,
    run_options,
    scenario_inputs,
    solver_options,
)
from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import output_dir, output_file
from ccmatic.core.options import VERIFIER_MODES, SynthOptions
from ccmatic.core.results import settled
from ccmatic.core.scenario import Query
from ccmatic.engine import checkpoint
from ccmatic.engine.cegis import Synthesizer, SynthResult
from ccmatic.engine.interrupt import Interrupts
from ccmatic.engine.parallel.executor import make_executor
from ccmatic.engine.parallel.synth import synthesize_parallel


def synth_options(args: argparse.Namespace, record: bool) -> SynthOptions:
    return SynthOptions(run_options(args), positive_seconds("--budget", args.budget), record,
                        verifier=getattr(args, "verifier", "incremental"),
                        background_reverify=_background(getattr(args, "reverify", "auto")),
                        slice_s=positive_seconds("--verifier-slice", getattr(args, "verifier_slice", None)))


def _background(mode: str) -> bool:
    return mode == "background" or (mode == "auto" and (os.cpu_count() or 1) > 1)


def cmd_synth(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    q = load_query_arg(args, args.query)
    opts = synth_options(args, bool(args.checkpoint))
    if args.resume and not Path(args.resume).is_file():
        raise SpecError(Loc(args.resume), "checkpoint file not found")
    outdir = output_dir("--out", args.out) if args.out else None
    if args.checkpoint:
        output_file("--checkpoint", args.checkpoint)
    if jobs_arg(args, 1) > 1 or args.executor != "local":
        if args.checkpoint or args.resume:
            raise SpecError(Loc("--checkpoint" if args.checkpoint else "--resume"),
                            "checkpoints are for sequential synthesis", "drop --jobs/--executor, or the checkpoint")
        res, parallel = _parallel(args, q, opts, err)
        return report(args, q, res, parallel, outdir, out)
    syn = Synthesizer(q, opts)
    if args.resume:
        dropped = checkpoint.resume(syn, args.resume)
        err.writelines(f"warning: {args.resume}: stored solution {checkpoint.show(cand)} failed its re-verification "
                      "and was dropped\n" for cand in dropped)
    if not args.json and not args.quiet:
        err.write(f"synthesizing {q.name}: template {Path(syn.prog.path).name}, {len(syn.domains)} holes, "
                  f"{syn.search_space():,} candidates before unit checks, T={q.T}\n")
    res = _run_interruptible(syn, _progress(args, err))
    if args.checkpoint:
        checkpoint.save(syn, args.checkpoint)
    return report(args, q, res, None, outdir, out)


def _progress(args: argparse.Namespace, err: TextIO) -> Any:
    tty = hasattr(err, "isatty") and err.isatty()
    last = {"t": 0.0}

    def progress(s: Synthesizer, elapsed: float) -> None:
        if args.checkpoint:
            checkpoint.save(s, args.checkpoint)
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
    return progress


def _run_interruptible(syn: Synthesizer, progress: Any) -> SynthResult:
    """Run CEGIS; Ctrl-C or SIGTERM stops it cleanly (the solutions found are kept)."""
    with Interrupts(cooperative=True) as stop:
        return syn.run(progress, stop)


def _parallel(args: argparse.Namespace, q: Query, opts: SynthOptions, err: TextIO) -> tuple[SynthResult, dict[str, Any]]:
    """Cube-and-conquer CEGIS on an executor (ccmatic/engine/parallel/synth.py)."""
    positive_seconds("--slice", args.slice)
    ex = make_executor(args.executor, args.jobs, args.address)
    t0 = time.perf_counter()

    def progress(done: int, left: int, sols: int) -> None:
        if not args.json and not args.quiet:
            err.write(f"  cubes done {done}, queued/running {left}, solutions {sols}, "
                      f"{time.perf_counter() - t0:.1f}s\n")

    if not args.json and not args.quiet:
        err.write(f"synthesizing {q.name} on {ex.jobs} {args.executor} worker(s), T={q.T}\n")
    try:
        pr = synthesize_parallel(q, opts, ex, cubes_per_worker=args.cubes_per_worker, slice_s=args.slice,
                                 share=not args.no_share, progress=progress)
    finally:
        ex.close()
    ps = pr.parallel
    return pr.result, {"executor": args.executor, "workers": ps.workers, "cubes": ps.cubes, "resplits": ps.resplits,
                       "shared_out": ps.shared_out, "shared_in": ps.shared_in,
                       "exchange_s": round(ps.exchange_s, 4), "share": not args.no_share}


def report(args: argparse.Namespace, q: Query, res: SynthResult, parallel: dict[str, Any] | None,
           outdir: Path | None, out: TextIO) -> int:
    files = []
    if outdir is not None:
        outdir.mkdir(parents=True, exist_ok=True)
        for i, sol in enumerate(res.solutions, start=1):
            f = outdir / f"{q.name}-sol{i:03d}.cca"
            f.write_text(sol.text)
            files.append(str(f))
    inputs = scenario_inputs(q.scenario)
    if args.json:
        out.write(json.dumps({**_json(q, res, parallel, files), "inputs": inputs}, indent=2) + "\n")
    else:
        _text(q, res, parallel, files, out)
        out.write(input_lines(args, inputs))
    return EXIT_OK if settled(res.status, len(res.unknown_candidates)) == "complete" else EXIT_UNKNOWN


def _json(q: Query, res: SynthResult, parallel: dict[str, Any] | None, files: list[str]) -> dict[str, Any]:
    st = res.stats
    return {
        "query": q.path, "status": settled(res.status, len(res.unknown_candidates)), "T": q.T,
        "solutions": [s.text for s in res.solutions],
        "holes": [{k: str(v) for k, v in s.holes.items()} for s in res.solutions],
        "files": files, "iterations": st.iterations, "counterexamples": st.counterexamples,
        "unknown_candidates": [{k: str(v) for k, v in c.items()} for c in res.unknown_candidates],
        "time_s": round(res.time_s, 4), "generator_s": round(st.generator_s, 4),
        "verifier_s": round(st.verifier_s, 4), "reverify_s": round(st.reverify_s, 4),
        "encode_s": round(st.encode_s, 4), "fresh_checks": st.fresh_checks, "expect_solutions": q.expect_solutions,
        **({"parallel": parallel} if parallel is not None else {}),
    }


def _text(q: Query, res: SynthResult, parallel: dict[str, Any] | None, files: list[str], out: TextIO) -> None:
    st = res.stats
    out.writelines(f"--- solution {i}" + (f" ({files[i - 1]})" if files else "") + "\n" + sol.text for i, sol in enumerate(res.solutions, start=1))
    status = settled(res.status, len(res.unknown_candidates))
    verdict = {"complete": "search complete", "incomplete": "INCOMPLETE (undecided candidates, see below)",
               "interrupted": "INTERRUPTED (partial results)",
               "timeout": "TIMEOUT (partial results)"}[status]
    none = " -- no CCA in this template meets the query" if status == "complete" and not res.solutions else ""
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


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    sy = sub.add_parser("synth", parents=[common, solver_options()],
                        help=summary)
    sy.add_argument("query", help="query file or name, with a template as its cca")
    sy.add_argument("--out", metavar="DIR", help="write each solution as a CCA file into DIR")
    sy.add_argument("--budget", type=float, default=None, metavar="S",
                    help="stop the whole search after S seconds (status timeout)")
    sy.add_argument("--checkpoint", metavar="FILE", help="save progress to FILE after every iteration")
    sy.add_argument("--resume", metavar="FILE", help="continue from a checkpoint")
    sy.add_argument("--quiet", action="store_true", help="no progress line")
    sy.add_argument("--dump-smt2", metavar="DIR", default=None,
                    help="write every candidate's check (holes filled in) to DIR/<query>-NNNN.smt2 "
                         "(SMT-LIB 2, QF_LRA; unsat: the candidate meets the query)")
    sy.add_argument("--verifier", choices=VERIFIER_MODES, default="incremental",
                    help="how candidates are checked: under assumptions in one session holding the whole "
                         "template (default), or each in a fresh fork of the network (docs/performance.md)")
    sy.add_argument("--reverify", choices=("auto", "background", "inline"), default="auto",
                    help="re-verify each solution in a worker process on another core while the search "
                         "goes on, or in this process (default auto: background if the machine has "
                         "more than one core)")
    sy.add_argument("--verifier-slice", type=float, default=None, metavar="S",
                    help="incremental: hand a check to a fresh fork after S seconds (default: only once "
                         "the whole --timeout ran out)")
    sy.add_argument("--jobs", type=int, default=1, help="workers: > 1 splits the hole space into cubes (default 1)")
    executor_options(sy)
    sy.add_argument("--cubes-per-worker", type=int, default=4, help="initial cubes per worker (default 4)")
    sy.add_argument("--slice", type=float, default=30.0, metavar="S",
                    help="a cube task runs at most S seconds, then the rest is re-split (default 30)")
    sy.add_argument("--no-share", action="store_true", help="do not share counterexamples between workers")
    sy.set_defaults(handler=cmd_synth)
