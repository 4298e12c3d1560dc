"""The network model as constraints (thesis §2.3, Listing A.1; CCAC §3).

All three families share the token-curve formulation T_A(t) = C0 + C·t − W(t) with
T_A(t − D) ≤ S(t) ≤ T_A(t); they differ only in when tokens may be wasted:

* ``ccac``: waste is the network's free choice, allowed only while the queue is
  empty (Eq. A.2.5; composing variant) or while everything that arrived has been
  served, up to ε (non-composing variant);
* ``cbr_delay``: a constant-bit-rate box, so waste is deterministic — tokens are
  wasted exactly when the box's queue would go negative; the delay box then adds
  any delay in [0, D];
* ``ideal``: the CBR box with D = 0 (no jitter): S = T_A.

Each function returns its constraints, tagged with the equation they encode.  Where
a rule determines a value (the sender, drop-tail loss, the CBR box, oracle loss
detection) the constraint is ``value == rule(...)`` with the rule from
:mod:`ccmatic.semantics.network`, the same one the exact replay re-executes.
"""

from __future__ import annotations

from fractions import Fraction

import z3

from ccmatic.core.model import ALL_PARTS
from ccmatic.encode.fifo import fifo_split
from ccmatic.encode.trace import Constraints, SymbolicTrace
from ccmatic.semantics import network
from ccmatic.semantics.z3domain import Z3


def encode_network(tr: SymbolicTrace, parts: frozenset[str] = ALL_PARTS) -> Constraints:
    """Every constraint of the model family in the model parts assumed
    (:data:`ccmatic.core.model.MODEL_PARTS`; the CCA's own are separate)."""
    out = Constraints()
    for name, part in (("monotone", monotone), ("initial", initial), ("service", service_bounds),
                       ("loss", buffer_param), ("loss", loss), ("loss_detection", loss_detection),
                       ("sender", sending)):
        if name in parts:
            out.extend(part(tr))
    if "service" not in parts:
        return out
    out.extend(ccac_waste(tr) if tr.model.family == "ccac" else cbr_waste(tr))
    if tr.model.family == "ideal" and len(tr.hops) == 1:  # a parking lot's: its splits, jitter 0
        out.extend(ideal_service(tr))
    if tr.model.split:
        out.extend(fifo_split(tr))
    return out


def monotone(tr: SymbolicTrace) -> Constraints:
    """Cumulative curves never decrease; A − L never decreases (lost bytes were sent)."""
    e = Constraints()
    for f in range(tr.N):
        for t in range(1, tr.T):
            e.add("monotone", tr.A_f[f][t] >= tr.A_f[f][t - 1], tr.S_f[f][t] >= tr.S_f[f][t - 1],
                  tr.L_f[f][t] >= tr.L_f[f][t - 1], tr.Ld_f[f][t] >= tr.Ld_f[f][t - 1],
                  tr.A_f[f][t] - tr.L_f[f][t] >= tr.A_f[f][t - 1] - tr.L_f[f][t - 1])
    for hop in tr.hops:
        for t in range(1, tr.T):
            e.add("monotone", hop.W[t] >= hop.W[t - 1])
    return e


def initial(tr: SymbolicTrace) -> Constraints:
    """Initial conditions are free except for normalisation: curves are shift
    invariant, so S_f(0) = 0 and W(0) = 0 (C0 absorbs the token offset)."""
    e = Constraints()
    for hop in tr.hops:
        e.add("initial", hop.W[0] == 0)
    for f in range(tr.N):
        e.add("initial", tr.S_f[f][0] == 0, tr.L_f[f][0] >= 0, tr.Ld_f[f][0] >= 0,
              tr.Ld_f[f][0] <= tr.L_f[f][0])
    e.add("initial", tr.MSS > 0)
    m = tr.model
    if m.mss_max_bdp is not None:
        e.add("MSS bound", tr.MSS < tr.const(m.mss_max_bdp) * tr.C * m.R)
    if tr.dupacks is not None:
        e.add("dupacks (CCAC: any non-negative number of bytes)", tr.dupacks >= 0)
    return e


def service_bounds(tr: SymbolicTrace) -> Constraints:
    """S ≤ A − L (A.2.2), S ≤ T_A(t) (A.2.1), S ≥ T_A(t − D) (A.2.3); with per-flow
    jitter D is the largest flow's."""
    e = Constraints()
    D = tr.model.net_D
    for t in range(tr.T):
        for f in range(tr.N):
            e.add("A.2.2 S<=A-L", tr.S_f[f][t] <= tr.A_f[f][t] - tr.L_f[f][t])
        if len(tr.hops) == 1:  # on a parking lot each bottleneck's split bounds its service
            e.add("A.2.1 S<=tokens", tr.S(t) <= tr.tokens(t))
            e.add("A.2.3 S>=tokens(t-D)", tr.S(t) >= tr.tokens(t - D))
    return e


