"""``ccmatic check``: load and validate a CCA file or a query without solving, and
say what it holds (what a CCA reads and how late, its state, its holes)."""

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
    scenario_inputs,
)
from ccmatic.core.options import SynthOptions
from ccmatic.engine.cegis import Synthesizer
from ccmatic.engine.verify import build_query, model_parts_note, query_cca
from ccmatic.spec.cca import CcaProgram, load_cca


def _cca(args: argparse.Namespace, name: str) -> CcaProgram:
    if Path(name).is_dir():
        return load_cca(Path(name))  # the reader says why it is refused
    return load_cca(library(args).require("templates", name))


def cca_facts(prog: CcaProgram) -> dict[str, Any]:
    """What a CCA reads (each name with how many steps back it reads it, at R = D = 1),
    sets, keeps and leaves open."""
    lags = prog.code(1, 1, 10).lags
    own = {s.name for s in prog.states} | {"rate", "cwnd"}
    return {"kind": "template" if prog.is_template else "cca", "sets_rate": prog.sets_rate,
            "sets_cwnd": prog.sets_cwnd, "reads": sorted(lags),
            "lags": {n: lags[n] for n in sorted(lags) if n not in own},
            "states": [s.name for s in prog.states], "warmup_steps": prog.warmup(1, 1, 10),
            "holes": list(prog.holes),
            "hole_values": {h.name: len(h.domain) if h.domain is not None else None for h in prog.holes.values()}}


def facts_text(res: dict[str, Any]) -> str:
    """The text of :func:`cca_facts`, a line each."""
    sets = " and ".join(n for n in ("rate", "cwnd") if res[f"sets_{n}"]) or "neither rate nor cwnd"
    reads = ", ".join(f"{n}[t-{k}]" if k else f"{n}[t]" for n, k in res["lags"].items())
    holes = ", ".join(f"?{h} ({n} values)" if n is not None else f"?{h} (domain from the query)"
                      for h, n in res["hole_values"].items())
    return (f"  {res['kind']}, sets {sets}\n"
            f"  reads (the latest step of each, at R = D = 1): {reads or 'nothing'}\n"
            f"  state variables: {', '.join(res['states']) or 'none'}\n"
            f"  holes: {holes or 'none'}\n"
            f"  warm-up: {res['warmup_steps']} step(s) at R = D = 1\n")


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    p = Path(args.file)
    res: dict[str, Any]
    lib = library(args)
    if p.suffix == ".toml" or (p.suffix != ".cca" and lib.find("templates", args.file) is None
                               and lib.find("queries", args.file) is not None):  # a query's bare name
        q = load_query_arg(args, args.file)
        prog = query_cca(q)
        print_warnings(err, prog.warnings)
        inputs = scenario_inputs(q.scenario)
        if prog.is_template:
            syn = Synthesizer(q, SynthOptions(), prog)  # encodes once: checks holes, units, objectives
            res = {"file": str(p), "ok": True, "kind": "synthesis query", "holes": list(syn.domains),
                   "candidates_before_unit_checks": syn.search_space(), "inputs": inputs}
            text = (f"  synthesis query: {len(syn.domains)} holes, {syn.search_space():,} candidates "
                    "before unit checks\n")
        else:
            build_query(q, prog)  # encode without solving: checks the CCA, assumptions and objectives
            res = {"file": str(p), "ok": True, "kind": "query", "question": q.question,
                   "model_parts": sorted(q.scenario.parts), "inputs": inputs}
            text = "".join(f"  {line}\n" for line in [
                *(["exists question: is there a trace that meets its conditions?"] if q.exists else []),
                *model_parts_note(q.scenario)])
        text += "".join(f"  {k}: {v}\n" for k, v in inputs.items() if k != "query")
    else:
        prog = _cca(args, args.file)
        print_warnings(err, prog.warnings)
        res = {"file": prog.path, "ok": True, **cca_facts(prog),
               "inputs": {"cca": str(Path(prog.path).resolve())}}
        text = facts_text(res)
    out.write(json.dumps(res) + "\n" if args.json else f"{res['file']}: ok\n{text}")
    return EXIT_OK


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    c = sub.add_parser("check", parents=[common], help=summary)
    c.add_argument("file", help="a CCA file or query (path or name): ok, and what a CCA reads, keeps and leaves open")
    add_max_T(c)
    c.set_defaults(handler=cmd_check)
