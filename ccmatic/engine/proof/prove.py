"""``prove``: every lemma (as independent tasks, or with ``together = true`` as one
question first), the coverage of the states, the stitching of the lemmas into the
declared transitions, the progress terms, and the transition graph (thesis §4.1.2,
B.4)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.options import RunOptions
from ccmatic.core.proof import Proof
from ccmatic.core.results import ConcreteTrace, Verdict, trace_to_json
from ccmatic.engine.parallel.executor import Executor, LocalExecutor, map_unordered
from ccmatic.engine.proof.cache import ResultCache
from ccmatic.engine.proof.context import (
    Check,
    ModelSession,
    ProofContext,
    context_of,
    explain_lemma,
)
from ccmatic.engine.proof.graph import GraphReport, check_graph
from ccmatic.engine.proof.structure import CheckReport, check_structure
from ccmatic.semantics.explain import Violation, violation_json

INITIAL = "[initial] holds again"  # pseudo-lemma: [initial] and the invariants hold again at the end


@dataclass(frozen=True)
class LemmaTask:
    """Everything a worker needs to check one lemma (picklable; the proof carries its
    CCA's text, so workers need no files)."""

    proof: Proof
    lemma: str
    opts: RunOptions
    cache_dir: str | None


@dataclass
class LemmaReport:
    name: str
    verdict: Verdict
    time_s: float
    reason: str | None = None
    trace: ConcreteTrace | None = None
    vacuous: bool = False
    cached: bool = False
    why: Violation | None = None  # how the counterexample violates the conclusion
    together: bool = False  # proved by the one question of every check (``together = true``)

    def json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "verdict": self.verdict, "time_s": round(self.time_s, 3)}
        if self.reason:
            d["reason"] = self.reason
        if self.vacuous:
            d["vacuous"] = True
        if self.cached:
            d["cached"] = True
        if self.together:
            d["together"] = True
        if self.why is not None:
            d.update(violation_json(self.why))
        if self.trace is not None:
            d["trace"] = trace_to_json(self.trace)
        return d


@dataclass
class ProofReport:
    proof: Proof
    lemmas: list[LemmaReport]
    coverage: CheckReport
    stitching: list[CheckReport]
    graph: GraphReport
    time_s: float
    jobs: int
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        """counterexample if any question has one or the graph has a path that does not
        end in the steady state; unknown if any question is unknown; else proved."""
        parts = [lem.verdict for lem in self.lemmas] + [self.coverage.verdict] + [s.verdict for s in self.stitching]
        if "counterexample" in parts or not self.graph.ok:
            return "counterexample"
        if "unknown" in parts:
            return "unknown"
        return "proved"

    def json(self) -> dict[str, Any]:
        pr = self.proof
        return {
            "proof": pr.path, "verdict": self.verdict, "T": pr.T,
            "constants": {k: str(v) for k, v in pr.values().items()},
            "lemmas": [lem.json() for lem in self.lemmas],
            "coverage": self.coverage.json(),
            "stitching": [s.json() for s in self.stitching],
            "graph": self.graph.json(),
            "time_s": round(self.time_s, 3), "jobs": self.jobs,
            **({"expect": pr.expect} if pr.expect else {}),
        }


def question(ctx: ProofContext, name: str) -> tuple[z3.BoolRef, z3.BoolRef]:
    """A check's negation and its premise: a lemma's premise ∧ ¬conclusion, or for
    INITIAL, the [initial] conditions and invariants fail at the last step (premise
    True: they are assumed at the start)."""
    if name == INITIAL:
        last = [c for _tag, c in ctx.initial_at(ctx.proof.T - 1)]
        return z3.Not(z3.And(*last)), z3.BoolVal(True)
    return ctx.lemma_question(ctx.proof.lemma(name), ctx.proof.values())


def run_lemma_task(task: LemmaTask) -> dict[str, Any]:
    """Worker entry point: check one lemma; returns a JSON-able dict."""
    t0 = time.perf_counter()
    ctx = context_of(task.proof)
    cache = ResultCache(task.cache_dir) if task.cache_dir else None
    o = ModelSession(ctx, task.opts, cache).refute(*question(ctx, task.lemma))
    return _task_result(task.lemma, o, time.perf_counter() - t0)


