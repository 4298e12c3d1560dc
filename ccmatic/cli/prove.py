"""``ccmatic prove``: check a proof — every lemma (in parallel), coverage, stitching,
progress terms and the transition graph."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from ccmatic.cli.common import (
    Subparsers,
    constant_values,
    executor_options,
    exit_code,
    input_lines,
    jobs_arg,
    library,
    limits,
    proof_horizon,
    run_options,
    scenario_inputs,
    solver_options,
)
from ccmatic.core.files import output_dir
from ccmatic.engine.parallel.executor import chosen_executor
from ccmatic.engine.proof.prove import (
    INITIAL,
    LemmaReport,
    ProofReport,
    default_jobs,
    prove,
)
from ccmatic.engine.verify import model_parts_note
from ccmatic.io.proofs import load_proof_as_asked
from ccmatic.io.report import lemma_lines, trace_table


def mark(verdict: str) -> str:
    return {"proved": "proved", "counterexample": "COUNTEREXAMPLE", "unknown": "UNKNOWN"}.get(verdict, verdict)


def proof_text(rep: ProofReport) -> str:
    pr = rep.proof
    consts = ", ".join(f"{k}={v}" for k, v in pr.values().items())
    lines = [f"{pr.name}: cca {pr.scenario.cca_name} on {pr.scenario.model.summary()}, T={pr.T}",
             f"  constants: {consts or '(none)'}"]
    lines += [f"  {note}" for note in model_parts_note(pr.scenario)]
    for lem in rep.lemmas:
        extra = " (vacuous: its premise admits no trace)" if lem.vacuous else ""
        extra += " (cached)" if lem.cached else ""
        extra += " (together)" if lem.together else ""
        reason = f" — {lem.reason}" if lem.reason and lem.verdict != "proved" else ""
        lines.append(f"  lemma {lem.name:12s} {mark(lem.verdict):8s} {lem.time_s:8.2f}s{extra}{reason}")
    lines.append(f"  {rep.coverage.what}: {mark(rep.coverage.verdict)} ({rep.coverage.method})")
    shown = [s for s in rep.stitching if s.verdict != "proved" or s.what.startswith(("stitching", "guarantee"))]
    for s in shown:
        lines.append(f"  {s.what}: {mark(s.verdict)} ({s.method})" + (f" — {s.detail}" if s.detail else ""))
    rest = [s for s in rep.stitching if s not in shown]
    if rest:
        how: dict[str, int] = {}
        for s in rest:
            how[s.method] = how.get(s.method, 0) + 1
        lines.append(f"  progress conditions: {len(rest)} proved ("
                     + ", ".join(f"{n} by {m}" for m, n in sorted(how.items())) + ")")
    g = rep.graph
    lines.append(f"  graph: {'ok' if g.ok else 'COUNTEREXAMPLE'}; edges " + ", ".join(f"{a}->{b}" for a, b, _ in g.edges))
    lines += [f"    problem: {prob}" for prob in g.problems] + [f"    note: {note}" for note in g.notes]
    lines.append(f"{mark(rep.verdict).upper()} in {rep.time_s:.1f}s ({rep.jobs} job{'s' if rep.jobs > 1 else ''})")
    for lem in rep.lemmas:
        if lem.trace is not None:
            lines.append(f"counterexample to lemma {lem.name} (re-checked with exact rationals and replayed):")
            lines += lemma_lines(pr.lemma(lem.name) if lem.name != INITIAL else None, lem.why)
            lines.append(trace_table(lem.trace))
    for s in [rep.coverage, *rep.stitching]:
        if s.trace is not None:
            lines.append(f"counterexample to {s.what}:")
            lines.append(trace_table(s.trace))
    return "\n".join(lines)


def checks_text(names: list[str]) -> str:
    """'3 lemmas and [initial] holds again': what prove is about to check."""
    lemmas = [n for n in names if n != INITIAL]
    text = f"{len(lemmas)} lemma{'s' if len(lemmas) != 1 else ''}"
    return f"{text} and '{INITIAL}'" if INITIAL in names else text


def cmd_prove(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    proof = load_proof_as_asked(library(args), args.proof, limits(args), constant_values(args),
                                lambda sc, start: proof_horizon(args, sc, start))
    opts = run_options(args)
    if args.cache:
        output_dir("--cache", args.cache)
    jobs = jobs_arg(args, default_jobs())
    only = args.lemma or []
    for name in only:
        if name != INITIAL:  # the pseudo-lemma "[initial] holds again" may be named too
            proof.lemma(name)

    total = [0]

    def on_lemma(r: LemmaReport) -> None:  # progress only: the verdicts are on stdout, once
        if not args.json:
            total[0] -= 1
            err.write(f"  {r.name} checked ({r.time_s:.1f}s), {total[0]} to go\n")
            err.flush()

    def on_start(names: list[str]) -> None:  # once everything is elaborated: an input error stays one line
        total[0] = n = len(names)
        if not args.json:
            how = "as one question first" if proof.together and n > 1 else f"{min(jobs, n)} job(s)"
            err.write(f"checking {proof.name}: {checks_text(names)} at T={proof.T}, {how} ...\n")
            err.flush()

    ex = chosen_executor(args.executor, jobs, args.address)
    try:
        rep = prove(proof, opts, jobs, args.cache, on_lemma, only or None, on_start, ex)
    finally:
        if ex is not None:
            ex.close()
    inputs = scenario_inputs(proof.scenario, "proof")
    out.write(json.dumps({**rep.json(), "inputs": inputs}, indent=2) + "\n" if args.json
              else proof_text(rep) + "\n" + input_lines(args, inputs))
    return exit_code(rep.verdict)


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    pv = sub.add_parser("prove", parents=[common, solver_options()],
                        help=summary)
    pv.add_argument("proof", help="proof file or name (see 'ccmatic list')")
    pv.add_argument("--jobs", type=int, default=None, metavar="N", help="lemmas checked in parallel (default: cores)")
    pv.add_argument("--lemma", action="append", metavar="NAME", help="check only this lemma (repeatable)")
    pv.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a constant")
    pv.add_argument("--cache", metavar="DIR", help="result cache folder (JSON)")
    executor_options(pv)
    pv.set_defaults(handler=cmd_prove)
