"""Fine-mode links: the bottleneck's rate (constant or a schedule), jitter bound and
buffer, and its kind (``ideal``, ``cbr_delay``, ``ack_agg``), which says how the ACK of
a byte the bottleneck delivered reaches its sender (thesis §2.3, Appendix B.6;
:mod:`ccmatic.sim.ackpath` draws it and its doc gives each kind and the per-flow
jitter boxes).

On every kind the rate C may follow a :class:`RateSchedule` (piecewise constant, as
in B.6's convergence runs that double or halve it every 20 s).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np


LinkKind = Literal["ideal", "cbr_delay", "ack_agg"]
LINK_KINDS: tuple[LinkKind, ...] = ("ideal", "cbr_delay", "ack_agg")
AggKind = Literal["uniform", "fixed"]
AGG_KINDS: tuple[AggKind, ...] = ("uniform", "fixed")


@dataclass(frozen=True)
class RateSchedule:
    """A piecewise-constant link rate: change points ``((0, C0), (t1, C1), ...)``
    (seconds, bytes/s), times strictly increasing from 0; C_k is in force on
    [t_k, t_{k+1}) and the last rate forever after (the first one before 0)."""

    points: tuple[tuple[float, float], ...]
    _times: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pts = self.points
        if not pts or pts[0][0] != 0:
            raise ValueError(f"a rate schedule starts at t = 0, got {pts!r}")
        if any(not (b[0] > a[0]) for a, b in pairwise(pts)):
            raise ValueError(f"a rate schedule's times must increase strictly, got {pts!r}")
        if any(not (math.isfinite(c) and c > 0) or not math.isfinite(t) for t, c in pts):
            raise ValueError(f"a rate schedule's rates must be positive and finite, got {pts!r}")
        object.__setattr__(self, "_times", tuple(t for t, _ in pts))

    def _index(self, t: float) -> int:
        return max(0, bisect_right(self._times, t) - 1)

    def rate(self, t: float) -> float:
        """C at time ``t`` (bytes/s); at a change point, the new rate."""
        return self.points[self._index(t)][1]

    def rates(self, ts: np.ndarray) -> np.ndarray:
        """:meth:`rate` at each of the times ``ts``."""
        import numpy as np  # large, and only the simulator needs it

        idx = np.maximum(np.searchsorted(self._times, ts, side="right") - 1, 0)
        return np.array([c for _, c in self.points])[idx]

    def prev_change(self, t: float) -> float:
        """The last change point at or before ``t`` (-inf before 0)."""
        return self._times[bisect_right(self._times, t) - 1] if t >= 0 else -math.inf

    def next_change(self, t: float) -> float:
        """The first change point after ``t`` (inf if none)."""
        i = bisect_right(self._times, t)
        return self._times[i] if i < len(self._times) else math.inf

    def served(self, t0: float, t1: float) -> float:
        """The bytes the link can serve in [t0, t1]: the integral of C(t)."""
        if t1 < t0:
            return -self.served(t1, t0)
        total, t, i = 0.0, t0, self._index(t0)
        while True:
            end = self._times[i + 1] if i + 1 < len(self._times) else math.inf
            c = self.points[i][1]
            if t1 <= end:
                return total + (t1 - t) * c
            total += (end - t) * c
            t, i = end, i + 1


@dataclass(frozen=True)
class Link:
    """A bottleneck: rate C (bytes/s), jitter bound D (s), drop-tail buffer (bytes,
    None: infinite).  With a ``schedule`` the rate varies over time and C is its rate
    at t = 0 (None: C throughout).  ``agg`` is how ``ack_agg`` spaces its releases,
    ``train`` (s) the time between two ACKs of one of its batches (0: a batch arrives
    at one instant; :mod:`ccmatic.sim.ackpath`)."""

    kind: LinkKind
    C: float
    D: float
    buffer: float | None
    schedule: RateSchedule | None = None
    agg: AggKind = "uniform"
    train: float = 0.0

    def __post_init__(self) -> None:
        if self.schedule is not None and self.schedule.rate(0.0) != self.C:
            raise ValueError(f"C = {self.C} but the rate schedule starts at {self.schedule.rate(0.0)}")

    def rate(self, t: float) -> float:
        """C(t), bytes/s."""
        return self.C if self.schedule is None else self.schedule.rate(t)

    def capacity(self, t0: float, t1: float) -> float:
        """The bytes the link can serve in [t0, t1]."""
        return self.C * (t1 - t0) if self.schedule is None else self.schedule.served(t0, t1)
