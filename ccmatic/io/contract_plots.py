"""The plot of ``ccmatic contract``: per statistic, the measured (statistic, rate)
points on log-log axes with the fitted contracts (as thesis Figs. 5.6–5.7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ccmatic.io.figures import plot_path, pyplot, readable_log_ticks, save
from ccmatic.sim.contract import STATS, contract_of, points

_STYLE = {"power": "-", "shifted": "--", "linear": ":"}


def plot_contract(rows: list[dict[str, Any]], analysis: dict[str, Any], path: str | Path,
                  grid: dict[str, Any]) -> Path:
    """:func:`contract_figure`, written to ``path``."""
    p = plot_path(path)
    return save(contract_figure(rows, analysis, grid), p)


def _nums(xs: list[float]) -> str:
    return ", ".join(f"{x:g}" for x in xs)


def contract_title(analysis: dict[str, Any], grid: dict[str, Any]) -> str:
    """The command, the CCA and its contract, and the grid of links."""
    chosen = analysis["contract"]
    buf = "infinite buffer" if grid["buffer_bdp"] is None else f"buffer {grid['buffer_bdp']:g} BDP"
    return (f"ccmatic contract {grid['cca']}: {chosen['text'] if chosen else 'no contract'}\n"
            f"{grid['model']} link (dumbbell), C = {_nums(grid['C_mbps'])} Mbit/s, R = {_nums(grid['R_ms'])} ms, "
            f"{buf}, {_nums(grid['flows'])} flows of {grid['cca']}, {grid['duration_s']:g} s per run, "
            f"seed {grid['seed']}")


def contract_figure(rows: list[dict[str, Any]], analysis: dict[str, Any], grid: dict[str, Any]) -> Any:
    """One panel per statistic: each flow's point (colour: flow count; hollow: a run
    the thesis' rule calls unfair) and each fitted family (mean squared log error in
    the panel's title), the chosen contract thick; one legend below the panels."""
    from matplotlib.lines import Line2D

    plt = pyplot()
    fig, axes = plt.subplots(1, len(STATS), figsize=(4.4 * len(STATS), 4.0), squeeze=False)
    flows = sorted({r["flows"] for r in rows})
    for ax, stat in zip(axes[0], STATS, strict=True):
        _panel(ax, rows, analysis, stat, flows)
    handles = [Line2D([], [], ls="", marker="o", color=f"C{j}", label=f"{n} flows") for j, n in enumerate(flows)]
    handles.append(Line2D([], [], ls="", marker="o", mfc="none", color="grey", label="unfair run (not fitted)"))
    handles += [Line2D([], [], ls=st, color="k", lw=0.9, label=f"{fam} fit") for fam, st in _STYLE.items()]
    handles.append(Line2D([], [], color="k", lw=2.2, label="chosen contract"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(contract_title(analysis, grid), fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def _panel(ax: Any, rows: list[dict[str, Any]], analysis: dict[str, Any], stat: str, flows: list[int]) -> None:
    import numpy as np

    name, unit, _ = STATS[stat]
    chosen = analysis["contract"]
    for j, n in enumerate(flows):
        for unfair in (False, True):
            s, r = points([x for x in rows if x["flows"] == n and x["unfair"] == unfair], stat)
            ax.scatter(s, r, s=14, facecolors="none" if unfair else f"C{j}", edgecolors=f"C{j}")
    s_all, r_all = points(rows, stat)
    pos = [x for x in s_all if x > 0]
    mses = []
    if pos:
        grid = np.geomspace(min(pos), max(pos), 100)
        for fam, fit in analysis["fits"][stat].items():
            if fit is None:
                continue
            con = contract_of(fit)
            ys = np.array([con.f(float(x)) for x in grid])
            ok = np.isfinite(ys) & (ys > 0)
            thick = chosen is not None and chosen["statistic"] == stat and chosen["family"] == fam
            ax.plot(grid[ok], ys[ok], _STYLE[fam], color="k", lw=2.2 if thick else 0.9)
            mses.append(f"{fam} {fit['mse_log']:.2g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        readable_log_ticks(ax.xaxis, min(pos), max(pos))
        rpos = [x for x in r_all if x > 0]
        if rpos:
            readable_log_ticks(ax.yaxis, min(rpos), max(rpos))
    ax.set_title(("fit error (mse of log): " + ", ".join(mses)) if mses else f"{name}: no fit (too few fitted points above 0)",
                 fontsize=7)
    ax.set_xlabel(f"{name} ({unit}, log scale)" if unit else f"{name} (fraction of bytes sent, log scale)")
    ax.set_ylabel("flow rate (Mbit/s, log scale)")
    ax.grid(alpha=0.3, which="both")
