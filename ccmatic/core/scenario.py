"""The Scenario: what a query or a proof poses, shared by both.

A scenario is a CCA on a network model for T steps, with initial conditions and
assumptions.  Queries add objectives (:class:`Query`), proofs add lemmas over the
same scenario (:class:`ccmatic.core.proof.Proof`); :func:`ccmatic.encode.problem.build`
turns any scenario into constraints, so ``[initial]`` means the same in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ccmatic.core.errors import Loc
from ccmatic.core.model import ALL_PARTS, ModelConfig
from ccmatic.core.objectives import ObjectiveLibrary, ParamValue
from ccmatic.core.results import Question
from ccmatic.core.source import Source


@dataclass(frozen=True)
class Initial:
    """``[initial]``: conditions of one step, assumed at the scenario's first step
    (``start``; a proof checks that they hold again at its last step).

    * ``beliefs_consistent``: for every flow and every belief family the scenario
      uses, the beliefs bound the link: MSS ≤ c_lo ≤ C ≤ c_hi (Eq. 4.1.2), and
      c_lo_lambda ≤ C, C·R + β ≥ c_lo_lambda·(R + D) (+ 1 with the Table 4.1 tool's
      divisor), q_hi ≥ the bottleneck queue (§4.2.2.1, Eq. 4.2.3);
    * ``no_initial_loss``: no undetected loss, L = Ld for every flow (at step 0 both
      are 0: the curves are shift invariant).
    """

    beliefs_consistent: bool = False
    no_initial_loss: bool = False


@dataclass(frozen=True)
class Scenario:
    """A CCA (file path, and its text so that remote workers need no files) on a
    model for T steps.  ``start`` is the step at which the initial conditions are
    assumed (proofs read a period's state after the CCA's warm-up).  ``cca_path``
    "" is no CCA (any sender); ``parts`` are the model parts assumed
    (:data:`ccmatic.core.model.MODEL_PARTS`)."""

    name: str
    path: str
    cca_path: str
    cca_text: str
    model: ModelConfig
    T: int
    start: int = 0
    periodic: int | None = None
    initial: Initial = field(default_factory=Initial)
    assumptions: tuple[Source, ...] = ()
    model_path: str = ""  # the model file it was read from ("": built in code)
    # periodic's form: CCAC's make_periodic (False: the state at the last step equals
    # the first step's) or step T − K + k equals step k's, k < K (True: periodic_all)
    periodic_all: bool = False
    parts: frozenset[str] = ALL_PARTS

    @property
    def has_cca(self) -> bool:
        return self.cca_path != ""

    @property
    def cca_name(self) -> str:
        """The CCA file's name, or "none (any sender)"."""
        return self.cca_path.split("/")[-1] if self.has_cca else "none (any sender)"


class OnScenario:
    """The scenario's name, file, horizon and model, for what is built on one (a
    query, a proof)."""

    scenario: Scenario

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def path(self) -> str:
        return self.scenario.path

    @property
    def T(self) -> int:
        return self.scenario.T

    @property
    def start(self) -> int:
        return self.scenario.start

    @property
    def model(self) -> ModelConfig:
        return self.scenario.model


@dataclass(frozen=True)
class Objective:
    """One conjunct of a query's property: a kind from the objective library with its
    parameters, or ``kind = "expr"`` with a formula of the user's own."""

    kind: str
    params: dict[str, ParamValue]
    loc: Loc
    source: Source | None = None  # kind == "expr"
    label: str = ""


@dataclass(frozen=True)
class Query(OnScenario):
    """A scenario and the property its objectives state (their conjunction), or
    (``exists``) the question whether some trace meets every condition listed; it
    is checked as the property "no trace meets them", so its verdict is that
    property's (counterexample: a witness; proved: no witness)."""

    scenario: Scenario
    objectives: tuple[Objective, ...]
    description: str = ""
    expect: str | None = None
    holes: dict[str, tuple[Fraction, ...]] = field(default_factory=dict)
    expect_solutions: int | None = None
    thesis_solutions: int | None = None
    library: ObjectiveLibrary | None = None  # where the objectives' kinds come from
    exists: tuple[Source, ...] = ()

    @property
    def question(self) -> Question:
        return "exists" if self.exists else "forall"
