"""Domains: the values the one semantics computes with.

The CCA step, the belief updates and the network rules are written once, against
the small :class:`Domain` interface, and run over

* :class:`~ccmatic.semantics.z3domain.Z3Domain`: Z3 terms (the SMT encoding);
* :class:`ExactDomain`: :class:`fractions.Fraction` (replay, exact mode);
* :class:`FloatDomain`: floats (the simulator).

Conditions may also be plain Python booleans in every domain (facts known when the
code runs, e.g. "this window starts after the last timeout"); :meth:`Domain.decide`
says whether a condition is already decided.  Code that branches on a decided
condition evaluates only the branch taken, as Python does; an undecided (symbolic)
condition makes it evaluate both and join them with :meth:`Domain.ite`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Protocol, TypeVar

V = TypeVar("V")


class Domain(Protocol[V]):
    """Arithmetic, comparisons and logic over one kind of value."""

    name: str

    def num(self, x: Fraction) -> V: ...

    def whole(self, k: int) -> V:
        """A whole number (as num(Fraction(k)), without building the fraction)."""
        ...

    def boolean(self, b: bool) -> V: ...

    def add(self, a: V, b: V) -> V: ...

    def sub(self, a: V, b: V) -> V: ...

    def mul(self, a: V, b: V) -> V: ...

    def div(self, a: V, b: V) -> V:
        """a / b; raises ZeroDivisionError for a concrete zero divisor."""
        ...

    def pow(self, a: V, b: V) -> V: ...

    def neg(self, a: V) -> V: ...

    def sum(self, items: list[V]) -> V: ...

    def lt(self, a: V, b: V) -> V: ...

    def le(self, a: V, b: V) -> V: ...

    def gt(self, a: V, b: V) -> V: ...

    def ge(self, a: V, b: V) -> V: ...

    def eq(self, a: V, b: V) -> V: ...

    def ne(self, a: V, b: V) -> V: ...

    def not_(self, a: V | bool) -> V: ...

    def and_(self, items: list[V | bool]) -> V: ...

    def or_(self, items: list[V | bool]) -> V: ...

    def implies(self, a: V | bool, b: V | bool) -> V: ...

    def ite(self, c: V | bool, a: V, b: V) -> V:
        """a if c else b."""
        ...

    def decide(self, c: V | bool) -> bool | None:
        """The value of a condition if it is known now, else None."""
        ...


class _Concrete:
    """Shared by the concrete domains: Python's own arithmetic and logic."""

    def boolean(self, b: bool) -> bool:
        return b

    def add(self, a: Any, b: Any) -> Any:
        return a + b

    def sub(self, a: Any, b: Any) -> Any:
        return a - b

    def mul(self, a: Any, b: Any) -> Any:
        return a * b

    def neg(self, a: Any) -> Any:
        return -a

    def lt(self, a: Any, b: Any) -> bool:
        return bool(a < b)

    def le(self, a: Any, b: Any) -> bool:
        return bool(a <= b)

    def gt(self, a: Any, b: Any) -> bool:
        return bool(a > b)

    def ge(self, a: Any, b: Any) -> bool:
        return bool(a >= b)

    def eq(self, a: Any, b: Any) -> bool:
        return bool(a == b)

    def ne(self, a: Any, b: Any) -> bool:
        return bool(a != b)

    def not_(self, a: Any) -> bool:
        return not a

    def and_(self, items: list[Any]) -> bool:
        return all(items)

    def or_(self, items: list[Any]) -> bool:
        return any(items)

    def implies(self, a: Any, b: Any) -> bool:
        return (not a) or bool(b)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        return a if c else b

    def decide(self, c: Any) -> bool | None:
        return bool(c)


class ExactDomain(_Concrete):
    """Exact rationals.  A power with a non-integer exponent has no exact value: it is
    computed in floating point and converted back exactly."""

    name = "exact"

    def num(self, x: Fraction) -> Fraction:
        return x

    def whole(self, k: int) -> Fraction:
        return Fraction(k)

    def div(self, a: Any, b: Any) -> Fraction:
        if b == 0:
            raise ZeroDivisionError
        return Fraction(a) / Fraction(b)

    def pow(self, a: Any, b: Any) -> Fraction:
        if Fraction(b).denominator == 1:
            return Fraction(a) ** int(b)
        if a < 0:
            raise ValueError("a negative number raised to a non-integer power")
        return Fraction(float(a) ** float(b))

    def sum(self, items: list[Any]) -> Fraction:
        return sum(items, Fraction(0))


class FloatDomain(_Concrete):
    name = "float"

    def num(self, x: Fraction) -> float:
        return float(x)

    def whole(self, k: int) -> float:
        return float(k)

    def div(self, a: Any, b: Any) -> float:
        if b == 0:
            raise ZeroDivisionError
        return float(a) / float(b)

    def pow(self, a: Any, b: Any) -> float:
        try:
            return math.pow(float(a), float(b))
        except ValueError:
            if a == 0:
                raise ZeroDivisionError from None
            raise ValueError("a negative number raised to a non-integer power") from None

    def sum(self, items: list[Any]) -> float:
        return float(sum(items))


EXACT = ExactDomain()
FLOAT = FloatDomain()
