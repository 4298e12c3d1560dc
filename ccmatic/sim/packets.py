"""The fine mode's packets: rows of a pool of arrays, never Python objects.

A packet in the network is one row: its flow and the next packet of the list it is
on (a hop's FIFO, a hop's out list, its flow's ACKs on their way, or the free list),
and its times and its delivery-rate snapshot (:mod:`ccmatic.sim.sampler`).  The pool
grows geometrically (:meth:`Pool.reserve`, from Python, between calls of the
compiled loop); a packet ACKed or dropped returns to the free list.
"""

from __future__ import annotations

import numpy as np

from ccmatic.sim.jit import njit

# a packet's floats: when it entered the network, its snapshot, the time of its
# delivery and then of its ACK, and its flow's cumulative delivered bytes with it
SENT, S_DEL, S_DAT, S_FS, AT, CUM = range(6)
PACKET_FLOATS = 6
# a packet's ints
FLOW, NEXT = 0, 1
# the free list: its head and length
FREE_HEAD, FREE_LEN = 0, 1
BYTES_PER_PACKET = 8 * (PACKET_FLOATS + 2)


@njit
def pop_free(pi: np.ndarray, free: np.ndarray) -> int:
    """A free row (the caller checked that one is left)."""
    p = free[FREE_HEAD]
    free[FREE_HEAD] = pi[p, NEXT]
    free[FREE_LEN] -= 1
    return int(p)


@njit
def push_free(pi: np.ndarray, free: np.ndarray, p: int) -> None:
    pi[p, NEXT] = free[FREE_HEAD]
    free[FREE_HEAD] = p
    free[FREE_LEN] += 1


@njit
def append(pi: np.ndarray, lists: np.ndarray, row: int, head: int, tail: int, p: int) -> None:
    """Packet ``p`` at the end of the list whose ends are ``lists[row, head]`` and
    ``lists[row, tail]`` (-1 when empty): a hop's out list, a flow's ACKs on their way."""
    pi[p, NEXT] = -1
    if lists[row, tail] >= 0:
        pi[lists[row, tail], NEXT] = p
    else:
        lists[row, head] = p
    lists[row, tail] = p


class Pool:
    """The packets' rows: ``pf`` (floats), ``pi`` (ints), ``free`` (the free list)."""

    def __init__(self, capacity: int) -> None:
        self.pf = np.zeros((0, PACKET_FLOATS))
        self.pi = np.zeros((0, 2), dtype=np.int64)
        self.free = np.array([-1, 0], dtype=np.int64)
        self._grow(max(1, capacity))

    @property
    def capacity(self) -> int:
        return len(self.pi)

    @property
    def used(self) -> int:
        return self.capacity - int(self.free[FREE_LEN])

    def reserve(self, n: int) -> None:
        """At least ``n`` free rows."""
        if self.free[FREE_LEN] < n:
            self._grow(max(self.capacity, n - int(self.free[FREE_LEN])))

    def _grow(self, extra: int) -> None:
        old = self.capacity
        self.pf = np.concatenate([self.pf, np.zeros((extra, PACKET_FLOATS))])
        pi = np.concatenate([self.pi, np.zeros((extra, 2), dtype=np.int64)])
        pi[old:old + extra - 1, NEXT] = np.arange(old + 1, old + extra)
        pi[old + extra - 1, NEXT] = self.free[FREE_HEAD]
        self.pi = pi
        self.free[FREE_HEAD] = old
        self.free[FREE_LEN] += extra
