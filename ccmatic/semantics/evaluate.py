"""The meaning of the checked tree (:mod:`ccmatic.spec.ir`), over any domain.

Expressions evaluate like Python's: ``and``/``or`` and comparison chains stop at
the first decided operand, an if-expression evaluates the branch taken.  When a
condition is undecided (a Z3 term) both sides are evaluated and joined by
:meth:`~ccmatic.semantics.domain.Domain.ite`: symbolic execution into If-terms
(thesis B.1).  Statements run the same way: an ``if`` whose condition is decided
runs one branch; otherwise both run on copies of the environment, and every name
either may assign is joined.  A persistent name (rate, cwnd, a state variable) that
a branch leaves unassigned keeps its value from before the ``if``, or from the
previous step.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Generic

from ccmatic.core.errors import EngineError, SpecError
from ccmatic.semantics.domain import Domain, V
from ccmatic.spec import ir

_ZERO_HINT = "guard the divisor, e.g. 'x / d if d != 0 else ...'"


def _unbound(what: str) -> Callable[..., Any]:
    def fail(*args: object) -> Any:
        raise EngineError(f"this evaluation has no {what} (the checker should have refused the read)")
    return fail


@dataclass
class Context(Generic[V]):
    """What an evaluation reads: observations by lag (a CCA step), quantities at
    absolute steps (a formula), parameters, holes, the adversary's choices, and the
    step's environment of assigned names."""

    d: Domain[V]
    fetch: Callable[[str, int], V] = field(default_factory=lambda: _unbound("step observations"))
    at: Callable[[ir.At], V] = field(default_factory=lambda: _unbound("trace"))
    param: Callable[[str], V] = field(default_factory=lambda: _unbound("parameters"))
    hole: Callable[[str], V] = field(default_factory=lambda: _unbound("holes"))
    choose: Callable[[list[V], ir.Choose], V] = field(default_factory=lambda: _unbound("choices"))
    env: dict[str, V] = field(default_factory=dict)
    #: entered around each side of an undecided condition, ``guard(c, side)``: what
    #: is evaluated inside runs only where ``c == side`` (a code-generating domain
    #: guards the adversary's choices with it)
    guard: Callable[[V | bool, bool], AbstractContextManager[None]] = field(
        default_factory=lambda: lambda c, side: nullcontext())


def value(e: ir.Expr, cx: Context[V]) -> V:
    """The value of an expression."""
    v: V = _EXPR[type(e)](e, cx)
    return v


def run(stmts: tuple[ir.Stmt, ...], cx: Context[V]) -> None:
    """Run statements, updating ``cx.env``."""
    for st in stmts:
        if isinstance(st, ir.Assign):
            cx.env[st.name] = value(st.value, cx)
        else:
            _if(st, cx)


def _if(st: ir.If, cx: Context[V]) -> None:
    c = value(st.cond, cx)
    taken = cx.d.decide(c)
    if taken is not None:
        run(st.then if taken else st.orelse, cx)
        for n, persistent in st.merged:
            if persistent and n not in cx.env:
                cx.env[n] = cx.fetch(n, 1)
        return
    before = cx.env
    cx.env = dict(before)
    with cx.guard(c, True):
        run(st.then, cx)
    then_env = cx.env
    cx.env = dict(before)
    with cx.guard(c, False):
        run(st.orelse, cx)
    else_env = cx.env
    env = dict(before)
    for n, persistent in st.merged:
        default = before[n] if n in before else (cx.fetch(n, 1) if persistent else None)
        a = then_env.get(n, default)
        b = else_env.get(n, default)
        if a is None or b is None:
            raise EngineError(f"'{n}' is unassigned on a path the checker accepted")
        env[n] = a if a is b else cx.d.ite(c, a, b)
    cx.env = env


def _arith(e: ir.Arith, cx: Context[V]) -> V:
    a, b = value(e.a, cx), value(e.b, cx)
    d = cx.d
    try:
        if e.op == "add":
            return d.add(a, b)
        if e.op == "sub":
            return d.sub(a, b)
        if e.op == "mul":
            return d.mul(a, b)
        if e.op == "div":
            return d.div(a, b)
        return d.pow(a, b)
    except ZeroDivisionError:
        extra = " (0 raised to a negative power)" if e.op == "pow" else ""
        raise SpecError(e.loc, f"division by zero at step evaluation{extra}", _ZERO_HINT) from None
    except ValueError as x:
        raise SpecError(e.loc, f"{x} at step evaluation") from None
    except OverflowError:
        raise SpecError(e.loc, "numeric overflow in '**' at step evaluation") from None


def _logic(e: ir.Logic, cx: Context[V]) -> V:
    d = cx.d
    absorbing = e.op == "or"
    kept: list[V | bool] = []
    for item in e.items:
        v = value(item, cx)
        known = d.decide(v)
        if known is None:
            kept.append(v)
        elif known == absorbing:
            return d.boolean(absorbing)
    if not kept:
        return d.boolean(not absorbing)
    return d.or_(kept) if absorbing else d.and_(kept)


def _implies(e: ir.Implies, cx: Context[V]) -> V:
    d = cx.d
    a = value(e.a, cx)
    known = d.decide(a)
    if known is False:
        return d.boolean(True)
    b = value(e.b, cx)
    return b if known else d.implies(a, b)


def _ite(e: ir.Ite, cx: Context[V]) -> V:
    c = value(e.c, cx)
    taken = cx.d.decide(c)
    if taken is not None:
        return value(e.a if taken else e.b, cx)
    with cx.guard(c, True):
        a = value(e.a, cx)
    with cx.guard(c, False):
        b = value(e.b, cx)
    return cx.d.ite(c, a, b)


def _reduce(e: ir.Reduce, cx: Context[V]) -> V:
    d = cx.d
    items = [value(x, cx) for x in e.items]
    if e.op == "sum":
        return d.sum(items)
    better = d.lt if e.op == "min" else d.gt
    acc = items[0]
    for it in items[1:]:
        acc = d.ite(better(it, acc), it, acc)
    return acc


def _cmp(e: ir.Cmp, cx: Context[V]) -> V:
    a, b = value(e.a, cx), value(e.b, cx)
    d = cx.d
    op: Callable[[V, V], V] = {"lt": d.lt, "le": d.le, "gt": d.gt, "ge": d.ge, "eq": d.eq, "ne": d.ne}[e.op]
    return op(a, b)


_EXPR: dict[type, Callable[[Any, Context[Any]], Any]] = {
    ir.Num: lambda e, cx: cx.d.num(e.value),
    ir.Bool: lambda e, cx: cx.d.boolean(e.value),
    ir.Obs: lambda e, cx: cx.fetch(e.name, e.lag),
    ir.At: lambda e, cx: cx.at(e),
    ir.Param: lambda e, cx: cx.param(e.name),
    ir.Hole: lambda e, cx: cx.hole(e.name),
    ir.Local: lambda e, cx: cx.env[e.name],
    ir.Neg: lambda e, cx: cx.d.neg(value(e.x, cx)),
    ir.Not: lambda e, cx: cx.d.not_(value(e.x, cx)),
    ir.Arith: _arith,
    ir.Cmp: _cmp,
    ir.Logic: _logic,
    ir.Implies: _implies,
    ir.Ite: _ite,
    ir.Reduce: _reduce,
    ir.Choose: lambda e, cx: cx.choose([value(o, cx) for o in e.options], e),
}
