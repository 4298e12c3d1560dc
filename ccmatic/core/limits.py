"""Limits on the size of inputs: each is checked up front and reported as one line
naming the limit, never a hang, a crash or an out-of-memory.  README "Limits" gives
the largest inputs tried and their times."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from fractions import Fraction

#: bytes of one input file (CCA, query, model, proof, objective library)
MAX_FILE_BYTES = 4 * 2**20
#: nesting depth of a program or formula: parenthesised or unary nesting, operator
#: chains and elif chains (each elif is one level).  Python recursion is raised to
#: :data:`RECURSION_LIMIT` so that this depth elaborates and encodes.
MAX_DEPTH = 10_000
RECURSION_LIMIT = 200_000


def deep_recursion() -> None:
    """Let the elaborator and the evaluators recurse :data:`MAX_DEPTH` levels deep
    (Python 3.11+ runs Python-to-Python calls without growing the C stack)."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


#: terms one comprehension unrolls to (``sum(x[t] for t in range(n))``)
MAX_UNROLL = 100_000
#: values of one hole's domain written ``range(...)`` (a written-out set is bounded by
#: the file size, MAX_FILE_BYTES: some 800,000 values)
MAX_HOLE_VALUES = 1_000_000
#: default largest horizon T of a query or proof (``--max-T`` raises it): the
#: encoding grows with T²: cc_qdel on CCAC at T = 100 takes 18 s to encode, 1.3 GB
MAX_T = 100


@dataclass(frozen=True)
class Limits:
    """The limits a user may raise (from the command line)."""

    max_T: int = MAX_T


DEFAULT_LIMITS = Limits()


def horizon_error(T: int, limits: Limits) -> str | None:
    if T > limits.max_T:
        return (f"T = {T:,} is over the horizon limit of {limits.max_T:,} steps (the encoding grows with T²; "
                f"T = 100 takes about 20 s and 1.3 GB to encode with beliefs)")
    return None


def delay_error(R: int, D: int, T: int) -> str | None:
    """A horizon must outlast one round trip plus the jitter bound: with R + D ≥ T
    no acknowledgement of the trace's own sending arrives within it, and objectives
    over steps R + D ... T − 1 hold vacuously."""
    if R + D >= T:
        return f"R + D = {R + D} is not shorter than the horizon T = {T} (need R + D < T)"
    return None


#: flows of a model (the encoding grows linearly with N, solving much faster)
MAX_FLOWS = 64
#: local worker processes: at most this many per core
JOBS_PER_CORE = 4
#: simulator: ticks of one run (R/20 each; about 140,000 ticks per second of wall
#: time for one flow), ticks × flows of a recorded run (its series take up to about
#: 200 bytes per tick and flow: 10,000,000 ticks of one flow peak at 1.7 GB; a
#: streamed run keeps none), and flows (each a sender object of a few kB)
MAX_SIM_TICKS = 10_000_000
MAX_SIM_CELLS = 10_000_000
SIM_BYTES_PER_CELL = 200
MAX_SIM_FLOWS = 10_000
#: simulator: ticks per RTprop (``--ticks``; the run's tick count above bounds the
#: whole run) and µs between two ACKs of an aggregated batch (``--ack-train``; a
#: batch's ACKs leave back to back, so a train is microseconds, not milliseconds)
MAX_TICKS_PER_RTT = 100_000
MAX_ACK_TRAIN_US = 1_000
#: simulator: packets an unpaced sender sends back to back (``--burst``)
MAX_BURST = 64
#: simulator: packets its queues may hold together (``--max-queue``; each is a row of
#: 64 bytes, :mod:`ccmatic.sim.packets`): past it a run stops with one line
MAX_SIM_QUEUE = 4_000_000
#: numbers given on the command line (constants, grids, rates): magnitude at most
#: 10^15 and, when not 0, at least 10^-15; beyond that floats overflow and no
#: model quantity is meaningful
MAX_MAGNITUDE = 10**15
#: ``search`` shrinks a range at most 2^40-fold (--tol ≥ range / 2^40; each probe
#: shrinks the bracket to at most 5/8, so about 60 probes)
MAX_BISECTIONS = 40


def magnitude_error(x: Fraction) -> str | None:
    """Why a number is out of the range ccmatic accepts, or None."""
    v = abs(x)
    if v > MAX_MAGNITUDE or (v != 0 and v < Fraction(1, MAX_MAGNITUDE)):
        k = len(str(MAX_MAGNITUDE)) - 1
        return f"its magnitude is outside [1e-{k}, 1e{k}]"
    return None
