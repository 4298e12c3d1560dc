"""``ccmatic prove``: check every lemma (in parallel processes), the coverage of the
states, the stitching of the lemmas into the declared transitions, the progress
terms, and the transition graph (thesis §4.1.2, B.4).

Stitching: for each state X with transitions ``to``/``loop`` justified ``by`` some
lemmas, the checker shows that X(0) ∧ (each lemma, premise ⇒ conclusion) implies
one of the declared exits at the last step — a state in ``to``, or X again with
one of its loop terms — and implies X's ``guarantees``.  These are formulas over the
trace's variables, checked in pure logic first (valid without any network), else
on the network and CCA.  A progress term is only as good as its cases: X(0) must
imply that one of the cases' conditions holds, so the progress is never vacuous.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import z3

from ccmatic.config import RunOptions
from ccmatic.errors import Loc, SpecError
from ccmatic.lang.source import Source
from ccmatic.library import Library
from ccmatic.parallel.executor import Executor, LocalExecutor, map_unordered
from ccmatic.proof.cache import ResultCache, trace_from_json, trace_to_json
from ccmatic.proof.check import (
    LemmaChecker,
    ModelSession,
    Outcome,
    ProofContext,
    logic_check,
    valid,
)
from ccmatic.proof.graph import GraphReport, check_graph
from ccmatic.proof.scope import ProofScope
from ccmatic.proof.spec import Proof, load_proof
from ccmatic.verify import ConcreteTrace

LEMMA_RESULT = {"proved": "proved", "refuted": "failed", "unknown": "unknown"}
INITIAL = "[initial] holds again"  # pseudo-lemma: [initial] and the invariants hold again at the end


@dataclass(frozen=True)
class LemmaTask:
    """Everything a worker process needs to check one lemma (picklable)."""

    proof_path: str
    roots: tuple[str, ...]
    lemma: str
    overrides: tuple[tuple[str, str], ...]
    T: int | None
    timeout_s: float | None
    seed: int
    cache_dir: str | None


@dataclass
class LemmaReport:
    name: str
    result: str  # proved | failed | unknown
    time_s: float
    reason: str | None = None
    trace: ConcreteTrace | None = None
    vacuous: bool = False
    cached: bool = False

    def json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "result": self.result, "time_s": round(self.time_s, 3)}
        if self.reason:
            d["reason"] = self.reason
        if self.vacuous:
            d["vacuous"] = True
        if self.cached:
            d["cached"] = True
        if self.trace is not None:
            d["trace"] = trace_to_json(self.trace)
        return d


@dataclass
class CheckReport:
    """Coverage, a stitching condition, or a progress condition."""

    what: str
    result: str  # proved | failed | unknown
    time_s: float
    method: str
    detail: str = ""
    trace: ConcreteTrace | None = None

    def json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"what": self.what, "result": self.result, "time_s": round(self.time_s, 3),
                             "method": self.method}
        if self.detail:
            d["detail"] = self.detail
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
    def result(self) -> str:
        parts = [lem.result for lem in self.lemmas] + [self.coverage.result] + [s.result for s in self.stitching]
        if "failed" in parts or not self.graph.ok:
            return "failed"
        if "unknown" in parts:
            return "unknown"
        return "proved"

    def json(self) -> dict[str, Any]:
        return {
            "proof": self.proof.path,
            "result": self.result,
            "T": self.proof.T,
            "constants": {k: str(v) for k, v in self.proof.values().items()},
            "lemmas": [lem.json() for lem in self.lemmas],
            "coverage": self.coverage.json(),
            "stitching": [s.json() for s in self.stitching],
            "graph": self.graph.json(),
            "time_s": round(self.time_s, 3),
            "jobs": self.jobs,
            **({"expect": self.proof.expect} if self.proof.expect else {}),
        }


def load_for_task(task: LemmaTask) -> Proof:
    proof = load_proof(task.proof_path, Library(tuple(Path(r) for r in task.roots)))
    proof = proof.with_values({k: Fraction(v) for k, v in task.overrides})
    if task.T is not None:
        proof = replace(proof, T=task.T)
    return proof


def run_lemma_task(task: LemmaTask) -> dict[str, Any]:
    """Worker entry point: check one lemma; returns a JSON-able dict."""
    proof = load_for_task(task)
    t0 = time.perf_counter()
    ctx = ProofContext(proof)
    cache = ResultCache(task.cache_dir) if task.cache_dir else None
    opts = RunOptions(task.timeout_s, task.seed)
    if task.lemma == INITIAL:
        # the [initial] conditions, assumed at step 0, hold again at the last step
        last = [c for _tag, c in ctx.initial_at(proof.T - 1)]
        o = ModelSession(ctx, opts, cache).refute(z3.Not(z3.And(*last)), z3.BoolVal(True))
    else:
        o = LemmaChecker(ctx, task.lemma, opts, cache).check(proof.values())
    return {
        "name": task.lemma, "result": LEMMA_RESULT[o.result], "time_s": time.perf_counter() - t0,
        "reason": o.reason, "vacuous": o.vacuous, "cached": o.method == "cache",
        "trace": trace_to_json(o.trace) if o.trace is not None else None,
    }


def _lemma_report(d: dict[str, Any]) -> LemmaReport:
    return LemmaReport(d["name"], d["result"], float(d["time_s"]), d.get("reason"),
                       trace_from_json(d["trace"]) if d.get("trace") else None, bool(d.get("vacuous")),
                       bool(d.get("cached")))


def check_lemmas(tasks: list[LemmaTask], jobs: int,
                 on_done: Callable[[LemmaReport], None] | None = None,
                 executor: Executor | None = None) -> list[LemmaReport]:
    """Run the lemma tasks as independent tasks on ``executor`` (default: ``jobs``
    local processes, one solver each; ``jobs = 1`` runs them here, one after
    another)."""
    own = executor is None
    ex = executor if executor is not None else LocalExecutor(jobs if len(tasks) > 1 else 1)
    results: dict[str, LemmaReport] = {}
    try:
        for i, d in map_unordered(ex, run_lemma_task, tasks):
            r = _lemma_report(d)
            results[tasks[i].lemma] = r
            if on_done is not None:
                on_done(r)
    finally:
        if own:
            ex.close()
    return [results[t.lemma] for t in tasks]


def _outcome_report(what: str, o: Outcome, detail: str = "") -> CheckReport:
    return CheckReport(what, LEMMA_RESULT[o.result], o.time_s, o.method, detail, o.trace)


def check_structure(proof: Proof, opts: RunOptions, cache: ResultCache | None = None
                    ) -> tuple[CheckReport, list[CheckReport], GraphReport]:
    """Coverage, stitching, progress conditions and the graph (no lemma solving)."""
    ctx = ProofContext(proof)
    model = ModelSession(ctx, opts, cache)
    values = proof.values()
    last = proof.T - 1
    first = proof.start

    def scope() -> ProofScope:
        return ProofScope(proof, proof.states[proof.steady].source, ctx.tr, ctx.series, values)

    def state_at(name: str, step: int) -> z3.BoolRef:
        src = Source(proof.path, f"{name}({step})", proof.transitions[name].loc.line, 1)
        return ProofScope(proof, src, ctx.tr, ctx.series, values).compile_bool(src)

    def lemma_formula(name: str) -> z3.BoolRef:
        lem = proof.lemma(name)
        return z3.Implies(ctx.formula(lem.premise, values), ctx.formula(lem.conclusion, values))

    cov = valid(ctx, z3.Or(*[state_at(x, first) for x in proof.states]), model, opts)
    coverage = _outcome_report("coverage: " + " ∨ ".join(proof.states), cov)
    checks: list[CheckReport] = []
    sc = scope()
    for x, t in proof.transitions.items():
        hyp = z3.And(state_at(x, first), *[lemma_formula(n) for n in t.by])
        exits: list[z3.BoolRef] = [state_at(y, last) for y in t.to]
        loop_terms: list[z3.BoolRef] = []
        for name in t.loop:
            if name in proof.progress:
                loop_terms.append(sc.progress_formula(proof.progress[name]))
            else:
                loop_terms.append(sc.compile_bool(proof.defines[name].source))
        if x == proof.steady:
            exits.append(state_at(x, last))
        elif loop_terms:
            exits.append(z3.And(state_at(x, last), z3.Or(*loop_terms)))
        desc = " ∨ ".join([*t.to, *([f"{x} with {' or '.join(t.loop)}"] if t.loop else []),
                           *([x] if x == proof.steady else [])]) or "(nothing)"
        o = valid(ctx, z3.Implies(hyp, z3.Or(*exits)) if exits else z3.Not(hyp), model, opts)
        checks.append(_outcome_report(f"stitching: {x} --[{', '.join(t.by)}]--> {desc}", o))
        for g in t.guarantees:
            o = valid(ctx, z3.Implies(hyp, sc.compile_bool(proof.defines[g].source)), model, opts)
            checks.append(_outcome_report(f"guarantee: {x} --[{', '.join(t.by)}]--> {g}", o))
        for name in t.loop:
            p = proof.progress.get(name)
            if p is None:
                continue
            whens = [sc.compile_bool(c.when) if c.when is not None else z3.BoolVal(True) for c in p.cases]
            o = valid(ctx, z3.Implies(state_at(x, first), z3.Or(*whens)), model, opts)
            checks.append(_outcome_report(f"progress: in {x}, a case of '{name}' applies", o))
            for case, when in zip(p.cases, whens):
                for src in case.measures:
                    up, q0, b0 = sc.measure(src, first)
                    facts = [state_at(x, first), when]
                    o = valid(ctx, z3.Implies(z3.And(*facts), q0.term <= b0.term if up else q0.term >= b0.term),
                              model, opts)
                    checks.append(_outcome_report(f"progress: in {x}, measure '{src.text}' of '{name}' is "
                                                  "within its bound", o))
                    if case.factor is not None:
                        # multiplicative progress needs q ≥ 0 upwards, a positive bound downwards
                        need = q0.term >= 0 if up else b0.term > 0
                        o = valid(ctx, z3.Implies(z3.And(*facts), need), model, opts)
                        checks.append(_outcome_report(
                            f"progress: in {x}, measure '{src.text}' of '{name}' "
                            + ("is non-negative" if up else "has a positive bound"), o))
    for p in proof.progress.values():
        for case in p.cases:
            for src in case.measures:
                _up, _q0, b0 = sc.measure(src, first)
                _up, _qT, bT = sc.measure(src, last)
                fixed = z3.eq(z3.simplify(b0.term), z3.simplify(bT.term)) and _params_only(b0.term)
                checks.append(CheckReport(f"progress: bound of '{src.text}' in '{p.name}' is a constant",
                                          "proved" if fixed else "failed", 0.0, "syntax",
                                          "" if fixed else "the bound must not depend on the trace"))
            for what, srcx in (("factor", case.factor), ("step", case.step)):
                if srcx is not None and not _params_only(sc.compile_num(srcx).term):
                    checks.append(CheckReport(f"progress: {what} of '{p.name}' ({srcx.text}) is a constant",
                                              "failed", 0.0, "syntax", "it must not depend on the trace"))
            if case.factor is not None:
                k = sc.compile_num(case.factor)
                o = logic_check(z3.Not(k.term > 1), opts, [ctx.tr.MSS > 0])
                checks.append(_outcome_report(f"progress: factor of '{p.name}' ({case.factor.text}) > 1", o))
            if case.step is not None:
                s = sc.compile_num(case.step)
                o = logic_check(z3.Not(s.term > 0), opts, [ctx.tr.MSS > 0])
                checks.append(_outcome_report(f"progress: step of '{p.name}' ({case.step.text}) > 0", o))
    return coverage, checks, check_graph(proof)


def prove(proof: Proof, roots: tuple[str, ...], opts: RunOptions, jobs: int, cache_dir: str | None = None,
          on_lemma: Callable[[LemmaReport], None] | None = None, only: list[str] | None = None,
          on_start: Callable[[], None] | None = None, executor: Executor | None = None) -> ProofReport:
    """Check the proof; with ``only``, solve just those lemmas (the others are
    reported unknown, so the proof as a whole is not reported proved)."""
    t0 = time.perf_counter()
    # compile everything once here first, so that an input error is one line before
    # any worker starts
    ctx = ProofContext(proof)
    typecheck(ctx, proof)
    for lem in proof.lemmas:
        ctx.formula(lem.premise, proof.values())
        ctx.formula(lem.conclusion, proof.values())
    # does the proof have [initial] conditions or invariants to chain? (the context
    # assumes them at the start already)
    chains = bool(ctx.assumptions.constraints)
    if only is not None and INITIAL in only and not chains:
        raise SpecError(Loc(proof.path), f"'{INITIAL}' is not a check of this proof: it has no [initial] "
                        "condition or invariant")
    if on_start is not None:
        on_start()
    cache = ResultCache(cache_dir) if cache_dir else None
    coverage, checks, graph = check_structure(proof, opts, cache)
    names = [lem.name for lem in proof.lemmas if only is None or lem.name in only]
    if chains and (only is None or INITIAL in only):
        names.append(INITIAL)
    path = str(Path(proof.path).resolve())
    overrides = tuple((k, str(v)) for k, v in proof.overrides.items())
    tasks = [LemmaTask(path, roots, name, overrides, proof.T, opts.timeout_s, opts.seed, cache_dir) for name in names]
    jobs = max(1, min(jobs, len(tasks)))
    done = {r.name: r for r in check_lemmas(tasks, jobs, on_lemma, executor)}
    lemmas = [done.get(lem.name) or LemmaReport(lem.name, "unknown", 0.0, "not checked (--lemma)")
              for lem in proof.lemmas]
    if INITIAL in done:
        lemmas.append(done[INITIAL])
    elif chains:
        lemmas.append(LemmaReport(INITIAL, "unknown", 0.0, "not checked (--lemma)"))
    return ProofReport(proof, lemmas, coverage, checks, graph, time.perf_counter() - t0, jobs)


def _params_only(term: z3.ExprRef) -> bool:
    """The term reads no trace quantity: only numbers, MSS and the buffer size,
    which are the same in every period."""
    todo = [term]
    seen: set[int] = set()
    while todo:
        e = todo.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED and str(e) not in ("MSS", "buffer"):
            return False
        todo.extend(e.children())
    return True


def typecheck(ctx: ProofContext, proof: Proof) -> None:
    """Compile every formula once with each constant at a non-zero stand-in value, so
    that a unit error surfaces whatever value a search or ``--set`` gives (a zero
    would be accepted with any unit)."""
    stand_in = {k: (v if v != 0 else Fraction(1)) for k, v in proof.values().items()}
    for lem in proof.lemmas:
        ctx.formula(lem.premise, stand_in)
        ctx.formula(lem.conclusion, stand_in)
    for d in proof.defines.values():
        if not d.params:
            ctx.formula(d.source, stand_in)
    scope = ProofScope(proof, proof.states[proof.steady].source, ctx.tr, ctx.series, stand_in)
    for p in proof.progress.values():
        scope.progress_formula(p)


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)
