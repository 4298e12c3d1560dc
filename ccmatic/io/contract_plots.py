"""The plot of ``ccmatic contract``: per statistic, the measured (statistic, rate)
points on log-log axes with the fitted contracts (as thesis Figs. 5.6–5.7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ccmatic.io.sim_plots import plot_path, pyplot
from ccmatic.sim.contract import STATS, contract_of, points

_STYLE = {"power": "-", "shifted": "--", "linear": ":"}


def plot_contract(rows: list[dict[str, Any]], analysis: dict[str, Any], path: str | Path, title: str) -> Path:
    """One panel per statistic: the fitted runs' points (colour: flow count; hollow:
    unfair runs) and each fit, the chosen one thick."""
    import numpy as np

    p = plot_path(path)
    plt = pyplot()
    fig, axes = plt.subplots(1, len(STATS), figsize=(4.2 * len(STATS), 3.8), squeeze=False)
    chosen = analysis["contract"]
    flows = sorted({r["flows"] for r in rows})
    for ax, (stat, (name, unit, _)) in zip(axes[0], STATS.items()):
        for j, n in enumerate(flows):
            for unfair in (False, True):
                s, r = points([x for x in rows if x["flows"] == n and x["unfair"] == unfair], stat)
                ax.scatter(s, r, s=14, label=f"N={n}" if not unfair else None,
                           facecolors="none" if unfair else f"C{j}", edgecolors=f"C{j}")
        s_all, _ = points(rows, stat)
        pos = [x for x in s_all if x > 0]
        if pos:
            grid = np.geomspace(min(pos), max(pos), 100)
            for fam, fit in analysis["fits"][stat].items():
                if fit is None:
                    continue
                con = contract_of(fit)
                ys = np.array([con.f(float(x)) for x in grid])
                ok = np.isfinite(ys) & (ys > 0)
                thick = chosen is not None and chosen["statistic"] == stat and chosen["family"] == fam
                ax.plot(grid[ok], ys[ok], _STYLE[fam], color="k", lw=2.2 if thick else 0.9,
                        label=f"{fam} (mse {fit['mse_log']:.3g})")
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel(f"{name} ({unit})" if unit else name)
        ax.set_ylabel("flow rate (Mbit/s)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p
