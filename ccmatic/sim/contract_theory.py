"""What a contract f determines (thesis Ch. 6, Table 6.2, App. C), over the observed
statistic range [S_min, S_max] and the rates it maps to, [C_min, C_max] =
[f(S_max), f(S_min)].

* robustness error for a persistent error δs (Eq. 6.1.1): max_s f(s)/f(s + δs);
* unfairness on a k-hop parking lot (Eqs. 6.1.2–6.1.5): max_C f(s_k)/f(fold(s_k, …)),
  with s_k solving f(s_k) + f(fold(s_k, … k times)) = C;
* congestion growth with n flows (Eq. 6.1.6): max_C f⁻¹(C/n)/f⁻¹(C);
* range of bandwidths: f(S_min)/f(S_max);
* the App. C bounds these imply (C.1.1–C.1.4), and operating points: m of n flows
  with a persistent δs, the k-hop parking lot, n flows on a dumbbell.

``fold`` is how a statistic accumulates over hops (Eq. 6.1.4): ``sum`` (delay) or
``loss`` (1 − Π(1 − s_i)).  The maxima over s and C are taken on a grid that
includes the range's ends (for a power law they are constant or at S_min, so
exact).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from ccmatic.sim.contract_math import Contract

Fold = Literal["sum", "loss"]
_GRID = 33     # values of s or C tried by the maxima
_BISECT = 200


def fold(s: float, k: float, how: Fold) -> float:
    """The statistic a flow crossing k hops, each at s, sees (Eq. 6.1.4)."""
    return k * s if how == "sum" else 1 - (1 - min(s, 1.0)) ** k


def _grid(lo: float, hi: float) -> list[float]:
    if lo <= 0 or hi <= lo:
        return [lo, hi] if hi > lo else [lo]
    return [lo * (hi / lo) ** (i / (_GRID - 1)) for i in range(_GRID)]


def solve(con: Contract, total: Callable[[float], float], C: float) -> float | None:
    """The statistic s ≥ max(0, pole) with total(s) = C, for total decreasing in s
    (a sum of f at increasing functions of s); None if there is none."""
    lo = max(0.0, con.pole())
    if total(lo) <= C and not math.isinf(total(lo)):
        return None
    hi = max(2 * lo, 1e-12)
    for _ in range(400):
        if total(hi) < C:
            break
        hi *= 2
    else:
        return None
    for _ in range(_BISECT):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if total(mid) > C else (lo, mid)
    return (lo + hi) / 2


def robustness(con: Contract, ds: float, s_min: float, s_max: float) -> float:
    """Eq. 6.1.1 over [S_min, S_max]; a power law gives (1 + δs/S_min)^p."""
    vals = [con.f(s) / con.f(s + ds) if con.f(s + ds) > 0 else math.inf for s in _grid(s_min, s_max)]
    return max(vals)


def parking_lot(con: Contract, C: float, k: float, how: Fold) -> dict[str, float] | None:
    """The k-hop parking lot at capacity C (Eqs. 6.1.2–6.1.4): the short flows' s and
    rate, the long flow's, and their ratio (f(s)/f(ks) for a delay)."""
    s = solve(con, lambda x: con.f(x) + con.f(fold(x, k, how)), C)
    if s is None:
        return None
    short, long_ = con.f(s), con.f(fold(s, k, how))
    ratio = short / long_ if long_ > 0 else math.inf
    return {"s_short": s, "s_long": fold(s, k, how), "rate_short": short, "rate_long": long_, "ratio": ratio}


def unfairness(con: Contract, k: float, how: Fold, c_min: float, c_max: float) -> float:
    """Eq. 6.1.5, the worst ratio over C ∈ [C_min, C_max]; k^p for a power law and Σ."""
    pts = [parking_lot(con, C, k, how) for C in _grid(c_min, c_max)]
    return max((p["ratio"] for p in pts if p is not None), default=math.nan)


def growth(con: Contract, n: float, c_min: float, c_max: float) -> float:
    """Eq. 6.1.6, the worst f⁻¹(C/n)/f⁻¹(C) over C ∈ [C_min, C_max]; n^{1/p} for a
    power law."""
    vals = [con.inverse(C / n) / con.inverse(C) for C in _grid(c_min, c_max) if con.inverse(C) > 0]
    return max(vals, default=math.nan)


