"""Queueing-delay bounds from an RTT sample (Eq. 4.1.1; docs/semantics.md §Queueing delay).

A byte whose delay through the network was in [dt, dt + 1) steps gives an RTT
sample of R plus that delay, so qdel_lo = max(0, dt − D) and qdel_hi = dt + 1; a
sample beyond the horizon T (no bucket) gives qdel_lo = T − D and qdel_hi = 1000·T.
The encoder (:mod:`ccmatic.encode.qdel`) applies this to symbolic buckets, the
simulator to the bucket of a measured delay.
"""

from __future__ import annotations

from collections.abc import Sequence

from ccmatic.semantics.domain import Domain, V

#: qdel_hi when no sample is within the horizon, in multiples of T ("unknown")
BEYOND = 1000


def bounds(d: Domain[V], bucket: Sequence[V | bool], D: int) -> tuple[V, V]:
    """(qdel_lo, qdel_hi) from the buckets dt = 0..T−1 (at most one holds)."""
    T = len(bucket)
    lo = d.whole(T - D)
    hi = d.whole(BEYOND * T)
    for dt in reversed(range(T)):
        lo = d.ite(bucket[dt], d.whole(max(0, dt - D)), lo)
        hi = d.ite(bucket[dt], d.whole(dt + 1), hi)
    return lo, hi
