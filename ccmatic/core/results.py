"""Results, in one vocabulary for text, JSON and the Python API.

A question to the solver (a verification, a lemma, a proof check, a probe of a
constant search) ends in one :data:`Verdict`: ``proved`` (no trace of T steps
violates it), ``counterexample`` (a trace that does, re-checked with exact rationals
and replayed) or ``unknown`` (the solver gave up; never counted as proved).  A
synthesis run ends in a :data:`SynthStatus`.  Numbers are exact rationals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

Verdict = Literal["proved", "counterexample", "unknown"]
VERDICTS: tuple[Verdict, ...] = ("proved", "counterexample", "unknown")
SynthStatus = Literal["complete", "incomplete", "interrupted", "timeout"]
#: what a query asks: that every trace meets its objectives (``forall``), or whether
#: some trace meets its ``exists`` conditions
Question = Literal["forall", "exists"]
#: an exists question's verdict in its own words: it is checked as the property
#: "no trace meets the conditions", so a counterexample is a witness and a proof
#: says that no witness exists
Answer = Literal["witness", "no_witness", "unknown"]
ANSWERS: dict[Verdict, Answer] = {"counterexample": "witness", "proved": "no_witness", "unknown": "unknown"}


def result_word(question: Question, verdict: Verdict) -> str:
    """The verdict in the question's words (what ``expect`` states)."""
    return verdict if question == "forall" else ANSWERS[verdict]


@dataclass
class SynthStats:
    """A synthesis run's counters and in-process phase times (seconds)."""

    iterations: int = 0
    counterexamples: int = 0
    ill_typed: int = 0
    unknown: int = 0
    generator_s: float = 0.0
    verifier_s: float = 0.0
    encode_s: float = 0.0
    reverify_s: float = 0.0
    fresh_checks: int = 0  # candidates the incremental verifier did not decide in its slice


def settled(status: SynthStatus, undecided: int) -> SynthStatus:
    """A search that ran to its end with candidates the solver could not decide (even
    posed again, fresh) is "incomplete": its solution set may miss those."""
    return "incomplete" if status == "complete" and undecided else status

#: exit codes of every command
EXIT_CODES: dict[Verdict, int] = {"proved": 0, "counterexample": 1, "unknown": 3}
EXIT_INPUT = 2
#: an internal error (a bug of ccmatic's, e.g. an exact re-evaluation that disagrees
#: with itself): never 0, 1 or 3, so no script reads it as an answer
EXIT_INTERNAL = 4

Value = Fraction | bool


@dataclass(frozen=True)
class ConcreteTrace:
    """A counterexample with exact values: ``flows[f][name][t]`` and
    ``aggregate[name][t]`` for every quantity the scenario built (names of
    :mod:`ccmatic.core.quantities`, and the CCA's state variables)."""

    T: int
    N: int
    params: dict[str, Fraction | None]
    aggregate: dict[str, list[Fraction]]
    flows: list[dict[str, list[Value]]]
    extra: dict[str, Value] = field(default_factory=dict)


#: how a proof's premises were shown to admit a trace (:mod:`ccmatic.engine.witness`)
TraceBy = Literal["steady state", "solver"]


@dataclass(frozen=True)
class Proved:
    T: int
    #: how the premises were shown to admit a trace (no vacuous proof): "steady state"
    #: (a periodic trace, re-checked exactly) or "solver", and that check's seconds
    trace_by: TraceBy = "solver"
    trace_s: float = 0.0
    verdict: Verdict = "proved"


@dataclass(frozen=True)
class Counterexample:
    trace: ConcreteTrace
    verdict: Verdict = "counterexample"


@dataclass(frozen=True)
class Unknown:
    reason: str
    verdict: Verdict = "unknown"


Outcome = Proved | Counterexample | Unknown


def _q(x: Value | None) -> Any:
    """Exact JSON form of a value: a rational as a string ("7/3")."""
    return x if x is None or isinstance(x, bool) else str(x)


def trace_to_json(tr: ConcreteTrace) -> dict[str, Any]:
    return {
        "T": tr.T, "N": tr.N,
        "params": {k: _q(v) for k, v in tr.params.items()},
        "aggregate": {k: [_q(x) for x in v] for k, v in tr.aggregate.items()},
        "flows": [{k: [_q(x) for x in v] for k, v in fl.items()} for fl in tr.flows],
    }


def trace_from_json(d: dict[str, Any]) -> ConcreteTrace:
    def f(x: Any) -> Any:
        return x if x is None or isinstance(x, bool) else Fraction(x)

    return ConcreteTrace(
        int(d["T"]), int(d["N"]),
        {k: f(v) for k, v in d["params"].items()},
        {k: [Fraction(x) for x in v] for k, v in d["aggregate"].items()},
        [{k: [f(x) for x in v] for k, v in fl.items()} for fl in d["flows"]],
    )
