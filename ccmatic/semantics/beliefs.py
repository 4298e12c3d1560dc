"""Belief updates (thesis §4.1.1.1, §4.1.1.2, §4.2.2.1, Appendix A.2.2), written
once for the SMT encoding and the simulator.

Link-rate beliefs (Eq. 4.1.2, discretized as in docs/semantics.md): over every window
(s, e] of length w with ACKed bytes ΔS = S(e) − S(s),

* lower candidate ΔS / (w + D)  (from r·T ≤ C·(T + D), Eq. A.2.8);
* upper candidate ΔS / (w − D), only when w > D and every step of the window is
  known to have been *utilized* (Eq. A.2.7 needs λ ≥ C throughout, i.e. no token
  was wasted): some byte that had arrived by the end of the step was still queued
  D later, or — with a drop-tail buffer β > ε — bytes sent in the step were dropped
  and the loss has been detected.  Evidence arrives late, so at step e every window
  ending by e is judged with what is known at e.  (The Table 4.1 tool's evidence — no
  delay bucket ≤ D, or any detection in the step — is ``reference``; it admits
  traces with C outside [c_lo, c_hi].)  With several flows a flow's ACK rate bounds
  only its share of C: no upper candidate is sound, c_hi keeps its initial value.

c_lo(e) = max(c_lo(e−1), lower candidates), c_hi(e) = min(c_hi(e−1), upper ones).

Belief timeouts (§4.1.1.2): a periodic timeout (phase given: the adversary's in the
encoding, 0 in the simulator; optionally only while c_hi ≤ guard·c_lo) and one
when the beliefs are empty.  On a timeout the beliefs are recomputed from the
windows that start at or after the timeout before the last one, widening by at
most ``max_expand``.

CBR-delay beliefs (§4.2.2.1): c_lo_lambda, the largest (A(s+R) − A(s)) / (R + D)
over send windows whose bytes were all serviced within D and without loss
(Eq. 4.2.2, T* = R); q_hi(t) = max(0, q_hi(t−1) + A(t) − A(t−1) − c_lo_lambda(t−R)).

Named values (a belief at a step) go through a :class:`Namer`: in the encoding each
becomes a variable with its defining constraints, in the simulator just the number.
Where a condition is decided (a concrete trace, or a window that is eligible in
every trace) the code skips what cannot matter; over Z3 terms nothing is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Generic, Literal, Protocol

from ccmatic.core.model import BeliefTimeouts
from ccmatic.semantics.domain import Domain, V


class Namer(Protocol[V]):
    """Gives a computed value a name (the encoding: a variable and its constraints)."""

    def extremum(self, name: str, kind: Literal["max", "min"], items: list[V], tag: str) -> V:
        """The largest (smallest) of the items."""
        ...

    def define(self, name: str, value: V, tag: str) -> V: ...


class Values:
    """The simulator's namer: values are just values."""

    def extremum(self, name: str, kind: Literal["max", "min"], items: list[V], tag: str) -> V:
        return max(items) if kind == "max" else min(items)  # type: ignore[type-var]

    def define(self, name: str, value: V, tag: str) -> V:
        return value


@dataclass(frozen=True)
class FlowSeries(Generic[V]):
    """One flow's curves, indexable by step (lists that may grow, in the simulator),
    the buffer (None: infinite) and, for the Table 4.1 tool's evidence, the delay
    buckets ``qdel[t][dt]``."""

    A: Sequence[V]
    S: Sequence[V]
    L: Sequence[V]
    Ld: Sequence[V]
    buffer: V | None = None
    qdel: Sequence[Sequence[V]] | None = None


@dataclass(frozen=True)
class RateRule:
    """The rule's settings: D, the non-composing ε, whether drops are evidence
    (drop-tail with a buffer), the Table 4.1 tool's evidence, whether upper candidates
    exist (one flow), timeouts, and ``window``: only windows starting at or after
    e − window are considered (None: all; the simulator's bound, which excludes no
    eligible window when timeouts fire at least every window/2 steps)."""

    D: int
    eps: Fraction
    loss_evidence: bool
    reference: bool
    upper: bool
    timeouts: BeliefTimeouts | None = None
    window: int | None = None


