"""Properties: objectives and the synthesis invariant (thesis §4.1.2, §4.2.1, Eq. 4.1.3).

Each objective kind maps to a Z3 formula over the trace.  ``first`` = 1: transient
effects of the free initial state are ignored at step 0 (REFERENCE-SPEC).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import z3

from ccmatic.beliefs import cbr_beliefs, rate_beliefs
from ccmatic.config import Objective
from ccmatic.errors import Loc, SpecError
from ccmatic.lang.query_scope import compile_bool
from ccmatic.network.delay import qdel_bounds
from ccmatic.trace import Trace

FIRST = 1


def series_fn(tr: Trace) -> Callable[[str, int | None, int], z3.ExprRef]:
    """Accessor for trace quantities by name (flow None = aggregate)."""

    def get(name: str, f: int | None, t: int) -> z3.ExprRef:
        if f is None:
            if name == "A":
                return tr.A(t)
            if name == "S":
                return tr.S(t)
            if name == "L":
                return tr.L(t)
            if name == "Ld":
                return tr.Ld(t)
            if name == "W":
                return tr.W[t]
            if name == "tokens":
                return tr.tokens(t)
            if name == "bq":
                return tr.bq(t)
            if name == "queue":
                return tr.queue(t)
            raise KeyError(name)
        simple = {"A": tr.A_f, "S": tr.S_f, "L": tr.L_f, "Ld": tr.Ld_f}
        if name in simple:
            return simple[name][f][t]
        if name == "rate":
            if not tr.has_rate[f]:
                raise KeyError(name)
            return tr.rate_f[f][t]
        if name == "cwnd":
            if not tr.has_cwnd[f]:
                raise KeyError(name)
            return tr.cwnd_f[f][t]
        if name == "timeout":
            return tr.timeout_f[f][t]
        if name == "queue":
            return tr.queue(t, f)
        if name in ("c_lo", "c_hi"):
            b = rate_beliefs(tr)
            return (b.c_lo if name == "c_lo" else b.c_hi)[f][t]
        if name in ("qdel_lo", "qdel_hi"):
            lo, hi = qdel_bounds(tr)
            return (lo if name == "qdel_lo" else hi)[f][t]
        if name in ("c_lo_lambda", "q_hi"):
            cb = cbr_beliefs(tr)
            return (cb.c_lo_lambda if name == "c_lo_lambda" else cb.q_hi)[f][t]
        if name in tr.state_f[f]:
            return tr.state_f[f][name][t]
        raise KeyError(name)

    return get


def _frac(obj: Objective, key: str, default: Fraction | None = None) -> Fraction:
    v = obj.params.get(key, default)
    if v is None:
        raise SpecError(Loc(obj.label), f"objective '{obj.kind}' needs '{key}'")
    return v if isinstance(v, Fraction) else Fraction(str(v))


def _rate_seq(tr: Trace, t: int) -> z3.ArithRef:
    """The sending rate used by ramp_up/ramp_down; for window-only CCAs, cwnd."""
    f = 0
    if tr.has_rate[f]:
        return tr.rate_f[f][t]
    return tr.cwnd_f[f][t]


def utilization(tr: Trace, f: Fraction) -> z3.BoolRef:
    """efficient: S(T−1) − S(0) ≥ f·C·(T − 1 − D) (REFERENCE-SPEC)."""
    T, m = tr.T, tr.model
    return tr.S(T - 1) - tr.S(0) >= tr.const(f) * tr.C * (T - 1 - m.D)


def inflight(tr: Trace, k: Fraction, mss: Fraction) -> z3.BoolRef:
    """bounded_queue: A − L − S ≤ k·C·(R + D) + mss·MSS for t ≥ first."""
    m = tr.model
    bound = tr.const(k) * tr.C * (m.R + m.D) + tr.const(mss) * tr.MSS
    return z3.And(*[tr.queue(t) <= bound for t in range(FIRST, tr.T)])


def rtt(tr: Trace, k: Fraction) -> z3.BoolRef:
    """RTT upper bound: R + qdel_hi(t) ≤ k·(R + D) for t ≥ first (conservative: the
    upper edge of the delay bucket)."""
    m = tr.model
    _lo, hi = qdel_bounds(tr)
    return z3.And(*[m.R + hi[f][t] <= tr.const(k) * (m.R + m.D) for f in range(tr.N) for t in range(FIRST, tr.T)])


def loss_count(tr: Trace) -> z3.ArithRef:
    return z3.Sum([z3.If(tr.L(t) > tr.L(t - 1), 1, 0) for t in range(FIRST, tr.T)])


def no_large_loss(tr: Trace, mss: Fraction) -> z3.BoolRef:
    return z3.And(*[tr.L(t) - tr.L(t - 1) <= tr.const(mss) * tr.MSS for t in range(FIRST, tr.T)])


def beliefs_consistent(tr: Trace, t: int) -> z3.BoolRef:
    b = rate_beliefs(tr)
    return z3.And(*[z3.And(b.c_lo[f][t] <= tr.C, tr.C <= b.c_hi[f][t]) for f in range(tr.N)])


def beliefs_shrink(tr: Trace, mode: str) -> z3.BoolRef:
    """"Beliefs shrink" (§4.1.2): *at least one improves ∧ none degrades* (default), or
    the REFERENCE-SPEC width form w(T−1) < w(0) used by the Table 4.1 queries."""
    b = rate_beliefs(tr)
    T = tr.T
    out = []
    for f in range(tr.N):
        lo0, loT, hi0, hiT = b.c_lo[f][0], b.c_lo[f][T - 1], b.c_hi[f][0], b.c_hi[f][T - 1]
        if mode == "width":
            out.append(z3.And(hiT - loT <= hi0 - lo0, hiT - loT < hi0 - lo0))
        else:
            out.append(z3.And(loT >= lo0, hiT <= hi0, z3.Or(loT > lo0, hiT < hi0)))
    return z3.And(*out)


def cbr_consistent(tr: Trace, t: int) -> z3.BoolRef:
    """CBR-delay beliefs are consistent (§4.2.2.1): C ≥ c_lo_lambda, the buffer belief
    of Eq. 4.2.3, C·T* + β ≥ c_lo_lambda·(T* + D) with T* = R, and q_hi ≥ the queue."""
    cb = cbr_beliefs(tr)
    m = tr.model
    out = []
    for f in range(tr.N):
        c = [cb.c_lo_lambda[f][t] <= tr.C, cb.q_hi[f][t] >= tr.bq(t)]
        if tr.buffer is not None:
            c.append(tr.C * m.R + tr.buffer >= cb.c_lo_lambda[f][t] * (m.R + m.D))
        out.append(z3.And(*c))
    return z3.And(*out)


def cbr_shrink(tr: Trace) -> z3.BoolRef:
    """CBR-delay belief progress, *at least one improves ∧ none degrades* over the
    beliefs that matter for the next probe: c_lo_lambda rose, or the queue bound
    q_hi fell without c_lo_lambda falling."""
    cb = cbr_beliefs(tr)
    T = tr.T
    out = []
    for f in range(tr.N):
        cl0, clT, qh0, qhT = cb.c_lo_lambda[f][0], cb.c_lo_lambda[f][T - 1], cb.q_hi[f][0], cb.q_hi[f][T - 1]
        out.append(z3.Or(clT > cl0, z3.And(qhT < qh0, clT >= cl0)))
    return z3.And(*out)


def invariant(tr: Trace, obj: Objective) -> z3.BoolRef:
    """Eq. 4.1.3, in the REFERENCE-SPEC form:

    (¬consistent(0) ⇒ consistent(T−1)) ∧
    (consistent(0) ⇒ consistent(T−1) ∧ [no_large_loss_on_increase] ∧ (shrink ∨ desired))

    desired = (efficient ∨ ramp_up) ∧ (bounded_queue ∨ ramp_down) ∧ (each loss bound ∨ ramp_down),
    ramp_up = rate(T−1) > rate(1) ∨ queue(T−1) > queue(1) ∨ bq(T−1) > bq(1), ramp_down likewise.
    """
    T, m = tr.T, tr.model
    util = _frac(obj, "util", Fraction(1, 2))
    k = _frac(obj, "inflight_bdp", Fraction(4))
    kmss = _frac(obj, "inflight_mss", Fraction(3))
    shrink_mode = str(obj.params.get("shrink", "monotone"))
    if shrink_mode not in ("monotone", "width"):
        raise SpecError(Loc(obj.label), f"shrink must be 'monotone' or 'width', not '{shrink_mode}'")
    a, z = FIRST, T - 1
    rate_a, rate_z = _rate_seq(tr, a), _rate_seq(tr, z)
    ramp_up = z3.Or(rate_z > rate_a, tr.queue(z) > tr.queue(a), tr.bq(z) > tr.bq(a))
    ramp_down = z3.Or(rate_z < rate_a, tr.queue(z) < tr.queue(a), tr.bq(z) < tr.bq(a))
    desired = [z3.Or(utilization(tr, util), ramp_up), z3.Or(inflight(tr, k, kmss), ramp_down)]
    if tr.buffer is not None:
        half = Fraction(T - 1, 2) + 1
        lmss = Fraction(T - 1)
        loss_bounds = [
            loss_count(tr) <= tr.const(half),
            no_large_loss(tr, lmss),
            tr.L(z) - tr.L(a) <= tr.const(half) * tr.C * (m.R + m.D) + tr.const(lmss) * tr.MSS,
        ]
        desired += [z3.Or(lb, ramp_down) for lb in loss_bounds]
    kind = str(obj.params.get("beliefs", "rate"))
    if kind == "cbr":
        cons0, consT = cbr_consistent(tr, 0), cbr_consistent(tr, z)
        shrink = cbr_shrink(tr)
    elif kind == "rate":
        cons0, consT = beliefs_consistent(tr, 0), beliefs_consistent(tr, z)
        shrink = beliefs_shrink(tr, shrink_mode)
    else:
        raise SpecError(Loc(obj.label), f"beliefs must be 'rate' (c_lo/c_hi) or 'cbr' (c_lo_lambda/q_hi), not '{kind}'")
    transient = []
    if obj.params.get("no_large_loss_on_increase", False):
        lm = _frac(obj, "large_loss_mss", Fraction(3))
        cond = no_large_loss(tr, lm)
        kb = obj.params.get("loss_only_if_buffer_ge")
        if kb is not None:
            if tr.buffer is None:
                cond = z3.BoolVal(True)
            else:
                cond = z3.Implies(tr.buffer >= tr.const(_frac(obj, "loss_only_if_buffer_ge")) * tr.C * (m.R + m.D), cond)
        transient.append(z3.Implies(rate_z > rate_a, cond))
    good = z3.And(consT, *transient, z3.Or(shrink, z3.And(*desired)))
    return z3.And(z3.Implies(z3.Not(cons0), consT), z3.Implies(cons0, good))


def objective_formula(tr: Trace, obj: Objective) -> z3.BoolRef:
    k = obj.kind
    if k == "expr":
        assert obj.source is not None
        return compile_bool(obj.source, tr, series_fn(tr))
    if k == "utilization":
        return utilization(tr, _frac(obj, "min"))
    if k == "inflight":
        return inflight(tr, _frac(obj, "max_bdp"), _frac(obj, "plus_mss", Fraction(0)))
    if k == "rtt":
        return rtt(tr, _frac(obj, "max_rtprop"))
    if k == "loss_amount":
        m = tr.model
        bound = _frac(obj, "max_bdp", Fraction(0)) * m.C * (m.R + m.D)
        return tr.L(tr.T - 1) - tr.L(FIRST) <= tr.const(bound) + tr.const(_frac(obj, "plus_mss", Fraction(0))) * tr.MSS
    if k == "loss_frequency":
        return loss_count(tr) <= tr.const(_frac(obj, "max_events"))
    if k == "no_large_loss":
        return no_large_loss(tr, _frac(obj, "max_mss", Fraction(3)))
    if k == "no_large_loss_on_increase":
        return z3.Implies(_rate_seq(tr, tr.T - 1) > _rate_seq(tr, FIRST), no_large_loss(tr, _frac(obj, "max_mss", Fraction(3))))
    if k == "beliefs_consistent":
        return beliefs_consistent(tr, tr.T - 1)
    if k == "invariant":
        return invariant(tr, obj)
    raise SpecError(Loc(obj.label), f"unknown objective kind '{k}'",
                    "use utilization, inflight, rtt, loss_amount, loss_frequency, no_large_loss, "
                    "no_large_loss_on_increase, beliefs_consistent, invariant or expr")


OBJECTIVE_KINDS = {
    "utilization": ("min",), "inflight": ("max_bdp", "plus_mss"), "rtt": ("max_rtprop",),
    "loss_amount": ("max_bdp", "plus_mss"), "loss_frequency": ("max_events",),
    "no_large_loss": ("max_mss",), "no_large_loss_on_increase": ("max_mss",),
    "beliefs_consistent": (), "expr": ("expr",),
    "invariant": ("util", "inflight_bdp", "inflight_mss", "shrink", "beliefs", "no_large_loss_on_increase",
                  "large_loss_mss", "loss_only_if_buffer_ge"),
}
