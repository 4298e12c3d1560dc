"""Run options (defaults here < command line).

``timeout_s`` is the limit of one solver check in every command; a whole run's
limit is a separate ``budget_s`` (``--budget``), where a command has one.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the default limit of one solver check, in seconds (``--timeout``)
CHECK_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class RunOptions:
    timeout_s: float | None = CHECK_TIMEOUT_S  # one solver check
    seed: int = 0


@dataclass(frozen=True)
class SynthOptions:
    run: RunOptions = RunOptions()
    budget_s: float | None = None  # the whole search
    record_counterexamples: bool = True  # keep their observations (needed for checkpoints)
