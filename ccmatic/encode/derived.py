"""Derived quantities as constraints: queueing-delay buckets (Eq. 4.1.1,
docs/semantics.md §Queueing delay; CCAC §3) and the beliefs (through the one
definition in :mod:`ccmatic.semantics.beliefs`).

Delay buckets: ``qdel[f][t][dt]`` means the byte flow f had serviced at t was sent
in (t − dt − 1, t − dt], i.e. its delay through the network was in [dt, dt + 1).
When S did not move, the sample is stale and every entry is copied from t − 1.  For
a newly serviced byte that was sent before the trace started (dt ≥ t), the model
option ``qdel_prehistory`` decides: ``free`` (the Table 4.1 settings: any bucket ≥ t, or
none) or ``hidden`` (CCAC's encoding: no bucket is true, so the sample reads as a
delay beyond the horizon).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Literal, cast

import z3

from ccmatic.core.quantities import Family
from ccmatic.encode.trace import Constraints, Series, SymbolicTrace
from ccmatic.semantics import beliefs, qdel
from ccmatic.semantics.z3domain import Z3

QdelBools = list[list[list[z3.BoolRef]]]


class Z3Names:
    """The encoding's namer: a named value is a variable with defining constraints."""

    def __init__(self, out: Constraints) -> None:
        self.out = out

    def extremum(self, name: str, kind: Literal["max", "min"], items: list[z3.ArithRef], tag: str) -> z3.ArithRef:
        """var == max(items), as (var ≥ each) ∧ (var equals one) (or ≤ for min)."""
        var = z3.Real(name)
        self.out.add(tag, *[var >= x if kind == "max" else var <= x for x in items])
        self.out.add(tag, z3.Or(*[var == x for x in items]))
        return var

    def define(self, name: str, value: z3.ExprRef, tag: str) -> z3.ExprRef:
        var = z3.Bool(name) if z3.is_bool(value) else z3.Real(name)
        self.out.add(tag, var == value)
        return var


def build(tr: SymbolicTrace, families: set[Family]) -> Constraints:
    """Build the derived families the scenario reads (in dependency order)."""
    out = Constraints()
    buckets: QdelBools | None = None
    if "qdel" in families:
        buckets, cs = qdel_buckets(tr)
        out.extend(cs)
        lo_hi = [[qdel.bounds(Z3, buckets[f][t], tr.model.D) for t in range(tr.T)] for f in range(tr.N)]
        tr.derived["qdel_lo"] = [[lo for lo, _hi in fl] for fl in lo_hi]
        tr.derived["qdel_hi"] = [[hi for _lo, hi in fl] for fl in lo_hi]
        tr.literals.extend(bucket_literals(tr.derived["qdel_hi"], buckets))
        tr.built.add("qdel")
    if "rtt" in families:
        out.extend(rtt_samples(tr))
        tr.built.add("rtt")
    if "rate_beliefs" in families:
        out.extend(rate_beliefs(tr, buckets))
        tr.built.add("rate_beliefs")
    if "cbr_beliefs" in families:
        out.extend(cbr_beliefs(tr))
        tr.built.add("cbr_beliefs")
    return out


def rtt_samples(tr: SymbolicTrace) -> Constraints:
    """The latest RTT sample per flow and step: the adversary's choice within its delay
    bucket (:func:`ccmatic.semantics.qdel.rtt_in_bucket`), kept while no new ACK
    arrives (:func:`ccmatic.semantics.qdel.rtt_kept`), built only when read."""
    out = Constraints()
    series: list[list[z3.ExprRef]] = []
    for f in range(tr.N):
        rtt = [z3.Real(f"rtt_{f},{t}") for t in range(tr.T)]
        hi = tr.derived["qdel_hi"][f]
        out.add("rtt in its delay bucket", *[qdel.rtt_in_bucket(Z3, hi[t], rtt[t], tr.model.flow_R(f), tr.T)
                                             for t in range(tr.T)])
        S = tr.S_f[f]
        out.add("rtt kept without a new ACK", *[qdel.rtt_kept(Z3, S[t], S[t - 1], rtt[t], rtt[t - 1])
                                                for t in range(1, tr.T)])
        series.append(list(rtt))
    tr.derived["rtt"] = series
    return out


