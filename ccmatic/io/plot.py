"""Counterexample plots (matplotlib, Agg backend; floats only for display).

Top panel: cumulative curves — sent A, sent minus lost A − L, serviced S, and the
service bounds T_A(t) (upper, Eq. A.2.1) and T_A(t − D) (lower, Eq. A.2.3).
Bottom panel: cwnd and rate·R per flow (and the queue A − L − S when a violated
bound is on it), with the queueing-delay range [qdel_lo, qdel_hi) on a second axis.
Each violated objective's bound is drawn on the curve it bounds
(:mod:`ccmatic.io.plot_marks`), and the violating step marked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.results import ConcreteTrace
from ccmatic.io.plot_marks import Panels, mark_violations, needs_queue, subtitle
from ccmatic.semantics.explain import ObjectiveCheck


def _f(xs: list) -> list[float]:  # type: ignore[type-arg]
    return [float(x) for x in xs]


def plot_trace(tr: ConcreteTrace, path: str | Path, title: str = "counterexample",
               checks: list[ObjectiveCheck] | None = None) -> Path:
    """The trace, with the bounds of the violated objectives in ``checks``; ``title``:
    the first line (the command and query), followed by the link and what is violated."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = Path(path)
    if p.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise SpecError(Loc(str(p)), "plot file must end in .png, .pdf or .svg")
    if p.parent and not p.parent.exists():
        raise SpecError(Loc(str(p)), "the plot's folder does not exist", "create it first")
    checks = checks or []
    fig, (top, bot) = plt.subplots(2, 1, figsize=(11, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    _curves(tr, top)
    delay = _window(tr, bot, needs_queue(checks))
    mark_violations(tr, checks, Panels(top, bot))
    R, C = tr.params.get("R") or 1, tr.params.get("C") or 1
    top.set_ylabel(f"bytes, cumulative\n(link rate C = {_num(C)} bytes/step)")
    bot.set_ylabel("bytes (cwnd; rate * R)")
    bot.set_xlabel(f"step (a step is RTprop / R; here R = {_num(R)}, so "
                   + ("one step is one RTprop)" if R == 1 else f"RTprop is {_num(R)} steps)"))
    bot.set_xticks(list(range(tr.T)))
    right = 1.08 if delay is not None else 1.01  # beyond the delay axis' labels
    for ax, x in ((top, 1.01), (bot, right)):
        ax.grid(alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if ax is bot and delay is not None:
            more = delay.get_legend_handles_labels()
            handles, labels = handles + more[0], labels + more[1]
        ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(x, 1), borderaxespad=0)
    fig.suptitle(title + "\n" + subtitle(tr, checks), fontsize=10)
    fig.tight_layout()
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


def _num(x: Any) -> str:
    f = float(x)
    return str(int(f)) if f == int(f) else f"{f:.4g}"


def _curves(tr: ConcreteTrace, top: Any) -> None:
    t = list(range(tr.T))
    agg = tr.aggregate
    top.plot(t, _f(agg["tokens"]), "k--", lw=1, label="upper service bound T_A(t) = C0 + Ct - W(t)")
    top.plot(t, _f(agg["tokens_lo"]), "k:", lw=1, label="lower service bound T_A(t - D)")
    top.plot(t, _f(agg["A"]), "C0-", marker="o", ms=3, label="A (sent)")
    top.plot(t, [float(a - l) for a, l in zip(agg["A"], agg["L"])], "C0:", label="A - L (sent, not lost)")
    top.plot(t, _f(agg["S"]), "C1-", marker="o", ms=3, label="S (serviced)")
    beta = tr.params.get("buffer")
    if beta is not None:
        top.plot(t, [float(x + beta) for x in agg["tokens"]], "C3--", lw=1, label="buffer limit T_A(t) + β")
    if any(x != 0 for x in agg["L"]):
        top.plot(t, _f(agg["L"]), "C3-", marker="x", ms=3, label="L (lost)")
        ld = [sum((fl["Ld"][i] for fl in tr.flows), start=0) for i in t]
        top.plot(t, [float(x) for x in ld], "C3:", marker="x", ms=3, label="Ld (loss detected)")


def _window(tr: ConcreteTrace, bot: Any, queue: bool) -> Any:
    """cwnd and rate·R (and the queue); the delay range on a second axis, returned."""
    t = list(range(tr.T))
    R = float(tr.params.get("R") or 1)
    for f, fl in enumerate(tr.flows):
        suffix = f" (flow {f})" if tr.N > 1 else ""
        ls = ("-", "--", "-.", ":")[f % 4]  # flows apart by line style
        if "cwnd" in fl:
            bot.plot(t, _f(fl["cwnd"]), "C2", ls=ls, marker="s", ms=3, label="cwnd" + suffix)
        if "rate" in fl:
            bot.plot(t, [float(x) * R for x in fl["rate"]], "C4", ls=ls, marker="^", ms=3, label="rate * R" + suffix)
    if queue:
        bot.plot(t, _f(tr.aggregate["queue"]), "C7-", marker=".", ms=4, label="queue A - L - S")
    fl0 = tr.flows[0]
    if "qdel_lo" in fl0:
        ax2 = bot.twinx()
        cap = float(tr.T)
        lo = [min(float(x), cap) for x in fl0["qdel_lo"]]
        hi = [min(float(x), cap) for x in fl0["qdel_hi"]]
        ax2.fill_between(t, lo, hi, step="mid", color="C5", alpha=0.2)
        ax2.plot(t, lo, "C5--", lw=1, label="queueing delay [qdel_lo, qdel_hi)" + (" (flow 0)" if tr.N > 1 else ""))
        ax2.set_ylabel("queueing delay (steps)")
        return ax2
    return None

