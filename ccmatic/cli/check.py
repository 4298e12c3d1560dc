"""``ccmatic check``: load and validate a CCA file or a query without solving."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import (
    EXIT_OK,
    Subparsers,
    add_max_T,
    library,
    load_query_arg,
    print_warnings,
)
from ccmatic.core.options import SynthOptions
from ccmatic.engine.cegis import Synthesizer
from ccmatic.engine.verify import build_query, query_cca
from ccmatic.spec.cca import load_cca


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    p = Path(args.file)
    res: dict[str, Any]
    if p.suffix == ".toml":
        q = load_query_arg(args, args.file)
        prog = query_cca(q)
        print_warnings(err, prog.warnings)
        if prog.is_template:
            syn = Synthesizer(q, SynthOptions(), prog)  # encodes once: checks holes, units, objectives
            res = {"file": str(p), "ok": True, "kind": "synthesis query", "holes": list(syn.domains),
                   "candidates_before_unit_checks": syn.search_space()}
        else:
            build_query(q, prog)  # encode without solving: checks the CCA, assumptions and objectives
            res = {"file": str(p), "ok": True, "kind": "query"}
    else:
        found = library(args).find("templates", args.file)
        prog = load_cca(found or p)
        print_warnings(err, prog.warnings)
        res = {"file": str(found or p), "ok": True, "kind": "template" if prog.is_template else "cca",
               "sets_rate": prog.sets_rate, "sets_cwnd": prog.sets_cwnd, "reads": sorted(prog.reads),
               "warmup_steps": prog.warmup(1, 1, 10), "holes": list(prog.holes)}
    out.write(json.dumps(res) + "\n" if args.json else f"{res['file']}: ok\n")
    return EXIT_OK


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    c = sub.add_parser("check", parents=[common], help=summary)
    c.add_argument("file")
    add_max_T(c)
    c.set_defaults(handler=cmd_check)
