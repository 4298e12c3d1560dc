"""The figures and tables of benchmarks/kernel_yardstick.py: a mean with its spread
over seeds, a markdown table, and the log-log slope of a growth (docs/testbed.md)."""

from __future__ import annotations

import math
from statistics import mean, pstdev


def fig(xs: list[float], fmt: str = ".2f") -> str:
    """Mean ± population sd over seeds (the seeds' count when more than one)."""
    if not xs:
        return "–"
    if len(xs) == 1:
        return format(xs[0], fmt)
    return f"{format(mean(xs), fmt)} ± {format(pstdev(xs), fmt)} ({len(xs)})"


def held(xs: list[float]) -> str:
    """(b)'s long-term mode seen from outside: the flows' mean share of time held at
    one rate, and how many of them held one over half the time."""
    if not xs:
        return "–"
    return f"{mean(xs):.2f}; {sum(x > 0.5 for x in xs)} of {len(xs)} over half"


def table(head: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(flush=True)


def slope(xs: list[float], ys: list[float]) -> float | None:
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if y > 0]
    if len(pts) < 2:
        return None
    mx, my = mean(p[0] for p in pts), mean(p[1] for p in pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den
