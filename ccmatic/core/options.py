"""Run options (defaults here < command line).

``timeout_s`` is the limit of one solver check in every command; a whole run's
limit is a separate ``budget_s`` (``--budget``), where a command has one.
``dump_smt2`` is a folder where the check that decides a verdict is written as an
SMT-LIB 2 file (``--dump-smt2``; :mod:`ccmatic.engine.smt2`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

#: the default limit of one solver check, in seconds (``--timeout``)
CHECK_TIMEOUT_S = 300.0
#: ``ccmatic verify``'s default: no limit.  One question is one or two checks, and at
#: long horizons a check the solver decides can take longer than 300 s (BBR's
#: low-utilization question at T = 30: CCAC's own code answers after 672 s); the
#: command shows that it is still checking, and Ctrl-C stops it (docs/performance.md)
VERIFY_TIMEOUT_S: float | None = None


@dataclass(frozen=True)
class RunOptions:
    timeout_s: float | None = CHECK_TIMEOUT_S  # one solver check
    seed: int = 0
    dump_smt2: Path | None = None  # folder for <query>.smt2 (None: nothing written)
    # verify: race the deciding check with a second solver on another core, whose
    # proof (unsat) ends it (engine/rival.py; ``verify --jobs 2``)
    rival: bool = False


VerifierMode = Literal["incremental", "fresh"]
VERIFIER_MODES: tuple[VerifierMode, ...] = ("incremental", "fresh")


@dataclass(frozen=True)
class SynthOptions:
    run: RunOptions = RunOptions()
    budget_s: float | None = None  # the whole search
    record_counterexamples: bool = True  # keep their observations (needed for checkpoints)
    # how a candidate is checked (``--verifier``): "incremental", under assumptions in
    # the session that holds the network and the whole template (learned facts carry
    # over; an undecided check is posed again, fresh), or "fresh", in a new fork of the
    # network (Z3's whole-formula preprocessing, no carried state)
    verifier: VerifierMode = "incremental"
    slice_s: float | None = None  # incremental: seconds before a check is handed to a fresh fork
    # re-verify solutions in a worker process on another core while the search goes on
    # (``--reverify``); sequential runs only (parallel synthesis uses every core already)
    background_reverify: bool = False
