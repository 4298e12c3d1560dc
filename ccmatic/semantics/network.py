"""The network rules that determine a value from others (thesis Listing A.1,
CCAC §3, docs/semantics.md), over any domain.

The encoder asserts ``x == rule(...)`` for each; the exact replay recomputes each
from a counterexample's values and compares.  The rules that only *bound* a value
(the service curve, CCAC's loss rule, loss detection by dupacks) are the encoder's
alone: they leave the adversary a choice, which replay reads from the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ccmatic.semantics.domain import Domain, V


def tokens(d: Domain[V], C0: V, C: Fraction, t: int, W: V) -> V:
    """The admitted-token curve T_A(t) = C0 + C·t − W(t) (Eq. A.2.4); for t < 0 the
    caller passes W(0): the curve is extended with slope C and no waste (the most
    slack choice)."""
    return d.sub(d.add(C0, d.mul(d.num(C), d.whole(t))), W)


def hop_input(route: tuple[int, ...], h: int, arrived: V, outputs: Mapping[int, V]) -> V:
    """The bytes of a flow on ``route`` that have reached bottleneck h: its A − L at
    the first bottleneck, its output from the previous one (``outputs[j]``) after."""
    i = route.index(h)
    return arrived if i == 0 else outputs[route[i - 1]]


def in_network(d: Domain[V], A: V, L: V, S: V) -> V:
    """Bytes in the network, A − L − S."""
    return d.sub(d.sub(A, L), S)


def bottleneck_queue(d: Domain[V], A: V, L: V, tokens_t: V) -> V:
    """The bottleneck queue q(t) = A − L − T_A(t) (Eq. A.2.6)."""
    return d.sub(d.sub(A, L), tokens_t)


def sending(d: Domain[V], A_prev: V, S_acked: V, Ld: V, cwnd: V | None, rate: V | None) -> V:
    """CCAC's sender, for t ≥ R: A(t) = min(A_w, A_r) with
    A_w = max(A(t−1), S(t−R) + Ld(t) + cwnd(t)) and A_r = A(t−1) + max(rate(t), 0).
    A CCA that sets no rate (cwnd) is not limited by it."""
    cands: list[V] = []
    if cwnd is not None:
        aw = d.add(d.add(S_acked, Ld), cwnd)
        cands.append(d.ite(d.ge(aw, A_prev), aw, A_prev))
    if rate is not None:
        zero = d.whole(0)
        cands.append(d.add(A_prev, d.ite(d.gt(rate, zero), rate, zero)))
    if len(cands) == 2:
        return d.ite(d.le(cands[0], cands[1]), cands[0], cands[1])
    return cands[0]


def cbr_tokens(d: Domain[V], tokens_prev: V, C: Fraction, arrived: V) -> V:
    """A constant-bit-rate box: T_A(t) = min(T_A(t−1) + C, A(t) − L(t)): tokens are
    wasted exactly when its queue would go negative (thesis §2.3)."""
    full = d.add(tokens_prev, d.num(C))
    return d.ite(d.le(full, arrived), full, arrived)


def droptail_loss(d: Domain[V], A: V, L_prev: V, tokens_t: V, buffer: V) -> V:
    """Drop-tail (docs/semantics.md §Table 4.1 settings): the bottleneck queue never exceeds β, and bytes
    are dropped exactly when it would: L(t) = A(t) − T_A(t) − β if
    A(t) − L(t−1) > T_A(t) + β, else L(t−1)."""
    limit = d.add(tokens_t, buffer)
    return d.ite(d.gt(d.sub(A, L_prev), limit), d.sub(A, limit), L_prev)


def oracle_detection(L_then: V) -> V:
    """Loss detection by an oracle (docs/semantics.md §Table 4.1 settings, the thesis' prototype): every
    loss is detected exactly R after it happened, Ld(t) = L(t − R)."""
    return L_then