@dataclass
class RateState(Generic[V]):
    """c_lo and c_hi per step, and with timeouts the timeout bookkeeping:
    ``after_last[t][s]`` ⇔ the last timeout at or before t happened at or before s,
    ``after_prev`` likewise for the one before it (conditions; missing entries for
    s ≥ t − 1 are true)."""

    c_lo: list[V]
    c_hi: list[V]
    phases: Sequence[V | bool] = ()
    timeout: list[V | bool] = field(default_factory=lambda: [False])
    after_last: list[dict[int, V | bool]] = field(default_factory=lambda: [{}])
    after_prev: list[dict[int, V | bool]] = field(default_factory=lambda: [{}])


def _lower(d: Domain[V], v: FlowSeries[V], s: int, e: int, D: int) -> V:
    return d.div(d.sub(v.S[e], v.S[s]), d.whole(e - s + D))


def _upper(d: Domain[V], v: FlowSeries[V], s: int, e: int, D: int) -> V:
    return d.div(d.sub(v.S[e], v.S[s]), d.whole(e - s - D))


def utilized(d: Domain[V], rule: RateRule, v: FlowSeries[V], x: int, en: int) -> V:
    """Step (x, x+1] is known at step en to have had no waste (λ ≥ C).

    Backlog evidence: some byte that arrived by x+1 was still undelivered at
    x+1+D.  Waste at x+1 needs every arrived byte to hold a token by x+1
    (Eq. A.2.5), and a token is used within D (Eq. A.2.3), so the link was busy.
    Loss evidence (drop-tail, β > ε): bytes sent in the step were dropped, so the
    queue was full, and the sender has detected it by en.  A drop leaves the
    bottleneck queue at β, which rules out waste only if β > ε."""
    D = rule.D
    if rule.reference:
        # Table 4.1 settings (docs/semantics.md): no delay bucket <= D at x+1 while sending, or a detection in the step
        assert v.qdel is not None
        q = v.qdel[x + 1]
        small = d.or_([q[dt] for dt in range(min(D, len(q) - 1) + 1)])
        return d.or_([d.and_([d.not_(small), d.gt(v.A[x + 1], v.A[x])]), d.gt(v.Ld[x + 1], v.Ld[x])])
    ev: list[V | bool] = []
    if x + 1 + D <= en:
        ev.append(d.lt(d.add(v.S[x + 1 + D], d.num(rule.eps)), d.sub(v.A[x + 1], v.L[x + 1])))
    if rule.loss_evidence:
        assert v.buffer is not None
        ev.append(d.and_([d.gt(v.buffer, d.num(rule.eps)), d.gt(v.L[x + 1], v.L[x]), d.gt(v.Ld[en], v.L[x])]))
    return d.or_(ev)


def _first(rule: RateRule, en: int) -> int:
    return 0 if rule.window is None else max(0, en - rule.window)


def rate_step(d: Domain[V], names: Namer[V], rule: RateRule, v: FlowSeries[V], st: RateState[V],
              en: int, f: int) -> None:
    """Append c_lo(en) and c_hi(en) (en ≥ 1) to ``st``."""
    if rule.timeouts is None:
        _plain_step(d, names, rule, v, st, en, f)
    else:
        _timeout_step(d, names, rule, v, st, en, f)


def _windows_ok(d: Domain[V], rule: RateRule, v: FlowSeries[V], en: int, lo: int) -> list[V | bool]:
    """utilized(x, en) for x in [lo, en), judged once per step."""
    out: list[V | bool] = []
    for x in range(lo, en):
        out.append(utilized(d, rule, v, x, en))
    return out


