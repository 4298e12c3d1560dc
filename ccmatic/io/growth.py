"""How a query's time grows with the horizon T (``ccmatic bench --horizons``).

Two least-squares fits of log(seconds), one against T and one against log T:

* exponential, seconds ≈ a·g^T: one more step of T multiplies the time by g (the
  issue-26 goal is g < 2, one more step costing less than a doubling);
* power law (a polynomial's leading term), seconds ≈ b·T^k.

Both fit the same values, log(seconds), so their R² compare directly: the larger
one says which shape the measured times follow better."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the fewest horizons a fit is made from (two points fit any curve exactly)
MIN_POINTS = 3


def least_squares(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Slope, intercept and R² of the straight line fitted to (xs, ys)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a fit needs at least two different x values")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = my - slope * mx
    ss_res = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    ss_tot = sum((y - my) ** 2 for y in ys)
    return slope, intercept, 1.0 if ss_tot == 0 else 1 - ss_res / ss_tot


@dataclass(frozen=True)
class Growth:
    """The fits of one query's seconds against T."""

    name: str
    Ts: tuple[int, ...]
    factor: float  # g: seconds ≈ scale · g^T
    scale: float
    exp_r2: float
    power: float  # k: seconds ≈ power_scale · T^k
    power_scale: float
    power_r2: float

    @property
    def better(self) -> str:
        return "exponential" if self.exp_r2 >= self.power_r2 else "power law"

    def exponential_at(self, T: float) -> float:
        return float(self.scale * self.factor ** T)

    def text(self) -> str:
        return (f"{self.name}: time grows x{self.factor:.2f} per step of T (exponential fit over T = "
                f"{self.Ts[0]}..{self.Ts[-1]}, R² {self.exp_r2:.3f}); power law T^{self.power:.1f} "
                f"(R² {self.power_r2:.3f}); {self.better} fits better")

    def json(self) -> dict[str, Any]:
        return {"query": self.name, "T": list(self.Ts), "factor_per_step": round(self.factor, 4),
                "exponential_r2": round(self.exp_r2, 4), "power": round(self.power, 3),
                "power_r2": round(self.power_r2, 4), "better": self.better}


def fit_growth(name: str, points: list[tuple[int, float]]) -> Growth | None:
    """The fits of ``(T, seconds)`` points, or None with fewer than MIN_POINTS horizons
    (of positive seconds)."""
    pts = sorted((T, s) for T, s in points if s > 0)
    if len({T for T, _s in pts}) < MIN_POINTS:
        return None
    Ts, logs = [float(T) for T, _s in pts], [math.log(s) for _T, s in pts]
    slope, icpt, r2 = least_squares(Ts, logs)
    pslope, picpt, pr2 = least_squares([math.log(T) for T in Ts], logs)
    return Growth(name, tuple(T for T, _s in pts), math.exp(slope), math.exp(icpt), r2,
                  pslope, math.exp(picpt), pr2)


def bench_growth(rows: list[dict[str, Any]]) -> list[Growth]:
    """A fit of process seconds against T per query of a bench run, over its rows
    that ended with an answer (not ``unknown``, not an unfinished synthesis)."""
    by_query: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        answered = r.get("verdict", "proved") != "unknown" and r.get("status", "complete") == "complete"
        if r.get("T") is not None and answered:
            by_query.setdefault(Path(r["query"]).stem, []).append((int(r["T"]), float(r["process_s"])))
    fits = [fit_growth(q, pts) for q, pts in by_query.items()]
    return [g for g in fits if g is not None]
