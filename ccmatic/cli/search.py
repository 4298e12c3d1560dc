"""``ccmatic search``: the tightest value of a constant for which a lemma holds
(exact-rational bisection, or a grid)."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from ccmatic.cli.common import (
    EXIT_CEX,
    EXIT_OK,
    EXIT_UNKNOWN,
    Subparsers,
    constant_values,
    executor_options,
    frac_arg,
    input_lines,
    jobs_arg,
    library,
    limits,
    proof_horizon,
    run_options,
    scenario_inputs,
    solver_options,
)
from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import output_dir
from ccmatic.core.proof import Lemma
from ccmatic.engine.parallel.executor import LocalExecutor, chosen_executor
from ccmatic.engine.proof.cache import ResultCache
from ccmatic.engine.proof.prove import default_jobs
from ccmatic.engine.proof.search import Probe, Searcher, SearchReport
from ccmatic.io.proofs import load_proof_as_asked
from ccmatic.io.report import lemma_lines, trace_table


def _value(v: object) -> str:
    return "-" if v is None else f"{v} ({float(v):.4g})"  # type: ignore[arg-type]


def search_text(rep: SearchReport, lemma: Lemma | None = None) -> str:
    lines = [f"search {rep.constant} in lemma {rep.lemma} (easier {rep.easier}):"]
    for p in rep.probes:
        lines.append(f"  {rep.constant} = {p.value!s:>10s} ({float(p.value):.4g}): {p.verdict}"
                     f"{' (cached)' if p.cached else ''}  {p.time_s:.2f}s")
    lines.append(f"  tightest proved: {_value(rep.proved)}")
    lines.append(f"  nearest counterexample: {_value(rep.counterexample)}")
    if rep.width is not None:
        lines.append(f"  bracket width: {rep.width} ({float(rep.width):.4g})")
    if rep.unknown:
        lines.append(f"  unknown at: {', '.join(map(str, rep.unknown))} (counted as not proved)")
    lines.append(f"  monotonicity: {rep.monotone}")
    lines += [f"  note: {n}" for n in rep.notes]
    lines.append(f"  time: {rep.time_s:.1f}s")
    if rep.trace is not None:
        lines.append(f"counterexample at {rep.constant} = {rep.counterexample} "
                     "(re-checked with exact rationals and replayed):")
        lines += lemma_lines(lemma, rep.why)
        lines.append(trace_table(rep.trace))
    return "\n".join(lines)


def cmd_search(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    proof = load_proof_as_asked(library(args), args.proof, limits(args), constant_values(args),
                                lambda sc, start: proof_horizon(args, sc, start))
    opts = run_options(args)
    proof.lemma(args.lemma)
    if args.constant not in proof.constants:
        raise SpecError(Loc("--constant"), f"no constant named '{args.constant}'",
                        f"constants: {', '.join(proof.constants) or '(none)'}")
    jobs = jobs_arg(args, default_jobs())
    c = proof.constants[args.constant]
    s = Searcher(proof, args.lemma, args.constant, opts, ResultCache(output_dir("--cache", args.cache)) if args.cache else None, args.easier)

    probes = [0]

    def on_probe(p: Probe) -> None:  # progress only: the verdicts are on stdout, once
        if not args.json:
            probes[0] += 1
            err.write(f"  probe {probes[0]}: {args.constant} = {p.value} checked ({p.time_s:.1f}s)\n")
            err.flush()

    if args.grid:
        vals = [frac_arg("--grid", x) for x in args.grid.split(",") if x.strip()]
        if not vals:
            raise SpecError(Loc("--grid"), "the grid is empty", "e.g. --grid 0.5,0.6,0.7")
        ex = chosen_executor(args.executor, jobs, args.address) if (jobs > 1 or args.executor != "local") else None
        if ex is None and jobs > 1:
            ex = LocalExecutor(jobs)
        try:
            rep = s.grid(vals, on_probe, ex, args.cache)
        finally:
            if ex is not None:
                ex.close()
    else:
        lo = frac_arg("--lo", args.lo) if args.lo is not None else c.lo
        hi = frac_arg("--hi", args.hi) if args.hi is not None else c.hi
        if lo is None or hi is None:
            raise SpecError(c.loc, f"constant '{c.name}' has no range", "add range = [lo, hi], or give --lo and --hi")
        rep = s.run(lo, hi, frac_arg("--tol", args.tol), on_probe)
    inputs = scenario_inputs(proof.scenario, "proof")
    out.write(json.dumps({**rep.json(), "inputs": inputs}, indent=2) + "\n" if args.json
              else search_text(rep, proof.lemma(args.lemma)) + "\n" + input_lines(args, inputs))
    if rep.proved is None:
        return EXIT_CEX if rep.counterexample is not None else EXIT_UNKNOWN
    return EXIT_OK


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    se = sub.add_parser("search", parents=[common, solver_options()],
                        help=summary)
    se.add_argument("proof", help="proof file or name")
    se.add_argument("--lemma", required=True, metavar="NAME")
    se.add_argument("--constant", required=True, metavar="NAME")
    se.add_argument("--lo", metavar="X", help="range low end (default: the constant's range)")
    se.add_argument("--hi", metavar="Y", help="range high end")
    se.add_argument("--tol", default="1/100", metavar="Z", help="stop when the bracket is this narrow (default 1/100)")
    se.add_argument("--grid", metavar="a,b,c", help="check these values instead of bisecting")
    se.add_argument("--easier", choices=["up", "down"],
                    help="the direction in which THIS lemma gets easier (default: the constant's 'easier')")
    se.add_argument("--set", action="append", metavar="NAME=VALUE", help="override another constant")
    se.add_argument("--cache", metavar="DIR", help="result cache folder (JSON)")
    se.add_argument("--jobs", type=int, default=None, metavar="N",
                    help="grid values checked in parallel (default: cores; bisection is sequential)")
    executor_options(se)
    se.set_defaults(handler=cmd_search)