def _upper_windows(d: Domain[V], rule: RateRule, v: FlowSeries[V], en: int, lo: int,
                   eligible: Callable[[int], V | bool] | None = None,
                   skip: Callable[[int, int], bool] | None = None) -> list[tuple[int, int, V | bool]]:
    """The windows (s, e2], e2 ≤ en, that may give an upper candidate at en, with the
    condition under which they do (every step utilized, and the window eligible), in
    the order e2 then s ascending.  For each e2 the windows are scanned from the
    shortest: a step known not to be utilized (or a start known not to be eligible)
    ends the scan, since every longer window contains it."""
    if not rule.upper:
        return []
    util = _windows_ok(d, rule, v, en, lo)
    known = [d.decide(u) for u in util]
    out: list[tuple[int, int, V | bool]] = []
    for e2 in range(lo + 1, en + 1):
        found: list[tuple[int, V | bool]] = []
        all_true = True  # every step scanned so far is known to be utilized
        for s in range(e2 - 1, lo - 1, -1):
            if known[s - lo] is False:
                break
            all_true = all_true and known[s - lo] is True
            el: V | bool = eligible(s) if eligible is not None else True
            if d.decide(el) is False:
                break  # eligibility only grows with s
            if e2 - s <= rule.D or (skip is not None and skip(s, e2)):
                continue
            busy: V | bool = True if all_true else d.and_(util[s - lo:e2 - lo])
            found.append((s, busy if eligible is None else d.and_([busy, el])))
        out += [(s, e2, ok) for s, ok in reversed(found)]
    return out


def _plain_step(d: Domain[V], names: Namer[V], rule: RateRule, v: FlowSeries[V], st: RateState[V],
                en: int, f: int) -> None:
    D, lo = rule.D, _first(rule, en)
    prev_lo, prev_hi = st.c_lo[en - 1], st.c_hi[en - 1]
    lows = [prev_lo] + [_lower(d, v, s, en, D) for s in range(lo, en)]
    st.c_lo.append(names.extremum(f"c_lo_{f},{en}", "max", lows, "Eq. 4.1.2 c_lo"))

    def skip(s: int, e2: int) -> bool:
        if rule.reference:
            return e2 != en  # the Table 4.1 tool judges a window only when it ends
        # with the same evidence as at en - 1 (no step's backlog evidence became
        # available at en), a window is already a candidate of c_hi(en - 1)
        return e2 < en and not rule.loss_evidence and not s <= en - 1 - D < e2

    ups = [prev_hi] + [d.ite(ok, _upper(d, v, s, e2, D), prev_hi)
                       for s, e2, ok in _upper_windows(d, rule, v, en, lo, None, skip)]
    st.c_hi.append(names.extremum(f"c_hi_{f},{en}", "min", ups, "Eq. 4.1.2 c_hi"))


def _timeouts_at(d: Domain[V], names: Namer[V], rule: RateRule, st: RateState[V], t: int, f: int,
                 starts: range) -> None:
    """The timeout at t, and the bookkeeping of the last two timeouts."""
    cfg = rule.timeouts
    assert cfg is not None
    fire: list[V | bool] = []
    if cfg.period is not None:
        per: V | bool = st.phases[t % cfg.period]
        if cfg.guard is not None:
            per = d.and_([per, d.le(st.c_hi[t - 1], d.mul(d.num(cfg.guard), st.c_lo[t - 1]))])
        fire.append(per)
    if cfg.invalid:
        fire.append(d.lt(st.c_hi[t - 1], st.c_lo[t - 1]))
    to = d.or_(fire) if fire else False
    st.timeout.append(to if isinstance(to, bool) else names.define(f"belief_timeout_{f},{t}", to, "belief timeout"))
    TO = st.timeout[t]
    last, prev = st.after_last[t - 1], st.after_prev[t - 1]
    now_last: dict[int, V | bool] = {}
    now_prev: dict[int, V | bool] = {}

    def named(name: str, c: V) -> V | bool:
        known = d.decide(c)
        return known if known is not None else names.define(name, c, "belief timeout")

    for s in starts:
        was_last: V = _as(d, last.get(s, True))
        now_last[s] = named(f"bt_last_{f},{t},{s}", d.ite(TO, d.boolean(t <= s), was_last))
        now_prev[s] = named(f"bt_prev_{f},{t},{s}", d.ite(TO, was_last, _as(d, prev.get(s, True))))
    st.after_last.append(now_last)
    st.after_prev.append(now_prev)


def _as(d: Domain[V], c: V | bool) -> V:
    return d.boolean(c) if isinstance(c, bool) else c


