"""Proofs (thesis §4.1.2, Appendix B.4): a scenario with constants, definitions,
states, progress terms, lemmas and transitions.  Loaded by
:mod:`ccmatic.io.proofs`, compiled by :mod:`ccmatic.spec.formula`, checked by
:mod:`ccmatic.engine.proof`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Literal

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.scenario import OnScenario, Scenario
from ccmatic.core.source import Definition, Source
from ccmatic.core.units import Unit

Direction = Literal["up", "down"]


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
class Proof(OnScenario):
    scenario: Scenario
    description: str
    invariants: tuple[Source, ...]  # formulas of step t: assumed at start, checked at T - 1
    constants: dict[str, Constant]
    defines: dict[str, Definition]
    states: dict[str, Definition]
    progress: dict[str, Progress]
    lemmas: tuple[Lemma, ...]
    transitions: dict[str, Transition]
    steady: str
    objectives: str | None = None
    expect: str | None = None
    overrides: dict[str, Fraction] = field(default_factory=dict)
    together: bool = False  # prove: ask every lemma in one solver question first

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

    def with_horizon(self, T: int) -> Proof:
        return replace(self, scenario=replace(self.scenario, T=T))

    def sources(self) -> list[Source]:
        """Every formula of the file (for finding what the proof reads)."""
        out: list[Source] = list(self.invariants)
        out += [d.source for d in self.defines.values()] + [d.source for d in self.states.values()]
        for lem in self.lemmas:
            out += [lem.premise, lem.conclusion]
        for p in self.progress.values():
            for c in p.cases:
                out += [s for s in (c.when, c.factor, c.step) if s is not None]
                out += list(c.measures) + list(c.keep)
        return out
