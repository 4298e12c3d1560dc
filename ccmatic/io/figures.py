"""What every plot shares: pyplot on the non-interactive backend, the plot file's
checked path, legends outside the axes (they never cover data), log-axis ticks a
reader can read, labels that name a CCA's flows, and saving with the legends and
titles inside the image.

Each plot module builds a ``Figure`` in a function of its own (``*_figure``), so
tests inspect titles, labels and legends on the figure object, and saves it with
:func:`save`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ccmatic.core.errors import Loc, SpecError

#: legend entries beyond which flows are grouped by CCA (one colour per CCA)
MAX_FLOW_ENTRIES = 4


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


def legend_right(ax: Any, handles: Sequence[Any] | None = None, title: str | None = None) -> Any:
    """A legend to the right of ``ax``, outside it, top-aligned (``None`` when there
    is nothing to name)."""
    if handles is None:
        handles = ax.get_legend_handles_labels()[0]
    if not handles:
        return None
    return ax.legend(handles=list(handles), loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                     fontsize=7, title=title, title_fontsize=7)


def save(fig: Any, path: str | Path, dpi: int = 110) -> Path:
    """Write ``fig`` (the legends outside the axes included) and close it."""
    p = Path(path)
    fig.savefig(p, dpi=dpi, bbox_inches="tight")
    pyplot().close(fig)
    return p


def flow_labels(ccas: Sequence[str]) -> tuple[list[str], list[str], bool]:
    """Per flow, the colour and the label its lines take: ``"bbr1 #0"`` for a few
    flows; beyond :data:`MAX_FLOW_ENTRIES`, one colour and label per CCA (``"bbr1
    (flows 0-7)"``), so that a legend stays short.  The flag says grouped."""
    if len(ccas) <= MAX_FLOW_ENTRIES:
        return [f"C{i}" for i in range(len(ccas))], [f"{c} #{i}" for i, c in enumerate(ccas)], False
    names = list(dict.fromkeys(ccas))
    members = {n: [i for i, c in enumerate(ccas) if c == n] for n in names}
    label = {n: f"{n} ({_ranges(members[n])})" for n in names}
    return [f"C{names.index(c)}" for c in ccas], [label[c] for c in ccas], True


def _ranges(ix: list[int]) -> str:
    """Flow numbers as ranges: ``flows 0-3, 6``."""
    parts: list[str] = []
    start = prev = ix[0]
    for i in [*ix[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ("flow " if len(ix) == 1 else "flows ") + ", ".join(parts)


def readable_log_ticks(axis: Any, lo: float, hi: float, unit: str = "", n: int = 5) -> None:
    """On a log ``axis`` spanning [lo, hi] (both > 0): about ``n`` major ticks at
    round values, labelled plainly (``120``, ``0.0005``), and no labels on the minor
    ticks (matplotlib labels them on spans under a decade, and they overlap)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    ticks = log_ticks(lo, hi, n)
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.6g}{unit}"))
    axis.set_minor_formatter(NullFormatter())


def log_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round values over [lo, hi]: the 1-2-5 series when at least three of its values
    fall inside (only the powers of ten when those are too many), else about ``n``
    values spread geometrically inside [lo, hi], of two significant digits (more if
    two are too few to tell three ticks apart)."""
    if not (lo > 0 and hi > 0):
        raise ValueError(f"log ticks need positive bounds, got {lo}, {hi}")
    lo, hi = min(lo, hi), max(lo, hi)
    e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    nice = [float(f"{m}e{e}") for e in range(e0, e1 + 1) for m in (1, 2, 5)]
    inside = [v for v in nice if lo <= v <= hi]
    if len(inside) > 2 * n:
        inside = [v for v in inside if str(v).lstrip("0.").startswith("1")]
    if len(inside) >= 3:
        return inside
    if hi == lo:
        return [lo]
    for digits in (2, 3, 4):
        out: list[float] = []
        for k in range(n):
            v = float(f"{lo * (hi / lo) ** (k / (n - 1)):.{digits}g}")
            if lo <= v <= hi and v not in out:
                out.append(v)
        if len(out) >= 3:
            break
    return out

