"""What every command shares: exit codes, the argument parser's shared options
(``--json``, ``--lib``, ``--debug``; ``--timeout`` and ``--seed`` for solving
commands), the library, and loading queries and proofs by name or path."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import NoReturn, TextIO, TypeAlias

from ccmatic.core.errors import Loc, SpecError, SpecWarning
from ccmatic.core.files import output_dir
from ccmatic.core.limits import (
    JOBS_PER_CORE,
    MAX_T,
    Limits,
    delay_error,
    horizon_error,
    magnitude_error,
)
from ccmatic.core.options import CHECK_TIMEOUT_S, RunOptions
from ccmatic.core.results import EXIT_CODES, EXIT_INPUT, Verdict
from ccmatic.core.scenario import Query, Scenario
from ccmatic.io.library import PACKAGED, PATH_GIVEN, Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query

EXIT_OK, EXIT_CEX, EXIT_UNKNOWN = EXIT_CODES["proved"], EXIT_CODES["counterexample"], EXIT_CODES["unknown"]
__all__ = ["EXIT_INPUT"]

Handler = Callable[[argparse.Namespace, TextIO, TextIO], int]
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def exit_code(verdict: Verdict) -> int:
    return EXIT_CODES[verdict]


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one SpecError line, like every other input error."""

    def error(self, message: str) -> NoReturn:
        raise SpecError(Loc(self.prog), message, f"see '{self.prog} --help'")


def common_options(top: bool) -> argparse.ArgumentParser:
    """--json/--lib/--debug, accepted before and after the command.  Subcommands
    must not reset what was given before the command, so they default to SUPPRESS."""
    common = argparse.ArgumentParser(add_help=False)
    off = False if top else argparse.SUPPRESS
    common.add_argument("--json", action="store_true", default=off, help="machine-readable output")
    common.add_argument("--lib", action="append", default=[] if top else argparse.SUPPRESS, metavar="DIR",
                        help="extra library folder (with models/, templates/, queries/, proofs/, objectives/)")
    common.add_argument("--debug", action="store_true", default=off, help="show tracebacks")
    return common


def solver_options(horizon: bool = True, timeout: float | None = CHECK_TIMEOUT_S) -> argparse.ArgumentParser:
    """--timeout (one solver check; ``timeout`` is the command's default, None: no
    limit), --seed, --T."""
    solver = argparse.ArgumentParser(add_help=False)
    default = f"{timeout:g}" if timeout is not None else "none: a check runs until it is decided, Ctrl-C stops it"
    solver.add_argument("--timeout", type=float, default=timeout, metavar="S",
                        help=f"limit of one solver check, seconds (default {default})")
    solver.add_argument("--seed", type=int, default=0, help="solver random seed")
    if horizon:
        solver.add_argument("--T", type=int, default=None, metavar="N", help="override the horizon T")
        add_max_T(solver)
    return solver


def add_max_T(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-T", type=int, default=MAX_T, metavar="N",
                   help=f"largest horizon accepted (default {MAX_T}; the encoding grows with T²)")


def positive_seconds(flag: str, t: float | None) -> float | None:
    if t is not None and not (math.isfinite(t) and t > 0):
        raise SpecError(Loc(flag), f"{flag[2:]} must be a positive number of seconds, got {t}")
    return t


def dump_smt2_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dump-smt2", metavar="DIR", default=None,
                   help="write the check that decides the verdict to DIR/<query>.smt2 (SMT-LIB 2, QF_LRA)")


def run_options(args: argparse.Namespace) -> RunOptions:
    """--timeout, --seed and --dump-smt2 (where a command has it), validated (shared
    by every solving command); the --dump-smt2 folder is created now."""
    dump = getattr(args, "dump_smt2", None)
    return RunOptions(timeout_s=positive_seconds("--timeout", args.timeout), seed=args.seed,
                      dump_smt2=output_dir("--dump-smt2", dump) if dump is not None else None)


def library(args: argparse.Namespace) -> Library:
    return Library.default(args.lib)


def scenario_inputs(scenario: Scenario, kind: str = "query") -> dict[str, str]:
    """The files a command read, absolute (``--json``'s ``"inputs"``): the query or
    proof, its CCA and its model."""
    named = {kind: scenario.path, "cca": scenario.cca_path, "model": scenario.model_path}
    return {k: str(Path(v).resolve()) for k, v in named.items() if v and not v.startswith("<")}


def input_lines(args: argparse.Namespace, inputs: dict[str, str]) -> str:
    """Text lines naming the files a name found in a library folder other than the
    packaged copy (the current directory's, --lib, $CCMATIC_LIB)."""
    lib = library(args)
    return "".join(f"  {k}: {p} ({why})\n" for k, p in inputs.items()
                   if (why := lib.origin(Path(p))) not in (PACKAGED, PATH_GIVEN))


