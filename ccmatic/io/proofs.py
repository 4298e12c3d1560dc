"""Proof files (thesis §4.1.2, Appendix B.4; docs/proofs.md): the loader, with
errors that point at file:line:col.

A proof is a scenario (``cca``, ``model``, ``T``, ``start``, ``[initial]``,
``assume``: the same keys, read by the same function, as a query's) and

* ``[constants]``: named rationals, each with a search range and the direction in
  which the lemmas get easier (``easier = "up"`` or ``"down"``);
* ``[define]``: named formulas; a key written ``"name(t)"`` takes one step argument;
* ``invariant``: conditions of one step t, assumed at ``start`` in every lemma (with
  ``[initial]``) and checked to hold again at the last step (so lemmas chain);
* ``[states]``: the transition system's states, formulas of one step ``t``;
* ``[[progress]]``: progress terms (at least one improves ∧ none degrades), from
  bounded measures;
* ``[[lemma]]``: ``premise ⇒ conclusion`` over the T-step trace;
* ``[transitions.<state>]``: which lemmas (``by``) take the state to which others
  (``to``), and its self-loop (``loop``); ``steady`` names the steady state.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.limits import DEFAULT_LIMITS, Limits
from ccmatic.core.proof import (
    Constant,
    Lemma,
    Progress,
    ProgressCase,
    Proof,
    Transition,
)
from ccmatic.core.scenario import Scenario
from ccmatic.core.source import Definition, Source
from ccmatic.core.units import BYTES, RATE, SECONDS, Unit
from ccmatic.io.library import Library
from ccmatic.io.objectives import check_name, read_definitions
from ccmatic.io.queries import read_scenario
from ccmatic.io.schema import CONSTANT, LEMMA, PROGRESS, PROOF, TRANSITION
from ccmatic.io.toml import TomlDoc, read_frac, read_str, read_table

UNITS: dict[str, Unit | None] = {"1": None, "bytes": BYTES, "seconds": SECONDS, "rate": RATE}


def load_proof(path: str | Path, lib: Library, limits: Limits = DEFAULT_LIMITS) -> Proof:
    p = Path(path)
    doc = TomlDoc(p)
    d = doc.data
    PROOF.check(doc, d, "proof")
    scenario = read_scenario(doc, lib, limits)
    if not scenario.has_cca:
        raise doc.err("cca", "a proof is about a CCA", "name one: cca = \"<name or path>\"") if "cca" in d else \
            SpecError(Loc(str(p), 1, 1), "proof file has no 'cca'", "name the CCA: cca = \"<name or path>\"")
    constants = _constants(doc)
    with doc.table("define"):
        defines = read_definitions(doc, read_table(doc, "define", d.get("define", {}),
                                                   "define = { name = \"formula\" }"), set(constants))
    states = _states(doc, set(constants) | set(defines))
    progress = _progress(doc, set(constants) | set(defines) | set(states))
    lemmas = _lemmas(doc)
    steady = PROOF.read(doc, d, "steady")
    if steady not in states:
        raise doc.err("steady", f"steady state '{steady}' is not one of the states", f"states: {', '.join(states)}")
    objectives = PROOF.read(doc, d, "objectives")
    if objectives is not None and (objectives not in defines or defines[objectives].params):
        raise doc.err("objectives", f"objectives = '{objectives}' must name a definition without arguments")
    transitions = _transitions(doc, states, progress, {lem.name for lem in lemmas}, defines, objectives)
    expect = PROOF.read(doc, d, "expect")
    if expect in ("witness", "no_witness"):
        raise doc.err("expect", f"expect = \"{expect}\" answers an exists query, not a proof",
                      "use proved, counterexample or unknown")
    invariants = tuple(doc.string_source(x, "invariant") for x in PROOF.read(doc, d, "invariant", []))
    return Proof(scenario, PROOF.read(doc, d, "description", ""), invariants, constants, defines, states, progress,
                 tuple(lemmas), transitions, steady, objectives, expect, together=PROOF.read(doc, d, "together", False))


def load_proof_as_asked(lib: Library, name: str, limits: Limits, values: dict[str, Fraction],
                        horizon: Callable[[Scenario, int], int]) -> Proof:
    """The proof ``name`` (a library name or a path) as a command asks it: with its
    constants' ``values`` (--set) and the horizon ``horizon(scenario, start)`` picks
    (the file's T, or --T)."""
    proof = load_proof(lib.require("proofs", name), lib, limits).with_values(values)
    T = horizon(proof.scenario, proof.start)
    return proof.with_horizon(T) if T != proof.T else proof


def _constants(doc: TomlDoc) -> dict[str, Constant]:
    out: dict[str, Constant] = {}
    ct = read_table(doc, "constants", doc.data.get("constants", {}),
                    "constants = { name = { value = ..., range = [lo, hi], easier = \"up\" } }")
    with doc.table("constants"):
        for name, spec in ct.items():
            check_name(doc, name, name, "constant")
            out[name] = _constant(doc, name, spec if isinstance(spec, dict) else {"value": spec})
    return out


def _constant(doc: TomlDoc, name: str, spec: dict[str, Any]) -> Constant:
    CONSTANT.check(doc, spec, f"constant '{name}'", at=doc.key_loc(name))
    lo = hi = None
    if "range" in spec:
        r = spec["range"]
        if not isinstance(r, list) or len(r) != 2:
            raise doc.err(name, f"range of '{name}' must be [lo, hi]")
        lo, hi = read_frac(doc, name, r[0]), read_frac(doc, name, r[1])
        if not lo < hi:
            raise doc.err(name, f"range of '{name}' must have lo < hi, got [{lo}, {hi}]")
    easier = CONSTANT.read(doc, spec, "easier", at=doc.key_loc(name))
    unit_s = CONSTANT.read(doc, spec, "unit", "1", at=doc.key_loc(name))
    return Constant(name, read_frac(doc, name, spec["value"]), lo, hi, easier, UNITS[unit_s], doc.key_loc(name))


def _states(doc: TomlDoc, taken: set[str]) -> dict[str, Definition]:
    st = doc.data["states"]
    if not isinstance(st, dict) or not st:
        raise doc.err("states", "states must be a table: name = \"formula over step t\"")
    out: dict[str, Definition] = {}
    with doc.table("states"):
        for name, body in st.items():
            check_name(doc, name, name, "state")
            if name in taken:
                raise doc.err(name, f"state '{name}' clashes with a constant or definition")
            out[name] = Definition(name, ("t",), doc.string_source(read_str(doc, name, body), name))
    return out


def _progress(doc: TomlDoc, taken: set[str]) -> dict[str, Progress]:
    pl = doc.data.get("progress", [])
    if not isinstance(pl, list):
        raise doc.err("progress", "write progress terms as [[progress]] tables")
    cases: dict[str, list[ProgressCase]] = {}
    for i, pt in enumerate(pl):
        with doc.table("progress", i):
            name, case = _progress_case(doc, i, pt, taken)
            cases.setdefault(name, []).append(case)
    for name, cs in cases.items():
        _same_measures(name, cs)
    return {k: Progress(k, tuple(v)) for k, v in cases.items()}


def _progress_case(doc: TomlDoc, i: int, pt: Any, taken: set[str]) -> tuple[str, ProgressCase]:
    if not isinstance(pt, dict) or "name" not in pt:
        raise doc.err("progress", f"progress #{i + 1} needs a name")
    PROGRESS.check(doc, pt, at=doc.key_loc("name"))
    name = PROGRESS.read(doc, pt, "name")
    check_name(doc, "name", name, "progress")
    if name in taken:
        raise doc.err("name", f"progress '{name}' clashes with a constant, definition or state")
    measures = tuple(doc.string_source(x, "measures") for x in PROGRESS.read(doc, pt, "measures", []))
    keep = tuple(doc.string_source(x, "keep") for x in PROGRESS.read(doc, pt, "keep", []))
    if not measures:
        raise doc.err("name", f"progress '{name}' has no measures",
                      "list each measure with the bound it improves towards: "
                      "measures = [\"c_lo[t] <= C\", \"c_hi[t] >= C\"]")
    if ("factor" in pt) == ("step" in pt):
        raise doc.err("name", f"progress '{name}' needs exactly one of factor (×, > 1) or step (+, > 0)")
    factor = doc.string_source(str(pt["factor"]), "factor") if "factor" in pt else None
    step = doc.string_source(str(pt["step"]), "step") if "step" in pt else None
    when = doc.string_source(PROGRESS.read(doc, pt, "when"), "when") if "when" in pt else None
    order = PROGRESS.read(doc, pt, "order", "any")
    return name, ProgressCase(when, measures, keep, factor, step, doc.key_loc("name"), order == "lexicographic")


def _measure_texts(case: ProgressCase) -> list[str]:
    """A case's measures in the order written, spaces removed (for comparing cases)."""
    return [m.text.replace(" ", "") for m in case.measures]


def _same_measures(name: str, cases: list[ProgressCase]) -> None:
    """Well-foundedness: a period may use any case, so every case must measure the
    same quantities (and each case keeps all of them from degrading)."""
    ranked = _measure_texts(cases[0])
    for case in cases[1:]:
        texts = _measure_texts(case)
        if sorted(texts) != sorted(ranked):
            raise SpecError(case.loc, f"the cases of progress '{name}' measure different quantities",
                            "give every case the same measures (they may differ in when, factor, step, keep)")
        if case.lexicographic != cases[0].lexicographic or (case.lexicographic and texts != ranked):
            raise SpecError(case.loc, f"the cases of progress '{name}' rank their measures differently",
                            "give every case the same order, and with order = \"lexicographic\" the "
                            "measures in the same sequence")


def _lemmas(doc: TomlDoc) -> list[Lemma]:
    ll = doc.data["lemma"]
    if not isinstance(ll, list) or not ll:
        raise doc.err("lemma", "write lemmas as [[lemma]] tables with name, premise and conclusion")
    out: list[Lemma] = []
    for i, lt in enumerate(ll):
        with doc.table("lemma", i):
            if not isinstance(lt, dict):
                raise doc.err("lemma", "a [[lemma]] must be a table")
            LEMMA.check(doc, lt, f"lemma #{i + 1}", at=doc.key_loc("lemma"))
            name = LEMMA.read(doc, lt, "name")
            if any(lem.name == name for lem in out):
                raise doc.err("name", f"lemma '{name}' is defined twice")
            if "premise" in lt:
                premise = doc.string_source(LEMMA.read(doc, lt, "premise"), "premise")
            else:  # no premise: the lemma holds from every state
                premise = Source(str(doc.path), "True", doc.key_loc("name").line, 1)
            conclusion = doc.string_source(LEMMA.read(doc, lt, "conclusion"), "conclusion")
            out.append(Lemma(name, premise, conclusion, LEMMA.read(doc, lt, "description", ""), doc.key_loc("name")))
    return out


def _transitions(doc: TomlDoc, states: dict[str, Definition], progress: dict[str, Progress], lemmas: set[str],
                 defines: dict[str, Definition], objectives: str | None) -> dict[str, Transition]:
    out: dict[str, Transition] = {}
    tt = read_table(doc, "transitions", doc.data.get("transitions", {}), "write [transitions.<state>] tables")
    for sname, spec in tt.items():
        with doc.table(f"transitions.{sname}"):
            out[sname] = _transition(doc, sname, spec, states, progress, lemmas, defines, objectives)
    for sname in states:
        if sname not in out:
            raise doc.err("states", f"state '{sname}' has no [transitions.{sname}]",
                          "every state needs its transitions, and the lemmas that justify them")
    return out


def _transition(doc: TomlDoc, sname: str, spec: Any, states: dict[str, Definition], progress: dict[str, Progress],
                lemmas: set[str], defines: dict[str, Definition], objectives: str | None) -> Transition:
    key = f"transitions.{sname}"
    if sname not in states:
        raise doc.err(key, f"transition from unknown state '{sname}'", f"states: {', '.join(states)}")
    if not isinstance(spec, dict):
        raise doc.err(key, "a transition must be a table with to, loop and by")
    TRANSITION.check(doc, spec, f"[{key}]", at=doc.key_loc(key))
    to = tuple(TRANSITION.read(doc, spec, "to", []))
    for y in to:
        if y not in states:
            raise doc.err("to", f"unknown state '{y}' in to", f"states: {', '.join(states)}")
        if y == sname:
            raise doc.err("to", f"'{sname}' lists itself in to", "a state's self-loop goes in loop")
    loop = tuple(TRANSITION.read(doc, spec, "loop", []))
    for name in loop:
        if name not in progress and name != objectives:
            raise doc.err("loop", f"loop entry '{name}' is neither a [[progress]] term nor the objectives",
                          "a self-loop needs progress (at least one improves ∧ none degrades)")
    by = tuple(TRANSITION.read(doc, spec, "by", []))
    for name in by:
        if name not in lemmas:
            raise doc.err("by", f"unknown lemma '{name}' in by", f"lemmas: {', '.join(sorted(lemmas))}")
    if not by:
        raise doc.err(key, f"transitions of '{sname}' name no lemma", "by = [\"lemma\", ...]: the lemmas that justify them")
    guarantees = tuple(TRANSITION.read(doc, spec, "guarantees", []))
    for name in guarantees:
        if name not in defines or defines[name].params:
            raise doc.err("guarantees", f"'{name}' must name a definition without arguments")
    return Transition(sname, to, loop, by, guarantees, doc.key_loc(key))
