"""Query files: a scenario (CCA, model, horizon, initial conditions, assumptions)
and the objectives whose conjunction is the property (:mod:`ccmatic.core.scenario`)."""

from __future__ import annotations

import difflib
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.limits import DEFAULT_LIMITS, Limits, delay_error, horizon_error
from ccmatic.core.model import ALL_PARTS, MODEL_PARTS
from ccmatic.core.objectives import ObjectiveLibrary, ParamValue
from ccmatic.core.scenario import Initial, Objective, Query, Scenario
from ccmatic.io.library import Library
from ccmatic.io.models import apply_model_table, load_model
from ccmatic.io.objectives import param_value
from ccmatic.io.schema import INITIAL, OBJECTIVE, QUERY, SCENARIO
from ccmatic.io.toml import TomlDoc, check_keys, read_frac, read_table
from ccmatic.spec.cca import NO_CCA
from ccmatic.spec.source import read_source


def read_scenario(doc: TomlDoc, lib: Library, limits: Limits = DEFAULT_LIMITS) -> Scenario:
    """The scenario of a query or proof file: the one reader of the keys of
    :data:`~ccmatic.io.schema.SCENARIO`, which ``QUERY`` and ``PROOF`` both hold."""
    d, p = doc.data, doc.path
    here = p.parent
    cca_name = SCENARIO.read(doc, d, "cca", NO_CCA)
    cca_path = None if cca_name == NO_CCA else lib.find("templates", cca_name, here)
    if cca_path is None and cca_name != NO_CCA:
        raise doc.err("cca", f"CCA '{cca_name}' not found", lib.not_found_hint("templates", cca_name))
    model_name = SCENARIO.read(doc, d, "model")
    model_path = lib.find("models", model_name, here)
    if model_path is None:
        raise doc.err("model", f"model '{model_name}' not found", lib.not_found_hint("models", model_name))
    model = load_model(model_path)
    if "model_params" in d:
        with doc.table("model_params"):
            model = apply_model_table(doc, model, read_table(doc, "model_params", d["model_params"], ""),
                                      "model_params")
    T = SCENARIO.read(doc, d, "T")
    if (too_long := horizon_error(T, limits)) is not None:
        raise doc.err("T", too_long, "raise the limit with --max-T if you mean it")
    if (short := delay_error(model.max_R, model.net_D, T)) is not None:
        params = d.get("model_params")
        key = next((k for k in ("jitter", "rtprop", "D", "R") if isinstance(params, dict) and k in params), None)
        if key is None:
            raise doc.err("T", short, "give a longer horizon")
        with doc.table("model_params"):
            raise doc.err(key, short, "give a longer horizon, or a smaller R or D")
    start = SCENARIO.read(doc, d, "start", 0)
    if start >= T - 1:
        raise doc.err("start", f"start = {start} leaves no step before the last one (T = {T})")
    periodic, periodic_all = SCENARIO.read(doc, d, "periodic"), SCENARIO.read(doc, d, "periodic_all")
    if periodic is not None and periodic_all is not None:
        raise doc.err("periodic_all", "give periodic (CCAC's make_periodic) or periodic_all, not both")
    key = "periodic" if periodic_all is None else "periodic_all"
    periodic = periodic if periodic_all is None else periodic_all
    if periodic is not None and periodic >= T:
        raise doc.err(key, f"{key} = {periodic} must be smaller than T = {T}")
    assumptions: list[Any] = []
    if "assume" in d:
        a = d["assume"]
        if not isinstance(a, list) or not all(isinstance(x, str) for x in a):
            raise doc.err("assume", "assume must be a list of expression strings")
        assumptions = [doc.string_source(x, "assume") for x in a]
    return Scenario(p.stem, str(p), "" if cca_path is None else str(cca_path),
                    "" if cca_path is None else read_source(cca_path, "CCA file"), model, T, start, periodic,
                    read_initial(doc), tuple(assumptions), model_path=str(model_path),
                    parts=read_parts(doc), periodic_all=periodic_all is not None)


def read_parts(doc: TomlDoc) -> frozenset[str]:
    """``model_parts``: the model parts assumed (default all), each name known."""
    names = SCENARIO.read(doc, doc.data, "model_parts")
    if names is None:
        return ALL_PARTS
    for name in names:
        if name not in MODEL_PARTS:
            close = difflib.get_close_matches(name, list(MODEL_PARTS), n=1)
            raise doc.err("model_parts", f"unknown model part '{name}'",
                          f"did you mean '{close[0]}'?" if close else f"use some of {', '.join(MODEL_PARTS)}")
    if len(set(names)) != len(names):
        raise doc.err("model_parts", "model_parts lists a part twice")
    return frozenset(names)


