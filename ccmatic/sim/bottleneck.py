"""The fine mode's bottleneck: a drop-tail FIFO served at rate C, packet by packet.

Within a tick, every packet reaches the bottleneck at its own instant: a flow's n
packets of the tick are spread evenly over it, from a phase drawn afresh for each flow
and tick, so no flow is systematically first.  Between two arrivals the queue is
served at C, so arrivals and service interleave; a packet is admitted when the bytes
queued (including what is left of the packet in service) plus its own fit in the
buffer, so a buffer of β bytes holds β bytes, whatever the tick length.  Every
arriving packet is treated alike: whether it is dropped depends only on the queue it
finds, never on its flow's index.

A packet is delivered when its last byte leaves the queue; its ACK time is drawn by
the link (:mod:`ccmatic.sim.ackpath`).

With a rate schedule (:class:`ccmatic.sim.links.RateSchedule`) the queue is served at
the rate in force, which switches exactly at the change points: a packet in service
when the rate changes finishes at the new rate.

Packets are rows of a pool of arrays (:class:`ccmatic.sim.packets.Pool`), never
Python objects: a queue of a million packets costs tens of megabytes.  A hop's FIFO
is a list linked through the pool; a delivered packet moves to the hop's *out* list,
which its caller empties.  The functions are compiled (:mod:`ccmatic.sim.jit`);
:class:`Bottleneck` runs them on one hop, from Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ccmatic.sim.jit import njit
from ccmatic.sim.links import RateSchedule
from ccmatic.sim.packets import AT, FLOW, NEXT, SENT, Pool, append, pop_free, push_free

EPS = 1e-9

# a hop's floats
T, QBYTES, HEAD_LEFT, PEAK, RATE, SEG_LO, SEG_HI, BUFFER = range(8)
HOP_FLOATS = 8
# a hop's ints: its FIFO (head, tail, length) and its out list (head, tail)
HEAD, TAIL, LEN, OUT_HEAD, OUT_TAIL = range(5)
HOP_INTS = 5

Delivered = Callable[[int, float, float], None]  # (flow, delivery time, arrival time)


def new_hops(n: int, C: float, buffers: list[float], scheduled: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``n`` empty hops at rate C (all the time), or on a schedule (its rate is looked
    up at the first service: the stretch it holds on starts empty)."""
    hf = np.zeros((n, HOP_FLOATS))
    hf[:, RATE] = C
    hf[:, SEG_LO], hf[:, SEG_HI] = (math.inf, -math.inf) if scheduled else (-math.inf, math.inf)
    hf[:, BUFFER] = buffers
    hi = np.full((n, HOP_INTS), -1, dtype=np.int64)
    hi[:, LEN] = 0
    return hf, hi


def schedule_arrays(sched: RateSchedule | None) -> tuple[np.ndarray, np.ndarray]:
    """A rate schedule's change times and rates (empty: a constant rate)."""
    if sched is None:
        return np.zeros(0), np.zeros(0)
    return np.array([t for t, _ in sched.points]), np.array([c for _, c in sched.points])


@njit
def _next_stretch(hf: np.ndarray, h: int, st: np.ndarray, sc: np.ndarray, now: float) -> None:
    """The rate in force at ``now`` and the stretch of time it holds on."""
    i = int(np.searchsorted(st, now, side="right"))
    hf[h, RATE] = sc[max(0, i - 1)]
    hf[h, SEG_LO] = st[i - 1] if now >= 0 and i > 0 else -math.inf
    hf[h, SEG_HI] = st[i] if i < len(st) else math.inf


@njit
def serve_until(hf: np.ndarray, hi: np.ndarray, h: int, pf: np.ndarray, pi: np.ndarray, st: np.ndarray,
                sc: np.ndarray, t: float, mss: float) -> None:
    """Serve hop h's queue up to ``t`` at the rate in force; delivered packets (their
    AT: the delivery time) go to its out list, in order."""
    now = hf[h, T]
    if t <= now:
        return
    while hi[h, LEN] > 0:
        if not hf[h, SEG_LO] <= now < hf[h, SEG_HI]:
            _next_stretch(hf, h, st, sc, now)
        C = hf[h, RATE]
        end = min(t, hf[h, SEG_HI])
        done = now + hf[h, HEAD_LEFT] / C
        if done > end + EPS:
            served = (end - now) * C
            hf[h, HEAD_LEFT] -= served
            hf[h, QBYTES] -= served
            if end >= t:
                break
            now = end  # the rate changes with this packet in service
            continue
        hf[h, QBYTES] -= hf[h, HEAD_LEFT]
        p = hi[h, HEAD]
        hi[h, HEAD] = pi[p, NEXT]
        hi[h, LEN] -= 1
        hf[h, HEAD_LEFT] = mss
        now = done
        pf[p, AT] = done
        append(pi, hi, h, OUT_HEAD, OUT_TAIL, p)
    if hi[h, LEN] == 0:
        hf[h, QBYTES] = 0.0
        hi[h, TAIL] = -1
    hf[h, T] = max(hf[h, T], t)


