"""Model files (``models/*.toml``) and a query's ``[model_params]``, read through
the model schema (:data:`ccmatic.io.schema.MODEL`: each key's reader with its
domain, and its doc line)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.model import ModelConfig
from ccmatic.io.schema import MODEL
from ccmatic.io.toml import TomlDoc


def apply_model_table(doc: TomlDoc, base: ModelConfig, t: dict[str, Any], where: str) -> ModelConfig:
    """``base`` with the keys of one table (a model file, or ``[model_params]``)."""
    MODEL.check(doc, t, where)
    m = replace(base, **{k: MODEL.read(doc, t, k) for k in t})
    if m.family == "ideal" and m.D != 0:
        if "D" in t:
            raise doc.err("D", "the ideal link has no jitter: D must be 0")
        m = replace(m, D=0)
    return _check_topology(doc, _check_jitter(doc, m, t), t)


def _check_topology(doc: TomlDoc, m: ModelConfig, t: dict[str, Any]) -> ModelConfig:
    """A parking lot has three flows, infinite buffers and (CCAC) composing links."""
    if m.topology == "dumbbell":
        return m
    key = "topology" if "topology" in t else next((k for k in ("N", "buffer", "compose") if k in t), "family")
    if m.N != 3:
        raise doc.err(key, f"a parking lot has 3 flows, got N = {m.N}", "set N = 3 (flow 0 crosses both bottlenecks)")
    if m.buffer.mode != "infinite":
        raise doc.err(key, "a parking lot's buffers are infinite", "set buffer = \"infinite\"")
    if m.family == "ccac" and not m.compose:
        raise doc.err(key, "a parking lot of non-composing CCAC links is not modelled", "set compose = true")
    return m


def _check_jitter(doc: TomlDoc, m: ModelConfig, t: dict[str, Any]) -> ModelConfig:
    """Per-flow lists have one entry per flow; the ideal link has no jitter."""
    for name, values in (("rtprop", m.rtprop), ("jitter", m.jitter)):
        if values is not None and len(values) != m.N:
            key = name if name in t else ("N" if "N" in t else "family")
            n = len(values)
            raise doc.err(key, f"{name} lists {n} flow{'' if n == 1 else 's'} but N = {m.N}", "give one entry per flow")
    if m.jitter is None:
        return m
    key = "jitter" if "jitter" in t else ("N" if "N" in t else "family")
    if m.family == "ideal" and any(m.jitter):
        raise doc.err(key, "the ideal link has no jitter: every jitter entry must be 0",
                      "use family = \"cbr_delay\" or \"ccac\" for jitter")
    return m


def load_model(path: Path) -> ModelConfig:
    doc = TomlDoc(path)
    if "family" not in doc.data:
        raise SpecError(Loc(str(path), 1, 1), "model file has no 'family'", "add family = \"ccac\" (or ideal, cbr_delay)")
    return apply_model_table(doc, ModelConfig(name=path.stem), doc.data, "model file")