def buffer_param(tr: SymbolicTrace) -> Constraints:
    """Constrain a symbolic β for the arbitrary / small / large buffer modes."""
    e = Constraints()
    m = tr.model
    b = m.buffer
    if tr.buffer is None or b.mode == "finite":
        return e
    e.add("buffer", tr.buffer >= 0)
    if b.mode == "arbitrary":
        e.add("buffer", tr.buffer > tr.MSS)
    elif b.mode in ("small", "large"):
        e.add("buffer", tr.buffer > 0)
        assert b.k is not None
        lim = tr.const(b.k) * tr.C * (m.R + m.D)
        e.add("buffer", tr.buffer <= lim if b.mode == "small" else tr.buffer >= lim)
    return e


def loss(tr: SymbolicTrace) -> Constraints:
    """Congestive loss.

    * infinite buffer: no loss during the trace, L(t) = L(0) (undetected initial
      losses may exist unless the scenario forbids them);
    * ``droptail`` (docs/semantics.md §Loss): deterministic; the bottleneck queue never
      exceeds β and bytes are dropped exactly when it would;
    * ``ccac`` (CCAC §3): A − L ≤ T_A(t) + β, and loss at t only if
      A(t) − L(t) ≥ T_A(t − 1) + β (the network may drop as soon as the queue
      measured against the previous step's tokens exceeds β).
    """
    e = Constraints()
    m = tr.model
    for f in range(tr.N):
        for t in range(1, tr.T):
            # drop-tail drops arriving bytes only
            e.add("loss per flow", tr.L_f[f][t] - tr.L_f[f][t - 1] <= tr.A_f[f][t] - tr.A_f[f][t - 1])
    if tr.buffer is None:
        for f in range(tr.N):
            for t in range(1, tr.T):
                e.add("no loss (infinite buffer)", tr.L_f[f][t] == tr.L_f[f][0])
            if m.loss == "droptail":
                for t in range(tr.T):
                    e.add("no loss (infinite buffer)", tr.Ld_f[f][t] == tr.L_f[f][t])
        return e
    beta = tr.buffer
    for t in range(tr.T):
        e.add("buffer bound", tr.A(t) - tr.L(t) <= tr.tokens(t) + beta)
    if m.loss == "droptail":
        e.add("droptail t=0", z3.Implies(tr.L(0) > tr.Ld(0), tr.A(0) - tr.L(0) == tr.tokens(0) + beta))
        for t in range(1, tr.T):
            e.add("droptail", tr.L(t) == network.droptail_loss(Z3, tr.A(t), tr.L(t - 1), tr.tokens(t), beta))
    else:
        for t in range(1, tr.T):
            e.add("CCAC loss", z3.Implies(tr.L(t) > tr.L(t - 1), tr.A(t) - tr.L(t) >= tr.tokens(t - 1) + beta))
    return e


def loss_detection(tr: SymbolicTrace) -> Constraints:
    """Loss detection with a dupack threshold (CCAC §3): losses that happened by
    t − R − dt are detected at t iff the bytes sent by then, plus the threshold,
    were ACKed by t − R.  Nothing is detected before it happened (Ld(t) ≤ L(t − R)).
    A timeout (if enabled) fires when every byte that was not lost has been ACKed
    but bytes are outstanding; it detects all losses up to t − R.  The threshold is
    ``dupacks``·MSS, or (``dupacks`` unset, CCAC's default) any number of bytes ≥ 0.

    ``loss_detection = "oracle"`` (CCmatic's prototype, used by Table 4.1): every
    loss is detected exactly R after it happened, Ld(t) = L(t − R)."""
    e = Constraints()
    m = tr.model
    dup = tr.dupacks if tr.dupacks is not None else tr.const(m.dupacks or Fraction(0)) * tr.MSS
    for f in range(tr.N):
        R = m.flow_R(f)
        A, S, L, Ld, TO = tr.A_f[f], tr.S_f[f], tr.L_f[f], tr.Ld_f[f], tr.timeout_f[f]
        for t in range(tr.T):
            if t < R:
                e.add("timeout", z3.Not(TO[t]))
                e.add("loss detection", Ld[t] <= L[0])
                continue
            if m.loss_detection == "oracle":
                # exactly one RTT after the loss (CCmatic's prototype)
                e.add("timeout", z3.Not(TO[t]))
                e.add("loss detection (oracle)", Ld[t] == network.oracle_detection(L[t - R]))
                continue
            if m.timeouts:
                e.add("timeout", TO[t] == z3.And(S[t - R] < A[t - 1], S[t - R] == A[t - R] - L[t - R]))
                e.add("timeout", z3.Implies(TO[t], Ld[t] == L[t - R]))
            else:
                e.add("timeout", z3.Not(TO[t]))
            for dt in range(t - R + 1):
                tp = t - R - dt
                detectable = A[tp] - L[tp] + dup <= S[t - R]
                e.add("loss detection", z3.Implies(z3.And(z3.Not(TO[t]), detectable), Ld[t] >= L[tp]))
                e.add("loss detection", z3.Implies(z3.And(z3.Not(TO[t]), z3.Not(detectable)), Ld[t] <= L[tp]))
            e.add("loss detection", Ld[t] <= L[t - R])
    return e