def _timeout_step(d: Domain[V], names: Namer[V], rule: RateRule, v: FlowSeries[V], st: RateState[V],
                  en: int, f: int) -> None:
    cfg = rule.timeouts
    assert cfg is not None
    D, lo = rule.D, _first(rule, en)
    horizon = len(v.S) if rule.window is None else en + 1
    _timeouts_at(d, names, rule, st, en, f, range(lo, horizon))
    TO, elig = st.timeout[en], st.after_prev[en]
    x = d.num(cfg.max_expand)
    zero = d.whole(0)
    prev_lo, prev_hi = st.c_lo[en - 1], st.c_hi[en - 1]
    fired = d.decide(TO)

    def eligible(s: int) -> V | bool:
        return elig.get(s, True)

    c_lo = None if fired is False else names.extremum(
        f"c_lo_reset_{f},{en}", "max", [d.div(prev_lo, x)] + [
            d.ite(eligible(s), _lower(d, v, s, e2, D), zero)
            for e2 in range(lo + 1, en + 1) for s in range(lo, e2) if d.decide(eligible(s)) is not False],
        "§4.1.1.2 c_lo on timeout")
    keep_lo = None if fired is True else names.extremum(
        f"c_lo_keep_{f},{en}", "max", [prev_lo] + [
            d.ite(eligible(s), _lower(d, v, s, en, D), zero)
            for s in range(lo, en) if d.decide(eligible(s)) is not False],
        "Eq. 4.1.2 c_lo")
    ups_keep: list[V] = [prev_hi]
    ups_reset: list[V] = [d.mul(x, prev_hi)]
    for s, e2, ok in _upper_windows(d, rule, v, en, lo, eligible):
        up = _upper(d, v, s, e2, D)
        ups_keep.append(d.ite(ok, up, prev_hi))
        ups_reset.append(d.ite(ok, up, d.mul(x, prev_hi)))
    keep_hi = None if fired is True else names.extremum(f"c_hi_keep_{f},{en}", "min", ups_keep, "Eq. 4.1.2 c_hi")
    reset_hi = None if fired is False else names.extremum(f"c_hi_reset_{f},{en}", "min", ups_reset,
                                                          "§4.1.1.2 c_hi on timeout")
    st.c_lo.append(_joined(d, names, f"c_lo_{f},{en}", TO, c_lo, keep_lo, "c_lo"))
    st.c_hi.append(_joined(d, names, f"c_hi_{f},{en}", TO, reset_hi, keep_hi, "c_hi"))


def _joined(d: Domain[V], names: Namer[V], name: str, TO: V | bool, reset: V | None, keep: V | None, tag: str) -> V:
    if reset is None:
        assert keep is not None
        return keep
    if keep is None:
        return reset
    return names.define(name, d.ite(TO, reset, keep), tag)


# -- CBR-delay beliefs ---------------------------------------------------------------

def cbr_lambda_step(d: Domain[V], names: Namer[V], v: FlowSeries[V], cl: list[V], en: int, R: int, D: int,
                    f: int, extra: int = 0) -> None:
    """Append c_lo_lambda(en) (en ≥ 1): the window (s, s+R] with s + R + D = en counts
    if all its bytes were serviced by en and none was lost (Eq. 4.2.2); its bytes are
    divided by R + D + ``extra`` (1: the Table 4.1 tool's divisor, a weaker bound)."""
    cands = [cl[en - 1]]
    s = en - R - D
    if s >= 0:
        ok = d.and_([d.ge(v.S[s + R + D], d.sub(v.A[s + R], v.L[s + R])), d.eq(v.L[s + R], v.L[s])])
        if d.decide(ok) is not False:
            cands.append(d.ite(ok, d.div(d.sub(v.A[s + R], v.A[s]), d.num(Fraction(R + D + extra))), cl[en - 1]))
    cl.append(names.extremum(f"c_lo_lambda_{f},{en}", "max", cands, "Eq. 4.2.2 c_lo_lambda"))


def q_hi_step(d: Domain[V], names: Namer[V], v: FlowSeries[V], cl: Sequence[V], qh: list[V], t: int, R: int,
              f: int) -> None:
    """Append q_hi(t) (t ≥ 1) = max(0, q_hi(t−1) + A(t) − A(t−1) − c_lo_lambda(t−R)) (§4.2.2.1)."""
    nxt = d.sub(d.sub(d.add(qh[t - 1], v.A[t]), v.A[t - 1]), cl[max(0, t - R)])
    zero = d.num(Fraction(0))
    qh.append(names.define(f"q_hi_{f},{t}", d.ite(d.gt(nxt, zero), nxt, zero), "§4.2.2.1 q_hi"))