def bandwidth_range(con: Contract, s_min: float, s_max: float) -> float:
    """f(S_min)/f(S_max); (S_max/S_min)^p for a power law."""
    low = con.f(s_max)
    return con.f(s_min) / low if low > 0 else math.inf


def dumbbell(con: Contract, C: float, n: int) -> float | None:
    """The statistic at which n flows share C: n·f(s) = C."""
    return solve(con, lambda x: n * con.f(x), C)


def jitter(con: Contract, C: float, n: int, m: int, ds: float) -> dict[str, float] | None:
    """m of n flows see a persistent extra δs: (n − m)·f(s) + m·f(s + δs) = C; the
    clean flows' rate over the jittered flows' is f(s)/f(s + δs)."""
    s = solve(con, lambda x: (n - m) * con.f(x) + m * con.f(x + ds), C)
    if s is None:
        return None
    clean, hit = con.f(s), con.f(s + ds)
    return {"s": s, "rate_clean": clean, "rate_jittered": hit, "ratio": clean / hit if hit > 0 else math.inf}


# -- App. C ------------------------------------------------------------------------------------

def c11_growth_floor(eps_r: float, ds: float, s_min: float, n: float) -> float:
    """C.1.1 (Eqs. C.1.1–C.1.4): robustness error ≤ ε_r forces growth(n) ≥
    1 + ⌊log n / log ε_r⌋·δs/S_min.  The derivation steps k whole times by δs, so it
    holds for n = ε_r^k; the thesis' Eq. C.1.4 puts log n/log ε_r for k, which for
    other n needs the floor (p = 1, δs/S_min = 10, n = 2: unfloored 3.9 > growth 2)."""
    if eps_r <= 1 or not math.isfinite(eps_r):
        return 1.0
    if s_min <= 0:
        return math.inf
    return 1 + math.floor(math.log(n) / math.log(eps_r) + 1e-12) * ds / s_min


def c12_range_ceiling(eps_r: float, ds: float, s_min: float, s_max: float) -> float:
    """C.1.2: C_max/C_min ≤ ε_r^((S_max − S_min)/δs), with the exponent rounded up to
    whole steps of δs for the same reason as C.1.1 (exact for whole steps)."""
    steps = (s_max - s_min) / ds
    return eps_r ** math.ceil(steps - 1e-12) if math.isfinite(eps_r) else math.inf


def inverse_unfairness(con: Contract, target: float, how: Fold, c_min: float, c_max: float) -> float:
    """ratio*⁻¹(target): the hop count k ≥ 1 (real) at which unfairness(k) = target
    (unfairness grows with k); inf if none below 10⁶ hops."""
    lo, hi = 1.0, 2.0
    while unfairness(con, hi, how, c_min, c_max) < target:
        lo, hi = hi, hi * 2
        if hi > 1e6:
            return math.inf
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if unfairness(con, mid, how, c_min, c_max) < target else (lo, mid)
    return (lo + hi) / 2


def c13_growth_floor(con: Contract, n: float, how: Fold, c_min: float, c_max: float) -> float:
    """C.1.3: growth(n) ≥ ratio*⁻¹(n − 1) (fold Σ); (n − 1)^{1/p} for a power law."""
    return inverse_unfairness(con, n - 1, how, c_min, c_max) if n > 2 else 1.0


def c14_range_ceiling(con: Contract, how: Fold, s_min: float, s_max: float) -> float:
    """C.1.4: C_max/C_min ≤ ratio*(S_max/S_min) (fold Σ), where ratio*(k) bounds
    f(s)/f(fold(s, … k times)) for every s (the maximum here over [S_min, S_max]);
    equality for a power law."""
    if s_min <= 0:
        return math.inf
    k = s_max / s_min
    return max(con.f(s) / con.f(fold(s, k, how)) if con.f(fold(s, k, how)) > 0 else math.inf
               for s in _grid(s_min, s_max))
