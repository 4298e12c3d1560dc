"""The ``prove`` and ``search`` commands (pure handlers ``(args, out, err) -> int``)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import TextIO

from ccmatic.errors import Loc, SpecError
from ccmatic.library import Library
from ccmatic.loader import model_summary
from ccmatic.parallel.executor import Executor
from ccmatic.proof.prove import INITIAL, LemmaReport, ProofReport, default_jobs, prove
from ccmatic.proof.search import Probe, Searcher, SearchReport
from ccmatic.proof.spec import Proof, load_proof
from ccmatic.report import trace_table

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_UNKNOWN = 0, 1, 2, 3


def _frac_arg(flag: str, text: str) -> Fraction:
    try:
        v = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise SpecError(Loc(flag), f"'{text}' is not a number", "write e.g. 0.83, 83/100 or 3") from None
    return v


def load(args: argparse.Namespace) -> tuple[Proof, Library]:
    lib = Library.default(args.lib)
    p = lib.find("proofs", args.proof)
    if p is None:
        raise SpecError(Loc(args.proof), "proof file not found", "give a path, or a proof name from 'ccmatic list'")
    proof = load_proof(p, lib)
    overrides: dict[str, Fraction] = {}
    for item in getattr(args, "set", None) or []:
        if "=" not in item:
            raise SpecError(Loc("--set"), f"'{item}' is not NAME=VALUE", "e.g. --set util=0.9")
        k, v = item.split("=", 1)
        overrides[k.strip()] = _frac_arg("--set", v)
    proof = proof.with_values(overrides)
    if getattr(args, "T", None) is not None:
        if args.T < 2:
            raise SpecError(Loc("--T"), f"T must be at least 2, got {args.T}")
        proof = replace(proof, T=args.T)
    return proof, lib


def _mark(result: str) -> str:
    return {"proved": "proved", "failed": "FAILED", "unknown": "UNKNOWN"}.get(result, result)


def proof_text(rep: ProofReport) -> str:
    pr = rep.proof
    consts = ", ".join(f"{k}={v}" for k, v in pr.values().items())
    lines = [f"{pr.name}: cca {Path(pr.cca_path).name} on {model_summary(pr.model)}, T={pr.T}",
             f"  constants: {consts or '(none)'}"]
    for lem in rep.lemmas:
        extra = " (vacuous: its premise admits no trace)" if lem.vacuous else ""
        extra += " (cached)" if lem.cached else ""
        reason = f" — {lem.reason}" if lem.reason and lem.result != "proved" else ""
        lines.append(f"  lemma {lem.name:12s} {_mark(lem.result):8s} {lem.time_s:8.2f}s{extra}{reason}")
    lines.append(f"  {rep.coverage.what}: {_mark(rep.coverage.result)} ({rep.coverage.method})")
    shown = [s for s in rep.stitching if s.result != "proved" or s.what.startswith(("stitching", "guarantee"))]
    for s in shown:
        lines.append(f"  {s.what}: {_mark(s.result)} ({s.method})" + (f" — {s.detail}" if s.detail else ""))
    rest = [s for s in rep.stitching if s not in shown]
    if rest:
        how: dict[str, int] = {}
        for s in rest:
            how[s.method] = how.get(s.method, 0) + 1
        lines.append(f"  progress conditions: {len(rest)} proved ("
                     + ", ".join(f"{n} by {m}" for m, n in sorted(how.items())) + ")")
    g = rep.graph
    lines.append(f"  graph: {'ok' if g.ok else 'FAILED'}; edges "
                 + ", ".join(f"{a}->{b}" for a, b, _ in g.edges))
    for prob in g.problems:
        lines.append(f"    problem: {prob}")
    for note in g.notes:
        lines.append(f"    note: {note}")
    lines.append(f"{_mark(rep.result).upper()} in {rep.time_s:.1f}s ({rep.jobs} job{'s' if rep.jobs > 1 else ''})")
    for lem in rep.lemmas:
        if lem.trace is not None:
            lines.append(f"counterexample to lemma {lem.name} (re-checked with exact rationals and replayed):")
            lines.append(trace_table(lem.trace))
    for s in [rep.coverage, *rep.stitching]:
        if s.trace is not None:
            lines.append(f"counterexample to {s.what}:")
            lines.append(trace_table(s.trace))
    return "\n".join(lines)


def _executor(args: argparse.Namespace, jobs: int) -> Executor | None:
    """The executor of --executor/--address (None: the default local processes)."""
    from ccmatic.parallel.executor import make_executor

    if args.executor == "local" and not args.address:
        return None
    return make_executor(args.executor, jobs, args.address)


def cmd_prove(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ccmatic.cli import run_options

    proof, lib = load(args)
    opts = run_options(args)
    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        raise SpecError(Loc("--jobs"), f"--jobs must be at least 1, got {jobs}")
    only = args.lemma or []
    for name in only:
        if name != INITIAL:  # the pseudo-lemma "[initial] holds again" may be named too
            proof.lemma(name)

    def on_lemma(r: LemmaReport) -> None:
        if not args.json:
            err.write(f"  lemma {r.name}: {_mark(r.result)} ({r.time_s:.1f}s)\n")
            err.flush()

    def on_start() -> None:  # once everything compiled: an input error stays one line
        if not args.json:
            n = len(only) if only else len(proof.lemmas)
            err.write(f"checking {proof.name}: {n} lemma(s) at T={proof.T}, {min(jobs, n)} job(s) ...\n")
            err.flush()

    roots = tuple(str(Path(r).resolve()) for r in lib.roots)
    ex = _executor(args, jobs)
    try:
        rep = prove(proof, roots, opts, jobs, args.cache, on_lemma, only or None, on_start, ex)
    finally:
        if ex is not None:
            ex.close()
    if args.json:
        out.write(json.dumps(rep.json(), indent=2) + "\n")
    else:
        out.write(proof_text(rep) + "\n")
    return {"proved": EXIT_OK, "failed": EXIT_FAILED}.get(rep.result, EXIT_UNKNOWN)


def search_text(rep: SearchReport) -> str:
    lines = [f"search {rep.constant} in lemma {rep.lemma} (easier {rep.easier}):"]
    for p in rep.probes:
        lines.append(f"  {rep.constant} = {p.value!s:>10s} ({float(p.value):.4g}): {p.result}"
                     f"{' (cached)' if p.cached else ''}  {p.time_s:.2f}s")
    lines.append(f"  tightest proved: {rep.proved if rep.proved is not None else '-'}"
                 f"{f' ({float(rep.proved):.4g})' if rep.proved is not None else ''}")
    lines.append(f"  nearest refuted: {rep.refuted if rep.refuted is not None else '-'}"
                 f"{f' ({float(rep.refuted):.4g})' if rep.refuted is not None else ''}")
    if rep.width is not None:
        lines.append(f"  bracket width: {rep.width} ({float(rep.width):.4g})")
    if rep.unknown:
        lines.append(f"  unknown at: {', '.join(map(str, rep.unknown))} (counted as not proved)")
    lines.append(f"  monotonicity: {rep.monotone}")
    for n in rep.notes:
        lines.append(f"  note: {n}")
    lines.append(f"  time: {rep.time_s:.1f}s")
    if rep.refuted_trace is not None:
        lines.append(f"counterexample at {rep.constant} = {rep.refuted} (re-checked with exact rationals and replayed):")
        lines.append(trace_table(rep.refuted_trace))
    return "\n".join(lines)


def cmd_search(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ccmatic.cli import run_options

    proof, lib = load(args)
    opts = run_options(args)
    proof.lemma(args.lemma)
    if args.constant not in proof.constants:
        raise SpecError(Loc("--constant"), f"no constant named '{args.constant}'",
                        f"constants: {', '.join(proof.constants) or '(none)'}")
    c = proof.constants[args.constant]
    from ccmatic.proof.cache import ResultCache

    cache = ResultCache(args.cache) if args.cache else None
    s = Searcher(proof, args.lemma, args.constant, opts, cache, args.easier)
    if args.jobs is not None and args.jobs < 1:
        raise SpecError(Loc("--jobs"), f"--jobs must be at least 1, got {args.jobs}")

    def on_probe(p: Probe) -> None:
        if not args.json:
            err.write(f"  {args.constant} = {p.value} ({float(p.value):.4g}): {p.result} ({p.time_s:.1f}s)\n")
            err.flush()

    if args.grid:
        vals = [_frac_arg("--grid", x) for x in args.grid.split(",") if x.strip()]
        if not vals:
            raise SpecError(Loc("--grid"), "the grid is empty", "e.g. --grid 0.5,0.6,0.7")
        jobs = args.jobs if args.jobs is not None else default_jobs()
        ex = _executor(args, jobs) if (jobs > 1 or args.executor != "local") else None
        if ex is None and jobs > 1:
            from ccmatic.parallel.executor import LocalExecutor
            ex = LocalExecutor(jobs)
        try:
            rep = s.grid(vals, on_probe, ex, tuple(str(Path(r).resolve()) for r in lib.roots), args.cache)
        finally:
            if ex is not None:
                ex.close()
    else:
        lo = _frac_arg("--lo", args.lo) if args.lo is not None else c.lo
        hi = _frac_arg("--hi", args.hi) if args.hi is not None else c.hi
        if lo is None or hi is None:
            raise SpecError(c.loc, f"constant '{c.name}' has no range", "add range = [lo, hi], or give --lo and --hi")
        tol = _frac_arg("--tol", args.tol)
        rep = s.run(lo, hi, tol, on_probe)
    if args.json:
        out.write(json.dumps(rep.json(), indent=2) + "\n")
    else:
        out.write(search_text(rep) + "\n")
    if rep.proved is None:
        return EXIT_FAILED if rep.refuted is not None else EXIT_UNKNOWN
    return EXIT_OK


def _executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", default="local", help="local (processes, default) or ray")
    p.add_argument("--address", default=None, help="Ray cluster address ('auto', 'ray://host:10001')")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser,
                solver: argparse.ArgumentParser) -> None:
    pv = sub.add_parser("prove", parents=[common, solver],
                        help="check a proof: lemmas, coverage, stitching and the transition graph")
    pv.add_argument("proof", help="proof file or name (see 'ccmatic list')")
    pv.add_argument("--jobs", type=int, default=None, metavar="N", help="lemmas checked in parallel (default: cores)")
    pv.add_argument("--lemma", action="append", metavar="NAME", help="check only this lemma (repeatable)")
    pv.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a constant")
    pv.add_argument("--cache", metavar="DIR", help="result cache folder (JSON)")
    _executor_args(pv)
    pv.set_defaults(handler=cmd_prove)

    se = sub.add_parser("search", parents=[common, solver],
                        help="tightest value of a constant for which a lemma holds (bisection or grid)")
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
    _executor_args(se)
    se.set_defaults(handler=cmd_search)
