"""Checkpoints of a sequential synthesis: the counterexamples (their observations)
and the solutions so far, keyed by a fingerprint of the question.

* The fingerprint covers everything the answer depends on: the resolved model, the
  template's text, the query file and its resolved scenario and objectives (with the
  library formulas they name), the hole domains, the horizon and ccmatic's version.
* Saving is atomic (a synced temporary file renamed over the old one): a crash or
  SIGKILL mid-write leaves the previous checkpoint intact.
* Resuming trusts nothing it would print: every stored solution is re-verified in a
  fresh solver (one that fails is dropped, and the search meets its class again);
  candidates that got ``unknown`` are checked again rather than blocked.
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic import __version__
from ccmatic.core.errors import EngineError, Loc, SpecError
from ccmatic.core.files import atomic_write
from ccmatic.engine.cegis import Synthesizer
from ccmatic.engine.templates import Candidate

FORMAT = 2


def fingerprint(syn: Synthesizer) -> str:
    q = syn.query
    h = hashlib.sha256()
    q_file = Path(q.path)
    parts = [
        f"ccmatic {__version__} checkpoint {FORMAT}",
        syn.prog.source.text,
        q_file.read_text(errors="replace") if q_file.is_file() else "",
        repr(q.scenario.model), repr(q.scenario.initial), repr(q.scenario.periodic),
        repr(q.scenario.periodic_all),
        repr([a.text for a in q.scenario.assumptions]), str(q.T), str(q.scenario.start),
        repr([(o.kind, sorted(o.params.items()), o.source.text if o.source else None) for o in q.objectives]),
        *_library_texts(q.library.paths if q.library else ()),
        json.dumps({k: [str(v) for v in d] for k, d in syn.domains.items()}, sort_keys=True),
    ]
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _library_texts(paths: tuple[str, ...]) -> list[str]:
    """The objective library's files (the formulas the objectives' kinds name)."""
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.glob("*.toml")) if p.is_dir() else [p])
    return [f"{f.name}\n{f.read_text(errors='replace')}" for f in files if f.is_file()]


def save(syn: Synthesizer, path: str | Path) -> None:
    if not syn.opts.record_counterexamples:
        raise EngineError("checkpoints need SynthOptions(record_counterexamples=True)")
    data = {
        "format": FORMAT,
        "fingerprint": fingerprint(syn),
        "query": syn.query.path,
        "counterexamples": syn.cex_log,
        "solutions": [{k: str(v) for k, v in s.holes.items()} for s in syn.solutions],
        "stats": syn.stats.__dict__,
    }
    atomic_write(Path(path), json.dumps(data))


def resume(syn: Synthesizer, path: str | Path) -> list[Candidate]:
    """Load a checkpoint into ``syn``.  Returns the stored solutions that failed
    their re-verification (dropped; the search meets their classes again)."""
    p = Path(path)
    data = _read(p)
    if data["fingerprint"] != fingerprint(syn):
        raise SpecError(Loc(str(p)), "checkpoint belongs to a different question (query, model, template, "
                        "domains, horizon or ccmatic version)", "resume with the same query, library and T, "
                        "or start afresh without --resume")
    try:
        for i, cex in enumerate(data["counterexamples"]):
            if (why := _cex_shape(syn, cex)) is not None:
                raise _bad(p, f"counterexample #{i + 1}: {why}")
            syn.prune_recorded(cex)
            syn.cex_log.append(cex)
        stored = [{k: Fraction(v) for k, v in s.items()} for s in data["solutions"]]
    except (KeyError, TypeError, ValueError, ZeroDivisionError, AssertionError, IndexError) as e:
        raise _bad(p, f"malformed entry ({type(e).__name__}: {e})") from None
    dropped = []
    for cand in stored:
        if set(cand) != set(syn.domains) or any(v not in syn.domains[h] for h, v in cand.items()):
            raise _bad(p, f"stored solution {show(cand)} is outside the template's hole domains")
        if syn.reverify(cand):
            syn.accept(cand)
        else:
            dropped.append(cand)
    for k, v in data.get("stats", {}).items():
        if hasattr(syn.stats, k) and isinstance(v, (int, float)) and k != "unknown":
            setattr(syn.stats, k, v)
    return dropped


def _read(p: Path) -> dict[str, Any]:
    try:
        if not p.is_file():
            raise SpecError(Loc(str(p)), "checkpoint file not found" if not p.exists() else "checkpoint is not a file")
        data = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise _bad(p, f"cannot read it: {e}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _bad(p, "not a ccmatic checkpoint of this version")
    for key, tp in (("fingerprint", str), ("counterexamples", list), ("solutions", list), ("stats", dict)):
        if not isinstance(data.get(key), tp):
            raise _bad(p, f"'{key}' missing or not a {tp.__name__}")
    if not all(isinstance(s, dict) and all(isinstance(v, str) for v in s.values()) for s in data["solutions"]):
        raise _bad(p, "'solutions' must be a list of {hole: value} tables")
    return data


def _cex_shape(syn: Synthesizer, cex: object) -> str | None:
    """Why a stored counterexample is not {values: {name: {flow: [T values]}}, MSS}."""
    if not isinstance(cex, dict) or not isinstance(cex.get("values"), dict) or "MSS" not in cex:
        return "not a table with 'values' and 'MSS'"
    names = set(syn.code.lags) | {n for n, _ in syn.code.outputs}
    per = cex["values"]
    if set(per) != names:
        return f"'values' must hold exactly {', '.join(sorted(names))}"
    flows = {str(f) for f in range(syn.tr.N)}
    for name, fl in per.items():
        if not isinstance(fl, dict) or set(fl) != flows:
            return f"'{name}' must have one series per flow ({', '.join(sorted(flows))})"
        if not all(isinstance(xs, list) and len(xs) == syn.tr.T for xs in fl.values()):
            return f"each series of '{name}' must have T = {syn.tr.T} values"
    return None


def _bad(p: Path, what: str) -> SpecError:
    return SpecError(Loc(str(p)), f"bad checkpoint: {what}", "give a file written by 'ccmatic synth --checkpoint'")


def show(c: Candidate) -> str:
    return ", ".join(f"?{h}={v}" for h, v in c.items())
