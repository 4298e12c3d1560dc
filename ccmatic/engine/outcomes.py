"""What the steps of one CEGIS run give (:mod:`ccmatic.engine.cegis`), as values the
type checker knows, not strings.

* the generator's step: a candidate, :data:`Generator.EXHAUSTED` (no candidate is
  left: the search is complete) or :data:`Generator.GAVE_UP` (the generator's
  check was interrupted);
* a candidate's check (:data:`Verdict`): proved by the verifier (a solution once
  re-verified), a counterexample (learned), unknown, or :data:`Outcome.STOP`
  (interrupted: nothing recorded, so a later run checks it again);
* the loop's step (:data:`Step`): a solution, a counterexample, unknown, or why the
  run must end (:data:`Outcome.DEADLINE`: the budget ran out during the check;
  :data:`Outcome.STOP`).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal


class Generator(Enum):
    EXHAUSTED = "exhausted"
    GAVE_UP = "gave up"


class Outcome(Enum):
    PROVED = "proved"
    SOLUTION = "solution"
    COUNTEREXAMPLE = "counterexample"
    UNKNOWN = "unknown"
    DEADLINE = "deadline"
    STOP = "stop"


#: a candidate's check by the verifier
Verdict = Literal[Outcome.PROVED, Outcome.COUNTEREXAMPLE, Outcome.UNKNOWN, Outcome.STOP]
#: one step of the loop
Step = Literal[Outcome.SOLUTION, Outcome.COUNTEREXAMPLE, Outcome.UNKNOWN, Outcome.DEADLINE, Outcome.STOP]
