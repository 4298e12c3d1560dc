"""Elaborated expressions and the scopes that resolve names (shared by the
elaborator, its built-in functions, and every scope: a CCA step, a query, a proof)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from ccmatic.core.errors import SpecError, SpecWarning
from ccmatic.core.source import Source
from ccmatic.core.units import Unit
from ccmatic.spec import ir

Index = int | tuple[str, int]  # a whole number, or ('t', k) for t + k


class Elab(Protocol):
    """What scopes and built-in functions use of the elaborator."""

    scope: Scope
    loop_vars: dict[str, int]

    def err(self, node: ast.AST, msg: str, hint: str | None = None) -> SpecError: ...

    def expr(self, node: ast.AST, text_ok: bool = False) -> Typed: ...

    def num(self, node: ast.AST) -> Typed: ...

    def boolean(self, node: ast.AST) -> Typed: ...

    def static_int(self, node: ast.AST, allow_t: bool) -> Index: ...

    def items(self, args: list[ast.expr], node: ast.Call) -> list[Typed]: ...

    def unify(self, a: Typed, b: Typed, node: ast.AST, what: str) -> Unit | None: ...


@dataclass(frozen=True)
class Typed:
    """An elaborated expression: its tree, whether it is a condition, its unit (None
    for conditions and for *polymorphic* numbers, which take the other operand's
    unit), its value when known at load time, and whether it depends on template
    holes only (a constant once a candidate is chosen, so it may multiply trace
    terms)."""

    expr: ir.Expr
    is_bool: bool
    unit: Unit | None = None
    const: Fraction | bool | str | None = None
    hole: bool = False

    @property
    def symbolic(self) -> bool:
        """Depends on the trace (neither a load-time constant nor a hole term)."""
        return self.const is None and not self.hole

    @property
    def number(self) -> Fraction:
        assert isinstance(self.const, Fraction)
        return self.const

    @staticmethod
    def num(x: Fraction, unit: Unit | None = None) -> Typed:
        return Typed(ir.Num(x), False, unit, x)

    @staticmethod
    def boolean(b: bool) -> Typed:
        return Typed(ir.Bool(b), True, None, b)

    @staticmethod
    def text(s: str) -> Typed:
        """A string constant (a choice parameter of an objective); only compared."""
        return Typed(ir.Bool(False), False, None, s)


class Scope(Protocol):
    """Resolves names for one context (a CCA step, a query, a proof, a constant)."""

    source: Source
    #: a template with symbolic holes: unit checks become constraints on the holes
    lenient_units: bool
    #: simulator-only files: products and quotients of trace terms, and ``**``
    nonlinear: bool
    #: string literals are names of a parameter's choices (objective formulas)
    text_literals: bool

    def name(self, ident: str, node: ast.AST) -> Typed: ...

    def index(self, ident: str, index: list[Index], node: ast.AST) -> Typed: ...

    def choose(self, options: list[Typed], node: ast.AST) -> Typed: ...

    def int_name(self, ident: str) -> int | None:
        """Value of a name usable in static integer contexts (indices, ranges)."""
        ...

    def hole(self, name: str, node: ast.AST) -> Typed | None: ...

    def call(self, fn: str, node: ast.Call, elab: Elab) -> Typed | None:
        """A scope's own functions (a proof's definitions); None: not one."""
        ...

    def warn(self, node: ast.AST, msg: str, hint: str | None = None) -> None:
        """Record a warning about valid but suspicious input (:class:`SpecWarning`)."""
        ...


class BaseScope:
    """Defaults for the optional parts of :class:`Scope`."""

    lenient_units = False
    nonlinear = False
    text_literals = False

    def __init__(self, source: Source) -> None:
        self.source = source
        self.warnings: list[SpecWarning] = []

    def err(self, node: ast.AST, msg: str, hint: str | None = None) -> SpecError:
        return SpecError(self.source.node_loc(node), msg, hint)

    def choose(self, options: list[Typed], node: ast.AST) -> Typed:
        raise self.err(node, "choose() is only for CCA files")

    def warn(self, node: ast.AST, msg: str, hint: str | None = None) -> None:
        w = SpecWarning(self.source.node_loc(node), msg, hint)
        if w not in self.warnings:
            self.warnings.append(w)

    def int_name(self, ident: str) -> int | None:
        return None

    def hole(self, name: str, node: ast.AST) -> Typed | None:
        return None

    def call(self, fn: str, node: ast.Call, elab: Elab) -> Typed | None:
        return None


def whole_power(a: Typed, b: Typed) -> bool:
    """``a ** b`` of load-time constants with a whole exponent: a constant, linear."""
    return (isinstance(a.const, Fraction) and isinstance(b.const, Fraction) and b.const.denominator == 1
            and not (a.const == 0 and b.const < 0))


def logic(op: str, items: list[Typed]) -> Typed:
    """``and``/``or`` of conditions, folding the constant ones."""
    absorbing = op == "or"  # the value that decides the whole (True for or, False for and)
    kept: list[ir.Expr] = []
    for it in items:
        if isinstance(it.const, bool):
            if it.const == absorbing:
                return Typed.boolean(absorbing)
            continue
        kept.append(it.expr)
    if not kept:
        return Typed.boolean(not absorbing)
    if len(kept) == 1:
        return Typed(kept[0], True)
    return Typed(ir.Logic("or" if absorbing else "and", tuple(kept)), True)
