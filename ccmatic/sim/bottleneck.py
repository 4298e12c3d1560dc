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
the link (:class:`ccmatic.sim.links.AckDelay`).

With a rate schedule (:class:`ccmatic.sim.links.RateSchedule`) the queue is served at
the rate in force, which switches exactly at the change points: a packet in service
when the rate changes finishes at the new rate.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from ccmatic.sim.links import RateSchedule

EPS = 1e-9

Delivered = Callable[[int, float, float], None]  # (flow, delivery time, arrival time)


class Bottleneck:
    """The queue and its server; time only moves forward."""

    def __init__(self, C: float, buffer: float, mss: float, on_delivered: Delivered,
                 schedule: RateSchedule | None = None) -> None:
        self.C = C  # the rate at t = 0 with a schedule
        self.schedule = schedule
        # self._rate holds on [start, end): all time without a schedule
        self._seg = (-math.inf, math.inf) if schedule is None else (math.inf, -math.inf)
        self._rate = C
        self.buffer = buffer
        self.mss = mss
        self.on_delivered = on_delivered
        self.fifo: deque[list[float]] = deque()  # [flow, bytes left, arrival time]
        self.qbytes = 0.0
        self.peak = 0.0  # the largest queue in the current tick (bytes)
        self.t = 0.0  # served up to this time

    def serve_until(self, t: float) -> None:
        """Serve the queue from :attr:`t` to ``t``, at the rate in force (C, or the
        schedule's rate on each stretch where it is constant)."""
        now = self.t
        if t <= now:
            return
        fifo = self.fifo
        while fifo:
            if not self._seg[0] <= now < self._seg[1]:
                self._next_stretch(now)
            C = self._rate
            end = min(t, self._seg[1])
            head = fifo[0]
            done = now + head[1] / C
            if done > end + EPS:
                served = (end - now) * C
                head[1] -= served
                self.qbytes -= served
                if end >= t:
                    break
                now = end  # the rate changes with this packet in service
                continue
            self.qbytes -= head[1]
            fifo.popleft()
            now = done
            self.on_delivered(int(head[0]), done, head[2])
        if not fifo:
            self.qbytes = 0.0
        self.t = max(self.t, t)

    def _next_stretch(self, now: float) -> None:
        """The rate in force at ``now`` and the stretch of time it holds on."""
        sched = self.schedule
        assert sched is not None
        self._rate, self._seg = sched.rate(now), (sched.prev_change(now), sched.next_change(now))

    def arrive(self, flow: int, t: float, sent: float | None = None) -> bool:
        """One packet of ``flow`` reaches the queue at ``t``: admitted (True) or
        dropped.  ``sent`` is when it entered the network, if before ``t`` (a later
        hop of a parking lot): the delivery callback gets it as the arrival time."""
        self.serve_until(t)
        if self.qbytes + self.mss > self.buffer + EPS:
            return False
        self.fifo.append([float(flow), self.mss, t if sent is None else sent])
        self.qbytes += self.mss
        self.peak = max(self.peak, self.qbytes)
        return True

    def tick(self, start: float, dt: float, packets: list[int], rng: np.random.Generator) -> list[int]:
        """Run one tick [start, start + dt): ``packets[f]`` packets of flow f arrive,
        spread evenly from a random phase; returns how many of each were admitted
        (:attr:`peak` is then the tick's largest queue)."""
        arrivals = spread(start, dt, packets, rng)
        arrivals.sort()
        self.peak = self.qbytes
        admitted = [0] * len(packets)
        for t, f in arrivals:
            if self.arrive(f, t):
                admitted[f] += 1
        self.serve_until(start + dt)
        return admitted

    def tick_at(self, end: float, arrivals: list[tuple[float, int, float]], nflows: int) -> list[int]:
        """Run a tick ending at ``end`` on explicit arrivals (time, flow, sent at);
        returns how many of each flow's were admitted."""
        arrivals.sort()
        self.peak = self.qbytes
        admitted = [0] * nflows
        for t, f, sent in arrivals:
            if self.arrive(f, t, sent):
                admitted[f] += 1
        self.serve_until(end)
        return admitted


def spread(start: float, dt: float, packets: list[int], rng: np.random.Generator) -> list[tuple[float, int]]:
    """The arrival instants (time, flow) of a tick's packets: flow f's ``packets[f]``
    spread evenly over [start, start + dt) from a phase drawn for the flow."""
    arrivals: list[tuple[float, int]] = []
    phases = rng.random(len(packets))
    for f, n in enumerate(packets):
        if n:
            gap = dt / n
            arrivals.extend((start + (k + float(phases[f])) * gap, f) for k in range(n))
    return arrivals
