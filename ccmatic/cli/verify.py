"""``ccmatic verify``: check a CCA against a query (proved / counterexample / unknown),
or answer an exists question (witness / no witness / unknown)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import TextIO

from ccmatic.cli.common import (
    Subparsers,
    dump_smt2_option,
    exit_code,
    input_lines,
    library,
    load_query_arg,
    print_warnings,
    run_options,
    scenario_inputs,
    solver_options,
)
from ccmatic.core.files import PLOT_SUFFIXES, output_file
from ccmatic.core.results import Counterexample
from ccmatic.engine.verify import query_cca, verify
from ccmatic.io.plot import plot_trace
from ccmatic.io.report import verify_json, verify_text
from ccmatic.spec.source import read_source


def cmd_verify(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    opts = run_options(args)
    if args.plot:
        output_file("--plot", args.plot, PLOT_SUFFIXES)
    q = load_query_arg(args, args.query)
    if args.cca:
        found = library(args).require("templates", args.cca)
        q = replace(q, scenario=replace(q.scenario, cca_path=str(found), cca_text=read_source(found, "CCA file")))

    def progress() -> None:  # only once encoded, so that an input error stays one line
        if not args.json:
            err.write(f"verifying {q.name} (T={q.T}) ...\n")

    prog = query_cca(q)
    print_warnings(err, prog.warnings)
    rep = verify(q, opts, prog, on_encoded=progress)
    trace = "witness" if q.exists else "counterexample"
    if args.plot and isinstance(rep.outcome, Counterexample):
        cca = q.scenario.cca_name
        plot_trace(rep.outcome.trace, args.plot, f"ccmatic verify {q.name}: {trace}, T = {q.T}\n"
                   f"cca {cca} on {q.model.summary()}", rep.objectives)
    inputs = scenario_inputs(q.scenario)
    if args.json:
        out.write(json.dumps({**verify_json(rep), "inputs": inputs}, indent=2) + "\n")
    else:
        out.write(verify_text(rep) + "\n" + input_lines(args, inputs))
        if args.plot:
            shown = isinstance(rep.outcome, Counterexample)
            out.write(f"  plot: {args.plot}\n" if shown else f"  (no {trace}, nothing to plot)\n")
        if rep.smt2 is not None:
            out.write(f"  smt2: {rep.smt2}\n")
    return exit_code(rep.verdict)


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    v = sub.add_parser("verify", parents=[common, solver_options()],
                       help=summary)
    v.add_argument("query", help="query file or name (see 'ccmatic list')")
    v.add_argument("--plot", metavar="FILE.png", help="plot the counterexample (or witness) to this file")
    v.add_argument("--cca", metavar="FILE", help="check this CCA instead of the query's (e.g. a synth solution)")
    dump_smt2_option(v)
    v.set_defaults(handler=cmd_verify)
