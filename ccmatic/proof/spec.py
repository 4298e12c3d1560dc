"""Proof files (thesis §4.1.2, Appendix B.4; DESIGN.md § Proofs): typed contents and
the TOML loader, with errors that point at file:line:col.

A proof names a CCA, a model and a horizon T, then declares

* ``[constants]``: named rationals, each with a search range and the direction in
  which the lemmas get easier (``easier = "up"`` or ``"down"``);
* ``[define]``: named formulas; a key written ``"name(t)"`` takes one step argument;
* ``start`` (default 0): the step at which a period's state is read, after the
  CCA's warm-up (steps before it are the free past); periods chain from the last
  step of one to the ``start`` step of the next;
* ``[initial]`` and ``invariant``: conditions of one step t, assumed at ``start``
  in every lemma and checked to hold again at the last step (so lemmas chain);
* ``[states]``: the transition system's states, formulas of one step ``t``
  (``I(0)`` is "in state I at the first step", ``I(-1)`` at the last);
* ``[[progress]]``: progress terms of the monotone form *at least one improves ∧
  none degrades*, built by the checker from bounded measures (never written by
  hand): ``"c_lo[t] <= C"`` improves upwards towards C, ``"c_hi[t] >= C"`` downwards;
  ``order = "lexicographic"`` ranks the measures (none ranked before the improving
  one degrades);
* ``[[lemma]]``: ``premise ⇒ conclusion`` over the T-step trace;
* ``[transitions.<state>]``: which lemmas (``by``) take the state to which others
  (``to``), and its self-loop (``loop``: progress terms, or the steady-state
  objectives); ``steady`` names the steady state.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from ccmatic.config import Initial, ModelConfig
from ccmatic.errors import Loc, SpecError
from ccmatic.lang.source import Source
from ccmatic.lang.units import BYTES, RATE, SECONDS, Unit
from ccmatic.library import Library
from ccmatic.loader import (
    TomlDoc,
    _check_keys,
    _frac,
    _int,
    _str,
    cca_and_model,
    parse_initial,
)

Direction = Literal["up", "down"]
UNITS: dict[str, Unit | None] = {"1": None, "bytes": BYTES, "seconds": SECONDS, "rate": RATE}


@dataclass(frozen=True)
class Constant:
    """A named rational.  ``easier``: the lemmas that use it get easier (weaker) as
    it moves this way, e.g. a utilization bound is easier "down"."""

    name: str
    value: Fraction
    lo: Fraction | None
    hi: Fraction | None
    easier: Direction | None
    unit: Unit | None
    loc: Loc


@dataclass(frozen=True)
class Definition:
    name: str
    params: tuple[str, ...]  # () or ("t",)
    source: Source


@dataclass(frozen=True)
class ProgressCase:
    """When ``when`` holds at the first step, at least one measure improves (by the
    factor, or by the step) and none degrades.  A measure is written with the bound
    it improves towards: ``"q <= B"`` (q improves upwards, never beyond B) or
    ``"q >= b"`` (downwards), q and the bound formulas of step t.

    With ``lexicographic``, the measures are ranked in the order written: some
    measure improves and none ranked before it degrades (those ranked after it may
    do anything).  Each measure is bounded and improves by a fixed factor or step,
    so either order is well-founded."""

    when: Source | None
    measures: tuple[Source, ...]
    keep: tuple[Source, ...]  # must not degrade, but do not count as progress
    factor: Source | None
    step: Source | None
    loc: Loc
    lexicographic: bool = False


@dataclass(frozen=True)
class Progress:
    name: str
    cases: tuple[ProgressCase, ...]


@dataclass(frozen=True)
class Lemma:
    name: str
    premise: Source
    conclusion: Source
    description: str
    loc: Loc


@dataclass(frozen=True)
class Transition:
    state: str
    to: tuple[str, ...]
    loop: tuple[str, ...]
    by: tuple[str, ...]
    guarantees: tuple[str, ...]
    loc: Loc


@dataclass(frozen=True)
class Proof:
    path: str
    name: str
    description: str
    cca_path: str
    model: ModelConfig
    T: int
    periodic: int | None
    initial: Initial
    invariants: tuple[Source, ...]  # formulas of step t: assumed at 0, checked at T - 1
    constants: dict[str, Constant]
    defines: dict[str, Definition]
    states: dict[str, Definition]
    progress: dict[str, Progress]
    lemmas: tuple[Lemma, ...]
    transitions: dict[str, Transition]
    steady: str
    objectives: str | None = None
    start: int = 0  # the step where a period's state is read (after a CCA's warm-up)
    expect: str | None = None
    overrides: dict[str, Fraction] = field(default_factory=dict)

    def lemma(self, name: str) -> Lemma:
        for lem in self.lemmas:
            if lem.name == name:
                return lem
        raise SpecError(Loc(self.path), f"no lemma named '{name}'",
                        f"lemmas: {', '.join(lem.name for lem in self.lemmas)}")

    def values(self) -> dict[str, Fraction]:
        """Constant values: the file's, with command-line overrides."""
        out = {k: c.value for k, c in self.constants.items()}
        out.update(self.overrides)
        return out

    def with_values(self, overrides: dict[str, Fraction]) -> Proof:
        for k in overrides:
            if k not in self.constants:
                raise SpecError(Loc(self.path), f"no constant named '{k}'",
                                f"constants: {', '.join(self.constants) or '(none)'}")
        return replace(self, overrides={**self.overrides, **overrides})


