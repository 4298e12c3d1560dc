"""Checkpoints of a sequential synthesis: the counterexamples (their observations),
solutions and unknown candidates so far, keyed by a fingerprint of the question."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from pathlib import Path

from ccmatic.core.errors import EngineError, Loc, SpecError
from ccmatic.engine.cegis import Solution, Synthesizer
from ccmatic.engine.templates import fill_template


def fingerprint(syn: Synthesizer) -> str:
    h = hashlib.sha256()
    h.update(syn.prog.source.text.encode())
    q = Path(syn.query.path)
    h.update(q.read_bytes() if q.is_file() else b"")
    h.update(json.dumps({k: [str(v) for v in d] for k, d in syn.domains.items()}, sort_keys=True).encode())
    h.update(str(syn.query.T).encode())
    return h.hexdigest()


def save(syn: Synthesizer, path: str | Path) -> None:
    if not syn.opts.record_counterexamples:
        raise EngineError("checkpoints need SynthOptions(record_counterexamples=True)")
    data = {
        "fingerprint": fingerprint(syn),
        "query": syn.query.path,
        "counterexamples": syn.cex_log,
        "solutions": [{k: str(v) for k, v in s.holes.items()} for s in syn.solutions],
        "unknown": [{k: str(v) for k, v in c.items()} for c in syn.unknown],
        "stats": syn.stats.__dict__,
    }
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def resume(syn: Synthesizer, path: str | Path) -> None:
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise SpecError(Loc(str(p)), "checkpoint file not found") from None
    except (OSError, ValueError) as e:
        raise SpecError(Loc(str(p)), f"cannot read checkpoint: {e}") from None
    if data.get("fingerprint") != fingerprint(syn):
        raise SpecError(Loc(str(p)), "checkpoint belongs to a different query, template or horizon",
                        "resume with the same query file and T")
    for cex in data["counterexamples"]:
        syn.prune_recorded(cex)
        syn.cex_log.append(cex)
    for s in data["solutions"]:
        cand = {k: Fraction(v) for k, v in s.items()}
        syn.solutions.append(Solution(cand, fill_template(syn.prog, cand, syn.header(cand))))
        syn._block_solution(cand)
    for u in data["unknown"]:
        cand = {k: Fraction(v) for k, v in u.items()}
        syn.unknown.append(cand)
        syn._block_exact(cand)
    for k, v in data.get("stats", {}).items():
        if hasattr(syn.stats, k):
            setattr(syn.stats, k, v)