def read_initial(doc: TomlDoc) -> Initial:
    """The ``[initial]`` table (the same keys, and meaning, in queries and proofs)."""
    it = doc.data.get("initial")
    if it is None:
        return Initial()
    with doc.table("initial"):
        it = read_table(doc, "initial", it, "[initial] holds beliefs_consistent and no_initial_loss")
        INITIAL.check(doc, it)
        return Initial(**{k: INITIAL.read(doc, it, k) for k in it})


def load_query(path: str | Path, lib: Library, objectives: ObjectiveLibrary, limits: Limits = DEFAULT_LIMITS) -> Query:
    p = Path(path)
    doc = TomlDoc(p)
    d = doc.data
    QUERY.check(doc, d, "query")
    scenario = read_scenario(doc, lib, limits)
    objs = [read_objective(doc, i, o, objectives) for i, o in enumerate(_objective_tables(doc))]
    exists = tuple(doc.string_source(x, "exists") for x in QUERY.read(doc, d, "exists", []))
    if objs and exists:
        raise doc.err("exists", "a query asks either for all traces ([[objective]]) or whether one exists (exists), "
                      "not both", "move the question into a second query file")
    if not objs and not exists:
        raise SpecError(Loc(str(p), 1, 1), "query has no [[objective]] and no exists",
                        "add an objective to check for every trace, or exists = \"<formula>\" to ask for a witness")
    return Query(
        scenario, tuple(objs), description=QUERY.read(doc, d, "description", ""), expect=_expect(doc, bool(exists)),
        holes=_holes(doc), expect_solutions=QUERY.read(doc, d, "expect_solutions"),
        thesis_solutions=QUERY.read(doc, d, "thesis_solutions"), library=objectives, exists=exists)


def _expect(doc: TomlDoc, exists: bool) -> str | None:
    """``expect`` in the question's words: proved / counterexample for objectives,
    witness / no_witness for exists (unknown for both)."""
    expect: str | None = QUERY.read(doc, doc.data, "expect")
    words = ("witness", "no_witness", "unknown") if exists else ("proved", "counterexample", "unknown")
    if expect is not None and expect not in words:
        raise doc.err("expect", f"expect = \"{expect}\" does not answer {'an exists' if exists else 'this'} question",
                      f"use one of {', '.join(words)}")
    return expect


def _objective_tables(doc: TomlDoc) -> list[Any]:
    objs = doc.data.get("objective", [])
    if not isinstance(objs, list):
        raise doc.err("objective", "write objectives as [[objective]] tables")
    return objs


def read_objective(doc: TomlDoc, i: int, o: Any, lib: ObjectiveLibrary) -> Objective:
    """The i-th ``[[objective]]``: a library kind with its parameters, or ``expr``."""
    with doc.table("objective", i):
        if not isinstance(o, dict) or "kind" not in o:
            raise doc.err("objective", f"objective #{i + 1} needs a kind")
        kind = o["kind"]
        allowed = ["expr", *lib.kinds]
        if not isinstance(kind, str) or kind not in allowed:
            close = difflib.get_close_matches(str(kind), allowed, n=1)
            raise doc.err("kind", f"unknown objective kind '{kind}'",
                          f"did you mean '{close[0]}'?" if close else f"use one of {', '.join(allowed)}")
        label = OBJECTIVE.read(doc, o, "label", kind)
        loc = doc.key_loc("kind")
        if kind == "expr":
            OBJECTIVE.check(doc, o, "objective 'expr'")
            if "expr" not in o:
                raise doc.err("kind", "objective 'expr' needs 'expr'", "write expr = \"<formula>\"")
            return Objective(kind, {}, loc, doc.string_source(OBJECTIVE.read(doc, o, "expr"), "expr"), label)
        spec = lib.kinds[kind]
        check_keys(doc, o, {"kind", "label", *spec.params}, f"objective '{kind}'")
        params: dict[str, ParamValue] = {k: param_value(doc, k, v, spec.params[k])
                                         for k, v in o.items() if k not in ("kind", "label")}
        for name, ps in spec.params.items():
            if ps.default is None and name not in params:
                raise doc.err("kind", f"objective '{kind}' needs '{name}'", ps.doc or None)
        return Objective(kind, params, loc, None, label)


def _holes(doc: TomlDoc) -> dict[str, tuple[Fraction, ...]]:
    d = doc.data
    holes: dict[str, tuple[Fraction, ...]] = {}
    if "holes" not in d:
        return holes
    for hname, vals in read_table(doc, "holes", d["holes"], "holes must be a table: name = [values]").items():
        if not isinstance(vals, list) or not vals:
            raise doc.err(hname, f"hole '{hname}' needs a non-empty list of values, e.g. [-1, 0, 1]")
        dom = tuple(read_frac(doc, hname, v) for v in vals)
        if len(set(dom)) != len(dom):
            raise doc.err(hname, f"hole '{hname}' lists a value twice")
        holes[str(hname)] = dom
    return holes
