"""Solver sessions and the solver's three answers.

One factory (:func:`make_solver`) sets timeout, seed and logic; a :class:`Session`
holds a solver built once per problem and checks in pushed scopes, always popped.
The solver answers ``sat`` (with a model), ``unsat`` or ``unknown``; turning these
into verdicts (proved, counterexample, unknown) is the job of the algorithms above.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import z3

from ccmatic.encode.trace import Tagged

LOGIC = "QF_LRA"  # linear real arithmetic with booleans: every encoding stays in it


def make_solver(timeout_s: float | None, seed: int, logic: str | None = LOGIC) -> z3.Solver:
    """The one place where solvers are created: timeout (ms), seed and logic are set
    here.  ``QF_LRA`` lets Z3 use its specialised solver, several times faster on
    CEGIS checks than the general one."""
    return _configure(z3.SolverFor(logic) if logic else z3.Solver(), timeout_s, seed)


def _configure(s: z3.Solver, timeout_s: float | None, seed: int) -> z3.Solver:
    # Z3's own Ctrl-C handler would swallow SIGINT during a check (the check just
    # returns unknown); ccmatic handles SIGINT itself and interrupts Z3 explicitly
    s.set("ctrl_c", False)
    set_timeout(s, timeout_s)
    s.set("random_seed", seed)
    return s


NO_TIMEOUT_MS = 2**32 - 1  # Z3's "no limit"


def set_timeout(s: z3.Solver, timeout_s: float | None) -> None:
    s.set("timeout", NO_TIMEOUT_MS if timeout_s is None else max(1, min(NO_TIMEOUT_MS, int(timeout_s * 1000))))


class StopTimer:
    """Interrupts whatever check of a context runs once its time is up (:func:`stop_at`)."""

    def __init__(self, ctx: z3.Context, seconds: float) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self._armed = True
        self.fired = False
        self._timer = threading.Timer(max(0.0, seconds), self._fire)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._armed:
                self._ctx.interrupt()
                self.fired = True

    def disarm(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._armed = False
        if self.fired:
            clear_interrupt(self._ctx)


@contextmanager
def stop_at(ctx: z3.Context, seconds: float | None) -> Iterator[StopTimer | None]:
    """A time limit for the checks of ``ctx`` inside the block, ``seconds`` from now
    (None: none), for a solver whose own limit must stay as it is: setting any
    parameter of a solver after its first check makes every later check slower
    (G7-arbitrary's incremental verifier: 2.4x over 40 checks with its time limit set
    again before each, docs/performance.md).  A check it stops returns unknown (or
    raises, if the interrupt lands while a model is read: then ``.fired`` is true)."""
    if seconds is None:
        yield None
        return
    t = StopTimer(ctx, seconds)
    t.start()
    try:
        yield t
    finally:
        t.disarm()


def clear_interrupt(ctx: z3.Context | None = None) -> None:
    """Consume a pending ``interrupt()`` of a Z3 context (default: the main one): Z3
    keeps it until the next check, and meanwhile rejects e.g. ``push`` ("push
    canceled")."""
    z3.Solver(ctx=ctx).check()


@dataclass(frozen=True)
class Sat:
    model: z3.ModelRef


@dataclass(frozen=True)
class Unsat:
    pass


@dataclass(frozen=True)
class SolverUnknown:
    reason: str


Answer = Sat | Unsat | SolverUnknown


class Guard(Protocol):
    """Runs a session's checks, and may end one early with an answer of its own
    (:class:`ccmatic.engine.rival.Rival`: a proof found by a second solver)."""

    def run(self, s: z3.Solver, check: Callable[[], Answer]) -> Answer: ...

    def decided(self) -> bool:
        """Whether the guard has shown the check unsat itself (then every check it
        runs answers unsat)."""
        ...


class Session:
    """A solver holding base constraints; checks happen in pushed scopes."""

    def __init__(self, base: Iterable[Tagged], timeout_s: float | None, seed: int, logic: str | None = LOGIC,
                 solver: z3.Solver | None = None, guard: Guard | None = None) -> None:
        """``solver``: start from this (configured) solver instead of a new one;
        ``guard``: runs every check (:meth:`check`)."""
        self.solver = solver if solver is not None else make_solver(timeout_s, seed, logic)
        self.seed = seed
        self.timeout_s = timeout_s
        self.guard = guard
        assert_all(self.solver, base)

    def fork(self, extra: Iterable[Tagged], timeout_s: float | None) -> Session:
        """A new session holding these constraints and ``extra``.  Fork only a session
        that never checked: the fork is then as fresh as a newly built one (no learned
        state), at a fraction of the cost of adding every constraint again."""
        copy = _configure(self.solver.translate(self.solver.ctx), timeout_s, self.seed)
        return Session(extra, timeout_s, self.seed, solver=copy)

    @contextmanager
    def scope(self) -> Iterator[z3.Solver]:
        self.solver.push()
        try:
            yield self.solver
        finally:
            self.solver.pop()

    def check_assuming(self, assumptions: Sequence[z3.BoolRef]) -> Answer:
        """A check under assumptions: nothing is added, so no scope is needed."""
        return answer(self.solver, assumptions)

    def check(self, extra: Iterable[Tagged] = (), rlimit: int | None = None) -> Answer:
        """``rlimit``: this check also stops (unknown) after so many of Z3's resource
        units (deterministic, unlike a time limit: the same answer on a loaded
        machine)."""
        with self.scope() as s:
            assert_all(s, extra)
            if rlimit is None:
                return self._answer(s)
            before = rlimit_count(s)
            with resource_limit(s.ctx, rlimit):
                r = self._answer(s)
            if isinstance(r, SolverUnknown) and rlimit_count(s) - before >= rlimit:
                return SolverUnknown(OUT_OF_RESOURCES)  # Z3 says only "canceled", as for an interrupt
            return r

    def _answer(self, s: z3.Solver) -> Answer:
        return answer(s) if self.guard is None else self.guard.run(s, lambda: answer(s))


def assert_all(s: z3.Solver, constraints: Iterable[Tagged]) -> None:
    """``s.add`` of each constraint, without its checks of what it is given for a
    ``BoolRef`` (it wraps only terms of Boolean sort), which took most of the time of
    building a session (CCAC's Copa question at T = 10, 1,048 constraints: 21 ms with
    ``add``, 6 ms without); anything else goes through ``add`` as before."""
    ctx, solver = s.ctx.ref(), s.solver
    for _tag, c in constraints:
        if isinstance(c, z3.BoolRef) and c.ctx is s.ctx:
            z3.Z3_solver_assert(ctx, solver, c.as_ast())
        else:
            s.add(c)


@contextmanager
def resource_limit(ctx: z3.Context, rlimit: int) -> Iterator[None]:
    """Z3's resource limit of every check in ``ctx`` meanwhile (a check counts its
    units from its own start), set on the context, not on the solver: a solver's
    parameters are set once, before its constraints (:func:`make_solver`), because
    setting any of them afterwards (``Solver.set``, which re-reads the solver's whole
    configuration) makes its next checks slower (CCAC's BBR question at T = 10: the
    deciding check 1.4x slower at the median of 30 seeds, with ``rlimit`` or with
    ``timeout`` set after the constraints).  A solver's own ``rlimit``, if set, wins."""
    z3.Z3_update_param_value(ctx.ref(), "rlimit", str(rlimit))
    try:
        yield
    finally:
        z3.Z3_update_param_value(ctx.ref(), "rlimit", "0")


#: the reason of an unknown from a check that used up its ``rlimit``
OUT_OF_RESOURCES = "resource limit reached"


def rlimit_count(s: z3.Solver) -> int:
    """The resource units Z3 has counted so far in this solver (they only grow)."""
    st = s.statistics()
    names = st.keys()  # z3's Statistics has no "in"
    return int(st.get_key_value("rlimit count")) if "rlimit count" in names else 0


def out_of_resources(r: SolverUnknown) -> bool:
    """The check stopped at its resource limit (``rlimit``), not for another reason."""
    return r.reason == OUT_OF_RESOURCES


def answer(s: z3.Solver, assumptions: Sequence[z3.BoolRef] = ()) -> Answer:
    r = s.check(*assumptions)
    if r == z3.sat:
        return Sat(s.model())
    if r == z3.unsat:
        return Unsat()
    return SolverUnknown(s.reason_unknown() or "unknown")