PROOF_KEYS = {"description", "cca", "model", "T", "start", "periodic", "model_params", "initial", "invariant", "constants",
              "define", "states", "progress", "lemma", "transitions", "steady", "objectives", "expect"}
RESERVED = {"C", "R", "D", "T", "MSS", "C0", "buffer", "t", "min", "max", "sum", "all", "any", "abs",
            "bytes", "seconds", "rate", "choose", "range", "True", "False"}


def _name_ok(doc: TomlDoc, key: str, name: str, what: str) -> None:
    if not name.isidentifier():
        raise doc.err(key, f"{what} name '{name}' is not an identifier", "use letters, digits and _")
    if name in RESERVED:
        raise doc.err(key, f"{what} name '{name}' is reserved", "pick another name")


def _str_list(doc: TomlDoc, key: str, v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise doc.err(key, f"'{key}' must be a string or a list of strings")
    return list(v)


def _loc(doc: TomlDoc, key: str) -> Loc:
    return doc.key_loc(key)


def _measure_texts(case: ProgressCase) -> list[str]:
    """A case's measures in the order written, spaces removed (for comparing cases)."""
    return [m.text.replace(" ", "") for m in case.measures]


def load_proof(path: str | Path, lib: Library) -> Proof:
    p = Path(path)
    doc = TomlDoc(p)
    d = doc.data
    _check_keys(doc, d, PROOF_KEYS, "proof")
    for req in ("cca", "model", "T", "lemma", "states", "steady"):
        if req not in d:
            raise SpecError(Loc(str(p), 1, 1), f"proof has no '{req}'",
                            "a proof names cca, model, T, [states], steady and at least one [[lemma]]")
    cca_path, model = cca_and_model(doc, lib)
    T = _int(doc, "T", d["T"], 2)
    start = _int(doc, "start", d["start"], 0) if "start" in d else 0
    if start >= T - 1:
        raise doc.err("start", f"start = {start} leaves no step before the last one (T = {T})")
    periodic = _int(doc, "periodic", d["periodic"], 1) if "periodic" in d else None
    init = parse_initial(doc)
    invariants = tuple(doc.string_source(x, "invariant")
                       for x in _str_list(doc, "invariant", d.get("invariant", [])))

    constants: dict[str, Constant] = {}
    ct = d.get("constants", {})
    if not isinstance(ct, dict):
        raise doc.err("constants", "constants must be a table: name = { value = ..., range = [lo, hi], easier = \"up\" }")
    with doc.table("constants"):
        for name, spec in ct.items():
            _name_ok(doc, name, name, "constant")
            if not isinstance(spec, dict):
                spec = {"value": spec}
            _check_keys(doc, spec, {"value", "range", "easier", "unit"}, f"constant '{name}'")
            if "value" not in spec:
                raise doc.err(name, f"constant '{name}' has no value")
            value = _frac(doc, name, spec["value"])
            lo = hi = None
            if "range" in spec:
                r = spec["range"]
                if not isinstance(r, list) or len(r) != 2:
                    raise doc.err(name, f"range of '{name}' must be [lo, hi]")
                lo, hi = _frac(doc, name, r[0]), _frac(doc, name, r[1])
                if not lo < hi:
                    raise doc.err(name, f"range of '{name}' must have lo < hi, got [{lo}, {hi}]")
            easier = spec.get("easier")
            if easier is not None and easier not in ("up", "down"):
                raise doc.err(name, f"easier must be \"up\" or \"down\", not {easier!r}",
                              "the direction in which the lemmas using it get weaker")
            unit_s = spec.get("unit", "1")
            if unit_s not in UNITS:
                raise doc.err(name, f"unknown unit {unit_s!r}", f"use one of {', '.join(UNITS)}")
            constants[name] = Constant(name, value, lo, hi, easier, UNITS[unit_s], doc.key_loc(name))

    defines: dict[str, Definition] = {}
    dt = d.get("define", {})
    if not isinstance(dt, dict):
        raise doc.err("define", "define must be a table: name = \"formula\" or \"name(t)\" = \"formula\"")
    with doc.table("define"):
        for key, body in dt.items():
            name, params = _signature(doc, key)
            _name_ok(doc, key, name, "definition")
            if name in constants or name in defines:
                raise doc.err(key, f"'{name}' is defined twice")
            defines[name] = Definition(name, params, doc.string_source(_str(doc, key, body), key))

    states: dict[str, Definition] = {}
    st = d["states"]
    if not isinstance(st, dict) or not st:
        raise doc.err("states", "states must be a table: name = \"formula over step t\"")
    with doc.table("states"):
        for name, body in st.items():
            _name_ok(doc, name, name, "state")
            if name in constants or name in defines:
                raise doc.err(name, f"state '{name}' clashes with a constant or definition")
            states[name] = Definition(name, ("t",), doc.string_source(_str(doc, name, body), name))

    progress: dict[str, list[ProgressCase]] = {}
    pl = d.get("progress", [])
    if not isinstance(pl, list):
        raise doc.err("progress", "write progress terms as [[progress]] tables")
    for i, pt in enumerate(pl):
        with doc.table("progress", i):
            if not isinstance(pt, dict) or "name" not in pt:
                raise doc.err("progress", f"progress #{i + 1} needs a name")
            _check_keys(doc, pt, {"name", "when", "measures", "keep", "factor", "step", "order"}, "[[progress]]")
            name = _str(doc, "name", pt["name"])
            _name_ok(doc, "name", name, "progress")
            if name in constants or name in defines or name in states:
                raise doc.err("name", f"progress '{name}' clashes with a constant, definition or state")
            measures = tuple(doc.string_source(x, "measures")
                             for x in _str_list(doc, "measures", pt.get("measures", [])))
            keep = tuple(doc.string_source(x, "keep") for x in _str_list(doc, "keep", pt.get("keep", [])))
            if not measures:
                raise doc.err("name", f"progress '{name}' has no measures",
                              "list each measure with the bound it improves towards: "
                              "measures = [\"c_lo[t] <= C\", \"c_hi[t] >= C\"]")
            if ("factor" in pt) == ("step" in pt):
                raise doc.err("name", f"progress '{name}' needs exactly one of factor (×, > 1) or step (+, > 0)")
            factor = doc.string_source(str(pt["factor"]), "factor") if "factor" in pt else None
            step = doc.string_source(str(pt["step"]), "step") if "step" in pt else None
            when = doc.string_source(_str(doc, "when", pt["when"]), "when") if "when" in pt else None
            order = _str(doc, "order", pt.get("order", "any"))
            if order not in ("any", "lexicographic"):
                raise doc.err("order", f"order must be \"any\" or \"lexicographic\", not {order!r}",
                              "\"any\": one measure improves and none degrades; \"lexicographic\": the "
                              "measures are ranked as written")
            progress.setdefault(name, []).append(ProgressCase(when, measures, keep, factor, step, doc.key_loc("name"),
                                                              order == "lexicographic"))

    for name, cases in progress.items():
        # well-foundedness: a period may use any case, so every case must measure the
        # same quantities (and each case keeps all of them from degrading)
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

    lemmas: list[Lemma] = []
    ll = d["lemma"]
    if not isinstance(ll, list) or not ll:
        raise doc.err("lemma", "write lemmas as [[lemma]] tables with name, premise and conclusion")
    seen: set[str] = set()
    for i, lt in enumerate(ll):
        with doc.table("lemma", i):
            if not isinstance(lt, dict):
                raise doc.err("lemma", "a [[lemma]] must be a table")
            _check_keys(doc, lt, {"name", "premise", "conclusion", "description"}, "[[lemma]]")
            for req in ("name", "conclusion"):
                if req not in lt:
                    raise doc.err("lemma", f"lemma #{i + 1} has no '{req}'")
            name = _str(doc, "name", lt["name"])
            if name in seen:
                raise doc.err("name", f"lemma '{name}' is defined twice")
            seen.add(name)
            if "premise" in lt:
                premise = doc.string_source(_str(doc, "premise", lt["premise"]), "premise")
            else:  # no premise: the lemma holds from every state
                premise = Source(str(p), "True", doc.key_loc("name").line, 1)
            conclusion = doc.string_source(_str(doc, "conclusion", lt["conclusion"]), "conclusion")
            lemmas.append(Lemma(name, premise, conclusion, str(lt.get("description", "")), doc.key_loc("name")))

    steady = _str(doc, "steady", d["steady"])
    if steady not in states:
        raise doc.err("steady", f"steady state '{steady}' is not one of the states",
                      f"states: {', '.join(states)}")
    objectives = _str(doc, "objectives", d["objectives"]) if "objectives" in d else None
    if objectives is not None and (objectives not in defines or defines[objectives].params):
        raise doc.err("objectives", f"objectives = '{objectives}' must name a definition without arguments")

    transitions: dict[str, Transition] = {}
    tt = d.get("transitions", {})
    if not isinstance(tt, dict):
        raise doc.err("transitions", "write transitions as [transitions.<state>] tables")
    for sname, spec in tt.items():
        with doc.table(f"transitions.{sname}"):
            if sname not in states:
                raise doc.err(f"transitions.{sname}", f"transition from unknown state '{sname}'",
                              f"states: {', '.join(states)}")
            if not isinstance(spec, dict):
                raise doc.err(f"transitions.{sname}", "a transition must be a table with to, loop and by")
            _check_keys(doc, spec, {"to", "loop", "by", "guarantees"}, f"[transitions.{sname}]")
            to = tuple(_str_list(doc, "to", spec.get("to", [])))
            for y in to:
                if y not in states:
                    raise doc.err("to", f"unknown state '{y}' in to", f"states: {', '.join(states)}")
                if y == sname:
                    raise doc.err("to", f"'{sname}' lists itself in to", "a state's self-loop goes in loop")
            loop = tuple(_str_list(doc, "loop", spec.get("loop", [])))
            for name in loop:
                if name not in progress and name != objectives:
                    raise doc.err("loop", f"loop entry '{name}' is neither a [[progress]] term nor the objectives",
                                  "a self-loop needs progress (at least one improves ∧ none degrades)")
            by = tuple(_str_list(doc, "by", spec.get("by", [])))
            for name in by:
                if name not in seen:
                    raise doc.err("by", f"unknown lemma '{name}' in by", f"lemmas: {', '.join(sorted(seen))}")
            if not by:
                raise doc.err(f"transitions.{sname}", f"transitions of '{sname}' name no lemma",
                              "by = [\"lemma\", ...]: the lemmas that justify them")
            guarantees = tuple(_str_list(doc, "guarantees", spec.get("guarantees", [])))
            for name in guarantees:
                if name not in defines or defines[name].params:
                    raise doc.err("guarantees", f"'{name}' must name a definition without arguments")
            transitions[sname] = Transition(sname, to, loop, by, guarantees, doc.key_loc(f"transitions.{sname}"))
    for sname in states:
        if sname not in transitions:
            raise doc.err("states", f"state '{sname}' has no [transitions.{sname}]",
                          "every state needs its transitions, and the lemmas that justify them")
    expect = d.get("expect")
    if expect is not None and expect not in ("proved", "failed", "unknown"):
        raise doc.err("expect", f"expect must be proved, failed or unknown, not {expect!r}")
    return Proof(
        path=str(p), name=p.stem, description=str(d.get("description", "")), cca_path=str(cca_path),
        model=model, T=T, periodic=periodic, initial=init, invariants=invariants, constants=constants,
        defines=defines, states=states,
        progress={k: Progress(k, tuple(v)) for k, v in progress.items()},
        lemmas=tuple(lemmas), transitions=transitions, steady=steady, objectives=objectives, expect=expect,
        start=start,
    )


def _signature(doc: TomlDoc, key: str) -> tuple[str, tuple[str, ...]]:
    """``name`` or ``name(t)``."""
    k = key.strip()
    if k.endswith(")") and "(" in k:
        name, args = k[:-1].split("(", 1)
        params = tuple(a.strip() for a in args.split(",") if a.strip())
        if params != ("t",):
            raise doc.err(key, f"definition '{key}' may take one step argument, written (t)")
        return name.strip(), params
    return k, ()
