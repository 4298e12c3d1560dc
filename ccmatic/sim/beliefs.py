"""Belief bounds on concrete step series (fine mode), by the models' rules.

Same definitions as :mod:`ccmatic.beliefs` (Eq. 4.1.2, 4.2.2, §4.2.2.1), on one
flow's step-grid series, with windows of at most ``period`` steps and a periodic
belief timeout every ``period`` steps (§4.1.1.2: beliefs are recomputed from the
recent windows, c_lo falling and c_hi widening by at most 2× per timeout):

* c_lo: max over windows (s, e] of (S(e) − S(s)) / (e − s + D);
* c_hi: min over windows (s, e] of (S(e) − S(s)) / (e − s − D), for e − s > D and
  every step known to be utilized (a byte that arrived by x+1 was still queued at
  x+1+D, or bytes sent in the step were dropped and the drop was detected);
* c_lo_lambda (never timed out): max over send windows (s, s+1] fully serviced within D without loss
  of (A(s+1) − A(s)) / (1 + D);  q_hi(t) = max(0, q_hi(t−1) + A(t) − A(t−1) −
  c_lo_lambda(t−1)).

All rates are in bytes per step, the unit CCA files use.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

Num = float | Fraction | bool


class FlowBeliefs:
    def __init__(self, D: int, period: int, c_lo0: float, c_hi0: float) -> None:
        self.D = D
        self.period = max(1, period)
        self.c_lo = c_lo0
        self.c_hi = c_hi0
        self.cll = c_lo0
        self.run: list[int] = []          # run[x]: consecutive utilized steps ending at x
        self.lows: list[tuple[int, float]] = []   # (window start, candidate)
        self.highs: list[tuple[int, float]] = []
        self.clls: list[tuple[int, float]] = []
        self.qh = 0.0

    def update(self, e: int, S: Sequence[Num], A: Sequence[Num], L: Sequence[Num], Ld_now: float
               ) -> tuple[float, float, float]:
        """Beliefs at step e (S, A and L known up to e)."""
        D, P = self.D, self.period
        Sf = [float(x) for x in S[max(0, e - P - D - 1):e + 1]]
        off = max(0, e - P - D - 1)

        def s_at(j: int) -> float:
            return Sf[j - off]

        new_lo = [(s, (s_at(e) - s_at(s)) / (e - s + D)) for s in range(max(0, e - P), e)]
        # utilization of step (x, x+1] becomes known at e = x + 1 + D
        x = e - 1 - D
        new_hi: list[tuple[int, float]] = []
        if x >= 0:
            while len(self.run) < x:
                self.run.append(0)
            back = float(S[x + 1 + D]) < float(A[x + 1]) - float(L[x + 1])
            dropped = float(L[x + 1]) > float(L[x]) and Ld_now > float(L[x])
            ok = back or dropped
            prev = self.run[x - 1] if x >= 1 else 0
            self.run.append(prev + 1 if ok else 0)
            e2 = x + 1
            for s in range(e2 - min(self.run[x], P), e2 - D):
                new_hi.append((s, (s_at(e2) - s_at(s)) / (e2 - s - D)))
        s = e - 1 - D
        new_cll: list[tuple[int, float]] = []
        if s >= 0 and float(S[e]) >= float(A[s + 1]) - float(L[s + 1]) and float(L[s + 1]) == float(L[s]):
            new_cll.append((s, (float(A[s + 1]) - float(A[s])) / (1 + D)))
        self.lows = [c for c in self.lows if c[0] >= e - 2 * P] + new_lo
        self.highs = [c for c in self.highs if c[0] >= e - 2 * P] + new_hi
        self.clls = [c for c in self.clls if c[0] >= e - 2 * P] + new_cll
        if e > 0 and e % P == 0:
            recent = e - P
            self.c_lo = max([self.c_lo / 2] + [v for s0, v in self.lows if s0 >= recent])
            self.c_hi = min([2 * self.c_hi] + [v for s0, v in self.highs if s0 >= recent])
        else:
            self.c_lo = max([self.c_lo] + [v for _, v in new_lo])
            self.c_hi = min([self.c_hi] + [v for _, v in new_hi])
            self.cll = max([self.cll] + [v for _, v in new_cll])
        # c_lo_lambda keeps its largest evidence (the models' rule; the thesis gives
        # no timeout for it, §4.2.2.1)
        self.cll = max([self.cll] + [v for _, v in new_cll])
        return self.c_lo, self.c_hi, self.cll

    def q_hi(self, k: int, A: Sequence[Num], cll: Sequence[Num]) -> float:
        """q_hi at step k (A known up to k, c_lo_lambda up to k)."""
        if k == 0:
            self.qh = 0.0
        else:
            self.qh = max(0.0, self.qh + float(A[k]) - float(A[k - 1]) - float(cll[k - 1]))
        return self.qh
