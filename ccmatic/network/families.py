"""The three model families (thesis §2.3).

All three share the token-curve formulation T_A(t) = C0 + C·t − W(t) with
T_A(t − D) ≤ S(t) ≤ T_A(t); they differ only in when tokens may be wasted:

* ``ccac``: waste is the network's free choice, allowed only while the queue is
  empty (Eq. A.2.5; composing variant) or while everything that arrived has been
  served, up to ε (non-composing variant);
* ``cbr_delay``: a constant-bit-rate box, so waste is deterministic — tokens are
  wasted exactly when the box's queue would go negative; the delay box then adds
  any delay in [0, D];
* ``ideal``: the CBR box with D = 0 (no jitter): S = T_A.
"""

from __future__ import annotations

import z3

from ccmatic.trace import Trace


def ccac_waste(tr: Trace) -> None:
    """Eq. A.2.5: tokens are wasted only when the bottleneck queue is empty
    (composing); non-composing: only when A − L ≤ S + ε.  The token curve never
    decreases (W grows by at most C per step)."""
    e = tr.enc
    m = tr.model
    eps = tr.const(m.epsilon)
    for t in range(1, tr.T):
        e.add("token curve non-decreasing", tr.W[t] - tr.W[t - 1] <= tr.C)
        if m.compose:
            e.add("A.2.5 waste only if queue empty",
                  z3.Implies(tr.W[t] > tr.W[t - 1], tr.A(t) - tr.L(t) <= tr.tokens(t)))
        else:
            e.add("waste (non-composing)",
                  z3.Implies(tr.W[t] > tr.W[t - 1], tr.A(t) - tr.L(t) <= tr.S(t) + eps))


def cbr_waste(tr: Trace) -> None:
    """CBR box: T_A(t) = min(T_A(t−1) + C, A(t) − L(t)); the box's queue is never
    negative, so T_A(0) ≤ A(0) − L(0)."""
    e = tr.enc
    e.add("CBR t=0", tr.tokens(0) <= tr.A(0) - tr.L(0))
    for t in range(1, tr.T):
        full = tr.tokens(t - 1) + tr.C
        arrived = tr.A(t) - tr.L(t)
        e.add("CBR service", tr.tokens(t) == z3.If(full <= arrived, full, arrived))


def ideal_service(tr: Trace) -> None:
    """Ideal link: FIFO at rate C with no jitter, S = T_A."""
    for t in range(tr.T):
        tr.enc.add("ideal service", tr.S(t) == tr.tokens(t))
