"""The bottleneck's output split among the flows first-in first-out, and a jitter box
per flow (thesis Fig. 7.11, the *jittery link*; docs/multiflow.md).

CCAC's service curve (A.2.1, A.2.3) constrains only the flows' total service, so with
several flows the network may serve them in any proportion: one flow can be starved
on an ideal link.  Here each flow f has ``O_f(t)``, the bytes of f that have left the
bottleneck by t, and its own delay box of bound d_f (``jitter``):

* (M1) Σ_f O_f(t) = Bout(t), the bottleneck's total output (the tokens; on CCAC what
  arrived if that is less);
* (M2) O_f(t) ≤ A_f(t) − L_f(t), and O_f never decreases;
* (M3) FIFO at step granularity: for k ≤ t, if everything that arrived by k has
  left (I(k) ≤ Bout(t)), so has f's part of it (O_f(t) ≥ I_f(k)); if it has not
  (I(k) ≥ Bout(t)), nothing f sent after k has left (O_f(t) ≤ I_f(k));
* (M4) the delay box: O_f(t − d_f) ≤ S_f(t) ≤ O_f(t).

On a parking lot every bottleneck has its own token curve and split, and a flow's
input to its second bottleneck is its output from the first.  Bytes that arrive in
the same step may leave in any order (the step is the model's resolution).  All of it is linear: the encoding stays in QF_LRA.
"""

from __future__ import annotations

import z3

from ccmatic.encode.trace import Constraints, SymbolicTrace


def fifo_split(tr: SymbolicTrace) -> Constraints:
    """(M1)–(M3) at every bottleneck and (M4) for every flow, tagged so an exact
    re-check names them."""
    e = Constraints()
    for h, hop in enumerate(tr.hops):
        for t in range(tr.T):
            out = tr.hop_out(h, t)
            e.add("M1 FIFO conservation", z3.Sum([hop.O[f][t] for f in hop.flows]) == out)
            for f in hop.flows:
                e.add("M2 output bounds", hop.O[f][t] <= tr.hop_input(h, f, t))
                if t > 0:
                    e.add("M2 output bounds", hop.O[f][t] >= hop.O[f][t - 1])
            e.extend(_fifo_order(tr, h, t, out))
    e.extend(jitter_boxes(tr))
    return e


def _fifo_order(tr: SymbolicTrace, h: int, t: int, out: z3.ArithRef) -> Constraints:
    """(M3) at bottleneck h and step t against every earlier arrival step k (k = t:
    all or nothing)."""
    e = Constraints()
    hop = tr.hops[h]
    for k in range(t + 1):
        before = tr.hop_arrived(h, k)
        for f in hop.flows:
            mine = tr.hop_input(h, f, k)
            e.add("M3 FIFO", z3.Implies(before <= out, hop.O[f][t] >= mine))
            if k < t:
                e.add("M3 FIFO", z3.Implies(before >= out, hop.O[f][t] <= mine))
    return e


def jitter_boxes(tr: SymbolicTrace) -> Constraints:
    """(M4): a byte of flow f is delivered between leaving the bottleneck and d_f steps
    after (before the trace, only S_f ≤ O_f binds)."""
    e = Constraints()
    for f in range(tr.N):
        d = tr.model.flow_jitter(f)
        for t in range(tr.T):
            e.add("M4 jitter box", tr.S_f[f][t] <= tr.O_f[f][t])
            if t - d >= 0:
                e.add("M4 jitter box", tr.S_f[f][t] >= tr.O_f[f][t - d])
    return e
