"""``ccmatic verify``: check a CCA against a query (proved / counterexample / unknown),
or answer an exists question (witness / no witness / unknown)."""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from dataclasses import replace
from typing import TextIO

from ccmatic.cli.common import (
    Subparsers,
    dump_smt2_option,
    exit_code,
    input_lines,
    jobs_arg,
    library,
    load_query_arg,
    print_warnings,
    run_options,
    scenario_inputs,
    solver_options,
)
from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import PLOT_SUFFIXES, output_file
from ccmatic.core.options import VERIFY_TIMEOUT_S
from ccmatic.core.results import Counterexample
from ccmatic.engine.verify import query_cca, verify
from ccmatic.io.plot import plot_trace
from ccmatic.io.report import verify_json, verify_text
from ccmatic.spec.source import read_source


def cmd_verify(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    opts = replace(run_options(args), rival=solvers(args) > 1)
    if args.plot:
        output_file("--plot", args.plot, PLOT_SUFFIXES)
    q = load_query_arg(args, args.query)
    if args.cca:
        found = library(args).require("templates", args.cca)
        q = replace(q, scenario=replace(q.scenario, cca_path=str(found), cca_text=read_source(found, "CCA file")))

    beat = Heartbeat(err, opts.timeout_s)

    def progress() -> None:  # only once encoded, so that an input error stays one line
        if not args.json:
            err.write(f"verifying {q.name} (T={q.T}) ...\n")
            beat.start()

    prog = query_cca(q)
    print_warnings(err, prog.warnings)
    try:
        rep = verify(q, opts, prog, on_encoded=progress)
    finally:
        beat.stop()
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


#: seconds between two "still checking" lines
BEAT_S = 60.0


class Heartbeat:
    """A line on stderr every ``BEAT_S`` seconds while the solver works (Z3 releases
    the GIL during a check), so that a long check without a limit shows it is alive."""

    def __init__(self, err: TextIO, timeout_s: float | None, every_s: float = BEAT_S) -> None:
        self.err, self.every_s = err, every_s
        self.limit = f"limit {timeout_s:g} s per check" if timeout_s is not None else "no limit"
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        t0 = time.monotonic()

        def beat() -> None:
            while not self._done.wait(self.every_s):
                mins = (time.monotonic() - t0) / 60
                self.err.write(f"  still checking after {mins:.0f} min ({self.limit}; Ctrl-C stops it)\n")
                self.err.flush()

        self._thread = threading.Thread(target=beat, name="verify-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()


#: the most solvers a verification races (engine/rival.py: the run's and a rival)
MAX_SOLVERS = 2


def solvers(args: argparse.Namespace) -> int:
    """--jobs: 1 or 2 solvers (default 2 on a machine with two cores or more)."""
    n = jobs_arg(args, min(MAX_SOLVERS, os.cpu_count() or 1))
    if n > MAX_SOLVERS:
        raise SpecError(Loc("--jobs"), f"verify races at most {MAX_SOLVERS} solvers, got --jobs {n}",
                        "use --jobs 1 or 2")
    return n


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    v = sub.add_parser("verify", parents=[common, solver_options(timeout=VERIFY_TIMEOUT_S)],
                       help=summary)
    v.add_argument("query", help="query file or name (see 'ccmatic list')")
    v.add_argument("--plot", metavar="FILE.png", help="plot the counterexample (or witness) to this file")
    v.add_argument("--cca", metavar="FILE", help="check this CCA instead of the query's (e.g. a synth solution)")
    v.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="solvers racing the deciding check: 1, or 2 (default on two cores or more) for a second "
                        "solver on another core, with another seed, whose proof ends the check; a counterexample "
                        "always comes from the first")
    dump_smt2_option(v)
    v.set_defaults(handler=cmd_verify)
