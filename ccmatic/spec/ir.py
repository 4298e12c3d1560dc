"""The checked form of the spec language: a small expression and statement tree.

:mod:`ccmatic.spec.elaborate` turns parsed text into this tree once every name is
resolved, every unit checked and every constant folded; comprehensions are unrolled
and indices are whole numbers.  :mod:`ccmatic.semantics.evaluate` gives it its one
meaning, over any domain (Z3 terms, exact rationals, floats).

Leaves read the world: :class:`Obs` (a CCA step: a quantity ``lag`` steps back),
:class:`At` (a query: a quantity at an absolute step, of one flow or of all),
:class:`Param` (a parameter the solver picks, e.g. MSS), :class:`Hole` (a template
hole), :class:`Local` (a name assigned earlier in the CCA step).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ccmatic.core.errors import Loc

ArithOp = Literal["add", "sub", "mul", "div", "pow"]
CmpOp = Literal["lt", "le", "gt", "ge", "eq", "ne"]


@dataclass(frozen=True, slots=True, eq=False)
class Num:
    value: Fraction


@dataclass(frozen=True, slots=True, eq=False)
class Bool:
    value: bool


@dataclass(frozen=True, slots=True, eq=False)
class Obs:
    """A CCA step reads ``name`` ``lag`` steps back (0: this step)."""

    name: str
    lag: int
    is_bool: bool


@dataclass(frozen=True, slots=True, eq=False)
class At:
    """A query reads ``name`` at an absolute step, of flow ``flow`` (None: the
    aggregate over flows, or a quantity shared by all flows)."""

    name: str
    flow: int | None
    step: int
    is_bool: bool
    loc: Loc


@dataclass(frozen=True, slots=True, eq=False)
class Param:
    name: str
    loc: Loc


@dataclass(frozen=True, slots=True, eq=False)
class Hole:
    name: str


@dataclass(frozen=True, slots=True, eq=False)
class Local:
    name: str


@dataclass(frozen=True, slots=True, eq=False)
class Neg:
    x: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Not:
    x: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Arith:
    op: ArithOp
    a: Expr
    b: Expr
    loc: Loc


@dataclass(frozen=True, slots=True, eq=False)
class Cmp:
    op: CmpOp
    a: Expr
    b: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Logic:
    op: Literal["and", "or"]
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Implies:
    a: Expr
    b: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Ite:
    c: Expr
    a: Expr
    b: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Reduce:
    op: Literal["sum", "min", "max"]
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Choose:
    """A value the adversary picks among the options (any value without options)."""

    options: tuple[Expr, ...]
    is_bool: bool
    loc: Loc


Expr = Num | Bool | Obs | At | Param | Hole | Local | Neg | Not | Arith | Cmp | Logic | Implies | Ite | Reduce | Choose


@dataclass(frozen=True, slots=True, eq=False)
class Assign:
    name: str
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class If:
    """``merged``: the names an ``if`` may assign that are defined after it, each
    with whether it persists across steps (a branch that does not assign a
    persistent name keeps its value from before the ``if``, or from the previous
    step)."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    merged: tuple[tuple[str, bool], ...]


Stmt = Assign | If


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, (Neg, Not)):
        return (e.x,)
    if isinstance(e, (Arith, Cmp, Implies)):
        return (e.a, e.b)
    if isinstance(e, Ite):
        return (e.c, e.a, e.b)
    if isinstance(e, (Logic, Reduce)):
        return e.items
    if isinstance(e, Choose):
        return e.options
    return ()


def walk(e: Expr) -> Iterator[Expr]:
    """Every node of an expression (iteratively: expressions may be deep)."""
    todo = [e]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(children(n))


def walk_stmts(stmts: tuple[Stmt, ...]) -> Iterator[Expr]:
    """Every expression node of a statement list."""
    todo = list(stmts)
    while todo:
        st = todo.pop()
        if isinstance(st, Assign):
            yield from walk(st.value)
        else:
            yield from walk(st.cond)
            todo.extend(st.then)
            todo.extend(st.orelse)


def series_read(e: Expr) -> set[str]:
    """The quantity names an expression reads (at absolute steps or lags)."""
    return {n.name for n in walk(e) if isinstance(n, (At, Obs))}
