"""Belief bounds (thesis §4.1.1.1, §4.1.1.2, §4.2.2.1, Appendix A.2.2).

Link-rate beliefs for CCAC and the ideal link (Eq. 4.1.2, discretized as in
REFERENCE-SPEC): over every window (s, e] of length w with ACKed bytes
ΔS = S(e) − S(s),

* lower candidate ΔS / (w + D)  (from r·T ≤ C·(T + D), Eq. A.2.8);
* upper candidate ΔS / (w − D), only when w > D and every step of the window is
  known to have been *utilized* (Eq. A.2.7 needs λ ≥ C throughout, i.e. no token
  was wasted): some byte that had arrived by the end of the step was still queued
  D later (its RTT showed queueing delay beyond D, qdel_L > 0), or — with a
  drop-tail buffer β > 0 — bytes sent in the step were dropped and the loss has
  been detected.  Evidence arrives late, so at step e every window ending by e is
  re-judged with what is known at e.  (REFERENCE-SPEC's evidence — no delay bucket
  ≤ D among the samples, or any detection in the step — admits traces with C
  outside [c_lo, c_hi]; tests/test_beliefs.py keeps the proof of soundness);

c_lo(e) = max(c_lo(e−1), lower candidates), c_hi(e) = min(c_hi(e−1), upper ones).

Belief timeouts (§4.1.1.2), when configured: a periodic timeout at a phase the
solver picks (optionally only while c_hi ≤ guard·c_lo) and a timeout when the
beliefs are empty.  On a timeout the beliefs are recomputed from the windows since
the previous timeout, widening by at most ``max_expand``.

CBR-delay beliefs (§4.2.2.1): c_lo_lambda, the largest (A(s+R) − A(s)) / (R + D)
over send windows of length T* = R whose bytes were all serviced within D and
without loss (Eq. 4.2.2); and q_hi, the queue upper bound
q_hi(t) = max(0, q_hi(t−1) + A(t) − A(t−1) − c_lo_lambda(t−R)·1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import z3

from ccmatic.network.delay import qdel
from ccmatic.trace import Trace


@dataclass
class RateBeliefs:
    c_lo: list[list[z3.ArithRef]]
    c_hi: list[list[z3.ArithRef]]
    timeout: list[list[z3.BoolRef]] | None


def _max_of(var: z3.ArithRef, terms: list[z3.ArithRef]) -> list[z3.BoolRef]:
    """var == max(terms), as (var ≥ each) ∧ (var equals one)."""
    cs: list[z3.BoolRef] = [var >= x for x in terms]
    cs.append(z3.Or(*[var == x for x in terms]))
    return cs


def _min_of(var: z3.ArithRef, terms: list[z3.ArithRef]) -> list[z3.BoolRef]:
    cs: list[z3.BoolRef] = [var <= x for x in terms]
    cs.append(z3.Or(*[var == x for x in terms]))
    return cs


def rate_beliefs(tr: Trace) -> RateBeliefs:
    return cast(RateBeliefs, tr.lazy("rate_beliefs", lambda: _build_rate(tr)))


def _build_rate(tr: Trace) -> RateBeliefs:
    T, m, e = tr.T, tr.model, tr.enc
    D = m.D
    q = qdel(tr) if D >= 0 else None
    c_lo = [[z3.Real(f"c_lo_{f},{t}") for t in range(T)] for f in range(tr.N)]
    c_hi = [[z3.Real(f"c_hi_{f},{t}") for t in range(T)] for f in range(tr.N)]
    to_cfg = m.belief_timeouts
    timeouts: list[list[z3.BoolRef]] | None = None
    if to_cfg is not None:
        timeouts = [[z3.Bool(f"belief_timeout_{f},{t}") for t in range(T)] for f in range(tr.N)]
    for f in range(tr.N):
        A, S, Ld = tr.A_f[f], tr.S_f[f], tr.Ld_f[f]
        e.add("beliefs t=0", c_lo[f][0] >= 0)
        L = tr.L_f[f]
        eps = tr.const(m.epsilon) if (m.family == "ccac" and not m.compose) else z3.RealVal(0)
        loss_evidence = m.loss == "droptail" and tr.buffer is not None
        reference = m.belief_evidence == "reference"

        # these helpers read this flow's loop variables (noqa B023): they are only
        # called within the same iteration of the flow loop, never after it
        def utilized(s: int, en: int) -> z3.BoolRef:
            """Step (s, s+1] is known at step en to have had no waste (λ ≥ C).

            Backlog evidence: some byte that arrived by s+1 was still undelivered at
            s+1+D.  Waste at s+1 needs every arrived byte to hold a token by s+1
            (Eq. A.2.5), and a token is used within D (Eq. A.2.3), so the link was
            busy.  Loss evidence (drop-tail, β > ε): bytes sent in the step were
            dropped, so the queue was full, and the sender has detected it by en.
            A drop leaves the bottleneck queue at β, which rules out waste only if
            β > ε (waste needs an empty queue, or A − L ≤ S + ε when
            non-composing): with β = 0 (``finite = 0``) or β ≤ ε a drop proves
            nothing."""
            if reference:  # noqa: B023
                # REFERENCE-SPEC's rule: no delay bucket <= D at s+1 while sending, or a
                # detection in the step (not sound for c_hi; kept to reproduce Table 4.1)
                assert q is not None
                small = z3.Or(*[q[f][s + 1][dt] for dt in range(min(D, T - 1) + 1)])  # noqa: B023
                return z3.Or(z3.And(z3.Not(small), A[s + 1] > A[s]), Ld[s + 1] > Ld[s])  # noqa: B023
            ev = []
            if s + 1 + D <= en:
                ev.append(S[s + 1 + D] + eps < A[s + 1] - L[s + 1])  # noqa: B023
            if loss_evidence:  # noqa: B023
                assert tr.buffer is not None
                ev.append(z3.And(tr.buffer > eps, L[s + 1] > L[s], Ld[en] > L[s]))  # noqa: B023
            return z3.Or(*ev) if ev else z3.BoolVal(False)

        def lower(s: int, en: int) -> z3.ArithRef:
            return (S[en] - S[s]) / (en - s + D)  # noqa: B023

        def upper_ok(s: int, e2: int, en: int) -> z3.BoolRef | None:
            """Window (s, e2] is known at step en to have been utilized throughout.
            With several flows a flow's own ACK rate bounds only its share of C, so
            no upper candidate is sound and c_hi keeps its initial value."""
            if e2 - s <= D or tr.N > 1:
                return None
            return z3.And(*[utilized(x, en) for x in range(s, e2)])

        def upper(s: int, en: int) -> z3.ArithRef:
            return (S[en] - S[s]) / (en - s - D)  # noqa: B023

        if timeouts is None:
            for en in range(1, T):
                lows = [c_lo[f][en - 1]] + [lower(s, en) for s in range(en)]
                e.add("Eq. 4.1.2 c_lo", *_max_of(c_lo[f][en], lows))
                # every window ending by en, judged with the loss evidence known at en
                ups = [c_hi[f][en - 1]]
                for e2 in range(1, en + 1):
                    if reference and e2 != en:
                        continue  # REFERENCE-SPEC judges a window only when it ends
                    for s in range(e2):
                        if e2 < en and not loss_evidence and not reference and not s <= en - 1 - D < e2:
                            # same evidence as at en - 1 (no step's backlog evidence
                            # became available at en): already a candidate of c_hi(en - 1)
                            continue
                        ok = upper_ok(s, e2, en)
                        if ok is not None:
                            ups.append(z3.If(ok, upper(s, e2), c_hi[f][en - 1]))
                e.add("Eq. 4.1.2 c_hi", *_min_of(c_hi[f][en], ups))
            continue
        # --- with belief timeouts (§4.1.1.2) ---
        # Bookkeeping in booleans only (the encoding stays in QF_LRA): after_last[t][s]
        # ⇔ the last timeout at or before t happened at or before step s, after_prev
        # likewise for the one before it; the periodic phase is one-hot.
        assert to_cfg is not None
        TO = timeouts[f]
        x = tr.const(to_cfg.max_expand)
        after_last = [[z3.Bool(f"bt_last_{f},{t},{s2}") for s2 in range(T)] for t in range(T)]
        after_prev = [[z3.Bool(f"bt_prev_{f},{t},{s2}") for s2 in range(T)] for t in range(T)]
        e.add("belief timeout", z3.Not(TO[0]), *after_last[0], *after_prev[0])
        phases: list[z3.BoolRef] | None = None
        if to_cfg.period is not None:
            phases = [z3.Bool(f"bt_phase_{f},{k}") for k in range(to_cfg.period)]
            e.add("belief timeout phase", z3.AtMost(*phases, 1), z3.Or(*phases))
            tr.extra_vars.extend(phases)
        for t in range(1, T):
            fire = []
            if phases is not None and to_cfg.period is not None:
                per: z3.BoolRef = phases[t % to_cfg.period]
                if to_cfg.guard is not None:
                    per = z3.And(per, c_hi[f][t - 1] <= tr.const(to_cfg.guard) * c_lo[f][t - 1])
                fire.append(per)
            if to_cfg.invalid:
                fire.append(c_hi[f][t - 1] < c_lo[f][t - 1])
            e.add("belief timeout", TO[t] == (z3.Or(*fire) if fire else z3.BoolVal(False)))
            for s2 in range(T):
                e.add("belief timeout", after_last[t][s2] == z3.If(TO[t], z3.BoolVal(t <= s2), after_last[t - 1][s2]),
                      after_prev[t][s2] == z3.If(TO[t], after_last[t - 1][s2], after_prev[t - 1][s2]))
        for en in range(1, T):
            # windows eligible at en: start at or after the timeout before the last one
            new_lows = [z3.If(after_prev[en][s], lower(s, en), 0) for s in range(en)]
            all_lows = [z3.If(after_prev[en][s], lower(s, e2), 0) for e2 in range(1, en + 1) for s in range(e2)]
            lo_keep = z3.Real(f"c_lo_keep_{f},{en}")
            lo_reset = z3.Real(f"c_lo_reset_{f},{en}")
            e.add("Eq. 4.1.2 c_lo", *_max_of(lo_keep, [c_lo[f][en - 1]] + new_lows))
            e.add("§4.1.1.2 c_lo on timeout", *_max_of(lo_reset, [c_lo[f][en - 1] / x] + all_lows))
            e.add("c_lo", c_lo[f][en] == z3.If(TO[en], lo_reset, lo_keep))
            hi_keep = z3.Real(f"c_hi_keep_{f},{en}")
            hi_reset = z3.Real(f"c_hi_reset_{f},{en}")
            ups_keep = [c_hi[f][en - 1]]
            ups_reset = [x * c_hi[f][en - 1]]
            for e2 in range(1, en + 1):
                for s in range(e2):
                    ok = upper_ok(s, e2, en)
                    if ok is None:
                        continue
                    ups_keep.append(z3.If(z3.And(ok, after_prev[en][s]), upper(s, e2), c_hi[f][en - 1]))
                    ups_reset.append(z3.If(z3.And(ok, after_prev[en][s]), upper(s, e2), x * c_hi[f][en - 1]))
            e.add("Eq. 4.1.2 c_hi", *_min_of(hi_keep, ups_keep))
            e.add("§4.1.1.2 c_hi on timeout", *_min_of(hi_reset, ups_reset))
            e.add("c_hi", c_hi[f][en] == z3.If(TO[en], hi_reset, hi_keep))
    return RateBeliefs(c_lo, c_hi, timeouts)


@dataclass
class CbrBeliefs:
    c_lo_lambda: list[list[z3.ArithRef]]
    q_hi: list[list[z3.ArithRef]]


def cbr_beliefs(tr: Trace) -> CbrBeliefs:
    return cast(CbrBeliefs, tr.lazy("cbr_beliefs", lambda: _build_cbr(tr)))


def _build_cbr(tr: Trace) -> CbrBeliefs:
    T, m, e = tr.T, tr.model, tr.enc
    R, D = m.R, m.D
    cl = [[z3.Real(f"c_lo_lambda_{f},{t}") for t in range(T)] for f in range(tr.N)]
    qh = [[z3.Real(f"q_hi_{f},{t}") for t in range(T)] for f in range(tr.N)]
    for f in range(tr.N):
        A, S, L = tr.A_f[f], tr.S_f[f], tr.L_f[f]
        e.add("c_lo_lambda t=0", cl[f][0] >= 0, qh[f][0] >= 0)
        for en in range(1, T):
            cands = [cl[f][en - 1]]
            # window (s, s+R] fully serviced by s+R+D (= en), no loss in it
            s = en - R - D
            if s >= 0:
                ok = z3.And(S[s + R + D] >= A[s + R] - L[s + R], L[s + R] == L[s])
                cands.append(z3.If(ok, (A[s + R] - A[s]) / (R + D), cl[f][en - 1]))
            e.add("Eq. 4.2.2 c_lo_lambda", *_max_of(cl[f][en], cands))
        for t in range(1, T):
            nxt = qh[f][t - 1] + A[t] - A[t - 1] - cl[f][max(0, t - R)]
            e.add("§4.2.2.1 q_hi", qh[f][t] == z3.If(nxt > 0, nxt, 0))
    return CbrBeliefs(cl, qh)
