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
import os
import sys
from typing import TextIO

from ccmatic import __version__
from ccmatic.cli import (
    bench,
    check,
    evaluate,
    prove,
    search,
    simulate,
    synth,
    tradeoff,
    verify,
)
from ccmatic.cli import list as list_cmd
from ccmatic.cli.common import EXIT_INPUT, EXIT_OK, EXIT_UNKNOWN, Parser, common_options
from ccmatic.core.errors import SpecError
from ccmatic.core.limits import deep_recursion
from ccmatic.engine.interrupt import Interrupts

COMMANDS = (verify, list_cmd, bench, synth, prove, search, tradeoff, simulate, evaluate, check)


def build_parser() -> argparse.ArgumentParser:
    # typed as the base class so that plain ArgumentParsers are accepted as subcommand
    # parents (typeshed ties them to the parser class; the subparsers are Parser too)
    p: argparse.ArgumentParser = Parser(
        prog="ccmatic", description="Verify and synthesize congestion control algorithms with SMT.",
        parents=[common_options(top=True)])
    p.add_argument("--version", action="version", version=f"ccmatic {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = common_options(top=False)
    for module in COMMANDS:
        module.add_parser(sub, common)
    return p


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    deep_recursion()
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        args = build_parser().parse_args(argv)
    except SpecError as e:  # a usage error (see Parser)
        err.write(e.render() + "\n")
        return EXIT_INPUT
    except SystemExit as e:  # --help / --version
        return EXIT_INPUT if e.code not in (0, None) else EXIT_OK
    stop = Interrupts()
    try:
        with stop:
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
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (engine/interrupt.py); what was found is already out
        err.write(stop.describe() + "\n")
        return EXIT_UNKNOWN


if __name__ == "__main__":
    sys.exit(main())
