"""The plots of ``ccmatic bench --horizons --plot`` (seconds against the horizon T)
and ``ccmatic tradeoff --plot`` (F⁻¹(C) against C, thesis Fig. 4.4)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.engine.tradeoff import Tradeoff
from ccmatic.io.figures import legend_right, pyplot, readable_log_ticks, save
from ccmatic.io.growth import Growth

#: the in-process phases a row of each kind has: (key, legend name, line style)
PHASES = {"verify": (("encode_s", "encode", ":"), ("solve_s", "solve", "--")),
          "synth": (("generator_s", "generator", "-."), ("verifier_s", "verifier", ":"),
                    ("reverify_s", "re-verify", "--"))}


def plot_bench(rows: list[dict[str, Any]], path: str | Path, fits: Sequence[Growth] = ()) -> Path:
    """:func:`bench_figure`, written to ``path``."""
    return save(bench_figure(rows, fits), path, dpi=120)


def bench_figure(rows: list[dict[str, Any]], fits: Sequence[Growth] = ()) -> Any:
    """For each query (a colour), the process wall (solid, dots) and its in-process
    phases (a line style each) against T, on a log axis; with a fit of its process
    wall (``fits``), that exponential (thin, wide) and its factor per step in the legend.
    A phase measured as 0 s cannot sit on a log axis: it is left out, and a note under
    the axes says where."""
    from matplotlib.lines import Line2D

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    by_query: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("T") is not None:
            by_query.setdefault(Path(r["query"]).stem, []).append(r)
    qh, styles, zeros, ys = [], {}, [], []
    for i, (name, rs) in enumerate(by_query.items()):
        rs = sorted(rs, key=lambda r: int(r["T"]))
        Ts = [int(r["T"]) for r in rs]
        wall = [float(r["process_s"]) for r in rs]
        fit = next((g for g in fits if g.name == name), None)
        label = name if fit is None else f"{name} (x{fit.factor:.2f} per step of T)"
        qh += ax.plot(Ts, wall, f"C{i}-", marker="o", label=label)
        ys += wall
        if fit is not None:
            ax.plot(Ts, [fit.exponential_at(T) for T in Ts], f"C{i}-", lw=4, alpha=0.25)
        for key, label, style in PHASES.get(rs[0]["kind"], ()):
            if not all(r.get(key) is not None for r in rs):
                continue
            vals = [float(r[key]) for r in rs]
            zeros += [f"{name} {label} at T = {T}" for T, v in zip(Ts, vals, strict=True) if v <= 0]
            ax.plot(Ts, [v if v > 0 else math.nan for v in vals], f"C{i}{style}", lw=1)
            ys += [v for v in vals if v > 0]
            if any(v > 0 for v in vals):
                styles[label] = Line2D([], [], color="k", ls=style, lw=1, label=f"{label} (in-process)")
    ax.set_yscale("log")
    if ys:
        readable_log_ticks(ax.yaxis, min(ys), max(ys))
    ax.set_xticks(sorted({int(r["T"]) for rs in by_query.values() for r in rs}))
    ax.set_xlabel("horizon T (steps)")
    ax.set_ylabel("seconds (log scale)")
    ax.grid(True, which="both", alpha=0.3)
    process = Line2D([], [], color="k", marker="o", label="process wall (start to exit)")
    fitted = [Line2D([], [], color="k", lw=4, alpha=0.25, label="exponential fit of the process wall")] if fits else []
    legend_right(ax, [*qh, process, *fitted, *styles.values()])
    ax.set_title("ccmatic bench: time against the horizon T\n(on the machine and load of this run)", fontsize=10)
    if zeros:
        fig.text(0.01, 0.01, "0 s, not drawn on the log axis: " + "; ".join(zeros[:6])
                 + (f"; {len(zeros) - 6} more" if len(zeros) > 6 else ""), fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.05 if zeros else 0, 1, 1))
    return fig


def plot_tradeoff(curves: list[Tradeoff], path: str | Path, C0: Fraction, top: Fraction) -> Path:
    """:func:`tradeoff_figure`, written to ``path``."""
    return save(tradeoff_figure(curves, C0, top), path)


def tradeoff_figure(curves: list[Tradeoff], C0: Fraction, top: Fraction) -> Any:
    """F⁻¹(C) for C from C0 to ``top`` (log scale), one line per loss allowance.  A
    curve that never leaves C0 has nothing to draw: it is not in the legend, and a
    note under the axes says why; one that stops early says so in its label."""
    plt = pyplot()
    n = 200
    ratio = float(top / C0)
    grid = sorted({C0 * Fraction(ratio ** (i / n)) for i in range(n + 1)} | {top})
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    notes = []
    for t in curves:
        reach = t.reach_many(grid)
        pts = [(float(r.C), r.k) for r in reach if r.k is not None]
        if len(pts) < 2:
            why = next((r.reason for r in reach if r.k is None and r.reason), "F never reaches C > C0")
            notes.append(f"f(C) = {t.loss} not drawn: {why}")
            continue
        stop = "" if len(pts) == len(grid) else f" (F stops below C = {pts[-1][0]:.3g})"
        ax.plot([c for c, _ in pts], [k for _, k in pts], label=f"f(C) = {t.loss}{stop}")
    ax.set_xscale("log")
    ax.set_xlabel("link rate C (in the unit of C0)")
    ax.set_ylabel("F⁻¹(C): round trips of R + β_s")
    ax.set_title(f"ccmatic tradeoff (Theorem 4.2.1): time to ramp from C0 = {C0} to C\n"
                 f"under loss allowance f(C), buffer β_s = {curves[0].beta_s} s", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    legend_right(ax, title="loss allowance")
    if notes:
        fig.text(0.01, 0.01, "\n".join(notes), fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.04 * len(notes), 1, 1))
    return fig
