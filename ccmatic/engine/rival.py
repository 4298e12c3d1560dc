"""A second solver on another core: the deciding check raced for a proof.

At long horizons the time of the deciding check is chaotic in the solver's random
seed: CCAC's Copa question at T = 30 (unsat) takes 1.4 to 17.8 s over 16 seeds in a
fresh solver, median 6.8 s (docs/performance.md).  With two cores, ``ccmatic
verify`` (``--jobs 2``, its default on a machine with two cores or more) runs the same
check a second time, from the start, with another seed (the run's seed +
:data:`RIVAL_SEED_OFFSET`) and the negated property as an assumption, in a child
process forked from the run just before its first check.

Why a forked process and not a thread over a copy: the child holds the session's
own, never-checked solver, in the same Z3 context with the same term identities.
A copy translated into a second context (what a thread needs, since one context must
not be used by two threads) re-numbers every term, and Z3 orders the sums of a
linear constraint by those numbers; on Copa at T = 30 the translated copy took 4.5 s
at the median of eight seeds where the same solver in its own context took 1.9 s
(docs/performance.md, "A second solver").  Two processes also share no allocator.

Only an *unsat* of the rival counts: the child writes one byte on a pipe, a thread
of the run reads it and interrupts whatever check of the deciding step is running
(the first slice, a steady-state counterexample search, the whole check), and the
step's answer is unsat.  That is the same verdict the run would reach alone, since
unsat means that no trace meets the premises and the negated property, which does
not depend on who showed it; the proof still goes through the non-vacuity check
(:func:`ccmatic.engine.verify.confirm_proved`).  A counterexample always comes from
the run's own checks; the rival's sat or unknown is ignored.  If the run's own check
returns sat although the rival said unsat, the run's model is kept: it is re-checked
with exact rationals like every counterexample, and the solver is wrong on one side
(if the rival's interrupt cuts the reading of that model, the answer is unknown,
never unsat).  A rival is started only for checks of :data:`RIVAL_MIN_CONSTRAINTS`
constraints or more.

The child leaves nothing behind: :meth:`Rival.stop` kills and reaps it (the run calls
it in a ``finally``); it dies with the run on Ctrl-C and SIGTERM (it takes their
default action, and the run's handlers stop the run), and on the run's own death,
even by SIGKILL (``PR_SET_PDEATHSIG``).  It runs no Python exit code and flushes
none of the run's buffers (``os._exit``).  Where ``fork`` does not exist there is no
rival.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence

import z3

from ccmatic.encode.trace import Tagged
from ccmatic.engine.session import Answer, Sat, Session, SolverUnknown, Unsat, clear_interrupt

#: the rival's seed is the run's seed plus this (a draw independent of the run's)
RIVAL_SEED_OFFSET = 1000

#: a rival is started only for a check of at least this many constraints: below, the
#: run's first check decides in about a second and a second core only costs
#: (docs/performance.md, "A second solver")
RIVAL_MIN_CONSTRAINTS = 4000

#: whether this platform can start a rival (it needs ``fork``)
AVAILABLE = hasattr(os, "fork")


class Rival:
    """``Rival(sess, goal)`` forks a child that checks ``sess``'s constraints and
    ``goal``; pass it as the ``guard`` of the run's sessions, and :meth:`stop` it in a
    ``finally``.  Create it before ``sess`` is first checked, from the thread that
    runs Z3 (no other thread may be inside Z3 at the fork)."""

    def __init__(self, sess: Session, goal: Sequence[Tagged]) -> None:
        self.seed = sess.seed + RIVAL_SEED_OFFSET
        self._lock = threading.Lock()
        self._proved = False  # the rival's check was unsat
        self._watched: z3.Context | None = None  # the run's context while it checks
        read, write = os.pipe()
        parent = os.getpid()
        try:
            with warnings.catch_warnings():
                # Python >= 3.12 warns on fork in a process with threads; the child
                # calls only Z3 (no lock another thread could hold) and then os._exit
                warnings.simplefilter("ignore", DeprecationWarning)
                self.pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            raise
        if self.pid == 0:
            os.close(read)
            _child(sess.solver, [c for _tag, c in goal], self.seed, write, parent)
        os.close(write)
        self._read = read
        self._thread = threading.Thread(target=self._wait, name="ccmatic-rival", daemon=True)
        self._thread.start()

    def _wait(self) -> None:
        """The child's byte: a proof (an empty read: it ended or was killed without one)."""
        if os.read(self._read, 1) != PROVED:
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
        """Kill the child if it still runs, reap it, and end the reading thread."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:  # reaped already (a SIGCHLD handler of the embedding program)
            pass
        self._thread.join()
        os.close(self._read)


def start_rival(sess: Session, goal: Sequence[Tagged]) -> Rival | None:
    """A :class:`Rival`, or none where ``fork`` is missing or fails (the run then
    decides alone, as with ``--jobs 1``)."""
    if not AVAILABLE:
        return None
    try:
        return Rival(sess, goal)
    except OSError:
        return None


#: what the child writes on its pipe when its check is unsat
PROVED = b"u"

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _child(solver: z3.Solver, goal: list[z3.BoolRef], seed: int, write: int, parent: int) -> None:
    """The forked rival: check, report a proof, exit without running Python's exit code."""
    try:
        signal.set_wakeup_fd(-1)  # the run's wakeup fd would report the child's signals to it
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        if sys.platform == "linux":
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the run died before the line above
            os._exit(1)
        solver.set("random_seed", seed)
        if solver.check(*goal) == z3.unsat:
            os.write(write, PROVED)
    finally:
        os._exit(0)
