"""A result cache for proof questions, stored as JSON files in a user-chosen folder.

The key covers the whole question: every constraint of the model (as SMT-LIB text),
the negated lemma, the Z3 version, and the solver parameters (timeout, seed,
logic).  Only definite answers are stored (proved, or refuted with its trace);
``unknown`` is always asked again.
"""

from __future__ import annotations

import hashlib
import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import z3

from ccmatic.verify import ConcreteTrace

FORMAT = 1


def constraints_digest(constraints: list[tuple[str, z3.BoolRef]]) -> str:
    h = hashlib.sha256()
    for _tag, c in constraints:
        h.update(c.sexpr().encode())
        h.update(b"\n")
    return h.hexdigest()


def question_key(base_digest: str, negated: z3.BoolRef, vacuity: bool, timeout_s: float | None, seed: int,
                 logic: str | None) -> str:
    blob = json.dumps({
        "format": FORMAT, "z3": z3.get_version_string(), "timeout_s": timeout_s, "seed": seed, "logic": logic,
        "vacuity": vacuity, "base": base_digest, "negated": negated.sexpr(),
    }, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def trace_to_json(tr: ConcreteTrace) -> dict[str, Any]:
    def q(x: Fraction | bool | None) -> Any:
        return x if x is None or isinstance(x, bool) else str(x)

    return {
        "T": tr.T, "N": tr.N,
        "params": {k: q(v) for k, v in tr.params.items()},
        "aggregate": {k: [q(x) for x in v] for k, v in tr.aggregate.items()},
        "flows": [{k: [q(x) for x in v] for k, v in fl.items()} for fl in tr.flows],
    }


def trace_from_json(d: dict[str, Any]) -> ConcreteTrace:
    def f(x: Any) -> Any:
        return x if x is None or isinstance(x, bool) else Fraction(x)

    return ConcreteTrace(
        int(d["T"]), int(d["N"]),
        {k: f(v) for k, v in d["params"].items()},
        {k: [Fraction(x) for x in v] for k, v in d["aggregate"].items()},
        [{k: [f(x) for x in v] for k, v in fl.items()} for fl in d["flows"]],
    )


class ResultCache:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        p = self._path(key)
        try:
            data: dict[str, Any] = json.loads(p.read_text())
        except (OSError, ValueError):
            self.misses += 1
            return None
        if data.get("format") != FORMAT or data.get("result") not in ("proved", "refuted"):
            self.misses += 1
            return None
        self.hits += 1
        return data

    def put(self, key: str, entry: dict[str, Any]) -> None:
        if entry.get("result") not in ("proved", "refuted"):
            return
        data = {"format": FORMAT, **entry}
        tmp = self._path(key).with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(self._path(key))
