"""What the steps of one CEGIS run give (:mod:`ccmatic.engine.cegis`), as values the
type checker knows, not strings.

* the generator's step: a candidate, :data:`GeneratorEnd.EXHAUSTED` (no candidate is
  left: the search is complete) or :data:`GeneratorEnd.GAVE_UP` (the generator's
  check was interrupted);
* a candidate's check (:data:`CheckResult`): proved by the verifier (a solution once
  re-verified), a counterexample (learned), unknown, or :data:`CandidateOutcome.STOP`
  (interrupted: nothing recorded, so a later run checks it again);
* the loop's step (:data:`StepResult`): a solution, a counterexample, unknown, or why the
  run must end (:data:`CandidateOutcome.DEADLINE`: the budget ran out during the check;
  :data:`CandidateOutcome.STOP`).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal


class GeneratorEnd(Enum):
    EXHAUSTED = "exhausted"
    GAVE_UP = "gave up"


class CandidateOutcome(Enum):
    PROVED = "proved"
    SOLUTION = "solution"
    COUNTEREXAMPLE = "counterexample"
    UNKNOWN = "unknown"
    DEADLINE = "deadline"
    STOP = "stop"


#: a candidate's check by the verifier
CheckResult = Literal[CandidateOutcome.PROVED, CandidateOutcome.COUNTEREXAMPLE, CandidateOutcome.UNKNOWN, CandidateOutcome.STOP]
#: one step of the loop
StepResult = Literal[CandidateOutcome.SOLUTION, CandidateOutcome.COUNTEREXAMPLE, CandidateOutcome.UNKNOWN, CandidateOutcome.DEADLINE, CandidateOutcome.STOP]
