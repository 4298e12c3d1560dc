"""Counterexample plots (matplotlib, Agg backend; floats only for display).

Top panel: cumulative curves — sent A, sent minus lost A − L, serviced S, and the
service bounds T_A(t) (upper, Eq. A.2.1) and T_A(t − D) (lower, Eq. A.2.3).
Bottom panel: cwnd and rate per flow, with the queueing-delay range
[qdel_lo, qdel_hi) on a second axis.
"""

from __future__ import annotations

from pathlib import Path

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.results import ConcreteTrace


def _f(xs: list) -> list[float]:  # type: ignore[type-arg]
    return [float(x) for x in xs]


def plot_trace(tr: ConcreteTrace, path: str | Path, title: str = "counterexample") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = Path(path)
    if p.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise SpecError(Loc(str(p)), "plot file must end in .png, .pdf or .svg")
    if p.parent and not p.parent.exists():
        raise SpecError(Loc(str(p)), "the plot's folder does not exist", "create it first")
    t = list(range(tr.T))
    fig, (top, bot) = plt.subplots(2, 1, figsize=(9, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    agg = tr.aggregate
    top.plot(t, _f(agg["tokens"]), "k--", lw=1, label="upper bound T_A(t) = C0 + Ct - W(t)")
    top.plot(t, _f(agg["tokens_lo"]), "k:", lw=1, label="lower bound T_A(t - D)")
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
    top.set_ylabel("bytes (cumulative)")
    top.set_title(title)
    top.grid(alpha=0.3)
    top.legend(fontsize=8, loc="upper left")

    handles = []
    for f, fl in enumerate(tr.flows):
        suffix = f" (flow {f})" if tr.N > 1 else ""
        if "cwnd" in fl:
            handles += bot.plot(t, _f(fl["cwnd"]), "C2-", marker="s", ms=3, label="cwnd" + suffix)
        if "rate" in fl:
            handles += bot.plot(t, [float(x) * float(tr.params["R"] or 1) for x in fl["rate"]], "C4-", marker="^", ms=3,
                                label="rate * R" + suffix)
    bot.set_ylabel("bytes")
    bot.set_xlabel("time step")
    bot.set_xticks(t)
    bot.grid(alpha=0.3)
    fl0 = tr.flows[0]
    if "qdel_lo" in fl0:
        ax2 = bot.twinx()
        cap = float(tr.T)
        lo = [min(float(x), cap) for x in fl0["qdel_lo"]]
        hi = [min(float(x), cap) for x in fl0["qdel_hi"]]
        ax2.fill_between(t, lo, hi, step="mid", color="C5", alpha=0.2)
        handles += ax2.plot(t, lo, "C5--", lw=1, label="queueing delay range [qdel_lo, qdel_hi)")
        ax2.set_ylabel("seconds (steps)")
    if handles:
        bot.legend(handles=handles, fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p

