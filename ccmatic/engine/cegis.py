"""Counterexample-guided inductive synthesis over belief templates (thesis §4.1, B.1).

* **Generator**: one incremental solver over the hole variables, built once: each
  hole ranges over its finite domain, the template's unit checks exclude ill-typed
  candidates, and every counterexample adds the Eq. B.1.4 pruning — the next
  candidate must not make the same choices (rate, cwnd, state) at every step of that
  trace.  Solutions are blocked together with their constant-term variants (§4.2.1).
* **Verifier** (:mod:`ccmatic.engine.candidate_check`): network ∧ initial conditions
  ∧ assumptions ∧ ¬property ∧ the whole template is asserted once per query; a
  candidate is checked by assuming its hole values.  Counterexamples are re-checked
  with exact rationals (the template's terms with the holes bound to the
  candidate's values) before they prune.
* A candidate the verifier proves is re-verified from scratch in a fresh solver
  before it counts as a solution; an ``unknown`` answer never makes a solution.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import assert_never

import z3

from ccmatic.core.errors import EngineError, Loc, SpecError
from ccmatic.core.options import SynthOptions
from ccmatic.core.results import SynthStats, SynthStatus
from ccmatic.core.scenario import Query
from ccmatic.encode.template_units import hole_var, unit_constraints
from ccmatic.engine.candidate_check import CandidateChecker
from ccmatic.engine.cegis_outcomes import (
    CandidateOutcome,
    CheckResult,
    GeneratorEnd,
    StepResult,
)
from ccmatic.engine.pruning import Pruner, Values
from ccmatic.engine.recheck import Evaluator, FormulaCache, RecheckError, recheck
from ccmatic.engine.recheck_compiled import compile_check
from ccmatic.engine.session import (
    Sat,
    Unsat,
    make_solver,
)
from ccmatic.engine.templates import Candidate, hole_domains
from ccmatic.engine.verify import query_cca
from ccmatic.semantics.z3domain import rat
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.template_fill import fill_template, variable_term_holes


@dataclass
class Solution:
    holes: Candidate
    text: str


@dataclass
class SynthResult:
    status: SynthStatus
    solutions: list[Solution]
    stats: SynthStats
    unknown_candidates: list[Candidate] = field(default_factory=list)
    time_s: float = 0.0


class Synthesizer:
    def __init__(self, query: Query, opts: SynthOptions, prog: CcaProgram | None = None) -> None:
        t0 = time.perf_counter()
        self.query = query
        self.opts = opts
        self.prog = prog if prog is not None else query_cca(query)
        if not self.prog.is_template:
            raise SpecError(Loc(query.scenario.cca_path, 1, 1), "the CCA has no holes: nothing to synthesize",
                            "use 'ccmatic verify' for a concrete CCA")
        if query.exists:
            raise SpecError(Loc(query.path, 1, 1), "synthesis needs [[objective]]s, not an exists question",
                            "state what every trace must meet as [[objective]] tables")
        self.domains = hole_domains(self.prog, query)
        m = query.model
        if m.rtprop is not None:
            raise SpecError(Loc(query.path, 1, 1), "synthesis with per-flow rtprop is not supported",
                            "synthesize with one R, then verify the solutions with rtprop = [...]")
        self.code = self.prog.code(m.R, m.D, query.T, "symbolic")
        self.hvars = {h: hole_var(h) for h in self.domains}
        self.hole_names = {h: v.decl().name() for h, v in self.hvars.items()}
        self.stats = SynthStats()
        # verifier side (candidate_check.py): the template in one session, a candidate as assumptions
        self.checker = CandidateChecker(query, self.prog, opts, self.hvars, self.domains, self.stats)
        self.problem = self.checker.problem
        self.tr = self.problem.trace
        self.fcache = FormulaCache()
        self._compiled: Callable[[z3.ModelRef, dict[str, Fraction | bool]], Evaluator] | None = None
        # generator
        self.gen = make_solver(None, opts.run.seed)
        for h, dom in self.domains.items():
            self.gen.add(z3.Or(*[self.hvars[h] == rat(v) for v in dom]))
        for c in unit_constraints(self.prog):
            self.gen.add(c)
        self.pruner = Pruner(self.code, self.tr.N, self.tr.T, self.hvars, self.domains)
        self.var_holes = [h for h in variable_term_holes(self.prog) if h in self.domains]
        self.solutions: list[Solution] = []
        self.unknown: list[Candidate] = []
        self.cex_log: list[dict[str, object]] = []  # for checkpoints
        self._seen: set[tuple[tuple[str, Fraction], ...]] = set()
        self._assume: list[z3.BoolRef] = []  # the current cube's guard (parallel synthesis)
        self._cubes = 0
        self.stats.encode_s = time.perf_counter() - t0

    # -- cubes (parallel synthesis) -----------------------------------------------------
    def restrict(self, cube: dict[str, tuple[Fraction, ...]], solutions: list[Candidate],
                 unknown: list[Candidate]) -> None:
        """Search only ``cube`` (a subset of each listed hole's domain) until
        :meth:`unrestrict`, with the given solutions and unknown candidates blocked.
        The cube is a guarded constraint checked under an assumption, so everything
        the run learns (pruning by counterexamples, blocked solutions) stays in the
        generator for the next cube: it is valid everywhere."""
        self._cubes += 1
        lit = z3.Bool(f"cube!{self._cubes}")
        self.gen.add(z3.Implies(lit, z3.And(*[z3.Or(*[self.hvars[h] == rat(v) for v in vals])
                                              for h, vals in cube.items()])))
        self._assume = [lit]
        for c in solutions:
            self._block_solution(c)
        for c in unknown:
            self._block_exact(c)
        self.solutions, self.unknown = [], []
        self.stats = self.checker.stats = SynthStats()

    def unrestrict(self) -> None:
        for lit in self._assume:
            self.gen.add(z3.Not(lit))  # retire the cube's guard
        self._assume = []

    def prune_recorded(self, cex: dict[str, object]) -> None:
        """Prune with a counterexample recorded by another run (a checkpoint or the
        shared pool): its observations, as :attr:`cex_log` stores them."""
        per = cex["values"]
        assert isinstance(per, dict)
        values = {name: {int(f): [_parse_val(x) for x in xs] for f, xs in fl.items()} for name, fl in per.items()}
        self._prune(values, Fraction(str(cex["MSS"])))

    # -- generator side ---------------------------------------------------------------
    def search_space(self) -> int:
        n = 1
        for d in self.domains.values():
            n *= len(d)
        return n

    def _block_exact(self, cand: Candidate) -> None:
        self.gen.add(z3.Or(*[self.hvars[h] != rat(v) for h, v in cand.items()]))

    def _block_solution(self, cand: Candidate) -> None:
        hs = self.var_holes or list(cand)
        self.gen.add(z3.Or(*[self.hvars[h] != rat(cand[h]) for h in hs]))

    def _prune(self, values: Values, mss: Fraction) -> None:
        """Eq. B.1.4 (:mod:`ccmatic.engine.pruning`)."""
        self.gen.add(self.pruner.clause(values, mss))

    def _record_values(self, ev: Evaluator) -> tuple[Values, Fraction]:
        names = set(self.code.lags) | {n for n, _ in self.code.outputs}
        values: Values = {name: {f: [ev.ev(x) for x in self.tr.series(name, f)] for f in range(self.tr.N)}
                          for name in names}
        return values, ev.num(self.tr.MSS)

    # -- verifier side ------------------------------------------------------------------
    def reverify(self, cand: Candidate) -> bool:
        """Re-verification in a fresh solver (:meth:`CandidateChecker.reverify`)."""
        return self.checker.reverify(cand)

    # -- main loop ------------------------------------------------------------------------
    def run(self, progress: Callable[[Synthesizer, float], None] | None = None,
            should_stop: Callable[[], bool] | None = None,
            exchange: Callable[[Synthesizer], None] | None = None) -> SynthResult:
        """CEGIS until the generator runs out of candidates.  ``exchange`` is called
        before every generator step (parallel synthesis: publish new counterexamples
        and prune with the other workers')."""
        start = time.perf_counter()
        self.checker.deadline = None if self.opts.budget_s is None else start + self.opts.budget_s
        status: SynthStatus = "complete"
        stop = should_stop if should_stop is not None else (lambda: False)
        try:
            while True:
                budget = self._budget_left(start)
                if stop():
                    status = "interrupted"
                    break
                if budget is not None and budget <= 0:
                    status = "timeout"
                    break
                if exchange is not None:
                    exchange(self)
                cand = self._next_candidate()
                if cand is GeneratorEnd.EXHAUSTED:
                    break
                if cand is GeneratorEnd.GAVE_UP:
                    status = "interrupted" if stop() else "timeout"
                    break
                step = self._check(cand, start, stop)
                if step is CandidateOutcome.DEADLINE:
                    status = "timeout"  # the budget, not the candidate, ended this check
                    break
                if step is CandidateOutcome.STOP:
                    status = "interrupted"
                    break
                self._settle(wait=False)
                if progress is not None:
                    progress(self, time.perf_counter() - start)
            if status != "interrupted":
                self._settle(wait=True)  # the solutions still being re-verified in the background
        except KeyboardInterrupt:
            status = "interrupted"
        except z3.Z3Exception:
            # an interrupt (Ctrl-C) cancels whatever Z3 call is running, e.g. the
            # model evaluation of the pruning step
            if not stop():
                raise
            status = "interrupted"
        finally:
            self.checker.close()  # on an interrupt, re-verifications not yet in are dropped
        return SynthResult(status, list(self.solutions), self.stats, list(self.unknown), time.perf_counter() - start)

    def _budget_left(self, start: float) -> float | None:
        b = self.opts.budget_s
        return None if b is None else b - (time.perf_counter() - start)

    def _next_candidate(self) -> Candidate | GeneratorEnd:
        """The generator's next candidate; :data:`GeneratorEnd.EXHAUSTED` when there is
        none; :data:`GeneratorEnd.GAVE_UP` if the generator was interrupted."""
        t0 = time.perf_counter()
        g = self.gen.check(*self._assume)
        self.stats.generator_s += time.perf_counter() - t0
        if g == z3.unsat:
            return GeneratorEnd.EXHAUSTED
        if g != z3.sat:
            return GeneratorEnd.GAVE_UP
        cand = self._holes_of(self.gen.model())
        self.stats.iterations += 1
        key = tuple(sorted(cand.items()))
        if key in self._seen:  # the generator must never repeat itself
            raise EngineError(f"generator proposed candidate {cand} twice")
        self._seen.add(key)
        return cand

    def accept(self, rep: Candidate) -> None:
        """Count a re-verified solution and block its class."""
        self._record(rep)
        self._block_solution(rep)

    def _record(self, rep: Candidate) -> None:
        self.solutions.append(Solution(rep, fill_template(self.prog, rep, self.header(rep))))

    def _settle(self, wait: bool) -> None:
        """Take in the background re-verifications that are done (all, if ``wait``);
        their classes were blocked when they were submitted."""
        for rep, ok in self.checker.settled(wait):
            if ok:
                self._record(rep)
            else:  # never accept what a fresh check does not confirm
                self.unknown.append(dict(rep))
                self.stats.unknown += 1

    def _holes_of(self, model: z3.ModelRef) -> Candidate:
        ev = Evaluator(model, self.fcache)
        return {h: ev.num(v) for h, v in self.hvars.items()}

    def _check(self, cand: Candidate, start: float, stop: Callable[[], bool]) -> StepResult:
        """Verify one candidate: a solution, a counterexample, unknown, or why the run
        must end (:mod:`ccmatic.engine.cegis_outcomes`)."""
        left = self._budget_left(start)
        cap = self.opts.run.timeout_s if left is None else min(left, self.opts.run.timeout_s or left)
        verdict = self._holds(cand, cap, stop)
        if verdict is CandidateOutcome.PROVED:
            rep = self._representative(cand, stop)
            if rep is None:
                verdict = CandidateOutcome.STOP
            elif self.opts.background_reverify:  # blocked now; a solution once re-verified (_settle)
                self.checker.submit(rep)
                self._block_solution(rep)
                return CandidateOutcome.SOLUTION
            elif self.reverify(rep):
                self.accept(rep)
                return CandidateOutcome.SOLUTION
            else:  # never accept what a fresh check does not confirm
                cand, verdict = rep, CandidateOutcome.STOP if stop() else CandidateOutcome.UNKNOWN
        match verdict:
            case CandidateOutcome.STOP:  # not decided: the generator may propose it again (a later cube, a resumed run)
                self._seen.discard(tuple(sorted(cand.items())))
                return CandidateOutcome.STOP
            case CandidateOutcome.UNKNOWN if left is not None and (self._budget_left(start) or 0) <= 0:
                return CandidateOutcome.DEADLINE
            case CandidateOutcome.UNKNOWN:
                self.unknown.append(dict(cand))
                self.stats.unknown += 1
                self._block_exact(cand)
                return CandidateOutcome.UNKNOWN
            case CandidateOutcome.COUNTEREXAMPLE:
                return CandidateOutcome.COUNTEREXAMPLE
            case _:
                assert_never(verdict)

    def _holds(self, cand: Candidate, cap: float | None, stop: Callable[[], bool]) -> CheckResult:
        """Proved by the incremental verifier (a solution once :meth:`reverify`
        confirms it), a counterexample (learned), unknown, or stop (interrupted:
        nothing recorded, so the candidate is checked again by a later run)."""
        r = self.checker.check(cand, cap, stop)
        if isinstance(r, Sat):
            self._learn(r.model, cand)
            return CandidateOutcome.COUNTEREXAMPLE
        if isinstance(r, Unsat):
            return CandidateOutcome.PROVED
        return CandidateOutcome.STOP if stop() else CandidateOutcome.UNKNOWN

    def _representative(self, cand: Candidate, stop: Callable[[], bool]) -> Candidate | None:
        """The solution class's least member (constant-term holes compared in name
        order) that the verifier proves, so that every run prints the same member of
        each class whatever order it met them in (resumed, parallel).  Only that
        member is re-verified (by the caller).  None: interrupted."""
        consts = sorted(h for h in cand if h not in self.var_holes)
        if not self.var_holes or not consts:
            return cand
        best = dict(cand)
        while True:
            smaller = [z3.And(*[self.hvars[g] == rat(best[g]) for g in consts[:i]], self.hvars[h] < rat(best[h]))
                       for i, h in enumerate(consts)]
            self.gen.push()
            self.gen.add(*[self.hvars[h] == rat(cand[h]) for h in self.var_holes], z3.Or(*smaller))
            t0 = time.perf_counter()
            g = self.gen.check()
            self.stats.generator_s += time.perf_counter() - t0
            member = self._holes_of(self.gen.model()) if g == z3.sat else None
            self.gen.pop()
            if g == z3.unsat:
                return best
            if member is None:  # the generator was interrupted
                return None
            verdict = self._holds(member, self.opts.run.timeout_s, stop)
            if verdict is CandidateOutcome.STOP:
                return None
            if verdict is CandidateOutcome.PROVED:
                best = member
            elif verdict is CandidateOutcome.UNKNOWN:
                self._block_exact(member)  # not this run's to decide; the class keeps its best known member

    def _learn(self, model: z3.ModelRef, cand: Candidate) -> None:
        """Re-check the counterexample exactly: every network constraint, the negated
        property, and the template's CCA constraints with the holes bound to the
        candidate's values (its CCA); then prune with it."""
        bind: dict[str, Fraction | bool] = {self.hole_names[h]: v for h, v in cand.items()}
        try:
            ev = self._rechecker()(model, bind)
        except RecheckError as e:
            raise EngineError(f"counterexample failed the exact re-check: {e}") from e
        values, mss = self._record_values(ev)
        self._prune(values, mss)
        if self.opts.record_counterexamples:
            self.cex_log.append({"values": values_json(values), "MSS": str(mss)})
        self.stats.counterexamples += 1

    def _rechecker(self) -> Callable[[z3.ModelRef, dict[str, Fraction | bool]], Evaluator]:
        """The exact re-check of this run's counterexamples (every network constraint,
        the template's CCA constraints, the negated property), compiled at first use."""
        if self._compiled is None:
            constraints = [*self.checker.base, *self.problem.cca.constraints.items, self.checker.neg_prop]
            compiled = compile_check(self.fcache, constraints)
            self._compiled = compiled.recheck if compiled is not None else (
                lambda model, bind: recheck(model, constraints, self.fcache, bind))
        return self._compiled

    def header(self, cand: Candidate) -> str:
        q = self.query
        vals = ", ".join(f"?{h}={v}" for h, v in cand.items())
        return (f"synthesized by ccmatic from {Path(self.prog.path).name} for {q.name} "
                f"(model {q.model.name}, T={q.T})\nholes: {vals}")


def values_json(values: Values) -> dict[str, dict[str, list[object]]]:
    return {n: {str(f): [x if isinstance(x, bool) else str(x) for x in xs] for f, xs in per.items()}
            for n, per in values.items()}


def _parse_val(x: object) -> Fraction | bool:
    return x if isinstance(x, bool) else Fraction(str(x))
