"""Constraints shared by every model family.

Each function adds constraints to ``trace.enc`` under a tag naming the equation it
encodes (thesis Listing A.1 / Eq. A.2.x, CCAC §3, or REFERENCE-SPEC for the
discretization choices).
"""

from __future__ import annotations

import z3

from ccmatic.trace import Trace


def monotone(tr: Trace) -> None:
    """Cumulative curves never decrease; A − L never decreases (lost bytes were sent)."""
    e = tr.enc
    for f in range(tr.N):
        for t in range(1, tr.T):
            e.add("monotone", tr.A_f[f][t] >= tr.A_f[f][t - 1], tr.S_f[f][t] >= tr.S_f[f][t - 1],
                  tr.L_f[f][t] >= tr.L_f[f][t - 1], tr.Ld_f[f][t] >= tr.Ld_f[f][t - 1],
                  tr.A_f[f][t] - tr.L_f[f][t] >= tr.A_f[f][t - 1] - tr.L_f[f][t - 1])
    for t in range(1, tr.T):
        e.add("monotone", tr.W[t] >= tr.W[t - 1])


def initial(tr: Trace) -> None:
    """Initial conditions are free except for normalisation: curves are shift
    invariant, so S_f(0) = 0 and W(0) = 0 (C0 absorbs the token offset)."""
    e = tr.enc
    e.add("initial", tr.W[0] == 0)
    for f in range(tr.N):
        e.add("initial", tr.S_f[f][0] == 0, tr.L_f[f][0] >= 0, tr.Ld_f[f][0] >= 0,
              tr.Ld_f[f][0] <= tr.L_f[f][0])
    e.add("initial", tr.MSS > 0)
    m = tr.model
    if m.mss_max_bdp is not None:
        e.add("MSS bound", tr.MSS < tr.const(m.mss_max_bdp) * tr.C * m.R)


def service_bounds(tr: Trace) -> None:
    """S ≤ A − L (A.2.2), S ≤ T_A(t) (A.2.1), S ≥ T_A(t − D) (A.2.3)."""
    e = tr.enc
    D = tr.model.D
    for t in range(tr.T):
        for f in range(tr.N):
            e.add("A.2.2 S<=A-L", tr.S_f[f][t] <= tr.A_f[f][t] - tr.L_f[f][t])
        e.add("A.2.1 S<=tokens", tr.S(t) <= tr.tokens(t))
        e.add("A.2.3 S>=tokens(t-D)", tr.S(t) >= tr.tokens(t - D))


def buffer_param(tr: Trace) -> None:
    """Constrain a symbolic β for the arbitrary / small / large buffer modes."""
    m = tr.model
    b = m.buffer
    if tr.buffer is None or b.mode == "finite":
        return
    e = tr.enc
    e.add("buffer", tr.buffer >= 0)
    if b.mode == "arbitrary":
        e.add("buffer", tr.buffer > tr.MSS)
    elif b.mode in ("small", "large"):
        e.add("buffer", tr.buffer > 0)
        assert b.k is not None
        lim = tr.const(b.k) * tr.C * (m.R + m.D)
        e.add("buffer", tr.buffer <= lim if b.mode == "small" else tr.buffer >= lim)


def loss(tr: Trace) -> None:
    """Congestive loss.

    * infinite buffer: no loss during the trace, L(t) = L(0) (undetected initial
      losses may exist unless the query forbids them);
    * ``droptail`` (REFERENCE-SPEC): deterministic; the bottleneck queue never
      exceeds β and bytes are dropped exactly when it would;
    * ``ccac`` (CCAC §3): A − L ≤ T_A(t) + β, and loss at t only if
      A(t) − L(t) ≥ T_A(t − 1) + β (the network may drop as soon as the queue
      measured against the previous step's tokens exceeds β).
    """
    e = tr.enc
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
        return
    beta = tr.buffer
    for t in range(tr.T):
        e.add("buffer bound", tr.A(t) - tr.L(t) <= tr.tokens(t) + beta)
    if m.loss == "droptail":
        e.add("droptail t=0", z3.Implies(tr.L(0) > tr.Ld(0), tr.A(0) - tr.L(0) == tr.tokens(0) + beta))
        for t in range(1, tr.T):
            over = tr.A(t) - tr.L(t - 1) > tr.tokens(t) + beta
            e.add("droptail", z3.If(over, tr.A(t) - tr.L(t) == tr.tokens(t) + beta, tr.L(t) == tr.L(t - 1)))
    else:
        for t in range(1, tr.T):
            e.add("CCAC loss", z3.Implies(tr.L(t) > tr.L(t - 1), tr.A(t) - tr.L(t) >= tr.tokens(t - 1) + beta))


