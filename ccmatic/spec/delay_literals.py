"""Time literals against delays: a CCA's delays are in steps (R = 1 step by default),
and qdel_lo/qdel_hi in whole steps (Eq. 4.1.1's buckets), so ``qdel_lo > 0.050``
(meant as 50 ms) is valid but means ``qdel_lo >= 1``.  Such a comparison gets a
warning (docs/language.md, "Delay signals"), never an error."""

from __future__ import annotations

import math
from fractions import Fraction

from ccmatic.spec import ir
from ccmatic.spec.typed import Typed

#: delays a CCA reads in whole steps (Eq. 4.1.1's buckets), and RTTs measured in steps
BUCKETED = ("qdel_lo", "qdel_hi")
MEASURED = ("rtt", "rtt_min", "srtt")
HINT_BUCKETED = ("delays are whole steps of R, and time literals are steps, not seconds "
                 "(R = 1 step by default): compare with a whole number of steps")
HINT_MEASURED = ("time literals are steps, not seconds (R = 1 step by default): "
                 "write a multiple of R, e.g. 1.25 * R")
_FLIP: dict[ir.CmpOp, ir.CmpOp] = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_SYM: dict[ir.CmpOp, str] = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def time_literal(cmp: ir.CmpOp, left: Typed, right: Typed) -> tuple[str, str] | None:
    """(message, hint) when a delay in steps is compared with a constant that looks
    like seconds: a fraction of a step against qdel_lo/qdel_hi, or a nonzero
    constant below one step against an RTT; else None."""
    for obs, c, op in ((left, right, cmp), (right, left, _FLIP[cmp])):
        if not isinstance(obs.expr, ir.Obs) or not isinstance(c.const, Fraction):
            continue
        name, k = obs.expr.name, c.const
        if name in BUCKETED and k.denominator != 1:
            msg = (f"'{name}' is a whole number of steps, so '{name} {_SYM[op]} {float(k):g}' "
                   f"acts as {_whole_form(name, op, k)}")
            return msg, HINT_BUCKETED
        if name in MEASURED and 0 < abs(k) < 1:
            msg = (f"'{name}' is in steps and at least R once a sample exists, so comparing "
                   f"it with {float(k):g} (less than one step) looks like seconds")
            return msg, HINT_MEASURED
    return None


def _whole_form(name: str, op: ir.CmpOp, k: Fraction) -> str:
    """What ``name op k`` means when ``name`` takes whole numbers only."""
    lo, hi = math.floor(k), math.ceil(k)
    return {"gt": f"'{name} >= {lo + 1}'", "ge": f"'{name} >= {hi}'", "lt": f"'{name} <= {hi - 1}'",
            "le": f"'{name} <= {lo}'", "eq": "false", "ne": "true"}[op]
