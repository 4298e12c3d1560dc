"""CEGIS's verifier side: how one candidate of a template is checked (thesis B.1).

* **Incremental** (the default): one session holds network ∧ initial conditions ∧
  assumptions ∧ ¬property ∧ the whole template, its hole products written as choices
  among their linear instances (:mod:`ccmatic.encode.selectors`); a candidate is
  checked by assuming its selectors, so nothing is re-encoded and what Z3 learned
  about the network carries over to the next candidate.
* **Fresh**: a fork of a never-checked session holding the network, with the
  candidate's constraints (holes substituted) added; Z3 preprocesses it as a whole.
  An incremental check left undecided is posed once more this way.
* **Re-verification** of a solution (:class:`Reverifier`): a fresh solver on a
  separately built encoding, the candidate compiled strictly from its file form
  (units checked), with the non-vacuity check of :func:`ccmatic.engine.verify.solve`;
  in this process, or in a worker process on another core (``--reverify background``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import z3

from ccmatic.core.errors import SpecError
from ccmatic.core.options import RunOptions, SynthOptions
from ccmatic.core.results import Proved, SynthStats
from ccmatic.core.scenario import Query
from ccmatic.encode.cca import CcaEncoding, encode_cca
from ccmatic.encode.selectors import NotLinear, Selectors
from ccmatic.encode.template_units import hole_var
from ccmatic.encode.trace import Tagged
from ccmatic.engine.parallel.executor import LocalExecutor
from ccmatic.engine.session import Answer, Session, SolverUnknown, answer, stop_at
from ccmatic.engine.smt2 import dump_check
from ccmatic.engine.templates import Candidate
from ccmatic.engine.verify import build_query, query_cca, solve
from ccmatic.semantics.z3domain import rat
from ccmatic.spec.cca import CcaProgram


def _sliced(cap: float | None, slice_s: float | None) -> float | None:
    """An incremental check's first limit: ``--verifier-slice`` where it is shorter
    than ``cap``."""
    return cap if slice_s is None or (cap is not None and cap <= slice_s) else slice_s


class CandidateChecker:
    """Checks candidates and re-verifies solutions for one synthesis run.  ``stats``:
    the run's counters; this side adds verifier and re-verify seconds and fresh checks."""

    def __init__(self, query: Query, prog: CcaProgram, opts: SynthOptions, hvars: dict[str, z3.ArithRef],
                 domains: dict[str, tuple[Fraction, ...]], stats: SynthStats) -> None:
        self.query, self.prog, self.opts, self.hvars = query, prog, opts, hvars
        self.problem, prop = build_query(query, prog, "symbolic", hvars.__getitem__)
        self.neg_prop: Tagged = ("negated property", z3.Not(prop))
        self.base = self.problem.base(with_cca=False)
        seed, timeout = opts.run.seed, opts.run.timeout_s
        self.selectors: Selectors | None = Selectors(hvars, domains)
        try:
            template = [(tag, self.selectors.rewrite(c)) for tag, c in self.problem.cca.constraints.items]
        except NotLinear:  # a hole in a divisor: substitute per candidate instead
            self.selectors, template = None, []
        # the session's time limit is set once, before its first check (engine/session.py's stop_at)
        self._limit = _sliced(timeout, opts.slice_s)
        self.session = Session([*self.base, self.neg_prop, *template], self._limit, seed)
        self.pristine = Session([*self.base, self.neg_prop], timeout, seed)  # never checked: forked
        self._reverifier: Reverifier | None = None  # built at the first solution
        self._background: LocalExecutor | None = None  # re-verification on another core
        self._pending: list[tuple[Candidate, object]] = []
        self.deadline: float | None = None  # the run's budget, as a perf_counter time
        self.stats = stats
        self._dumped = 0

    def cca_constraints(self, cand: Candidate) -> list[Tagged]:
        """The candidate's CCA constraints: the symbolic encoding with holes replaced."""
        pairs = [(self.hvars[h], rat(v)) for h, v in cand.items()]
        return [(tag, z3.substitute(c, *pairs)) for tag, c in self.problem.cca.constraints.items]

    def check(self, cand: Candidate, cap: float | None, stop: Callable[[], bool]) -> Answer:
        """One candidate's check (``cap``: its time limit), timed into the stats."""
        t0 = time.perf_counter()
        try:
            self._dump(cand)
            return self._check(cand, cap, stop)
        finally:
            self.stats.verifier_s += time.perf_counter() - t0

    def _check(self, cand: Candidate, cap: float | None, stop: Callable[[], bool]) -> Answer:
        """Posed as :attr:`SynthOptions.verifier` says.  A check the incremental session
        leaves undecided (``--verifier-slice``, or the whole ``cap``, ran out) is posed
        once more in a fresh fork, with what is left of ``cap`` (all of it again after
        a whole ``cap``, unless the run's budget is spent)."""
        if self.opts.verifier == "fresh":
            return self._fresh_check(cand, cap)
        first = _sliced(cap, self.opts.slice_s)
        t0 = time.perf_counter()
        r = self._session_check(cand, first)
        if not isinstance(r, SolverUnknown) or stop():
            return r
        if first == cap:  # the whole check timed out: once more, unless the budget is spent
            if self.deadline is not None and time.perf_counter() >= self.deadline:
                return r
            rest = cap if self.deadline is None else min(cap or math.inf, self.deadline - time.perf_counter())
        else:
            rest = None if cap is None else cap - (time.perf_counter() - t0)
        self.stats.fresh_checks += 1
        return self._fresh_check(cand, rest)

    def _session_check(self, cand: Candidate, limit: float | None) -> Answer:
        """The incremental check, stopped after ``limit`` seconds (the session's own
        limit, or less: the run's budget also bounds the check in progress)."""
        shorter = limit is not None and (self._limit is None or limit < self._limit)
        with stop_at(self.session.solver.ctx, limit if shorter else None) as timer:
            try:
                if self.selectors is None:
                    return self.session.check(self.cca_constraints(cand))
                return self.session.check_assuming(self.selectors.assumptions(cand))
            except z3.Z3Exception:
                if timer is None or not timer.fired:
                    raise
                return SolverUnknown("timeout")

    def _fresh_check(self, cand: Candidate, cap: float | None) -> Answer:
        return answer(self.pristine.fork(self.cca_constraints(cand), cap).solver)

    def _dump(self, cand: Candidate) -> None:
        """``--dump-smt2 DIR``: each candidate's check, holes substituted, for other solvers."""
        out = self.opts.run.dump_smt2
        if out is None:
            return
        self._dumped += 1
        holes = ", ".join(f"?{h}={v}" for h, v in cand.items())
        dump_check(Path(out) / f"{self.query.name}-{self._dumped:04d}.smt2",
                   [c for _t, c in [*self.base, self.neg_prop, *self.cca_constraints(cand)]],
                   f"ccmatic synth {self.query.name}, T={self.query.T}, candidate {holes}\n"
                   "unsat: the candidate meets the query; sat: a counterexample")

    def reverify(self, cand: Candidate) -> bool:
        """Re-verify a solution now (:class:`Reverifier`)."""
        t0 = time.perf_counter()
        try:
            if self._reverifier is None:
                self._reverifier = Reverifier(self.query, self.prog, self.opts)
            return self._reverifier.check(cand)
        finally:
            self.stats.reverify_s += time.perf_counter() - t0

    # -- re-verification on another core ------------------------------------------------------
    def submit(self, cand: Candidate) -> None:
        """Re-verify a solution in a background worker process; :meth:`settled` gives
        the outcomes in submission order."""
        if self._background is None:
            self._background = LocalExecutor(1, in_process=False)
        self._pending.append((cand, self._background.submit(reverify_task, (self.query, self.opts, cand))))

    def settled(self, wait: bool) -> list[tuple[Candidate, bool]]:
        """The re-verifications finished so far (all of them if ``wait``), oldest
        first; a later one is held back until those before it are in."""
        out: list[tuple[Candidate, bool]] = []
        while self._pending and self._background is not None:
            cand, h = self._pending[0]
            if not wait and not self._background.done(h):
                break
            _h, (ok, secs) = self._background.wait_any([h])
            self.stats.reverify_s += secs
            out.append((cand, bool(ok)))
            self._pending.pop(0)
        return out

    @property
    def pending(self) -> int:
        return len(self._pending)

    def close(self) -> None:
        """Stop the background worker; re-verifications not yet in are dropped."""
        if self._background is not None:
            self._background.close()
            self._background = None
        self._pending = []