def loss_detection(tr: Trace) -> None:
    """Loss detection with a dupack threshold (CCAC §3): losses that happened by
    t − R − dt are detected at t iff the bytes sent by then, plus ``dupacks``·MSS,
    were ACKed by t − R.  Nothing is detected before it happened (Ld(t) ≤ L(t − R)).
    A timeout (if enabled) fires when every byte that was not lost has been ACKed
    but bytes are outstanding; it detects all losses up to t − R.

    ``loss_detection = "oracle"`` (CCmatic's prototype, used by Table 4.1): every
    loss is detected exactly R after it happened, Ld(t) = L(t − R)."""
    e = tr.enc
    m = tr.model
    R = m.R
    dup = tr.const(m.dupacks) * tr.MSS
    for f in range(tr.N):
        A, S, L, Ld, TO = tr.A_f[f], tr.S_f[f], tr.L_f[f], tr.Ld_f[f], tr.timeout_f[f]
        for t in range(tr.T):
            if t < R:
                e.add("timeout", z3.Not(TO[t]))
                e.add("loss detection", Ld[t] <= L[0])
                continue
            if m.loss_detection == "oracle":
                # exactly one RTT after the loss (CCmatic's prototype)
                e.add("timeout", z3.Not(TO[t]))
                e.add("loss detection (oracle)", Ld[t] == L[t - R])
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


def sending(tr: Trace) -> None:
    """The sender (CCAC §3): with A_w = max(A(t−1), S(t−R) + Ld(t) + cwnd(t)) and
    A_r = A(t−1) + max(rate(t), 0), A(t) = min(A_w, A_r) for t ≥ R.  A CCA that sets
    no rate (cwnd) is not limited by it.  A(t) for t < R is free (initial state)."""
    e = tr.enc
    R = tr.model.R
    for f in range(tr.N):
        A, S, Ld = tr.A_f[f], tr.S_f[f], tr.Ld_f[f]
        for t in range(R, tr.T):
            cands = []
            if tr.has_cwnd[f]:
                aw = S[t - R] + Ld[t] + tr.cwnd_f[f][t]
                cands.append(z3.If(aw >= A[t - 1], aw, A[t - 1]))
            if tr.has_rate[f]:
                r = tr.rate_f[f][t]
                cands.append(A[t - 1] + z3.If(r > 0, r, 0))
            if len(cands) == 2:
                e.add("sending rule", A[t] == z3.If(cands[0] <= cands[1], cands[0], cands[1]))
            elif len(cands) == 1:
                e.add("sending rule", A[t] == cands[0])


def periodic(tr: Trace, K: int) -> None:
    """Steady-state traces (CCAC): the bottleneck queue and the undetected loss at
    the end equal those at the start, and cwnd/rate over the last K steps repeat
    those over the first K."""
    e = tr.enc
    T = tr.T
    e.add("periodic", tr.bq(T - 1) == tr.bq(0))
    for f in range(tr.N):
        e.add("periodic", tr.L_f[f][T - 1] - tr.Ld_f[f][T - 1] == tr.L_f[f][0] - tr.Ld_f[f][0])
        for t in range(K):
            if tr.has_cwnd[f]:
                e.add("periodic", tr.cwnd_f[f][t] == tr.cwnd_f[f][T - K + t])
            if tr.has_rate[f]:
                e.add("periodic", tr.rate_f[f][t] == tr.rate_f[f][T - K + t])