def qdel_buckets(tr: SymbolicTrace) -> tuple[QdelBools, Constraints]:
    T, e, m = tr.T, Constraints(), tr.model
    q = [[[z3.Bool(f"qdel_{f},{t},{dt}") for dt in range(T)] for t in range(T)] for f in range(tr.N)]
    # The buffer bounds the delay only if a waiting byte keeps the bottleneck busy.
    # Not so with several flows (the network may serve the others: nothing makes it
    # FIFO across flows), nor for non-composing CCAC with ε > 0 (tokens may be
    # wasted while ≤ ε bytes are undelivered, so a byte can wait indefinitely).
    bounded_delay = tr.N == 1 and not (m.family == "ccac" and not m.compose and m.epsilon > 0)
    always = m.qdel_growth == "always"
    for f in range(tr.N):
        A, S, L = tr.A_f[f], tr.S_f[f], tr.L_f[f]
        for t in range(T):
            e.add("qdel at most one", *at_most_one(q[f][t], f"qdel_amo_{f},{t}"))
            moved = z3.BoolVal(True) if always else (S[t] != S[t - 1] if t > 0 else None)
            if t + 1 < T and moved is not None:
                e.extend(_growth(q[f][t], q[f][t + 1], moved))
            if t == 0:
                continue  # the past before the trace is free
            moved = S[t] != S[t - 1]
            for dt in range(T):
                if dt < t:
                    sent_then = z3.And(A[t - dt - 1] - L[t - dt - 1] < S[t], S[t] <= A[t - dt] - L[t - dt])
                    e.add("qdel definition", q[f][t][dt] == z3.If(moved, sent_then, q[f][t - 1][dt]))
                else:
                    # sent before the trace: the stale sample is unchanged when S did
                    # not move; for a new byte the bucket is free ('free') or none is
                    # reported ('hidden', CCAC's encoding)
                    e.add("qdel definition", z3.Implies(z3.Not(moved), q[f][t][dt] == q[f][t - 1][dt]))
                    if m.qdel_prehistory == "hidden":
                        e.add("qdel prehistory hidden", z3.Implies(moved, z3.Not(q[f][t][dt])))
            if tr.buffer is not None and bounded_delay:
                # delay at most β/C + D.  In steps: the byte S(t) arrived by t − dt and
                # found at most β bytes without a token; no token is wasted while it
                # waits (Eq. A.2.5), so it holds one after ⌈β/C⌉ steps and is served
                # D later, before t unless dt ≤ ⌈β/C⌉ + D, i.e. C·(dt − D − 1) < β.
                for dt in range(T):
                    e.add("qdel buffer bound", z3.Implies(q[f][t][dt], tr.C * (dt - m.net_D - 1) < tr.buffer))
    return q, e


def bucket_literals(qdel_hi: Series, q: QdelBools) -> list[tuple[z3.BoolRef, z3.BoolRef]]:
    """``qdel_hi == dt + 1`` (either way round) and the bucket ``q[f][t][dt]``, for the
    CCA and the formulas to read (:meth:`ccmatic.encode.trace.SymbolicTrace.rewrite`).

    qdel_hi is the If-chain of :func:`ccmatic.semantics.qdel.bounds` (the first bucket
    that holds), so ``qdel_hi == dt + 1`` says "bucket dt holds and no earlier one":
    a conjunction of dt + 1 literals, which a CCA that asks about every bucket (Copa's
    ``any(qdel_hi == d + 1 and ...)``) states T times per step, O(T³) literals in all.
    At most one bucket holds at every step ("qdel at most one", asserted with the
    buckets), so the bucket alone is equivalent in every model of the constraints."""
    out: list[tuple[z3.BoolRef, z3.BoolRef]] = []
    for his, qf in zip(qdel_hi, q):
        for hi, qt in zip(his, qf):
            for dt, b in enumerate(qt):
                k = z3.RealVal(dt + 1)
                out += [(cast(z3.BoolRef, hi == k), b), (cast(z3.BoolRef, k == hi), b)]
    return out


#: lists up to this long get the pairwise "at most one", longer ones the ladder
#: (measured on queries/verify, T <= 11: pairwise is as fast as Z3's ``AtMost``, the
#: ladder slightly slower; at T = 60 pairwise has 4x the constraints of the ladder)
PAIRWISE_MAX = 12


def at_most_one(items: list[z3.BoolRef], name: str) -> list[z3.BoolRef]:
    """At most one of ``items`` is true, as QF_LRA clauses (Z3's ``AtMost`` is a
    pseudo-Boolean term, ``(_ at-most 1)``, that other solvers reject under QF_LRA).

    Short lists: a clause ¬a ∨ ¬b for every pair (the same meaning, no new
    variables).  Longer ones: the sequential ("ladder") encoding, linear in size,
    with auxiliary booleans ``{name}_i``, true once one of items[0..i] is and then
    forbidding items[i + 1]; every assignment of ``items`` with at most one true
    extends to them, so the constraints mean the same on every other variable."""
    n = len(items)
    if n <= PAIRWISE_MAX:
        return [z3.Or(z3.Not(items[i]), z3.Not(items[j])) for i in range(n) for j in range(i + 1, n)]
    seen = [z3.Bool(f"{name}_{i}") for i in range(n - 1)]
    out: list[z3.BoolRef] = [z3.Implies(items[0], seen[0])]
    for i in range(1, n - 1):
        out += [z3.Implies(items[i], seen[i]), z3.Implies(seen[i - 1], seen[i]),
                z3.Implies(items[i], z3.Not(seen[i - 1]))]
    out.append(z3.Implies(items[n - 1], z3.Not(seen[n - 2])))
    return out


