"""Plots of simulator runs (matplotlib, Agg backend): ``simulate --plot`` and
``evaluate``'s grid.  Every figure says in its title what ran on which link, names
each flow's CCA in legends outside the axes, and gives every axis its unit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.core.units import BYTES, COUNT, RATE, SECONDS
from ccmatic.io.figures import flow_labels, legend_right, plot_path, pyplot, save
from ccmatic.sim.records import SimConfig, SimResult


def plot_run(res: SimResult, path: str | Path, states: tuple[str, ...] = (), command: str = "simulate",
             units: Mapping[str, tuple[float, str]] | None = None) -> Path:
    """``simulate --plot`` (and ``testbed --plot``: ``command``): :func:`run_figure`,
    written to ``path``."""
    p = plot_path(path)
    return save(run_figure(res, states, command, units), p)


def _ms(xs: set[float]) -> str:
    return ", ".join(f"{x * 1000:g}" for x in sorted(xs)) + " ms"


def run_title(cfg: SimConfig, command: str = "simulate") -> str:
    """The command, the CCAs and the link: ``ccmatic simulate: bbr1 ×4, 20 s, seed 1``
    over ``ideal link: C = 48 Mbit/s, R = 40 ms, D = 0 ms, buffer 4 BDP``."""
    counts = Counter(f.cca.name for f in cfg.flows)
    who = " + ".join(n if k == 1 else f"{n} ×{k}" for n, k in counts.items())
    link = cfg.link
    where = f"{link.kind} link" if cfg.topology == "dumbbell" else f"{cfg.hops}-hop parking lot ({link.kind})"
    rate = f"C = {link.C * 8 / 1e6:.4g} Mbit/s" + ("" if link.schedule is None else " at t = 0, then C(t)")
    bdp = link.C * min(f.R for f in cfg.flows)
    buf = "infinite buffer" if link.buffer is None else f"buffer {link.buffer / bdp:.3g} BDP ({link.buffer / 1e3:g} kB)"
    D = _ms({f.jitter(link) for f in cfg.flows})
    return (f"ccmatic {command}: {who}, {cfg.duration:g} s, seed {cfg.seed}\n"
            f"{where}: {rate}, R = {_ms({f.R for f in cfg.flows})}, D = {D}, {buf}")


def _step_text(cfg: SimConfig) -> str:
    """What one CCA step is: one RTprop of the flow."""
    Rs = {f.R for f in cfg.flows}
    return f"step = RTprop = {_ms(Rs)}" if len(Rs) == 1 else "step = the flow's RTprop"


def run_figure(res: SimResult, states: tuple[str, ...] = (), command: str = "simulate",
               units: Mapping[str, tuple[float, str]] | None = None) -> Any:
    """Sending rate and cwnd per flow against C, the bottleneck queue, RTT samples,
    packets lost per CCA step, and one panel per named state variable (per flow that
    has it: a CCA's, converted to ms, kB or Mbit/s from the CCA's steps, bytes and
    bytes per step; or one measured outside a CCA, such as the kernel's own state in
    a testbed run, scaled as ``units`` says).  Flows are named by their CCA (``bbr1
    #0``; grouped by CCA beyond four flows); legends sit right of their panel."""
    plt = pyplot()
    cfg = res.config
    colors, labels, grouped = flow_labels([f.cca.name for f in cfg.flows])
    if cfg.topology == "parking_lot" and not grouped:  # flow 0 crosses every hop, flow j hop j only
        labels = [f"{x} ({'all hops' if i == 0 else f'hop {i}'})" for i, x in enumerate(labels)]
    fig, axes = plt.subplots(4 + len(states), 1, figsize=(10, 10 + 2 * len(states)), sharex=True)
    _rate_panel(axes[0], res, colors, labels, grouped)
    _queue_panel(axes[1], res)
    _rtt_panel(axes[2], res, colors, labels, grouped)
    _loss_panel(axes[3], res, colors, labels, grouped)
    for ax, name in zip(axes[4:], states, strict=True):
        _state_panel(ax, res, name, colors, labels, grouped, (units or {}).get(name))
    axes[-1].set_xlabel("time (s)")
    for a in axes:
        a.grid(alpha=0.3)
    fig.suptitle(run_title(cfg, command), fontsize=10)
    fig.tight_layout()
    return fig


def _flow_handles(ax: Any, labels: list[str]) -> list[Any]:
    """One legend handle per distinct flow label (the first line drawn with it)."""
    seen: dict[str, Any] = {}
    for line in ax.get_lines():
        if line.get_label() in labels and line.get_label() not in seen:
            seen[line.get_label()] = line
    return list(seen.values())


def _lw(grouped: bool, lw: float) -> float:
    return lw * 0.7 if grouped else lw


def _rate_panel(ax: Any, res: SimResult, colors: list[str], labels: list[str], grouped: bool) -> None:
    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    cfg = res.config
    styles: list[Any] = []
    for f, rec in enumerate(res.flows):
        t = np.array(rec.time)
        rate = np.array(rec.rate) * 8 / 1e6
        if np.isfinite(rate).any():
            ax.plot(t, rate, lw=_lw(grouped, 1), color=colors[f], label=labels[f])
            styles = styles or [Line2D([], [], color="grey", lw=1, label="pacing rate")]
        cw = np.array(rec.cwnd)
        if np.isfinite(cw).any():
            ax.plot(t, cw * 8 / 1e6 / cfg.flows[f].R, lw=_lw(grouped, 1), ls="--", color=colors[f], label=labels[f])
    if any(np.isfinite(np.array(r.cwnd)).any() for r in res.flows):
        styles.append(Line2D([], [], color="grey", lw=1, ls="--", label="cwnd / RTprop"))
    C = cfg.link.C
    if cfg.link.schedule is None:
        cline = ax.axhline(C * 8 / 1e6, color="k", lw=0.8, ls=":", label=f"link rate C = {C * 8 / 1e6:.4g} Mbit/s")
    else:  # C(t): a step at each change point, drawn to the end of the run
        pts = cfg.link.schedule.points
        end = max(len(res.queue) * res.dt, pts[-1][0])
        cline, = ax.step([t for t, _ in pts] + [end], [c * 8 / 1e6 for _, c in pts] + [pts[-1][1] * 8 / 1e6],
                         where="post", color="k", lw=0.8, ls=":", label="link rate C(t)")
    ax.set_ylabel("rate (Mbit/s)")
    flows = [Patch(color=colors[labels.index(x)], label=x) for x in dict.fromkeys(labels)]
    legend_right(ax, [*flows, *styles, cline])


def _queue_panel(ax: Any, res: SimResult) -> None:
    import numpy as np

    cfg = res.config
    tt = np.arange(len(res.queue)) * res.dt
    bdp = cfg.link.C * min(f.R for f in cfg.flows)  # under a rate schedule, the BDP at t = 0
    if res.hop_record is None:
        ax.plot(tt, res.queue / bdp, lw=0.8, color="C3", label="bottleneck queue")
    else:  # a parking lot: each hop's queue, and their sum
        ax.plot(tt, res.queue / bdp, lw=0.8, color="k", label="all hops")
        k = res.hop_record.queue.shape[1]
        for j in range(k):  # shades of red: hops are not flows (whose colours the other panels use)
            ax.plot(tt, res.hop_record.queue[:, j] / bdp, lw=0.8, ls="--", color=pyplot().cm.Reds(0.45 + 0.5 * j / k),
                    label=f"hop {j + 1}")
    if cfg.link.buffer is not None:
        ax.axhline(cfg.link.buffer / bdp, color="k", lw=0.8, ls=":", label="buffer (drop-tail)")
    at0 = "" if cfg.link.schedule is None else " at t = 0"
    ax.set_ylabel(f"queue (BDP{at0})")
    R = min(f.R for f in cfg.flows)
    legend_right(ax, title=f"1 BDP = C·R{at0}\n= {bdp / 1e3:g} kB (R = {R * 1000:g} ms)")


def _rtt_panel(ax: Any, res: SimResult, colors: list[str], labels: list[str], grouped: bool) -> None:
    import numpy as np

    for f, samples in enumerate(res.rtt_samples):
        if len(samples):
            ax.plot(np.frombuffer(samples.time, dtype=float), np.frombuffer(samples.rtt, dtype=float) * 1000,
                    lw=_lw(grouped, 0.6), color=colors[f], label=labels[f])
    ax.set_ylabel("RTT sample (ms)")
    legend_right(ax, _flow_handles(ax, labels))


def _loss_panel(ax: Any, res: SimResult, colors: list[str], labels: list[str], grouped: bool) -> None:
    import numpy as np

    cfg = res.config
    for f, rec in enumerate(res.flows):
        if len(rec.L) > 1:
            ax.plot(rec.time[1:], np.diff(np.array(rec.L)) / cfg.mss, lw=_lw(grouped, 0.8), color=colors[f],
                    label=labels[f])
    ax.set_ylabel("lost (packets per step)")
    top = max(1.0, ax.get_ylim()[1])
    ax.set_ylim(-0.04 * top, top)  # a run without loss shows its lines above the axis
    legend_right(ax, _flow_handles(ax, labels), title=f"{_step_text(cfg)},\npacket = {cfg.mss:g} bytes")


def _state_panel(ax: Any, res: SimResult, name: str, colors: list[str], labels: list[str], grouped: bool,
                 given: tuple[float, str] | None = None) -> None:
    """A state variable per flow: a CCA's, from its units (steps, bytes, bytes per
    step) to the plot's (ms, kB, Mbit/s); or one in the ``given`` (scale, unit)."""
    import numpy as np

    cfg = res.config
    unit = "value" if given is None else given[1]
    for f, rec in enumerate(res.flows):
        decl = next((s for s in cfg.flows[f].cca.states if s.name == name), None)
        if name not in rec.state:
            continue
        if decl is not None:
            scale, unit = _state_unit(decl.unit, cfg.flows[f].R)
        elif given is not None:
            scale, unit = given
        else:
            continue
        ax.plot(rec.time, np.array(rec.state[name]) * scale, lw=_lw(grouped, 0.8), color=colors[f], label=labels[f])
    ax.set_ylabel(f"{name} ({unit})")
    legend_right(ax, _flow_handles(ax, labels), title=f"CCA state '{name}'" if given is None else f"state '{name}'")


def _state_unit(unit: Any, R: float) -> tuple[float, str]:
    """Scale from the CCA's unit to the plot's, and the plot's unit's name."""
    if unit == SECONDS:
        return R * 1000, "ms"
    if unit == BYTES:
        return 1e-3, "kB"
    if unit == RATE:
        return 8 / R / 1e6, "Mbit/s"
    if unit == COUNT:
        return 1.0, "count"
    return 1.0, "0 = false, 1 = true"


METRICS = (("utilization", "utilization", "utilization (fraction of C)"),
           ("queue", "queue_mean_bdp", "mean queue (BDP)"),
           ("loss", "loss_per_R_mean", "loss (packets per RTprop)"))


def plot_grid(rows: list[dict[str, Any]], outdir: Path) -> list[Path]:
    """``evaluate``'s plots: :func:`grid_figure` per metric, as ``outdir/METRIC.png``."""
    return [save(grid_figure(rows, i), outdir / f"{METRICS[i][0]}.png", dpi=100) for i in range(len(METRICS))]


def grid_figure(rows: list[dict[str, Any]], metric: int) -> Any:
    """One metric against the buffer (log scale, ticks at the grid's buffers), a
    panel per (C, R), a line per CCA (as Figs. B.3–B.4); the title names the command,
    the metric, the CCAs and the link."""
    plt = pyplot()
    fname, key, ylabel = METRICS[metric]
    Cs = sorted({r["C_mbps"] for r in rows})
    Rs = sorted({r["R_ms"] for r in rows})
    ccas = sorted({r["cca"] for r in rows})
    buffers = sorted({Fraction(r["buffer_bdp"]) for r in rows})
    fig, axes = plt.subplots(len(Cs), len(Rs), figsize=(3.4 * len(Rs) + 1.6, 2.6 * len(Cs) + 0.8), squeeze=False,
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
            ax.set_xticks([float(b) for b in buffers], [str(b) for b in buffers], fontsize=7,
                          rotation=90 if len(buffers) > 9 else 0)
            ax.minorticks_off()
            ax.set_title(f"C = {c:g} Mbit/s, R = {r:g} ms", fontsize=8)
            ax.grid(alpha=0.3)
            if i == len(Cs) - 1:
                ax.set_xlabel("buffer (BDP)")
            if j == 0:
                ax.set_ylabel(ylabel)
    legend_right(axes[0][-1], title="CCA")
    fig.suptitle(_grid_title(rows, fname), fontsize=9)
    fig.tight_layout()
    return fig


def _grid_title(rows: list[dict[str, Any]], metric: str) -> str:
    r0 = rows[0]
    ccas = ", ".join(sorted({r["cca"] for r in rows}))
    return (f"ccmatic evaluate: {metric} of {ccas}\n{r0['model']} link, D = R, {r0['flows']} flow{'' if r0['flows'] == 1 else 's'} per run, "
            f"{r0['duration_s']:g} s per run (metrics over the second half), seed {r0['seed']}")
