"""FRCC's round-level transition system on the jittery link, N = 2 (thesis Theorem 7.5.2,
App. D.3.4), and its Lemma D.3.6 checked with Z3's nonlinear real arithmetic.

This is not a ``ccmatic prove`` file: the thesis' proof is over rounds (one step = one
round of at least 24 RTTs), with FRCC's estimates as bounded nondeterministic choices,
and its transition (Eqs. D.3.13, D.3.14) is nonlinear.  ``ccmatic prove`` checks lemmas
over the step model in QF_LRA.  docs/multiflow.md says what could and could not be
expressed.

Normalised with C = 1 and θ = 1 (the lemma's quantities are ratios):

* state: N_C1 > 1 (N_C2 = N_C1/(N_C1 − 1), Eq. D.3.2 with N_G = 2) and N_T > 0;
* network: r = R/θ ∈ (0, 2) (θ·N_G > R), e = ΔR/2θ ∈ [0, 1/2] (𝒟 = θ ≥ ΔR),
  γ_R ∈ [1, 2];
* estimates (§D.3.4.1): N̂_Ti ∈ [N_T, N_T + e]; the raw N̂_Ci within Eq. D.3.10 (no upper
  bound when γ·N̂_Ti ≤ N_Ci); then Alg. 2 lines 4–5: max(·, 1) and the clamps
  [N̂_Ti/δ_L, N̂_Ti·δ_H];
* the alternate update with α = 1 (Assumption 6): with K_i = N̂_Ci/(N_Ci·N̂_Ti),
  N_C1' = (K_1 + K_2)/K_1 (Eq. D.3.13) and N_T' = (r + N_T)(K_1 + K_2) − r (Eq. D.3.14).

Lemma D.3.6: N_C1 ∈ [N_C^LB, N_C^UB] ∧ N_T ∈ [0.15, 3.3] ⇒ the same after the round, with
N_C^LB = N_C^UB/(N_C^UB − 1).  The thesis found N_C^UB = 6.6 by binary search ("if we
decrease N_C^UB from 6.6 to 6.5, Lemma D.3.6 breaks").

    python -m benchmarks.frcc_rounds --ub 13/2      # a counterexample, re-checked exactly
    python -m benchmarks.frcc_rounds --ub 33/5      # the thesis' bound (--timeout S)
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import z3

from ccmatic.engine.recheck import RecheckError, recheck

GAMMA, DELTA_H, DELTA_L = Fraction(4), Fraction(13, 10), Fraction(5, 4)
NT_LB, NT_UB = Fraction(3, 20), Fraction(33, 10)

Tagged = list[tuple[str, z3.BoolRef]]


def q(x: Fraction | int) -> z3.ArithRef:
    return z3.RealVal(str(x))


def _ite_max(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a >= b, a, b)


def _estimate(i: int, NC: z3.ArithRef, NT: z3.ArithRef, e: z3.ArithRef, gR: z3.ArithRef,
              out: Tagged) -> z3.ArithRef:
    """Flow i's K_i = N̂_Ci/(N_Ci·N̂_Ti), with its estimates as free variables bounded as
    in §D.3.4.1 and clamped as in Alg. 2."""
    NTh, raw, NCh, K = z3.Reals(f"NTh{i} rawNC{i} NCh{i} K{i}")
    g = q(GAMMA)
    out += [("D.3.4.1 item 5", z3.And(NTh >= NT, NTh <= NT + e)),
            ("D.3.10 lower", raw * (g * gR * NTh + NC) >= NC * g * NTh),
            ("D.3.10 upper", z3.Implies(g * NTh > NC, raw * (g * NTh - NC) <= NC * g * NTh)),
            ("Alg. 2 lines 4-5", NCh == z3.If(_ite_max(_ite_max(raw, q(1)), NTh / q(DELTA_L)) <= NTh * q(DELTA_H),
                                              _ite_max(_ite_max(raw, q(1)), NTh / q(DELTA_L)), NTh * q(DELTA_H))),
            ("K", K * NC * NTh == NCh)]
    return K


def lemma_d36(ub: Fraction) -> tuple[Tagged, z3.BoolRef]:
    """The transition system's constraints and Lemma D.3.6's negation."""
    lb = ub / (ub - 1)
    NC1, NC2, NT, r, e, gR, NC1f, NTf = z3.Reals("NC1 NC2 NT r e gR NC1f NTf")
    cs: Tagged = [("state", z3.And(NC1 > 1, NC2 * (NC1 - 1) == NC1, NT > 0)),
                  ("network", z3.And(r > 0, r < 2, e >= 0, e <= q(Fraction(1, 2)), gR >= 1, gR <= 2))]
    K1 = _estimate(1, NC1, NT, e, gR, cs)
    K2 = _estimate(2, NC2, NT, e, gR, cs)
    cs += [("D.3.13", NC1f * K1 == K1 + K2), ("D.3.14", NTf == (r + NT) * (K1 + K2) - r)]

    def converged(nc: z3.ArithRef, nt: z3.ArithRef) -> z3.BoolRef:
        return z3.And(nc >= q(lb), nc <= q(ub), nt >= q(NT_LB), nt <= q(NT_UB))

    cs.append(("D.3.6 premise", converged(NC1, NT)))
    return cs, z3.Not(converged(NC1f, NTf))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ub", default="33/5", help="N_C^UB (the thesis: 6.6 = 33/5)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds for Z3")
    args = ap.parse_args()
    ub = Fraction(args.ub)
    cs, negated = lemma_d36(ub)
    s = z3.Solver()
    s.set("timeout", int(args.timeout * 1000))
    s.add(*[c for _tag, c in cs], negated)
    t0 = time.perf_counter()
    res = s.check()
    took = time.perf_counter() - t0
    if res == z3.unsat:
        print(f"Lemma D.3.6 with N_C^UB = {ub}: proved (Z3 nlsat, {took:.1f} s)")
    elif res == z3.sat:
        try:
            ev = recheck(s.model(), [*cs, ("D.3.6 negated", negated)])
        except RecheckError as err:
            print(f"Lemma D.3.6 with N_C^UB = {ub}: Z3's model failed the exact re-check ({err}); not a counterexample")
            return
        shown = ", ".join(f"{n} = {ev.num(z3.Real(n))}" for n in ("NC1", "NT", "r", "e", "gR", "NC1f", "NTf"))
        print(f"Lemma D.3.6 with N_C^UB = {ub}: counterexample, re-checked with exact rationals ({took:.1f} s)\n  {shown}")
    else:
        print(f"Lemma D.3.6 with N_C^UB = {ub}: unknown ({s.reason_unknown()}, {took:.1f} s)")


if __name__ == "__main__":
    main()
