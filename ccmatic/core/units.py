"""Units of measure: every term is bytes, seconds, bytes/second, or dimensionless.

A unit is a pair of integer exponents (bytes, seconds).  Sums and comparisons need
equal units (thesis §4.1: "do not add bytes with seconds"); products and quotients
add or subtract exponents.  Numeric literals are *polymorphic*: ``c_lo / 2`` and
``qdel_lo > 0`` take their unit from the other operand.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    byte: int = 0
    sec: int = 0

    def __mul__(self, other: Unit) -> Unit:
        return Unit(self.byte + other.byte, self.sec + other.sec)

    def __truediv__(self, other: Unit) -> Unit:
        return Unit(self.byte - other.byte, self.sec - other.sec)

    def __str__(self) -> str:
        return unit_name(self)


BYTES = Unit(1, 0)
SECONDS = Unit(0, 1)
RATE = Unit(1, -1)
COUNT = Unit(0, 0)

_NAMES = {BYTES: "bytes", SECONDS: "seconds", RATE: "bytes/second", COUNT: "dimensionless"}

#: names accepted in state declarations (``x: bytes = ...``)
DECLARABLE = {"bytes": BYTES, "seconds": SECONDS, "rate": RATE, "count": COUNT}


def unit_name(u: Unit) -> str:
    if u in _NAMES:
        return _NAMES[u]
    parts = []
    if u.byte:
        parts.append("bytes" if u.byte == 1 else f"bytes^{u.byte}")
    if u.sec:
        parts.append("seconds" if u.sec == 1 else f"seconds^{u.sec}")
    return "*".join(parts) or "dimensionless"


def mul_units(a: Unit | None, b: Unit | None) -> Unit | None:
    """Unit of a product; None (a polymorphic number) takes the other side's unit."""
    if a is None:
        return b
    if b is None:
        return a
    return a * b


def div_units(a: Unit | None, b: Unit | None) -> Unit | None:
    """Unit of a quotient; a polymorphic numerator counts as dimensionless."""
    if b is None:
        return a
    return (a or COUNT) / b
