"""``ccmatic tradeoff``: loss vs convergence time (Theorem 4.2.1, Fig. 4.4): F, F^-1
and their growth for each loss allowance (:mod:`ccmatic.engine.tradeoff`)."""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import Subparsers
from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.files import PLOT_SUFFIXES, output_file
from ccmatic.core.limits import magnitude_error
from ccmatic.engine.tradeoff import Num, Tradeoff, compute, fmt_num
from ccmatic.io.charts import plot_tradeoff
from ccmatic.spec.lossfn import parse_loss


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    p = sub.add_parser(
        "tradeoff", parents=[common],
        help=summary,
        description="Theorem 4.2.1: a CCA risking O(f(C)) loss needs F^-1(C) * (R + beta_s) time to ramp from "
                    "C0 to C, where F(0) = C0 and F(k) = F(k-1) + f(F(k-1))/beta_s.")
    p.add_argument("--loss", action="append", required=True, metavar="f(C)",
                   help="loss allowance in C, e.g. 'C', '1', 'sqrt(C)', 'C/log(C)' (repeat for several curves; "
                        "write --loss=-C when it starts with a minus)")
    p.add_argument("--C0", required=True, metavar="X", help="initial rate C0 > 0 (e.g. 1, 0.5, 1/2)")
    p.add_argument("--beta-s", dest="beta_s", required=True, metavar="Y", help="buffer size in seconds > 0")
    p.add_argument("--C", default=None, metavar="C1,C2,...",
                   help="rates to evaluate F^-1 at (default: C0 times 1, 2, 5, ..., 1000)")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="plot F^-1(C) against C (like Fig. 4.4)")
    p.set_defaults(handler=cmd_tradeoff)


def _number(text: str, where: Loc, what: str) -> Fraction:
    try:
        v = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise SpecError(where, f"{what} is not a number: {text!r}", "write e.g. 3, 0.5 or 1/2") from None
    if v <= 0:
        raise SpecError(where, f"{what} must be positive, got {text.strip()}")
    why = magnitude_error(v)
    if why is not None:
        raise SpecError(where, f"{what} = {text.strip()} is out of range: {why}")
    return v


def _rates(text: str) -> list[Fraction]:
    out: list[Fraction] = []
    col = 1
    for item in text.split(","):
        out.append(_number(item, Loc("--C", 1, col + len(item) - len(item.lstrip())), "C"))
        col += len(item) + 1
    return out


def _plot_path(path: str) -> Path:
    return output_file("--plot", path, PLOT_SUFFIXES)


def _curve_json(t: Tradeoff) -> dict[str, Any]:
    def num(x: Num | None) -> str | None:
        return None if x is None else str(x) if isinstance(x, Fraction) else repr(x)

    pts: list[dict[str, Any]] = []
    for r in t.points:
        d: dict[str, Any] = {"C": str(r.C), "k": r.k, "F_k": num(r.F_k), "exact": r.exact}
        if r.reason is not None:
            d["reason"] = r.reason
        pts.append(d)
    return {"loss": t.loss, "f": str(t.f), "C0": str(t.C0), "beta_s": str(t.beta_s),
            "recurrence": t.recurrence(),
            "F": None if t.F_closed is None else str(t.F_closed),
            "F_inv": None if t.F_inv_closed is None else str(t.F_inv_closed),
            "growth": t.growth, "exact": t.exact, "points": pts}


_GROWTH_TEXT = {
    "log": "F^-1(C) = Theta(log(C/C0)) RTTs: fast convergence, but loss grows with C",
    "linear": "F^-1(C) = Theta(C - C0) RTTs: constant loss, slow convergence",
    "bounded": "F is bounded: F^-1(C) is undefined for large C",
    "other": "no closed form here; see the table",
}


def _curve_text(t: Tradeoff) -> str:
    lines = [f"f(C) = {t.loss}    (C0 = {t.C0}, beta_s = {t.beta_s})",
             f"  recurrence: {t.recurrence()}"]
    lines.append(f"  F(k)       = {t.F_closed}" if t.F_closed is not None else "  F(k)       : no closed form")
    if t.F_inv_closed is not None:
        lines.append(f"  F^-1(C)    = {t.F_inv_closed}   for C > C0 (0 for C <= C0)")
    else:
        lines.append("  F^-1(C)    : no closed form")
    lines.append(f"  growth     : {t.growth} -- {_GROWTH_TEXT[t.growth]}")
    if not t.exact or not all(r.exact for r in t.points):
        lines.append("  arithmetic : floats (f needs log/sqrt/exp, or exact numbers grew too large)"
                     if not t.exact else "  arithmetic : exact, then floats where the fractions grew too large")
    lines.append(f"  {'C':>14}  {'F^-1(C)':>8}  {'F(F^-1(C))':>12}   (time = F^-1(C) x (R + beta_s))")
    for r in t.points:
        if r.k is None:
            lines.append(f"  {fmt_num(r.C):>14}  {'never':>8}  {'':>12}   {r.reason}")
        else:
            assert r.F_k is not None
            lines.append(f"  {fmt_num(r.C):>14}  {r.k:>8}  {fmt_num(r.F_k):>12}")
    return "\n".join(lines) + "\n"


def cmd_tradeoff(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``ccmatic tradeoff``: F, F^-1 and growth of Theorem 4.2.1 for each ``--loss``."""
    C0 = _number(args.C0, Loc("--C0"), "C0")
    beta_s = _number(args.beta_s, Loc("--beta-s"), "beta_s")
    Cs = _rates(args.C) if args.C else None
    losses: list[str] = list(args.loss or [])
    if not losses:
        raise SpecError(Loc("--loss"), "give at least one loss allowance", "e.g. --loss C --loss 1")
    plot = _plot_path(args.plot) if args.plot else None
    fs = [parse_loss(s, "<--loss>" if len(losses) == 1 else f"<--loss #{i}>") for i, s in enumerate(losses, 1)]
    curves = [compute(f, C0, beta_s, Cs=Cs, loss=s.strip()) for f, s in zip(fs, losses, strict=True)]
    if plot is not None:
        top = max(Cs) if Cs else 1000 * C0
        plot_tradeoff(curves, plot, C0, max(top, 2 * C0))
    if getattr(args, "json", False):
        out.write(json.dumps({"curves": [_curve_json(t) for t in curves]}, indent=2) + "\n")
        return 0
    out.write("Theorem 4.2.1: ramping from C0 to C under loss allowance f takes >= F^-1(C) x (R + beta_s)\n"
              "with F(0) = C0, F(k) = F(k-1) + f(F(k-1))/beta_s; F^-1(C) = min k with F(k) >= C.\n\n")
    out.write("\n".join(_curve_text(t) for t in curves))
    if args.plot:
        out.write(f"plot: {args.plot}\n")
    return 0