def _growth(now: list[z3.BoolRef], nxt: list[z3.BoolRef], fresh: z3.BoolRef) -> Constraints:
    """FIFO: the byte serviced at t + 1 was sent no earlier than the one serviced at
    t, so its delay is at most one step more, and finite if the first one was.

    Under ``qdel_growth = "fresh"`` this binds only a sample taken at t (S moved at
    t, t ≥ 1): a stale sample may be several steps old.  ``"always"``
    (the Table 4.1 settings, CCmatic's prototype) binds every step, t = 0 and stale samples
    included; it over-constrains the network but is what Table 4.1 was computed with.

    O(T²) disjunctions of up to T buckets per step, so they are built with
    :func:`_nary` (the same terms as ``z3.Or``/``z3.And``, thirty times faster at T = 30)."""
    e = Constraints()
    T = len(now)
    for dt1 in range(T):
        sampled = _nary(z3.Z3_mk_and, [fresh, now[dt1]])
        later = nxt[dt1 + 2:]
        if later:
            e.add("qdel grows by at most 1 per step", z3.Implies(sampled, z3.Not(_nary(z3.Z3_mk_or, later))))
        if dt1 + 1 < T:
            e.add("qdel stays finite", z3.Implies(sampled, _nary(z3.Z3_mk_or, nxt[:dt1 + 2])))
    return e


def _nary(make: Callable[..., z3.Ast], items: list[z3.BoolRef]) -> z3.BoolRef:
    """``make`` (``Z3_mk_or`` or ``Z3_mk_and``) of boolean terms of one context, the
    term ``z3.Or(*items)`` or ``z3.And(*items)`` gives, without their per-argument
    coercions and checks."""
    ctx = items[0].ctx
    args = (z3.Ast * len(items))(*[i.as_ast() for i in items])
    return z3.BoolRef(make(ctx.ref(), len(items), args), ctx)


def _flow(tr: SymbolicTrace, f: int, buckets: QdelBools | None) -> beliefs.FlowSeries[z3.ExprRef]:
    return beliefs.FlowSeries(tr.A_f[f], tr.S_f[f], tr.L_f[f], tr.Ld_f[f], tr.buffer,
                              buckets[f] if buckets is not None else None)


def rate_beliefs(tr: SymbolicTrace, buckets: QdelBools | None) -> Constraints:
    """c_lo and c_hi per flow and step (Eq. 4.1.2; §4.1.1.2 with timeouts)."""
    m, out = tr.model, Constraints()
    names = Z3Names(out)
    rule = beliefs.RateRule(
        D=m.D, eps=m.epsilon if (m.family == "ccac" and not m.compose) else Fraction(0),
        loss_evidence=m.loss == "droptail" and tr.buffer is not None,
        reference=m.belief_evidence == "reference", upper=tr.N == 1, timeouts=m.belief_timeouts)
    c_lo: list[list[z3.ExprRef]] = []
    c_hi: list[list[z3.ExprRef]] = []
    for f in range(tr.N):
        lo0, hi0 = z3.Real(f"c_lo_{f},0"), z3.Real(f"c_hi_{f},0")
        out.add("beliefs t=0", lo0 >= 0)
        st: beliefs.RateState[z3.ExprRef] = beliefs.RateState([lo0], [hi0], _phases(tr, f, out))
        series = _flow(tr, f, buckets)
        for en in range(1, tr.T):
            beliefs.rate_step(Z3, names, rule, series, st, en, f)
        c_lo.append(st.c_lo)
        c_hi.append(st.c_hi)
    tr.derived["c_lo"], tr.derived["c_hi"] = c_lo, c_hi
    return out


def _phases(tr: SymbolicTrace, f: int, out: Constraints) -> list[z3.BoolRef]:
    """The periodic belief timeouts' phase: the adversary's choice, one-hot."""
    cfg = tr.model.belief_timeouts
    if cfg is None or cfg.period is None:
        return []
    phases = [z3.Bool(f"bt_phase_{f},{k}") for k in range(cfg.period)]
    out.add("belief timeout phase", *at_most_one(phases, f"bt_phase_amo_{f}"), z3.Or(*phases))
    tr.extra_vars.extend(phases)
    return phases


def cbr_beliefs(tr: SymbolicTrace) -> Constraints:
    """c_lo_lambda and q_hi per flow and step (§4.2.2.1)."""
    m, out = tr.model, Constraints()
    names = Z3Names(out)
    cl_all: list[list[z3.ExprRef]] = []
    qh_all: list[list[z3.ExprRef]] = []
    for f in range(tr.N):
        cl: list[z3.ExprRef] = [z3.Real(f"c_lo_lambda_{f},0")]
        qh: list[z3.ExprRef] = [z3.Real(f"q_hi_{f},0")]
        out.add("c_lo_lambda t=0", cl[0] >= 0, qh[0] >= 0)
        series = _flow(tr, f, None)
        for en in range(1, tr.T):
            beliefs.cbr_lambda_step(Z3, names, series, cl, en, m.flow_R(f), m.D, f, m.lambda_extra)
        for t in range(1, tr.T):
            beliefs.q_hi_step(Z3, names, series, cl, qh, t, m.flow_R(f), f)
        cl_all.append(cl)
        qh_all.append(qh)
    tr.derived["c_lo_lambda"], tr.derived["q_hi"] = cl_all, qh_all
    return out
