"""A second solver on another core: the deciding check raced for a proof.

At long horizons the time of the deciding check is chaotic in the solver's random
seed: CCAC's Copa question at T = 30 (unsat) takes 1.4 to 17.8 s over 16 seeds in a
fresh solver, median 6.8 s (docs/performance.md).  With two cores, ``ccmatic
verify`` (``--jobs 2``, its default on a machine with two cores or more) runs the same
check a second time, from the start, in a fresh solver of its own Z3 context with
another seed (the run's seed + :data:`RIVAL_SEED_OFFSET`), in a thread (Z3 releases
Python's lock while it checks), with the negated property as an assumption (over
seeds 0-9 at T = 30 such a check took 5.4 s at the median, against 10.3 s with the
property asserted).  On this machine two checks slow each other down by
5–8%, so the question costs about the lesser of two draws.

Only an *unsat* of the rival counts: it ends whatever check of the deciding step is
running (the first slice, a steady-state counterexample search, the whole check) and
the step's answer is unsat.  That is the same verdict the run would reach alone,
since unsat means that no trace meets the premises and the negated property, which
does not depend on who showed it; the proof still goes through the non-vacuity check
(:func:`ccmatic.engine.verify.confirm_proved`).  A counterexample always comes from
the run's own checks; the rival's sat or unknown is ignored.  (Z3 shares some state
between contexts, its symbol table for one, so a run with a rival need not print the
same counterexample as one without, as two runs in one process need not; each is
re-checked exactly.)  If the run's own check returns sat although the
rival said unsat, the run's model is kept: it is re-checked with exact rationals
like every counterexample, and the solver is wrong on one side (if the rival's
interrupt cuts the reading of that model, the answer is unknown, never unsat).  A rival is started
only for checks of :data:`RIVAL_MIN_CONSTRAINTS` constraints or more.

Thread safety: a Z3 context must not be used by two threads at once.  The rival's
solver is copied into its context (:meth:`Session.copy_into`) before the run's first
check; afterwards the rival thread touches only its own context, and the run's thread
only the main one, except :meth:`Rival.run`'s ``interrupt`` of the main context,
which Z3 allows from any thread (it is how Ctrl-C stops a check).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import z3

from ccmatic.encode.trace import Tagged
from ccmatic.engine.session import Answer, Sat, Session, SolverUnknown, Unsat, clear_interrupt

#: the rival's seed is the run's seed plus this (a draw independent of the run's)
RIVAL_SEED_OFFSET = 1000

#: a rival is started only for a check of at least this many constraints.  Starting
#: one costs the run some tens of milliseconds (the constraints copied into the
#: rival's context, its thread) and the run's own check slows down by 5-8% while both
#: run.  CCAC's Copa question at T = 20 (3,177 constraints), which its first slice
#: decides in about a second, took 0.1 s longer with a rival (median of seeds 0-5);
#: at T = 30 (7,012) the rival cut the median over seeds 0-9 from 9.2 to 7.4 s and
#: the worst from 21.4 to 12.3 s (docs/performance.md, "A second solver")
RIVAL_MIN_CONSTRAINTS = 4000


class Rival:
    """``Rival(sess, goal)`` starts checking ``sess``'s constraints and ``goal`` in a
    thread; pass it as the ``guard`` of the run's sessions, and :meth:`stop` it in a
    ``finally``."""

    def __init__(self, sess: Session, goal: Sequence[Tagged]) -> None:
        self.ctx = z3.Context()
        self.seed = sess.seed + RIVAL_SEED_OFFSET
        self._solver = sess.copy_into(self.ctx, self.seed)
        self._goal = [c.translate(self.ctx) for _tag, c in goal]
        self._lock = threading.Lock()
        self._proved = False  # the rival's check was unsat
        self._watched: z3.Context | None = None  # the run's context while it checks
        self._thread = threading.Thread(target=self._check, name="ccmatic-rival", daemon=True)
        self._thread.start()

    def _check(self) -> None:
        try:
            r = self._solver.check(*self._goal)
        except z3.Z3Exception:  # stopped while it set up its check
            return
        if r != z3.unsat:
            return
        with self._lock:
            self._proved = True
            if self._watched is not None:
                self._watched.interrupt()

    def run(self, s: z3.Solver, check: Callable[[], Answer]) -> Answer:
        """One check of the run (:class:`ccmatic.engine.session.Guard`): unsat at once
        if the rival has proved, else ``check()``, interrupted when the rival proves."""
        with self._lock:
            if self._proved:
                return Unsat()
            self._watched = s.ctx
        try:
            r = check()
        except z3.Z3Exception:
            if not self._release(s.ctx):
                raise
            # the interrupt landed after the check, while its model was read: the run's
            # check was sat and the rival's unsat, so one solver is wrong; say neither
            return SolverUnknown("the two solvers disagree (sat and unsat)")
        proved = self._release(s.ctx)
        return r if isinstance(r, Sat) or not proved else Unsat()

    def decided(self) -> bool:
        """Whether the rival's check was unsat."""
        with self._lock:
            return self._proved

    def _release(self, ctx: z3.Context) -> bool:
        """Stop watching; whether the rival proved (its interrupt is then consumed)."""
        with self._lock:
            self._watched = None
            proved = self._proved
        if proved:
            clear_interrupt(ctx)
        return proved

    def stop(self) -> None:
        """Interrupt the rival's check if it still runs, and wait for its thread (an
        interrupt sent before its check began may be lost, so it is sent again)."""
        while self._thread.is_alive():
            self.ctx.interrupt()
            self._thread.join(STOP_POLL_S)


#: how often :meth:`Rival.stop` interrupts the rival again until its thread ends
STOP_POLL_S = 0.02
