"""The objective library: ``objectives/*.toml`` in every library folder (earlier
folders first: a user's kind replaces a shipped one of the same name)."""

from __future__ import annotations

from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.objectives import (
    ObjectiveKind,
    ObjectiveLibrary,
    ParamKind,
    ParamSpec,
    ParamValue,
)
from ccmatic.core.source import Definition
from ccmatic.io.library import Library
from ccmatic.io.toml import TomlDoc, check_keys, read_frac, read_str, read_table

#: names the formulas resolve themselves (a parameter or definition may not shadow them)
VALUE_NAMES = {"C", "R", "D", "T", "N", "MSS", "C0", "buffer", "t", "True", "False",
               "finite_buffer", "sets_rate", "sets_cwnd"}
#: built-in functions (a definition, which may be called, may not shadow them)
FUNCTION_NAMES = {"min", "max", "sum", "all", "any", "abs", "bytes", "seconds", "rate", "count", "choose", "range"}
RESERVED = VALUE_NAMES | FUNCTION_NAMES


def read_signature(doc: TomlDoc, key: str) -> tuple[str, tuple[str, ...]]:
    """``name`` or ``name(t)``."""
    k = key.strip()
    if k.endswith(")") and "(" in k:
        name, args = k[:-1].split("(", 1)
        params = tuple(a.strip() for a in args.split(",") if a.strip())
        if params != ("t",):
            raise doc.err(key, f"definition '{key}' may take one step argument, written (t)")
        return name.strip(), params
    return k, ()


def check_name(doc: TomlDoc, key: str, name: str, what: str, reserved: set[str] = RESERVED) -> None:
    if not name.isidentifier():
        raise doc.err(key, f"{what} name '{name}' is not an identifier", "use letters, digits and _")
    if name in reserved:
        raise doc.err(key, f"{what} name '{name}' is reserved", "pick another name")


def read_definitions(doc: TomlDoc, table: dict[str, Any], taken: set[str]) -> dict[str, Definition]:
    """A ``[define]`` table: ``name = "formula"`` or ``"name(t)" = "formula"``."""
    out: dict[str, Definition] = {}
    for key, body in table.items():
        name, params = read_signature(doc, key)
        check_name(doc, key, name, "definition")
        if name in taken or name in out:
            raise doc.err(key, f"'{name}' is defined twice")
        out[name] = Definition(name, params, doc.string_source(read_str(doc, key, body), key))
    return out


def _param(doc: TomlDoc, kind: str, name: str, spec: Any) -> ParamSpec:
    spec = read_table(doc, name, spec, "a parameter is { default = ..., doc = \"...\", choices = [...] }")
    check_keys(doc, spec, {"default", "doc", "choices"}, f"parameter '{name}' of '{kind}'")
    check_name(doc, name, name, "parameter", VALUE_NAMES)
    doc_text = read_str(doc, "doc", spec.get("doc", ""))
    if "choices" in spec:
        choices = tuple(read_str(doc, "choices", c) for c in spec["choices"])
        default = spec.get("default")
        if default is not None and default not in choices:
            raise doc.err(name, f"default {default!r} is not one of the choices")
        return ParamSpec(name, "choice", default, choices, doc_text)
    default = spec.get("default")
    pk: ParamKind = "bool" if isinstance(default, bool) else "number"
    value: ParamValue | None = default if isinstance(default, bool) or default is None else read_frac(doc, name, default)
    return ParamSpec(name, pk, value, (), doc_text)


def _kind(doc: TomlDoc, name: str, spec: Any, shared: dict[str, Definition]) -> ObjectiveKind:
    with doc.table(f"kinds.{name}"):
        spec = read_table(doc, name, spec, "a kind is a table with doc, formula and params")
        check_keys(doc, spec, {"doc", "formula", "params", "define"}, f"objective kind '{name}'")
        if "formula" not in spec:
            raise doc.err(name, f"objective kind '{name}' has no formula")
        params = {p: _param(doc, name, p, v)
                  for p, v in read_table(doc, "params", spec.get("params", {}), "params = { name = {...} }").items()}
        own = read_definitions(doc, read_table(doc, "define", spec.get("define", {}), "define = { ... }"),
                               set(shared) | set(params))
        formula = doc.string_source(read_str(doc, "formula", spec["formula"]), "formula")
        return ObjectiveKind(name, read_str(doc, "doc", spec.get("doc", "")), params, formula,
                             doc.key_loc(f"kinds.{name}"), {**shared, **own})


def load_objectives(lib: Library) -> ObjectiveLibrary:
    """Every kind of every ``objectives/*.toml`` (the first definition of a kind wins)."""
    kinds: dict[str, ObjectiveKind] = {}
    paths: list[str] = []
    for path in lib.listing("objectives"):
        doc = TomlDoc(path)
        check_keys(doc, doc.data, {"define", "kinds"}, "objective library")
        shared = read_definitions(doc, read_table(doc, "define", doc.data.get("define", {}), "[define]"), set())
        for name, spec in read_table(doc, "kinds", doc.data.get("kinds", {}), "[kinds.<name>]").items():
            if name not in kinds:
                kinds[name] = _kind(doc, name, spec, shared)
        paths.append(str(path))
    if not kinds:
        raise SpecError(Loc("objectives"), "no objective library found", "check --lib and $CCMATIC_LIB")
    return ObjectiveLibrary(tuple(paths), kinds, {})


def param_value(doc: TomlDoc, key: str, v: Any, spec: ParamSpec) -> ParamValue:
    """A query's value for a kind's parameter, checked against its type."""
    if spec.kind == "choice":
        if v not in spec.choices:
            raise doc.err(key, f"{key} must be " + " or ".join(f"'{c}'" for c in spec.choices) + f", not {v!r}")
        return str(v)
    if spec.kind == "bool":
        if not isinstance(v, bool):
            raise doc.err(key, f"'{key}' must be true or false, got {v!r}")
        return v
    return read_frac(doc, key, v)

