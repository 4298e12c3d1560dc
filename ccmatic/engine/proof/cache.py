"""A result cache for proof questions, stored as JSON files in a user-chosen folder.

The key covers the whole question: every constraint of the model (as SMT-LIB text),
the negated lemma, the Z3 version, and the solver parameters (timeout, seed,
logic).  Only definite answers are stored (proved, or a counterexample with its trace);
``unknown`` is always asked again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import z3

from ccmatic.core.files import atomic_write

FORMAT = 2  # 2: verdicts are proved | counterexample


def constraints_digest(constraints: Iterable[tuple[str, z3.BoolRef]]) -> str:
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
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("verdict") not in ("proved", "counterexample"):
            self.misses += 1
            return None
        self.hits += 1
        return data

    def put(self, key: str, entry: dict[str, Any]) -> None:
        if entry.get("verdict") not in ("proved", "counterexample"):
            return
        atomic_write(self._path(key), json.dumps({"format": FORMAT, **entry}))
