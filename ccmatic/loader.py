"""Loading model and query TOML files into typed configuration, with errors that
point at file:line:col."""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.config import (
    BeliefTimeouts,
    Buffer,
    Initial,
    ModelConfig,
    Objective,
    Query,
)
from ccmatic.errors import Loc, SpecError
from ccmatic.lang.source import Source, read_source
from ccmatic.library import Library
from ccmatic.properties import OBJECTIVE_KINDS


class TomlDoc:
    """A parsed TOML file that can locate keys and strings in its raw text."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.text = read_source(path)
        self._start = 0  # where key look-ups start: the table being read (see table())
        try:
            self.data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as e:
            m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
            msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
            loc = Loc(str(path), int(m.group(1)), int(m.group(2))) if m else Loc(str(path))
            raise SpecError(loc, f"invalid TOML: {msg}", "see https://toml.io for the syntax") from None

    def _pos(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def _find(self, pattern: str) -> int | None:
        """Offset of group 1 of the first match in the current table, else in the whole file."""
        pat = re.compile(pattern, re.MULTILINE)
        m = pat.search(self.text, self._start) or pat.search(self.text)
        return m.start(1) if m else None

    def _key_offset(self, key: str) -> int | None:
        k = re.escape(key)
        off = self._find(r"^[ \t]*(\"?" + k + r"\"?)[ \t]*=")
        return off if off is not None else self._find(r"^[ \t]*(\[+[ \t]*" + k + r"[ \t]*\]+)")

    @contextmanager
    def table(self, name: str, nth: int = 0) -> Iterator[None]:
        """Inside this block, keys are located in the nth ``[name]``/``[[name]]`` table first
        (so an error in the second [[objective]] points at that objective)."""
        headers = list(re.finditer(r"^[ \t]*\[\[?[ \t]*" + re.escape(name) + r"[ \t]*\]\]?", self.text, re.MULTILINE))
        old = self._start
        self._start = headers[nth].start() if nth < len(headers) else 0
        try:
            yield
        finally:
            self._start = old

    def key_loc(self, key: str) -> Loc:
        off = self._key_offset(key)
        if off is None:
            return Loc(str(self.path))
        return Loc(str(self.path), *self._pos(off))

    def string_source(self, value: str, key: str) -> Source:
        """A Source for an expression string, positioned where it appears in the file:
        the first quoted occurrence after ``key`` (not, e.g., a mention in a comment)."""
        start = self._key_offset(key)
        start = self._start if start is None else start
        for q in ('"', "'"):
            idx = self.text.find(q + value + q, start)
            if idx >= 0:
                idx += 1
                break
        else:
            idx = self.text.find(value, start)
        if idx < 0:
            kl = self.key_loc(key)
            return Source(str(self.path), value, max(kl.line, 1), 1)
        return Source(str(self.path), value, *self._pos(idx))

    def err(self, key: str, msg: str, hint: str | None = None) -> SpecError:
        return SpecError(self.key_loc(key), msg, hint)


def _frac(doc: TomlDoc, key: str, v: Any) -> Fraction:
    if isinstance(v, bool):
        raise doc.err(key, f"'{key}' must be a number, not a boolean")
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise doc.err(key, f"'{key}' must be a finite number, got {v!r}")
        return Fraction(repr(v))
    if isinstance(v, str):
        try:
            return Fraction(v.strip())
        except (ValueError, ZeroDivisionError):
            pass
    raise doc.err(key, f"'{key}' must be a number (e.g. 2, 0.5 or \"1/2\"), got {v!r}")


def _int(doc: TomlDoc, key: str, v: Any, lo: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise doc.err(key, f"'{key}' must be a whole number, got {v!r}")
    if lo is not None and v < lo:
        raise doc.err(key, f"'{key}' must be at least {lo}, got {v}")
    return v


def _bool(doc: TomlDoc, key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise doc.err(key, f"'{key}' must be true or false, got {v!r}")
    return v


def _str(doc: TomlDoc, key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise doc.err(key, f"'{key}' must be a string, got {v!r}")
    return v


def _check_keys(doc: TomlDoc, table: dict[str, Any], allowed: set[str], where: str) -> None:
    for k in table:
        if k not in allowed:
            close = difflib.get_close_matches(k, sorted(allowed), n=1)
            raise doc.err(k, f"unknown key '{k}' in {where}",
                          f"did you mean '{close[0]}'?" if close else f"allowed: {', '.join(sorted(allowed))}")


MODEL_KEYS = {"family", "description", "C", "R", "D", "N", "compose", "epsilon", "buffer", "loss",
              "dupacks", "timeouts", "mss_max_bdp", "belief_timeouts", "qdel_prehistory", "belief_evidence",
              "qdel_growth", "loss_detection"}


def parse_buffer(doc: TomlDoc, v: Any) -> Buffer:
    if isinstance(v, str):
        if v in ("infinite", "arbitrary"):
            return Buffer(v)  # type: ignore[arg-type]
        raise doc.err("buffer", f"unknown buffer mode '{v}'",
                      "use \"infinite\", \"arbitrary\", {finite = k}, {small = k} or {large = k}")
    if isinstance(v, dict) and len(v) == 1:
        (mode, k), = v.items()
        if mode in ("finite", "small", "large"):
            kk = _frac(doc, "buffer", k)
            if kk < 0:
                raise doc.err("buffer", "buffer size must be non-negative")
            return Buffer(mode, kk)
    raise doc.err("buffer", f"bad buffer {v!r}",
                  "use \"infinite\", \"arbitrary\", {finite = k} (k BDPs), {small = k} or {large = k}")


def apply_model_table(doc: TomlDoc, base: ModelConfig, t: dict[str, Any], where: str) -> ModelConfig:
    _check_keys(doc, t, MODEL_KEYS, where)
    kw: dict[str, Any] = {}
    for k, v in t.items():
        if k == "family":
            if v not in ("ideal", "cbr_delay", "ccac"):
                raise doc.err(k, f"unknown model family '{v}'", "use ideal, cbr_delay or ccac")
            kw[k] = v
        elif k == "description":
            kw[k] = _str(doc, k, v)
        elif k in ("C", "epsilon", "dupacks", "mss_max_bdp"):
            kw[k] = _frac(doc, k, v)
            if k == "C" and kw[k] <= 0:
                raise doc.err(k, "C must be positive")
        elif k in ("R", "N"):
            kw[k] = _int(doc, k, v, 1)
        elif k == "D":
            kw[k] = _int(doc, k, v, 0)
        elif k in ("compose", "timeouts"):
            kw[k] = _bool(doc, k, v)
        elif k == "buffer":
            kw[k] = parse_buffer(doc, v)
        elif k == "loss":
            if v not in ("droptail", "ccac"):
                raise doc.err(k, f"unknown loss mode '{v}'", "use \"droptail\" or \"ccac\"")
            kw[k] = v
        elif k == "qdel_prehistory":
            if v not in ("free", "hidden"):
                raise doc.err(k, f"unknown qdel_prehistory '{v}'", "use \"free\" or \"hidden\"")
            kw[k] = v
        elif k == "loss_detection":
            if v not in ("dupack", "oracle"):
                raise doc.err(k, f"unknown loss_detection '{v}'", "use \"dupack\" or \"oracle\"")
            kw[k] = v
        elif k == "qdel_growth":
            if v not in ("fresh", "always"):
                raise doc.err(k, f"unknown qdel_growth '{v}'", "use \"fresh\" or \"always\"")
            kw[k] = v
        elif k == "belief_evidence":
            if v not in ("sound", "reference"):
                raise doc.err(k, f"unknown belief_evidence '{v}'", "use \"sound\" or \"reference\"")
            kw[k] = v
        elif k == "belief_timeouts":
            if not isinstance(v, dict):
                raise doc.err(k, "belief_timeouts must be a table")
            _check_keys(doc, v, {"period", "guard", "invalid", "max_expand"}, "belief_timeouts")
            bt = BeliefTimeouts(
                period=_int(doc, "period", v["period"], 1) if "period" in v else None,
                guard=_frac(doc, "guard", v["guard"]) if "guard" in v else None,
                invalid=_bool(doc, "invalid", v.get("invalid", True)),
                max_expand=_frac(doc, "max_expand", v.get("max_expand", 2)),
            )
            kw[k] = bt
    m = replace(base, **kw)
    if m.family == "ideal" and m.D != 0:
        m = replace(m, D=0) if "D" not in t else m
        if m.D != 0:
            raise doc.err("D", "the ideal link has no jitter: D must be 0")
    return m


def cca_and_model(doc: TomlDoc, lib: Library) -> tuple[Path, ModelConfig]:
    """The CCA file and the model (with the file's ``[model_params]``) that a query or
    proof names; names resolve next to the file first, then in the library."""
    d, here = doc.data, doc.path.parent
    cca_name = _str(doc, "cca", d["cca"])
    cca_path = lib.find("templates", cca_name, here)
    if cca_path is None:
        raise doc.err("cca", f"CCA '{cca_name}' not found", "give a path or a name from 'ccmatic list'")
    model_name = _str(doc, "model", d["model"])
    model_path = lib.find("models", model_name, here)
    if model_path is None:
        raise doc.err("model", f"model '{model_name}' not found", "give a path or a name from 'ccmatic list'")
    model = load_model(model_path)
    if "model_params" in d:
        if not isinstance(d["model_params"], dict):
            raise doc.err("model_params", "model_params must be a table")
        with doc.table("model_params"):
            model = apply_model_table(doc, model, d["model_params"], "model_params")
    return cca_path, model


def parse_initial(doc: TomlDoc) -> Initial:
    """The ``[initial]`` table of a query or proof."""
    it = doc.data.get("initial")
    if it is None:
        return Initial()
    if not isinstance(it, dict):
        raise doc.err("initial", "initial must be a table")
    with doc.table("initial"):
        _check_keys(doc, it, {"beliefs_consistent", "no_initial_loss"}, "[initial]")
        return Initial(**{k: _bool(doc, k, v) for k, v in it.items()})


def load_model(path: Path) -> ModelConfig:
    doc = TomlDoc(path)
    if "family" not in doc.data:
        raise SpecError(Loc(str(path), 1, 1), "model file has no 'family'", "add family = \"ccac\" (or ideal, cbr_delay)")
    return apply_model_table(doc, ModelConfig(name=path.stem), doc.data, "model file")


QUERY_KEYS = {"description", "cca", "model", "T", "expect", "periodic", "model_params", "initial",
              "assume", "objective", "holes", "expect_solutions", "thesis_solutions"}


def load_query(path: str | Path, lib: Library) -> Query:
    p = Path(path)
    doc = TomlDoc(p)
    d = doc.data
    _check_keys(doc, d, QUERY_KEYS, "query")
    for req in ("cca", "model", "T"):
        if req not in d:
            raise SpecError(Loc(str(p), 1, 1), f"query has no '{req}'",
                            "a query names cca = \"...\", model = \"...\" and T = <steps>")
    cca_path, model = cca_and_model(doc, lib)
    T = _int(doc, "T", d["T"], 2)
    expect = d.get("expect")
    if expect is not None and expect not in ("proved", "counterexample", "unknown"):
        raise doc.err("expect", f"expect must be proved, counterexample or unknown, not {expect!r}")
    periodic = _int(doc, "periodic", d["periodic"], 1) if "periodic" in d else None
    if periodic is not None and periodic >= T:
        raise doc.err("periodic", f"periodic = {periodic} must be smaller than T = {T}")
    init = parse_initial(doc)
    assumptions = []
    if "assume" in d:
        a = d["assume"]
        if not isinstance(a, list) or not all(isinstance(x, str) for x in a):
            raise doc.err("assume", "assume must be a list of expression strings")
        assumptions = [doc.string_source(x, "assume") for x in a]
    objectives = []
    objs = d.get("objective", [])
    if not isinstance(objs, list):
        raise doc.err("objective", "write objectives as [[objective]] tables")
    for i, o in enumerate(objs):
        with doc.table("objective", i):
            if not isinstance(o, dict) or "kind" not in o:
                raise doc.err("objective", f"objective #{i + 1} needs a kind")
            kind = o["kind"]
            if not isinstance(kind, str) or kind not in OBJECTIVE_KINDS:
                close = difflib.get_close_matches(str(kind), list(OBJECTIVE_KINDS), n=1)
                raise doc.err("kind", f"unknown objective kind '{kind}'",
                              f"did you mean '{close[0]}'?" if close else f"use one of {', '.join(OBJECTIVE_KINDS)}")
            _check_keys(doc, o, {"kind", "label", *OBJECTIVE_KINDS[kind]}, f"objective '{kind}'")
            params: dict[str, object] = {}
            src = None
            for k, v in o.items():
                if k in ("kind", "label"):
                    continue
                if k == "expr":
                    src = doc.string_source(_str(doc, k, v), k)
                elif k in ("shrink", "beliefs"):
                    params[k] = _str(doc, k, v)
                elif k == "no_large_loss_on_increase":
                    params[k] = _bool(doc, k, v)
                else:
                    params[k] = _frac(doc, k, v)
            label = str(o.get("label", kind))
            objectives.append(Objective(kind, params, src, f"{p}:{label}"))
    if not objectives:
        raise SpecError(Loc(str(p), 1, 1), "query has no [[objective]]", "add at least one objective to check")
    holes: dict[str, tuple[Fraction, ...]] = {}
    if "holes" in d:
        if not isinstance(d["holes"], dict):
            raise doc.err("holes", "holes must be a table: name = [values]")
        for hname, vals in d["holes"].items():
            if not isinstance(vals, list) or not vals:
                raise doc.err(hname, f"hole '{hname}' needs a non-empty list of values, e.g. [-1, 0, 1]")
            dom = tuple(_frac(doc, hname, v) for v in vals)
            if len(set(dom)) != len(dom):
                raise doc.err(hname, f"hole '{hname}' lists a value twice")
            holes[str(hname)] = dom
    expect_solutions = _int(doc, "expect_solutions", d["expect_solutions"], 0) if "expect_solutions" in d else None
    thesis_solutions = _int(doc, "thesis_solutions", d["thesis_solutions"], 0) if "thesis_solutions" in d else None
    return Query(
        path=str(p), name=p.stem, holes=holes, expect_solutions=expect_solutions, thesis_solutions=thesis_solutions, description=str(d.get("description", "")), cca_path=str(cca_path),
        model=model, T=T, expect=expect, periodic=periodic, initial=init,
        assumptions=tuple(assumptions), objectives=tuple(objectives),
    )


def model_summary(m: ModelConfig) -> str:
    parts: list[str] = [m.family]
    if m.family == "ccac":
        parts.append("composing" if m.compose else "non-composing")
    parts.append(f"C={m.C} R={m.R} D={m.D} N={m.N}")
    parts.append(f"buffer {m.buffer.describe()}")
    parts.append(f"loss {m.loss}")
    return ", ".join(parts)


__all__ = ["TomlDoc", "cca_and_model", "fields", "load_model", "load_query", "model_summary", "parse_initial"]
