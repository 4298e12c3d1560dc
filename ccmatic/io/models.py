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
    return m


def load_model(path: Path) -> ModelConfig:
    doc = TomlDoc(path)
    if "family" not in doc.data:
        raise SpecError(Loc(str(path), 1, 1), "model file has no 'family'", "add family = \"ccac\" (or ideal, cbr_delay)")
    return apply_model_table(doc, ModelConfig(name=path.stem), doc.data, "model file")
