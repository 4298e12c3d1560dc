"""Queueing-delay bounds from an RTT sample (Eq. 4.1.1; docs/semantics.md §Queueing delay).

A byte whose delay through the network was in [dt, dt + 1) steps gives an RTT
sample of R plus that delay, so qdel_lo = max(0, dt − D) and qdel_hi = dt + 1; a
sample beyond the horizon T (no bucket) gives qdel_lo = T − D and qdel_hi = 1000·T.
The encoder (:mod:`ccmatic.encode.derived`) applies this to symbolic buckets, the
simulator to the bucket of a measured delay.

The RTT sample itself (the observation ``rtt``, in steps) is, in the models, any
value of its bucket: R + dt ≤ rtt < R + dt + 1, the adversary's choice; without a
bucket (no sample, or a delay of T steps or more) any rtt ≥ 0
(:func:`rtt_in_bucket`).  The simulator's measured RTT always lies in the bucket it
reports (it computes the bucket from it).
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


def rtt_in_bucket(d: Domain[V], qdel_hi: V, rtt: V, R: int, T: int) -> V:
    """The latest RTT sample ``rtt`` (steps) agrees with its delay bucket: a delay in
    [dt, dt + 1) steps (qdel_hi = dt + 1 ≤ T) is an RTT in [R + dt, R + dt + 1); no
    bucket (qdel_hi > T: no sample yet, or a delay of T steps or more) allows any
    rtt ≥ 0.  One rule for the encoder (a constraint on the adversary's choice) and
    the replay (a check of it)."""
    bucketed = d.le(qdel_hi, d.whole(T))
    inside = d.and_([d.le(d.add(qdel_hi, d.whole(R - 1)), rtt), d.lt(rtt, d.add(qdel_hi, d.whole(R)))])
    return d.and_([d.implies(bucketed, inside), d.implies(d.not_(bucketed), d.ge(rtt, d.whole(0)))])


def rtt_kept(d: Domain[V], s_now: V, s_before: V, rtt: V, rtt_before: V) -> V:
    """A step with no new ACK (S did not move) has no new sample: the latest RTT
    sample is the previous step's, as its delay bucket is (and as the simulator and a
    real stack report it).  One rule for the encoder and the replay."""
    return d.implies(d.eq(s_now, s_before), d.eq(rtt, rtt_before))
