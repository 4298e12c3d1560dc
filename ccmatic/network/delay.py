"""Queueing-delay booleans (REFERENCE-SPEC "Queueing delay"; CCAC §3).

When S did not move, the sample is stale and every entry is copied from t − 1.
For a newly serviced byte that was sent before the trace started (dt ≥ t), the
model option ``qdel_prehistory`` decides: ``free`` (REFERENCE-SPEC: the solver
picks any bucket ≥ t, or none) or ``hidden`` (CCAC's encoding: no bucket is true,
so the sample reads as a delay beyond the horizon).

``qdel[f][t][dt]`` means: the byte flow f had serviced at t was sent in
(t − dt − 1, t − dt], i.e. its delay through the network was in [dt, dt + 1).
The RTT sample the sender gets R later is R + that delay, so by Eq. 4.1.1
qdel_lo = max(0, dt − D) and qdel_hi = dt + 1.
"""

from __future__ import annotations

from typing import cast

import z3

from ccmatic.smt import Encoding
from ccmatic.trace import Trace

QdelBools = list[list[list[z3.BoolRef]]]


def qdel(tr: Trace) -> QdelBools:
    return cast(QdelBools, tr.lazy("qdel", lambda: _build(tr)))


def _build(tr: Trace) -> QdelBools:
    T, e, m = tr.T, tr.enc, tr.model
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
            e.add("qdel at most one", z3.AtMost(*q[f][t], 1))
            moved = z3.BoolVal(True) if always else (S[t] != S[t - 1] if t > 0 else None)
            if t + 1 < T and moved is not None:
                _growth(e, q[f][t], q[f][t + 1], moved)
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
                # (The bucket's lower edge dt can exceed β/C + D: sent late in step
                # t − dt and served early in step t.)
                for dt in range(T):
                    e.add("qdel buffer bound", z3.Implies(q[f][t][dt], tr.C * (dt - m.D - 1) < tr.buffer))
    return q


def _growth(e: Encoding, now: list[z3.BoolRef], nxt: list[z3.BoolRef], fresh: z3.BoolRef) -> None:
    """FIFO: the byte serviced at t + 1 was sent no earlier than the one serviced at
    t, so its delay is at most one step more, and finite if the first one was:
    a fresh sample in bucket dt1 at t puts the next one in a bucket ≤ dt1 + 1.

    Under ``qdel_growth = "fresh"`` this binds only a sample taken at t (S moved at
    t, t ≥ 1): a stale sample may be several steps old, and the next byte's delay
    may exceed it by more.  ``"always"`` (REFERENCE-SPEC, CCmatic's prototype)
    binds every step, t = 0 and stale samples included; it over-constrains the
    network but is what Table 4.1 was computed with."""
    T = len(now)
    for dt1 in range(T):
        later = [nxt[dt2] for dt2 in range(dt1 + 2, T)]
        if later:
            e.add("qdel grows by at most 1 per step", z3.Implies(z3.And(fresh, now[dt1]), z3.Not(z3.Or(*later))))
        if dt1 + 1 < T:
            e.add("qdel stays finite", z3.Implies(z3.And(fresh, now[dt1]), z3.Or(*nxt[:dt1 + 2])))


def qdel_bounds(tr: Trace) -> tuple[list[list[z3.ArithRef]], list[list[z3.ArithRef]]]:
    """Per flow and step: (qdel_lo, qdel_hi) as terms (Eq. 4.1.1).  When no bucket
    is true (delay beyond the horizon) qdel_lo = T − D and qdel_hi = 1000·T."""

    def build() -> tuple[list[list[z3.ArithRef]], list[list[z3.ArithRef]]]:
        q = qdel(tr)
        T, D = tr.T, tr.model.D
        lo: list[list[z3.ArithRef]] = []
        hi: list[list[z3.ArithRef]] = []
        for f in range(tr.N):
            lo_f, hi_f = [], []
            for t in range(T):
                a: z3.ArithRef = z3.RealVal(T - D)
                b: z3.ArithRef = z3.RealVal(1000 * T)
                for dt in reversed(range(T)):
                    a = z3.If(q[f][t][dt], z3.RealVal(max(0, dt - D)), a)
                    b = z3.If(q[f][t][dt], z3.RealVal(dt + 1), b)
                lo_f.append(a)
                hi_f.append(b)
            lo.append(lo_f)
            hi.append(hi_f)
        return lo, hi

    return cast(tuple[list[list[z3.ArithRef]], list[list[z3.ArithRef]]], tr.lazy("qdel_bounds", build))