def sending(tr: SymbolicTrace) -> Constraints:
    """The sender (CCAC §3), for t ≥ R (:func:`ccmatic.semantics.network.sending`);
    A(t) for t < R is free (initial state)."""
    e = Constraints()
    for f in range(tr.N):
        R = tr.model.flow_R(f)
        A, S, Ld = tr.A_f[f], tr.S_f[f], tr.Ld_f[f]
        for t in range(R, tr.T):
            cwnd = tr.cwnd_f[f][t] if tr.sets_cwnd else None
            rate = tr.rate_f[f][t] if tr.sets_rate else None
            if cwnd is not None or rate is not None:
                e.add("sending rule", A[t] == network.sending(Z3, A[t - 1], S[t - R], Ld[t], cwnd, rate))
    return e


def ccac_waste(tr: SymbolicTrace) -> Constraints:
    """Eq. A.2.5: tokens are wasted only when the bottleneck queue is empty
    (composing); non-composing: only when A − L ≤ S + ε.  The token curve never
    decreases (W grows by at most C per step)."""
    e = Constraints()
    m = tr.model
    eps = tr.const(m.epsilon)
    for h, hop in enumerate(tr.hops):
        W = hop.W
        for t in range(1, tr.T):
            e.add("token curve non-decreasing", W[t] - W[t - 1] <= tr.C)
            if m.compose:
                e.add("A.2.5 waste only if queue empty",
                      z3.Implies(W[t] > W[t - 1], tr.hop_arrived(h, t) <= tr.hop_tokens(h, t)))
            else:
                e.add("waste (non-composing)",
                      z3.Implies(W[t] > W[t - 1], tr.A(t) - tr.L(t) <= tr.S(t) + eps))
    return e


def cbr_waste(tr: SymbolicTrace) -> Constraints:
    """The CBR box (:func:`ccmatic.semantics.network.cbr_tokens`); its queue is never
    negative, so T_A(0) ≤ A(0) − L(0)."""
    e = Constraints()
    for h in range(len(tr.hops)):
        tok = [tr.hop_tokens(h, t) for t in range(tr.T)]
        e.add("CBR t=0", tok[0] <= tr.hop_arrived(h, 0))
        for t in range(1, tr.T):
            e.add("CBR service", tok[t] == network.cbr_tokens(Z3, tok[t - 1], tr.model.C, tr.hop_arrived(h, t)))
    return e


def ideal_service(tr: SymbolicTrace) -> Constraints:
    """Ideal link: FIFO at rate C with no jitter, S = T_A."""
    e = Constraints()
    for t in range(tr.T):
        e.add("ideal service", tr.S(t) == tr.tokens(t))
    return e


def periodic(tr: SymbolicTrace, K: int, every: bool = False) -> Constraints:
    """Steady-state traces.  CCAC's ``make_periodic(dur = K)`` (utils.py): cwnd and
    rate (those the CCA sets) of the last K steps repeat the first K, and at the last
    step the bytes in the network (A − L − S) and the undetected loss (L − Ld) of each
    flow and the bottleneck queue (A − L − T_A) equal the first step's.  With several
    flows the same ties hold for every bottleneck's queue and, with a FIFO split, each
    flow's part of it (what reached the bottleneck less O).  ``every`` (the key
    ``periodic_all``): the state ties hold between step k and step T − K + k, k < K,
    instead (the same for K = 1; for K > 1 neither form implies the other)."""
    e = Constraints()
    T = tr.T
    for k in range(K):
        a, b = K - 1 - k, T - 1 - k
        for f in range(tr.N):
            if tr.sets_cwnd:
                e.add("periodic", tr.cwnd_f[f][b] == tr.cwnd_f[f][a])
            if tr.sets_rate:
                e.add("periodic", tr.rate_f[f][b] == tr.rate_f[f][a])
        if every:
            e.extend(_state_tie(tr, a, b))
    if not every:
        e.extend(_state_tie(tr, 0, T - 1))
    return e


def _state_tie(tr: SymbolicTrace, a: int, b: int) -> Constraints:
    """The network's state at step b equals its state at step a."""
    e = Constraints()
    for f in range(tr.N):
        e.add("periodic", tr.queue(b, f) == tr.queue(a, f))
        e.add("periodic", tr.L_f[f][b] - tr.Ld_f[f][b] == tr.L_f[f][a] - tr.Ld_f[f][a])
    for h, hop in enumerate(tr.hops):
        for f in hop.O:
            O = hop.O[f]
            e.add("periodic", tr.hop_input(h, f, b) - O[b] == tr.hop_input(h, f, a) - O[a])
        e.add("periodic", tr.bq(b, h) == tr.bq(a, h))
    return e
