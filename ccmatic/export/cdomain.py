"""A code-generating domain: the one semantics emits C in fixed point.

Running the CCA step (:mod:`ccmatic.semantics.cca`), the belief updates
(:mod:`ccmatic.semantics.beliefs`) and the delay buckets (:mod:`ccmatic.semantics.qdel`)
over :class:`CDomain` evaluates nothing: every operation appends one C statement
assigning a fresh temporary, and the value is that temporary's name.  Nothing is
decided at generation time but constants, so both branches of every condition are
emitted and joined with a branch-free select, like the Z3 domain's If-terms.

Numbers are ``int64`` multiples of 2^-16 of their unit (bytes, bytes per step,
steps, counts): :data:`SHIFT` = 16 fraction bits, magnitudes below 2^47.  A
multiplication or a division truncates toward zero (an error below 2^-16 units per
operation); a constant that multiplies or divides is used exactly, as a ratio p/q
of integers; a constant that is added or compared is rounded to the nearest 2^-16.
Conditions are 0/1 integers.  The C helpers (``ccm_mulc``, ``ccm_mul``, ``ccm_div``,
``ccm_sel``) are in :mod:`ccmatic.export.ctext`.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ccmatic.semantics.domain import EXACT
from ccmatic.semantics.textdomain import TextDomain

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
        "!=": operator.ne}

SHIFT = 16
ONE = 1 << SHIFT
#: the largest magnitude of a value, in its unit (2^47 units: 1.4e14 bytes)
LIMIT = 1 << (63 - SHIFT)
#: the largest numerator or denominator of a constant factor p/q (ccm_mulc needs p·q < 2^62)
MAX_RATIO = 1 << 31


class ExportError(Exception):
    """A CCA the export cannot translate: one line saying why."""


@dataclass(frozen=True, slots=True)
class CVal:
    """A C expression (a temporary's name or a literal) and, for a constant, its
    exact value."""

    expr: str
    const: Fraction | None = None


Cond = CVal | bool


def literal(x: Fraction) -> str:
    """The fixed-point literal of a constant (rounded to the nearest 2^-16)."""
    n = round(x * ONE)
    if abs(n) >= 1 << 63:
        raise ExportError(f"the constant {x} is beyond the fixed-point range (|x| < 2^47)")
    return f"((s64){n}LL)"


class CDomain(TextDomain[CVal]):
    """Emits one C statement per operation into :attr:`lines` (see the module doc)."""

    name = "c"

    def __init__(self, temp: str = "T") -> None:
        super().__init__()
        self.temp = temp   # the array temporaries live in (allocated by ccmatic.export.program)

    def temporary(self, k: int) -> str:
        return f"{self.temp}[{k}]"

    def line(self, target: str, expr: str) -> str:
        return f"{target} = {expr};"

    def value(self, expr: str) -> CVal:
        return CVal(expr)

    def join(self, kept: list[CVal], absorbing: bool) -> str:
        return (" | " if absorbing else " & ").join(k.expr for k in kept)

    def select(self, c: CVal, a: CVal, b: CVal) -> str:
        return f"ccm_sel({c.expr}, {a.expr}, {b.expr})"

    # -- values ---------------------------------------------------------------------

    def num(self, x: Fraction) -> CVal:
        return CVal(literal(x), Fraction(x))

    def whole(self, k: int) -> CVal:
        return self.num(Fraction(k))

    def boolean(self, b: bool) -> CVal:
        return CVal("1" if b else "0", Fraction(int(b)))

    # -- arithmetic -----------------------------------------------------------------
    def _fold(self, a: CVal, b: CVal, op: Literal["add", "sub"]) -> CVal | None:
        if a.const is not None and b.const is not None:
            return self.num(a.const + b.const if op == "add" else a.const - b.const)
        return None

    def add(self, a: CVal, b: CVal) -> CVal:
        if b.const == 0:
            return a
        if a.const == 0:
            return b
        return self._fold(a, b, "add") or self.emit(f"{a.expr} + {b.expr}")

    def sub(self, a: CVal, b: CVal) -> CVal:
        if b.const == 0:
            return a
        return self._fold(a, b, "sub") or self.emit(f"{a.expr} - {b.expr}")

    def _scale(self, a: CVal, k: Fraction) -> CVal:
        """a · k for a constant k, exactly as the ratio p/q (then truncated)."""
        if k == 1:
            return a
        if k == 0:
            return self.num(Fraction(0))
        p, q = k.numerator, k.denominator
        if abs(p) > MAX_RATIO or q > MAX_RATIO:
            raise ExportError(f"the constant factor {k} has a numerator or denominator over 2^31")
        return self.emit(f"ccm_mulc({a.expr}, {p}LL, {q}LL)")

    def mul(self, a: CVal, b: CVal) -> CVal:
        if a.const is not None and b.const is not None:
            return self.num(a.const * b.const)
        if b.const is not None:
            return self._scale(a, b.const)
        if a.const is not None:
            return self._scale(b, a.const)
        return self.emit(f"ccm_mul({a.expr}, {b.expr})")

    def div(self, a: CVal, b: CVal) -> CVal:
        if b.const is not None:
            if b.const == 0:
                raise ZeroDivisionError
            if a.const is not None:
                return self.num(a.const / b.const)
            return self._scale(a, 1 / b.const)
        return self.emit(f"ccm_div({a.expr}, {b.expr})")  # 0 for a zero divisor (BPF's rule)

    def pow(self, a: CVal, b: CVal) -> CVal:
        if a.const is not None and b.const is not None:
            return self.num(EXACT.pow(a.const, b.const))
        if b.const is not None and b.const.denominator == 1 and 0 <= b.const <= 4:
            acc = self.num(Fraction(1))
            for _ in range(int(b.const)):
                acc = self.mul(acc, a)
            return acc
        raise ExportError("'**' with a computed base needs a whole exponent 0..4 in fixed point")

    def neg(self, a: CVal) -> CVal:
        if a.const is not None:
            return self.num(-a.const)
        return self.emit(f"-{a.expr}")

    def sum(self, items: list[CVal]) -> CVal:
        acc = self.num(Fraction(0))
        for it in items:
            acc = self.add(acc, it)
        return acc

    # -- comparisons and logic -------------------------------------------------------
    def _cmp(self, a: CVal, b: CVal, op: str) -> CVal:
        if a.const is not None and b.const is not None:
            return self.boolean(bool(_OPS[op](a.const, b.const)))
        return self.emit(f"(s64)({a.expr} {op} {b.expr})")

    def lt(self, a: CVal, b: CVal) -> CVal:
        return self._cmp(a, b, "<")

    def le(self, a: CVal, b: CVal) -> CVal:
        return self._cmp(a, b, "<=")

    def gt(self, a: CVal, b: CVal) -> CVal:
        return self._cmp(a, b, ">")

    def ge(self, a: CVal, b: CVal) -> CVal:
        return self._cmp(a, b, ">=")

    def eq(self, a: CVal, b: CVal) -> CVal:
        return self._cmp(self._v(a), self._v(b), "==")

    def ne(self, a: CVal, b: CVal) -> CVal:
        return self._cmp(self._v(a), self._v(b), "!=")

    def not_(self, a: Cond) -> CVal:
        v = self._v(a)
        if v.const is not None:
            return self.boolean(not v.const)
        return self.emit(f"(s64)!{v.expr}")

    def implies(self, a: Cond, b: Cond) -> CVal:
        return self.or_([self.not_(a), b])


class CNames:
    """The belief updates' namer over C: an extremum is a chain of selects."""

    def __init__(self, d: CDomain) -> None:
        self.d = d

    def extremum(self, name: str, kind: Literal["max", "min"], items: list[CVal], tag: str) -> CVal:
        acc = items[0]
        for it in items[1:]:
            better = self.d.gt(it, acc) if kind == "max" else self.d.lt(it, acc)
            acc = self.d.ite(better, it, acc)
        return acc

    def define(self, name: str, value: CVal, tag: str) -> CVal:
        return value