def check_together(ctx: ProofContext, names: list[str], opts: RunOptions,
                   cache: ResultCache | None) -> list[LemmaReport] | None:
    """The named checks as one solver question, in this process: the disjunction of
    their negations (``together = true``).  Unsat proves every one of them, and each
    premise is then checked for a trace as it would be alone.  Any other answer gives
    None, and the caller asks one question per check, so that a counterexample names
    its lemma and is re-checked as usual."""
    t0 = time.perf_counter()
    model = ModelSession(ctx, opts, cache)
    qs = [question(ctx, name) for name in names]
    o = model.refute(z3.Or(*[neg for neg, _premise in qs]), qs[0][1])
    if o.verdict != "proved":
        return None
    vacuous = [o.vacuous] + [model.admits_a_trace(premise) is False for _neg, premise in qs[1:]]
    dt = time.perf_counter() - t0
    return [LemmaReport(name, "proved", dt, vacuous=v, cached=o.method == "cache", together=True)
            for name, v in zip(names, vacuous, strict=True)]


def _task_result(name: str, o: Check, time_s: float) -> dict[str, Any]:
    return {**o.json(), "name": name, "time_s": time_s, "cached": o.method == "cache"}


def lemma_report(d: dict[str, Any]) -> LemmaReport:
    o = Check.from_json(d)
    return LemmaReport(d["name"], o.verdict, o.time_s, o.reason, o.trace, o.vacuous, bool(d.get("cached")))


def check_lemmas(tasks: list[LemmaTask], jobs: int, on_done: Callable[[LemmaReport], None] | None = None,
                 executor: Executor | None = None) -> list[LemmaReport]:
    """Run the lemma tasks as independent tasks on ``executor`` (default: ``jobs``
    local processes, one solver each; ``jobs = 1`` runs them here, one after
    another)."""
    own = executor is None
    ex = executor if executor is not None else LocalExecutor(jobs if len(tasks) > 1 else 1)
    results: dict[str, LemmaReport] = {}
    try:
        for i, d in map_unordered(ex, run_lemma_task, tasks):
            r = lemma_report(d)
            results[tasks[i].lemma] = r
            if on_done is not None:
                on_done(r)
    finally:
        if own:
            ex.close()
    return [results[t.lemma] for t in tasks]


def prove(proof: Proof, opts: RunOptions, jobs: int, cache_dir: str | None = None,
          on_lemma: Callable[[LemmaReport], None] | None = None, only: list[str] | None = None,
          on_start: Callable[[list[str]], None] | None = None, executor: Executor | None = None) -> ProofReport:
    """Check the proof; with ``only``, solve just those lemmas (the others are
    reported unknown, so the proof as a whole is not reported proved).  ``on_start``
    gets the names of the checks about to run (the lemmas, and ``INITIAL`` where the
    proof chains)."""
    t0 = time.perf_counter()
    ctx = context_of(proof)  # elaborates every formula: an input error is one line before any worker starts
    chains = bool(ctx.initial_at(proof.start))  # does the proof have [initial] conditions or invariants?
    if only is not None and INITIAL in only and not chains:
        raise SpecError(Loc(proof.path), f"'{INITIAL}' is not a check of this proof: it has no [initial] "
                        "condition or invariant")
    names = [lem.name for lem in proof.lemmas if only is None or lem.name in only]
    if chains and (only is None or INITIAL in only):
        names.append(INITIAL)
    if on_start is not None:
        on_start(names)
    cache = ResultCache(cache_dir) if cache_dir else None
    coverage, checks = check_structure(ctx, opts, cache)
    joint = check_together(ctx, names, opts, cache) if proof.together and len(names) > 1 else None
    if joint is not None:
        jobs = 1
        for r in joint:
            if on_lemma is not None:
                on_lemma(r)
        done = {r.name: r for r in joint}
    else:
        tasks = [LemmaTask(proof, name, opts, cache_dir) for name in names]
        jobs = max(1, min(jobs, len(tasks)))
        done = {r.name: r for r in check_lemmas(tasks, jobs, on_lemma, executor)}
    for r in done.values():
        if r.trace is not None and r.name != INITIAL:
            r.why = explain_lemma(ctx, proof.lemma(r.name), proof.values(), r.trace)
    lemmas = [done.get(lem.name) or LemmaReport(lem.name, "unknown", 0.0, "not checked (--lemma)")
              for lem in proof.lemmas]
    if INITIAL in done:
        lemmas.append(done[INITIAL])
    elif chains:
        lemmas.append(LemmaReport(INITIAL, "unknown", 0.0, "not checked (--lemma)"))
    return ProofReport(proof, lemmas, coverage, checks, check_graph(proof), time.perf_counter() - t0, jobs)


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


__all__ = ["INITIAL", "Fraction", "LemmaReport", "LemmaTask", "ProofReport", "check_lemmas", "prove"]
