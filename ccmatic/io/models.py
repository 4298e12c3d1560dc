"""Model files (``models/*.toml``) and a query's ``[model_params]``: one schema per
key (reader with its domain, and the doc line) drives loading and errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.model import BeliefTimeouts, Buffer, ModelConfig
from ccmatic.io.toml import (
    TomlDoc,
    check_keys,
    read_bool,
    read_choice,
    read_frac,
    read_int,
    read_str,
)

Reader = Callable[[TomlDoc, str, Any], Any]


@dataclass(frozen=True)
class Field:
    key: str
    read: Reader
    doc: str


def _choice(*choices: str) -> Reader:
    return lambda doc, key, v: read_choice(doc, key, v, choices)


def _frac_at_least(lo: Fraction, strict: bool = False) -> Reader:
    def read(doc: TomlDoc, key: str, v: Any) -> Fraction:
        x = read_frac(doc, key, v)
        if x < lo or (strict and x == lo):
            raise doc.err(key, f"'{key}' must be {'greater than' if strict else 'at least'} {lo}, got {x}")
        return x
    return read


def _int_at_least(lo: int) -> Reader:
    return lambda doc, key, v: read_int(doc, key, v, lo)


def _dupacks(doc: TomlDoc, key: str, v: Any) -> Fraction | None:
    if v == "free":
        return None
    return _frac_at_least(Fraction(0))(doc, key, v)  # type: ignore[no-any-return]


def read_buffer(doc: TomlDoc, key: str, v: Any) -> Buffer:
    if isinstance(v, str):
        if v in ("infinite", "arbitrary"):
            return Buffer(v)  # type: ignore[arg-type]
        raise doc.err(key, f"unknown buffer mode '{v}'",
                      "use \"infinite\", \"arbitrary\", {finite = k}, {small = k} or {large = k}")
    if isinstance(v, dict) and len(v) == 1:
        (mode, k), = v.items()
        if mode in ("finite", "small", "large"):
            kk = read_frac(doc, key, k)
            if kk < 0:
                raise doc.err(key, "buffer size must be non-negative")
            return Buffer(mode, kk)
    raise doc.err(key, f"bad buffer {v!r}",
                  "use \"infinite\", \"arbitrary\", {finite = k} (k BDPs), {small = k} or {large = k}")


def read_belief_timeouts(doc: TomlDoc, key: str, v: Any) -> BeliefTimeouts:
    if not isinstance(v, dict):
        raise doc.err(key, "belief_timeouts must be a table")
    check_keys(doc, v, {"period", "guard", "invalid", "max_expand"}, "belief_timeouts")
    return BeliefTimeouts(
        period=read_int(doc, "period", v["period"], 1) if "period" in v else None,
        guard=_frac_at_least(Fraction(0), strict=True)(doc, "guard", v["guard"]) if "guard" in v else None,
        invalid=read_bool(doc, "invalid", v.get("invalid", True)),
        max_expand=_frac_at_least(Fraction(1))(doc, "max_expand", v.get("max_expand", 2)),
    )


MODEL_FIELDS: dict[str, Field] = {f.key: f for f in (
    Field("family", _choice("ideal", "cbr_delay", "ccac"), "the model family (thesis §2.3)"),
    Field("description", read_str, "one line shown by 'ccmatic list'"),
    Field("C", _frac_at_least(Fraction(0), strict=True), "link rate, bytes per step"),
    Field("R", _int_at_least(1), "propagation delay (RTprop), steps"),
    Field("D", _int_at_least(0), "jitter bound, steps (0 on the ideal link)"),
    Field("N", _int_at_least(1), "number of flows"),
    Field("compose", read_bool, "CCAC: the composing variant (waste only while the queue is empty)"),
    Field("epsilon", _frac_at_least(Fraction(0)), "CCAC non-composing: waste while A − L ≤ S + ε"),
    Field("buffer", read_buffer, "\"infinite\", \"arbitrary\", {finite = k}, {small = k}, {large = k} (k BDPs)"),
    Field("loss", _choice("droptail", "ccac"), "drop-tail (deterministic) or CCAC's loss rule"),
    Field("dupacks", _dupacks, "dupack threshold in MSS, or \"free\" (any number of bytes: CCAC's default)"),
    Field("timeouts", read_bool, "retransmission timeouts (CCAC's RTO rule)"),
    Field("mss_max_bdp", _frac_at_least(Fraction(0), strict=True), "MSS < k·C·R"),
    Field("belief_timeouts", read_belief_timeouts, "belief timeouts (§4.1.1.2): period, guard, invalid, max_expand"),
    Field("qdel_prehistory", _choice("free", "hidden"), "delay buckets of bytes sent before the trace"),
    Field("belief_evidence", _choice("sound", "reference"), "evidence that a step was utilized"),
    Field("qdel_growth", _choice("fresh", "always"), "when the one-step delay growth rule binds"),
    Field("loss_detection", _choice("dupack", "oracle"), "dupacks (CCAC) or one RTT later (the prototype)"),
)}


def apply_model_table(doc: TomlDoc, base: ModelConfig, t: dict[str, Any], where: str) -> ModelConfig:
    """``base`` with the keys of one table (a model file, or ``[model_params]``)."""
    check_keys(doc, t, set(MODEL_FIELDS), where)
    m = replace(base, **{k: MODEL_FIELDS[k].read(doc, k, v) for k, v in t.items()})
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