class Reverifier:
    """Re-verification of solutions in a fresh solver each, from a separately built
    encoding: the candidate compiled strictly from its file form (units), its
    property re-checked, and the setup confirmed to admit a trace (no vacuous
    proof)."""

    def __init__(self, query: Query, prog: CcaProgram, opts: SynthOptions) -> None:
        self.query, self.prog = query, prog
        self.run = RunOptions(opts.run.timeout_s, opts.run.seed + 1)
        self.problem, self.prop = build_query(query, prog, "symbolic", hole_var)
        self.network = Session(self.problem.base(with_cca=False), self.run.timeout_s, self.run.seed)  # forked

    def check(self, cand: Candidate) -> bool:
        m = self.query.model
        try:
            code = self.prog.code(m.R, m.D, self.query.T, dict(cand))
        except SpecError:
            return False
        enc = CcaEncoding()
        for f in range(self.problem.trace.N):
            enc.constraints.extend(encode_cca(code, self.problem.trace, f, self.prog.name).constraints)
        prob = replace(self.problem, cca=enc, holes=dict(cand))
        return isinstance(solve(prob, self.prop, self.run, self.network), Proved)


_WORKER_REVERIFIERS: dict[tuple[str, int], Reverifier] = {}  # per worker process: built once per query


def reverify_task(arg: tuple[Query, SynthOptions, Candidate]) -> tuple[bool, float]:
    """A background worker's job: re-verify one solution; (holds, seconds)."""
    query, opts, cand = arg
    t0 = time.perf_counter()
    key = (query.path, query.T)
    if key not in _WORKER_REVERIFIERS:
        _WORKER_REVERIFIERS.clear()
        _WORKER_REVERIFIERS[key] = Reverifier(query, query_cca(query), opts)
    return _WORKER_REVERIFIERS[key].check(cand), time.perf_counter() - t0
