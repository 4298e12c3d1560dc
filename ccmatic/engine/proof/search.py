"""``ccmatic search``: the tightest value of a constant for which a lemma still holds
(thesis B.4, "building lemmas using binary search").

The lemma is assumed monotone in the constant: proved at some value ⇒ proved at
every easier one (the constant's ``easier`` direction).  The search checks this
assumption where it matters: the easy end of the range must be proved and the hard
end must have a counterexample (otherwise the answer is that end), and for the final
bracket the checker asks whether the lemma at the harder value implies it at the
easier one in pure logic (no network).  Probes are exact rationals: each is the simplest fraction
within an eighth of the bracket's width from its midpoint, so the bracket shrinks to
at most 5/8 per probe and the reported values stay readable (e.g. 27/40).

``unknown`` answers are never counted as proved: an unknown probe is treated as
"not proved" (the bracket's hard side moves there) and is listed, so the reported
``proved`` value is always one the solver proved, and ``counterexample`` always one
with a re-checked counterexample.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import z3

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.limits import MAX_BISECTIONS
from ccmatic.core.options import RunOptions
from ccmatic.core.proof import Proof
from ccmatic.core.results import ConcreteTrace, Verdict, trace_to_json
from ccmatic.engine.parallel.executor import Executor, map_unordered
from ccmatic.engine.proof.cache import ResultCache
from ccmatic.engine.proof.context import (
    Check,
    LemmaChecker,
    ProofContext,
    explain_lemma,
    logic_check,
)
from ccmatic.engine.proof.prove import LemmaTask, run_lemma_task
from ccmatic.semantics.explain import Violation, violation_json


@dataclass
class Probe:
    value: Fraction
    verdict: Verdict
    time_s: float
    cached: bool = False
    reason: str | None = None

    def json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"value": str(self.value), "verdict": self.verdict, "time_s": round(self.time_s, 3)}
        if self.cached:
            d["cached"] = True
        if self.reason:
            d["reason"] = self.reason
        return d


@dataclass
class SearchReport:
    lemma: str
    constant: str
    easier: str
    proved: Fraction | None
    counterexample: Fraction | None  # the nearest value with a counterexample
    trace: ConcreteTrace | None
    probes: list[Probe]
    monotone: str  # verified | not verified | n/a
    time_s: float
    unknown: list[Fraction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    why: Violation | None = None  # how the trace violates the conclusion at the counterexample value

    @property
    def width(self) -> Fraction | None:
        if self.proved is None or self.counterexample is None:
            return None
        return abs(self.counterexample - self.proved)

    def json(self) -> dict[str, Any]:
        return {
            "lemma": self.lemma, "constant": self.constant, "easier": self.easier,
            "proved": str(self.proved) if self.proved is not None else None,
            "counterexample": str(self.counterexample) if self.counterexample is not None else None,
            "width": str(self.width) if self.width is not None else None,
            "unknown": [str(u) for u in self.unknown],
            "monotone": self.monotone,
            "probes": [p.json() for p in self.probes],
            **(violation_json(self.why) if self.why is not None else {}),
            "trace": trace_to_json(self.trace) if self.trace is not None else None,
            "time_s": round(self.time_s, 3),
            "notes": self.notes,
        }


def simplest_between(lo: Fraction, hi: Fraction) -> Fraction:
    """The fraction with the smallest denominator in the closed interval [lo, hi]
    (lo ≤ hi), by the continued-fraction (Stern–Brocot) construction."""
    if lo > hi:
        lo, hi = hi, lo
    fl = math.floor(lo)
    if Fraction(fl) == lo:
        return Fraction(fl)
    if fl + 1 <= hi:
        return Fraction(fl + 1)
    # lo and hi share the integer part fl: recurse on the reciprocals of the fractional parts
    r = simplest_between(1 / (hi - fl), 1 / (lo - fl))
    return fl + 1 / r


def next_probe(easy: Fraction, hard: Fraction) -> Fraction:
    """A readable value near the middle of the bracket: the simplest fraction within
    an eighth of the width from the midpoint (the bracket shrinks to at most 5/8)."""
    a, b = sorted((easy, hard))
    mid, q = (a + b) / 2, (b - a) / 8
    return simplest_between(mid - q, mid + q)


class Searcher:
    def __init__(self, proof: Proof, lemma: str, constant: str, opts: RunOptions,
                 cache: ResultCache | None = None, easier: str | None = None) -> None:
        if constant not in proof.constants:
            raise SpecError(Loc(proof.path), f"no constant named '{constant}'",
                            f"constants: {', '.join(proof.constants) or '(none)'}")
        self.proof = proof
        self.const = proof.constants[constant]
        if easier is not None:  # a constant can make one lemma easier and another harder
            self.const = replace(self.const, easier="up" if easier == "up" else "down")
        if self.const.easier is None:
            raise SpecError(self.const.loc, f"constant '{constant}' does not say in which direction the lemma gets easier",
                            "add easier = \"up\" or \"down\" to it")
        self.ctx = ProofContext(proof)
        # The invariants are assumed at the start of every lemma with the file's
        # values (they are part of the model); probing a constant they read would mix
        # two values of it in one question.
        v0 = proof.values()[constant]
        probe = {**proof.values(), constant: v0 + 1}
        before = [c.sexpr() for _t, c in self.ctx.invariants_at(proof.start, proof.values())]
        after = [c.sexpr() for _t, c in self.ctx.invariants_at(proof.start, probe)]
        if before != after:
            raise SpecError(self.const.loc, f"constant '{constant}' is read by the proof's invariant, which every "
                            "lemma assumes with one fixed value; a search would mix two values of it",
                            f"compare values with 'ccmatic prove --set {constant}=VALUE' instead")
        self.checker = LemmaChecker(self.ctx, lemma, opts, cache)
        self.opts = opts
        self.lemma = lemma
        self.probes: list[Probe] = []

    def values(self, v: Fraction) -> dict[str, Fraction]:
        return {**self.proof.values(), self.const.name: v}

    def check(self, v: Fraction) -> Check:
        o = self.checker.check(self.values(v), vacuity=False)
        self.probes.append(Probe(v, o.verdict, o.time_s, o.method == "cache", o.reason))
        return o

    def easier_than(self, a: Fraction, b: Fraction) -> bool:
        return a < b if self.const.easier == "down" else a > b

    def monotone_between(self, hard: Fraction, easy: Fraction) -> bool:
        """Pure logic: lemma(hard) ⇒ lemma(easy), i.e. no assignment satisfies
        lemma(hard) ∧ premise(easy) ∧ ¬conclusion(easy)."""
        ph, ch = self.checker.terms(self.values(hard))
        pe, ce = self.checker.terms(self.values(easy))
        o = logic_check(z3.And(z3.Implies(ph, ch), pe, z3.Not(ce)), self.opts, [self.ctx.tr.MSS > 0])
        return o.verdict == "proved"

    def explained(self, rep: SearchReport) -> SearchReport:
        """The report with how its counterexample violates the lemma's conclusion."""
        if rep.trace is not None and rep.counterexample is not None:
            rep.why = explain_lemma(self.ctx, self.checker.lemma, self.values(rep.counterexample), rep.trace)
        return rep

    def run(self, lo: Fraction, hi: Fraction, tol: Fraction,
            on_probe: Callable[[Probe], None] | None = None) -> SearchReport:
        """Bisection between lo and hi, to a bracket of width tol."""
        return self.explained(self._run(lo, hi, tol, on_probe))

    def _run(self, lo: Fraction, hi: Fraction, tol: Fraction,
             on_probe: Callable[[Probe], None] | None = None) -> SearchReport:
        t0 = time.perf_counter()
        if not lo < hi:
            raise SpecError(Loc("--lo"), f"the range must have lo < hi, got [{lo}, {hi}]")
        if tol <= 0:
            raise SpecError(Loc("--tol"), "the tolerance must be positive")
        if (hi - lo) / tol > 2**MAX_BISECTIONS:
            raise SpecError(Loc("--tol"), f"--tol {tol} asks the range [{lo}, {hi}] to shrink over "
                            f"2^{MAX_BISECTIONS}-fold (about {MAX_BISECTIONS * 3 // 2} probes)", f"give --tol at least {(hi - lo) / 2**MAX_BISECTIONS}")
        easy_end, hard_end = (lo, hi) if self.const.easier == "down" else (hi, lo)
        notes: list[str] = []
        unknown: list[Fraction] = []

        def probe(v: Fraction) -> Check:
            o = self.check(v)
            if on_probe is not None:
                on_probe(self.probes[-1])
            if o.verdict == "unknown":
                unknown.append(v)
            return o

        e = probe(easy_end)
        if e.verdict != "proved":
            why = "has a counterexample" if e.verdict == "counterexample" else "is unknown"
            notes.append(f"the easy end {easy_end} {why}: no value in the range is proved")
            return SearchReport(self.lemma, self.const.name, str(self.const.easier), None,
                                easy_end if e.verdict == "counterexample" else None, e.trace, self.probes,
                                "n/a", time.perf_counter() - t0, unknown, notes)
        h = probe(hard_end)
        if h.verdict == "proved":
            notes.append(f"the hard end {hard_end} is proved: widen the range to find where it fails")
            return SearchReport(self.lemma, self.const.name, str(self.const.easier), hard_end, None, None,
                                self.probes, "n/a", time.perf_counter() - t0, unknown, notes)
        proved, not_proved = easy_end, hard_end
        cex: Fraction | None = hard_end if h.verdict == "counterexample" else None
        cex_trace = h.trace
        while abs(not_proved - proved) > tol:
            m = next_probe(proved, not_proved)
            o = probe(m)
            if o.verdict == "proved":
                proved = m
            else:
                not_proved = m
                if o.verdict == "counterexample":
                    cex, cex_trace = m, o.trace
        mono = "verified" if cex is None or self.monotone_between(cex, proved) else "not verified"
        if mono == "not verified":
            notes.append("could not show in pure logic that the lemma is monotone in the constant; the proved "
                         "value and the counterexample are exact facts, the values between them are not")
        if cex is not None and not_proved != cex:
            notes.append(f"values between {proved} and {not_proved} gave unknown; {cex} is the nearest "
                         "value with a counterexample")
        return SearchReport(self.lemma, self.const.name, str(self.const.easier), proved, cex, cex_trace,
                            self.probes, mono, time.perf_counter() - t0, unknown, notes)

    def grid(self, values: list[Fraction], on_probe: Callable[[Probe], None] | None = None,
             executor: Executor | None = None, cache_dir: str | None = None) -> SearchReport:
        """Check every grid value; the answer is the hardest proved value all of whose
        easier grid values are proved, and the easiest one with a counterexample.  With an
        executor the values are independent tasks (one solver each)."""
        return self.explained(self._grid(values, on_probe, executor, cache_dir))

    def _grid(self, values: list[Fraction], on_probe: Callable[[Probe], None] | None,
              executor: Executor | None, cache_dir: str | None) -> SearchReport:
        t0 = time.perf_counter()
        order = sorted(set(values), key=lambda v: v if self.const.easier == "up" else -v, reverse=True)
        # order: easiest first
        outcomes: list[tuple[Fraction, Check]] = []
        if executor is None:
            for v in order:
                o = self.check(v)
                if on_probe is not None:
                    on_probe(self.probes[-1])
                outcomes.append((v, o))
        else:
            got = self._grid_tasks(order, executor, cache_dir, on_probe)
            outcomes = [(v, got[v]) for v in order]
        proved: Fraction | None = None
        cex: Fraction | None = None
        trace = None
        notes: list[str] = []
        unknown = [v for v, o in outcomes if o.verdict == "unknown"]
        for v, o in outcomes:
            if o.verdict == "proved" and cex is None and not unknown_before(outcomes, v):
                proved = v
            if o.verdict == "counterexample" and cex is None:
                cex, trace = v, o.trace
        proved_after = [v for v, o in outcomes if o.verdict == "proved" and cex is not None
                        and self.easier_than(cex, v)]
        if proved_after:
            notes.append(f"not monotone on the grid: {', '.join(map(str, proved_after))} proved although the "
                         f"easier {cex} has a counterexample")
        mono = "not verified" if proved_after else (
            "verified" if proved is None or cex is None or self.monotone_between(cex, proved)
            else "not verified")
        return SearchReport(self.lemma, self.const.name, str(self.const.easier), proved, cex, trace,
                            self.probes, mono, time.perf_counter() - t0, unknown, notes)


    def _grid_tasks(self, order: list[Fraction], ex: Executor, cache_dir: str | None,
                    on_probe: Callable[[Probe], None] | None) -> dict[Fraction, Check]:
        tasks = [LemmaTask(self.proof.with_values({self.const.name: v}), self.lemma, self.opts, cache_dir)
                 for v in order]
        got: dict[Fraction, Check] = {}
        for i, d in map_unordered(ex, run_lemma_task, tasks):
            o = Check.from_json(d)
            got[order[i]] = o
            self.probes.append(Probe(order[i], o.verdict, o.time_s, bool(d.get("cached")), o.reason))
            if on_probe is not None:
                on_probe(self.probes[-1])
        return got


def unknown_before(outcomes: list[tuple[Fraction, Check]], v: Fraction) -> bool:
    for w, o in outcomes:
        if w == v:
            return False
        if o.verdict != "proved":
            return True
    return False
