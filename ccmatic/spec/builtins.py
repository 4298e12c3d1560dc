"""The built-in functions of the spec language: ``=>`` (as ``__implies__``),
min/max/sum/all/any over arguments or comprehensions, abs, the unit casts
bytes/seconds/rate/count, and choose."""

from __future__ import annotations

import ast
from collections.abc import Callable
from fractions import Fraction

from ccmatic.core.units import BYTES, COUNT, RATE, SECONDS, unit_name
from ccmatic.spec import ir
from ccmatic.spec.source import IMPLIES
from ccmatic.spec.typed import Elab, Typed, logic

UNIT_CASTS = {"bytes": BYTES, "seconds": SECONDS, "rate": RATE}


def implies(el: Elab, node: ast.Call) -> Typed:
    p = el.boolean(node.args[0])
    q = el.boolean(node.args[1])
    if p.const is False or q.const is True:
        return Typed.boolean(True)
    if p.const is True:
        return q
    return Typed(ir.Implies(p.expr, q.expr), True)


def minmax(el: Elab, node: ast.Call) -> Typed:
    fn = node.func.id  # type: ignore[attr-defined]
    items = el.items(node.args, node)
    unit = None
    for it in items:
        unit = el.unify(Typed(it.expr, False, unit), it, node, f"take {fn} of")
    if all(it.const is not None for it in items):
        consts = [it.number for it in items]
        return Typed.num(min(consts) if fn == "min" else max(consts), unit)
    return Typed(ir.Reduce(fn, tuple(it.expr for it in items)), False, unit)


def total(el: Elab, node: ast.Call) -> Typed:
    items = el.items(node.args, node)
    unit = None
    for it in items:
        unit = el.unify(Typed(it.expr, False, unit), it, node, "add")
    if all(it.const is not None for it in items):
        return Typed.num(sum((it.number for it in items), Fraction(0)), unit)
    return Typed(ir.Reduce("sum", tuple(it.expr for it in items)), False, unit)


def allany(el: Elab, node: ast.Call) -> Typed:
    fn = node.func.id  # type: ignore[attr-defined]
    items = el.items(node.args, node)
    for it, a in zip(items, node.args):
        if not it.is_bool:
            raise el.err(a, f"{fn}() needs conditions, found a number")
    return logic("and" if fn == "all" else "or", items)


def absolute(el: Elab, node: ast.Call) -> Typed:
    if len(node.args) != 1:
        raise el.err(node, "abs() takes one argument")
    v = el.num(node.args[0])
    if v.const is not None:
        return Typed.num(abs(v.number), v.unit)
    return Typed(ir.Ite(ir.Cmp("ge", v.expr, ir.Num(Fraction(0))), v.expr, ir.Neg(v.expr)), False, v.unit)


def cast(el: Elab, node: ast.Call) -> Typed:
    fn = node.func.id  # type: ignore[attr-defined]
    if len(node.args) != 1:
        raise el.err(node, f"{fn}() takes one argument")
    v = el.num(node.args[0])
    if v.unit not in (None, COUNT):
        raise el.err(node, f"{fn}() converts a plain number, not {unit_name(v.unit)}")
    return Typed(v.expr, False, UNIT_CASTS[fn], v.const, v.hole)


def count(el: Elab, node: ast.Call) -> Typed:
    """``count(x)``: a time in steps (or a plain number) as a plain number."""
    if len(node.args) != 1:
        raise el.err(node, "count() takes one argument")
    v = el.num(node.args[0])
    if v.unit not in (None, COUNT, SECONDS):
        raise el.err(node, f"count() converts a number of steps, not {unit_name(v.unit)}")
    return Typed(v.expr, False, COUNT, v.const, v.hole)


def choose(el: Elab, node: ast.Call) -> Typed:
    return el.scope.choose([el.expr(a) for a in node.args], node)


CALLS: dict[str, Callable[[Elab, ast.Call], Typed]] = {
    IMPLIES: implies, "min": minmax, "max": minmax,
    "sum": total, "all": allany, "any": allany, "abs": absolute,
    "bytes": cast, "seconds": cast, "rate": cast,
    "count": count, "choose": choose,
}