@njit
def admit(hf: np.ndarray, hi: np.ndarray, h: int, pf: np.ndarray, pi: np.ndarray, st: np.ndarray, sc: np.ndarray,
          p: int, t: float, mss: float) -> bool:
    """Packet ``p`` reaches hop h at ``t``: queued (True) or dropped (the caller frees it)."""
    serve_until(hf, hi, h, pf, pi, st, sc, t, mss)
    if hf[h, QBYTES] + mss > hf[h, BUFFER] + EPS:
        return False
    pi[p, NEXT] = -1
    if hi[h, LEN] == 0:
        hi[h, HEAD] = p
        hf[h, HEAD_LEFT] = mss
    else:
        pi[hi[h, TAIL], NEXT] = p
    hi[h, TAIL] = p
    hi[h, LEN] += 1
    hf[h, QBYTES] += mss
    hf[h, PEAK] = max(hf[h, PEAK], hf[h, QBYTES])
    return True


@njit
def hop_tick(hf: np.ndarray, hi: np.ndarray, h: int, pf: np.ndarray, pi: np.ndarray, free: np.ndarray,
             st: np.ndarray, sc: np.ndarray, times: np.ndarray, pkts: np.ndarray, end: float, mss: float,
             admitted: np.ndarray) -> None:
    """One tick of hop h ending at ``end``: packets ``pkts`` arrive at ``times`` (in
    time order; equal times in the given order); a dropped one is freed, an admitted
    one counted in ``admitted[flow]``.  :data:`PEAK` is then the tick's largest queue."""
    hf[h, PEAK] = hf[h, QBYTES]
    order = np.argsort(times, kind="mergesort")
    for i in order:
        p = pkts[i]
        if admit(hf, hi, h, pf, pi, st, sc, p, times[i], mss):
            admitted[pi[p, FLOW]] += 1
        else:
            push_free(pi, free, p)
    serve_until(hf, hi, h, pf, pi, st, sc, end, mss)


@njit
def spread(start: float, dt: float, n: int, phase: float, times: np.ndarray, k0: int, group: int) -> None:
    """A flow's ``n`` packets of the tick [start, start + dt), evenly from ``phase`` in
    groups of ``group`` back to back (1: one by one): their arrival times into
    ``times[k0:k0 + n]``."""
    gap = dt / n
    for k in range(n):
        times[k0 + k] = start + ((k // group) * group + phase) * gap


class Bottleneck:
    """One hop run from Python (tests; the simulator runs the same functions in its
    compiled loop): ``on_delivered(flow, at, arrived)`` for each delivered packet."""

    def __init__(self, C: float, buffer: float, mss: float, on_delivered: Delivered,
                 schedule: RateSchedule | None = None) -> None:
        self.C = C
        self.mss = mss
        self.on_delivered = on_delivered
        self.hf, self.hi = new_hops(1, C, [buffer], schedule is not None)
        self.st, self.sc = schedule_arrays(schedule)
        self.pool = Pool(64)

    @property
    def qbytes(self) -> float:
        return float(self.hf[0, QBYTES])

    @property
    def peak(self) -> float:
        return float(self.hf[0, PEAK])

    @property
    def fifo(self) -> int:
        """The packets queued."""
        return int(self.hi[0, LEN])

    def _drain(self) -> None:
        pf, pi, hi = self.pool.pf, self.pool.pi, self.hi
        p = int(hi[0, OUT_HEAD])
        while p >= 0:
            nxt = int(pi[p, NEXT])
            self.on_delivered(int(pi[p, FLOW]), float(pf[p, AT]), float(pf[p, SENT]))
            push_free(pi, self.pool.free, p)
            p = nxt
        hi[0, OUT_HEAD] = hi[0, OUT_TAIL] = -1

    def serve_until(self, t: float) -> None:
        serve_until(self.hf, self.hi, 0, self.pool.pf, self.pool.pi, self.st, self.sc, t, self.mss)
        self._drain()

    def _packet(self, flow: int, t: float) -> int:
        self.pool.reserve(1)
        p = int(pop_free(self.pool.pi, self.pool.free))
        self.pool.pi[p, FLOW] = flow
        self.pool.pf[p, SENT] = t
        return p

    def arrive(self, flow: int, t: float) -> bool:
        """One packet of ``flow`` reaches the queue at ``t``: admitted (True) or dropped."""
        p = self._packet(flow, t)
        ok = bool(admit(self.hf, self.hi, 0, self.pool.pf, self.pool.pi, self.st, self.sc, p, t, self.mss))
        if not ok:
            push_free(self.pool.pi, self.pool.free, p)
        self._drain()
        return ok

    def tick(self, start: float, dt: float, packets: list[int], rng: np.random.Generator) -> list[int]:
        """Run one tick [start, start + dt): ``packets[f]`` packets of flow f arrive,
        spread evenly from a random phase; returns how many of each were admitted."""
        total = sum(packets)
        times = np.empty(total)
        pkts = np.empty(total, dtype=np.int64)
        k = 0
        for f, n in enumerate(packets):
            if n:
                spread(start, dt, n, float(rng.random()), times, k, 1)
                for j in range(k, k + n):
                    pkts[j] = self._packet(f, 0.0)
                    self.pool.pf[pkts[j], SENT] = times[j]
                k += n
        admitted = np.zeros(len(packets), dtype=np.int64)
        hop_tick(self.hf, self.hi, 0, self.pool.pf, self.pool.pi, self.pool.free, self.st, self.sc, times, pkts,
                 start + dt, self.mss, admitted)
        self._drain()
        return [int(a) for a in admitted]
