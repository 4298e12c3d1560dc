"""The ``ccmatic`` command.

Every handler is a pure function ``(args, out, err) -> int``, one module per
command; :func:`main` parses arguments, maps :class:`SpecError` to one line on
stderr with exit code 2 (no traceback unless ``--debug``), and returns the
handler's exit code.

Exit codes: 0 proved / success, 1 counterexample, 2 bad input, 3 unknown, timeout or
interrupted (Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn, TextIO

from ccmatic import __version__
from ccmatic.cli.common import EXIT_INPUT, EXIT_OK, EXIT_UNKNOWN, Parser, common_options
from ccmatic.core.errors import EngineError, SpecError
from ccmatic.core.limits import deep_recursion
from ccmatic.core.results import EXIT_INTERNAL
from ccmatic.engine.interrupt import Interrupts

# name -> (module, one-line help).  Only the module of the command being run is
# imported: a command pays the start-up of what it uses, not of every command
# (`verify` does not load the synthesizer, the simulator's grid or sympy).
COMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("ccmatic.cli.verify", "check a CCA against a query: proved / counterexample / unknown"),
    "list": ("ccmatic.cli.list", "list models, CCAs, queries, proofs and objective kinds"),
    "bench": ("ccmatic.cli.bench", "time queries: process wall, encode and solve seconds"),
    "synth": ("ccmatic.cli.synth", "synthesize every CCA in a template that meets a query (CEGIS)"),
    "prove": ("ccmatic.cli.prove", "check a proof: lemmas, coverage, stitching and the transition graph"),
    "search": ("ccmatic.cli.search", "tightest value of a constant for which a lemma holds (bisection or grid)"),
    "tradeoff": ("ccmatic.cli.tradeoff",
                 "loss vs convergence time (Theorem 4.2.1): RTTs F^-1(C) to ramp up under loss allowance f(C)"),
    "simulate": ("ccmatic.cli.simulate", "run CCAs on a concrete link (fine-mode simulator)"),
    "evaluate": ("ccmatic.cli.evaluate", "run CCAs over the B.6 grid (C, R, buffer) in parallel"),
    "contract": ("ccmatic.cli.contract", "measure a CCA's contract rate = f(statistic) on simulated dumbbells (thesis §5.2)"),
    "check": ("ccmatic.cli.check", "load and validate a CCA file or query without solving"),
    "export": ("ccmatic.cli.export", "a CCA file as a Linux tcp_congestion_ops eBPF program (docs/export.md)"),
    "testbed": ("ccmatic.cli.testbed", "real Linux TCP flows on an emulated link (docs/testbed.md)"),
}


def build_parser(load: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The full parser for the commands in ``load`` (all if None); the others get a
    placeholder that only lists them in ``--help``."""
    # typed as the base class so that plain ArgumentParsers are accepted as subcommand
    # parents (typeshed ties them to the parser class; the subparsers are Parser too)
    p: argparse.ArgumentParser = Parser(
        prog="ccmatic", description="Verify and synthesize congestion control algorithms with SMT.",
        parents=[common_options(top=True)])
    p.add_argument("--version", action="version", version=f"ccmatic {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = common_options(top=False)
    for name, (module, summary) in COMMANDS.items():
        if load is None or name in load:
            importlib.import_module(module).add_parser(sub, common, summary)
        else:
            stub = sub.add_parser(name, help=summary, add_help=False)
            stub.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parse with only the named command's module loaded (the first word that names a
    command; if that guess was wrong, e.g. a --lib folder called 'verify', parse again)."""
    guess = next((a for a in argv if a in COMMANDS), None)
    args = build_parser([guess] if guess else []).parse_args(argv)
    if args.command != guess:
        args = build_parser([args.command]).parse_args(argv)
    return args


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    deep_recursion()
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    stop = Interrupts()  # from the start: a signal while the command loads its module or its files stops it too
    debug = False
    try:
        with stop:
            try:
                args = parse(sys.argv[1:] if argv is None else argv)
            except SystemExit as e:  # --help / --version
                return EXIT_INPUT if e.code not in (0, None) else EXIT_OK
            debug = bool(args.debug)
            code = int(args.handler(args, out, err))
        if stop():  # the signal ended a solver check (unknown) before it could stop the command
            err.write(stop.describe() + "\n")
            return EXIT_UNKNOWN
        return code
    except SpecError as e:  # bad input, or a usage error (see Parser)
        if debug:
            raise
        err.write(e.render() + "\n")
        return EXIT_INPUT
    except BrokenPipeError:  # e.g. `ccmatic list | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- stays open as the new stdout
        except OSError:
            pass
        return EXIT_OK
    except EngineError as e:  # an internal inconsistency: say so, never as an answer's exit code
        if debug:
            raise
        err.write(f"internal error: {e} (hint: this is a bug in ccmatic; --debug shows the traceback)\n")
        return EXIT_INTERNAL
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (engine/interrupt.py); what was found is already out
        err.write(stop.describe() + "\n")
        return EXIT_UNKNOWN
    except MemoryError:  # a resource ran out, as a time limit can: nothing is decided
        if debug:
            raise
        err.write("out of memory: the run stopped, nothing was decided (hint: a shorter horizon or run, fewer "
                  "flows, or a finite buffer)\n")
        return EXIT_UNKNOWN
    except Exception:
        # a signal's fallout in another form: a KeyboardInterrupt raised inside a Z3 call
        # comes out as ctypes.ArgumentError, an interrupted Z3 as Z3Exception ("canceled")
        if not stop() or debug:
            raise
        err.write(stop.describe() + "\n")
        return EXIT_UNKNOWN


def run() -> NoReturn:
    """The ``ccmatic`` program (its console script, ``python -m ccmatic.cli.main``):
    :func:`main`, then the end of the process, with main's exit code.  Once Python's
    exit functions have run (they stop workers and clusters and remove temporary
    folders) and the output is flushed, the process ends without tearing down the
    interpreter and Z3 (freeing every module, term and solver and running Z3's own
    destructors: about 20 ms, a tenth of a verify run at T = 10).  With a thread of
    its own still running, or output that cannot be flushed, it ends as Python does."""
    code = main()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # e.g. a closed pipe: Python's own exit reports it
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
