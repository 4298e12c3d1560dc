"""Plots of simulator runs (matplotlib, Agg backend)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.sim.records import SimResult


def plot_path(path: str | Path) -> Path:
    """A plot file's path, checked: a known suffix, in a folder that exists."""
    p = Path(path)
    if p.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise SpecError(Loc(str(p)), "plot file must end in .png, .pdf or .svg")
    if not p.parent.exists():
        raise SpecError(Loc(str(p)), "the plot's folder does not exist", "create it first")
    return p


def pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive backend (imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_run(res: SimResult, path: str | Path, states: tuple[str, ...] = ()) -> Path:
    """Sending rate and cwnd per flow, bottleneck queue, RTT samples, packets lost per
    step, and one panel per named CCA state variable (per flow that has it, in the
    CCA's units: steps, bytes, bytes per step)."""
    p = plot_path(path)
    plt = pyplot()
    import numpy as np

    cfg = res.config
    C = cfg.link.C
    fig, axes = plt.subplots(4 + len(states), 1, figsize=(9, 10 + 2 * len(states)), sharex=True)
    a1, a2, a3, a4 = axes[:4]
    for f, rec in enumerate(res.flows):
        t = np.array(rec.time)
        rate = np.array(rec.rate) * 8 / 1e6
        if np.isfinite(rate).any():
            a1.plot(t, rate, lw=1, label=f"flow {f} rate")
        cw = np.array(rec.cwnd)
        if np.isfinite(cw).any():
            a1.plot(t, cw * 8 / 1e6 / cfg.flows[f].R, lw=1, ls="--", label=f"flow {f} cwnd / R")
    if cfg.link.schedule is None:
        a1.axhline(C * 8 / 1e6, color="k", lw=0.8, ls=":", label="C")
    else:  # C(t): a step at each change point, drawn to the end of the run
        pts = cfg.link.schedule.points
        end = max(len(res.queue) * res.dt, pts[-1][0])
        a1.step([t for t, _ in pts] + [end], [c * 8 / 1e6 for _, c in pts] + [pts[-1][1] * 8 / 1e6],
                where="post", color="k", lw=0.8, ls=":", label="C(t)")
    a1.set_ylabel("Mbit/s")
    a1.legend(fontsize=7, loc="upper right")
    tt = np.arange(len(res.queue)) * res.dt
    bdp = C * min(f.R for f in cfg.flows)  # under a rate schedule, the BDP at t = 0
    a2.plot(tt, res.queue / bdp, lw=0.8, color="C3")
    if cfg.link.buffer is not None:
        a2.axhline(cfg.link.buffer / bdp, color="k", lw=0.8, ls=":", label="buffer")
        a2.legend(fontsize=7)
    a2.set_ylabel("queue (BDP)" if cfg.link.schedule is None else "queue (BDP at t = 0)")
    for f, samples in enumerate(res.rtt_samples):
        if len(samples):
            a3.plot(np.frombuffer(samples.time, dtype=float), np.frombuffer(samples.rtt, dtype=float) * 1000,
                    lw=0.6, label=f"flow {f}")
    a3.set_ylabel("RTT (ms)")
    for f, rec in enumerate(res.flows):
        if len(rec.L) > 1:
            a4.plot(rec.time[1:], np.diff(np.array(rec.L)) / cfg.mss, lw=0.8, label=f"flow {f}")
    a4.set_ylabel("lost (packets / step)")
    for ax, name in zip(axes[4:], states, strict=True):
        for f, rec in enumerate(res.flows):
            if name in rec.state:
                ax.plot(rec.time, rec.state[name], lw=0.8, label=f"flow {f}")
        ax.set_ylabel(name)
    for ax in axes[3:]:
        if len(ax.get_lines()) > 1:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time (s)")
    for a in axes:
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


METRICS = (("utilization", "utilization", 1.0), ("queue", "queue_mean_bdp", 1.0), ("loss", "loss_per_R_mean", 1.0))


def plot_grid(rows: list[dict[str, Any]], outdir: Path) -> list[Path]:
    """One figure per metric against the buffer (log scale), a panel per (C, R), a
    line per CCA (as Figs. B.3–B.4)."""
    plt = pyplot()
    Cs = sorted({r["C_mbps"] for r in rows})
    Rs = sorted({r["R_ms"] for r in rows})
    ccas = sorted({r["cca"] for r in rows})
    paths = []
    for fname, key, _scale in METRICS:
        fig, axes = plt.subplots(len(Cs), len(Rs), figsize=(3.2 * len(Rs), 2.6 * len(Cs)), squeeze=False,
                                 sharex=True)
        for i, c in enumerate(Cs):
            for j, r in enumerate(Rs):
                ax = axes[i][j]
                for k, name in enumerate(ccas):
                    pts = sorted((float(Fraction(x["buffer_bdp"])), x["metrics"][key]) for x in rows
                                 if x["cca"] == name and x["C_mbps"] == c and x["R_ms"] == r)
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, lw=1, color=f"C{k}",
                                label=name)
                ax.set_xscale("log", base=2)
                ax.set_title(f"C={c:g} Mbit/s, R={r:g} ms", fontsize=8)
                ax.grid(alpha=0.3)
                if i == len(Cs) - 1:
                    ax.set_xlabel("buffer (BDP)")
                if j == 0:
                    ax.set_ylabel({"utilization": "utilization", "queue": "mean queue (BDP)",
                                   "loss": "loss (pkts per R)"}[fname])
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        p = outdir / f"{fname}.png"
        fig.savefig(p, dpi=100)
        plt.close(fig)
        paths.append(p)
    return paths
