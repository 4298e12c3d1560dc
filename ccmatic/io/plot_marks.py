"""What a counterexample plot (:func:`ccmatic.io.plot.plot_trace`) draws for the
objectives the trace violates: for each violated comparison shown in the
explanation (:mod:`ccmatic.semantics.explain`) that bounds a plotted curve, the
bound at the violating step (a red bar; from an earlier value of the same curve, a
dashed line, e.g. the utilization line from S[0]) and the violating value (a red
cross); for any other, a red band at the violating step."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ccmatic.core.results import ConcreteTrace
from ccmatic.semantics.explain import (
    SYMBOL,
    Comparison,
    ObjectiveCheck,
    Read,
    Violation,
    read_quantity,
)

#: the curves of each panel that a bound can be drawn on (aggregates, or one flow's with N = 1)
TOP = ("A", "S", "L", "Ld", "tokens", "tokens_lo")
BOTTOM = ("cwnd", "rate", "queue")
#: the marks of the first, second, ... violated objective (none of them a curve's color)
COLORS = ("magenta", "darkorange", "teal")
_FLIP = {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt", "eq": "eq", "ne": "ne"}


@dataclass
class Panels:
    top: Any  # matplotlib Axes
    bot: Any


@dataclass(frozen=True)
class Bound:
    """A violated comparison as a bound on one curve: ``read`` must be ``op`` ``value``;
    ``anchor``: an earlier read of the same curve the bound is measured from."""

    read: Read
    op: str
    value: Fraction
    anchor: Read | None


def bound_of(tr: ConcreteTrace, c: Comparison) -> Bound | None:
    """The comparison solved for its latest read of a plotted curve, if it is linear."""
    if c.linear is None:
        return None
    terms, const = c.linear
    plotted = [(r, k) for r, k in terms if r[0] in TOP + BOTTOM and (r[1] is None or tr.N == 1)]
    if not plotted:
        return None
    subject, coef = max(plotted, key=lambda rk: rk[0][2])
    rest = [(r, k) for r, k in terms if r != subject]
    other = sum((k * Fraction(read_quantity(tr, *r)) for r, k in rest), Fraction(0)) + const
    op = c.required if coef > 0 else _FLIP[c.required]
    anchor = rest[0][0] if len(rest) == 1 and rest[0][0][:2] == subject[:2] and rest[0][0][2] < subject[2] else None
    return Bound(subject, SYMBOL[op], -other / coef, anchor)  # type: ignore[index]


def _violated(checks: list[ObjectiveCheck]) -> list[ObjectiveCheck]:
    return [c for c in checks if c.holds is False and c.why is not None]


def needs_queue(checks: list[ObjectiveCheck]) -> bool:
    """Whether a violated comparison bounds the queue (then the plot shows it)."""
    return any(r[0] == "queue" for c in _violated(checks) for v in c.why.comparisons()  # type: ignore[union-attr]
               if v.cmp is not None and v.cmp.linear is not None for r, _k in v.cmp.linear[0])


def subtitle(tr: ConcreteTrace, checks: list[ObjectiveCheck]) -> str:
    """What the trace violates (and at which step), and what it meets."""
    bad = [f"{c.title}" + (f" at step {c.why.step}" if c.why is not None and c.why.step is not None else "")
           for c in _violated(checks)]
    good = [c.name for c in checks if c.holds]
    text = "violates: " + "; ".join(bad) if bad else "a trace of the model and CCA"
    return text + (f" (holds: {', '.join(good)})" if good else "")


def mark_violations(tr: ConcreteTrace, checks: list[ObjectiveCheck], panels: Panels) -> None:
    R = float(tr.params.get("R") or 1)
    notes: dict[tuple[int, int], int] = {}  # annotations so far at (panel, step): stacked
    for i, c in enumerate(_violated(checks)):
        assert c.why is not None
        color = COLORS[i % len(COLORS)]
        labelled: set[tuple[int, str]] = set()  # (panel, mark) with a legend entry
        drawn = False
        for v, alt in _leaves(c.why):
            assert v.cmp is not None
            b = bound_of(tr, v.cmp)
            if b is None:
                continue
            ax = panels.top if b.read[0] in TOP else panels.bot
            scale = R if b.read[0] == "rate" else 1.0
            name, flow, k = b.read
            y = float(read_quantity(tr, name, flow, k)) * scale
            yb = float(b.value) * scale
            ax.plot([k - 0.3, k + 0.3], [yb, yb], color=color, lw=3, label=_label(labelled, ax, "alt" if alt else "bound",
                                  f"alternatives of {c.name} (none met)" if alt else f"bound of {c.name} (violated)"))
            if b.anchor is not None:
                ya = float(read_quantity(tr, *b.anchor)) * scale
                ax.plot([b.anchor[2], k], [ya, yb], color=color, ls="--", lw=1.2)
            ax.plot([k], [y], "X", color=color, ms=11, zorder=5, label=_label(labelled, ax, "cross", f"violating value ({c.name})"))
            n = notes[(id(ax), k)] = notes.get((id(ax), k), -1) + 1
            left = k > (tr.T - 1) / 2  # keep the text inside the axes
            ax.annotate(f"{name}[{k}] = {y:.4g}, must be {b.op} {yb:.4g}", (k, yb), textcoords="offset points",
                        xytext=(-8 if left else 8, 8 + 12 * n), ha="right" if left else "left", fontsize=8,
                        color=color)
            drawn = True
        if not drawn and c.why.step is not None:
            for ax in (panels.top, panels.bot):
                ax.axvspan(c.why.step - 0.25, c.why.step + 0.25, color=color, alpha=0.15,
                           label=f"violates {c.name}" if ax is panels.top else "_nolegend_")


def _label(done: set[tuple[int, str]], ax: Any, mark: str, text: str) -> str:
    """A legend entry for the first mark of its kind in a panel."""
    if (id(ax), mark) in done:
        return "_nolegend_"
    done.add((id(ax), mark))
    return text


def _leaves(v: Violation, alt: bool = False) -> list[tuple[Violation, bool]]:
    """The violated comparisons shown, each with whether it is one of several
    alternatives (under an 'or') rather than a bound of its own."""
    if v.cmp is not None:
        return [(v, alt)]
    return [x for p in v.parts for x in _leaves(p, alt or v.kind == "any")]