def resolve_query(args: argparse.Namespace, name: str) -> Path:
    if Path(name).suffix == ".cca":
        raise SpecError(Loc(name), "this is a CCA file, not a query",
                        "write a query .toml that names it (cca = \"...\"), or use 'ccmatic check' on the CCA")
    return library(args).require("queries", name)


def limits(args: argparse.Namespace) -> Limits:
    max_T = getattr(args, "max_T", MAX_T)
    if max_T < 2:
        raise SpecError(Loc("--max-T"), f"--max-T must be at least 2, got {max_T}")
    return Limits(max_T=max_T)


def with_horizon(args: argparse.Namespace, scenario: Scenario) -> int:
    """The horizon: the file's, or --T (checked like the file's)."""
    T, periodic = scenario.T, scenario.periodic
    if getattr(args, "T", None) is None:
        return T
    if args.T < 2:
        raise SpecError(Loc("--T"), f"T must be at least 2, got {args.T}")
    if (too_long := horizon_error(args.T, limits(args))) is not None:
        raise SpecError(Loc("--T"), too_long, "raise the limit with --max-T if you mean it")
    if periodic is not None and periodic >= args.T:
        key = "periodic_all" if scenario.periodic_all else "periodic"
        raise SpecError(Loc("--T"), f"T={args.T} must exceed the {key} = {periodic}")
    if (short := delay_error(scenario.model.max_R, scenario.model.net_D, args.T)) is not None:
        raise SpecError(Loc("--T"), short, "give a longer horizon")
    return int(args.T)


def load_query_arg(args: argparse.Namespace, name: str) -> Query:
    lib = library(args)
    q = load_query(resolve_query(args, name), lib, load_objectives(lib), limits(args))
    T = with_horizon(args, q.scenario)
    if T == q.T:
        return q
    # the file's golden results are for its own horizon
    return replace(q, scenario=replace(q.scenario, T=T), expect=None, expect_solutions=None)


def frac_arg(flag: str, text: str) -> Fraction:
    try:
        v = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise SpecError(Loc(flag), f"'{text}' is not a number", "write e.g. 0.83, 83/100 or 3") from None
    why = magnitude_error(v)
    if why is not None:
        raise SpecError(Loc(flag), f"'{text.strip()}' is out of range: {why}")
    return v


def constant_values(args: argparse.Namespace) -> dict[str, Fraction]:
    """A proof's constants set on the command line (--set NAME=VALUE, each checked)."""
    values: dict[str, Fraction] = {}
    for item in getattr(args, "set", None) or []:
        if "=" not in item:
            raise SpecError(Loc("--set"), f"'{item}' is not NAME=VALUE", "e.g. --set util=0.9")
        k, v = item.split("=", 1)
        values[k.strip()] = frac_arg("--set", v)
    return values


def proof_horizon(args: argparse.Namespace, scenario: Scenario, start: int) -> int:
    """A proof's horizon: the file's, or --T (checked like the file's), with a step
    after the proof's start."""
    T = with_horizon(args, scenario)
    if start >= T - 1:
        raise SpecError(Loc("--T"), f"T={T} leaves no step after the proof's start = {start}")
    return T


def jobs_arg(args: argparse.Namespace, default: int) -> int:
    """--jobs, checked: at least 1, and for local processes at most
    JOBS_PER_CORE per core (a Ray cluster has its own)."""
    jobs = args.jobs if getattr(args, "jobs", None) is not None else default
    if jobs < 1:
        raise SpecError(Loc("--jobs"), f"need at least one job, got {jobs}")
    cap = JOBS_PER_CORE * (os.cpu_count() or 1)
    if getattr(args, "executor", "local") == "local" and jobs > cap:
        raise SpecError(Loc("--jobs"), f"--jobs {jobs} is over the limit of {cap} local processes "
                        f"({JOBS_PER_CORE} per core)", "use fewer jobs, or --executor ray for a cluster")
    return int(jobs)


def executor_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", default="local", help="local (processes, default) or ray")
    p.add_argument("--address", default=None, help="Ray cluster address ('auto', 'ray://host:10001')")


def print_warnings(err: TextIO, warnings: list[SpecWarning] | tuple[SpecWarning, ...]) -> None:
    """Valid but suspicious input (a CCA's :attr:`~ccmatic.spec.cca.CcaProgram.warnings`),
    one line each on stderr, each once; the command goes on."""
    err.writelines(line + "\n" for line in dict.fromkeys(w.render() for w in warnings))

