"""``ccmatic list``: the models, CCAs, queries, proofs and objective kinds it can find
(a name found in several library folders: the one a bare name resolves to, marked
with its folder unless it is the packaged copy)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import EXIT_OK, Subparsers, library
from ccmatic.core.errors import SpecError
from ccmatic.io.library import PACKAGED
from ccmatic.io.objectives import load_objectives
from ccmatic.io.toml import TomlDoc
from ccmatic.spec.cca import load_cca
from ccmatic.spec.source import read_source

TITLES = {"models": "Models", "templates": "CCAs and templates", "queries": "Queries", "proofs": "Proofs",
          "objectives": "Objective kinds"}


def _describe(p: Path) -> str:
    try:
        if p.suffix == ".toml":
            return str(TomlDoc(p).data.get("description", ""))
        first = next((ln for ln in read_source(p, "CCA file").splitlines() if ln.startswith("#")), "")
        load_cca(p)  # only list CCA files that load
        return first.lstrip("# ").strip()
    except SpecError as e:
        return f"(invalid: {e.render()})"


def cmd_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    lib = library(args)
    rows: dict[str, list[dict[str, Any]]] = {
        kind: [{"name": p.stem, "path": str(p), "description": _describe(p), "from": lib.origin(p)}
               for p in lib.listing(kind)]
        for kind in ("models", "templates", "queries", "proofs")}
    rows["objectives"] = [{"name": k.name, "path": str(k.loc.file), "description": k.doc.split("\n")[0],
                           "params": list(k.params), "from": lib.origin(Path(k.loc.file))} for k in load_objectives(lib).kinds.values()]
    if args.json:
        out.write(json.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    for kind, items in rows.items():
        out.write(f"{TITLES[kind]} ({len(items)}):\n")
        for it in items:
            name = it["name"] if kind != "queries" else f"{Path(it['path']).parent.name}/{it['name']}"
            where = "" if it["from"] == PACKAGED else f"  [{it['from']}: {it['path']}]"
            out.write(f"  {name:28s} {it['description']}{where}\n")
    return EXIT_OK


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    ls = sub.add_parser("list", parents=[common], help=summary)
    ls.set_defaults(handler=cmd_list)
