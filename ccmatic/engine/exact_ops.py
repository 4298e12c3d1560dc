"""The exact meaning of every Z3 node kind the re-check meets: one table.

Each operator is one row: the Z3 declaration kinds it covers and its meaning as a
Python expression over its operands' values (:class:`fractions.Fraction` and
``bool``).  :func:`render` writes that expression for given operand texts, and both
re-checks use it: the interpreter (:class:`ccmatic.engine.recheck.Evaluator`) with
operands that evaluate a child when Python reaches them (``and``/``or`` and
if-expressions stay lazy), the compiler (:mod:`ccmatic.engine.recheck_compiled`)
with the names of already computed children.  A kind missing here is refused by
both (:class:`~ccmatic.engine.recheck.RecheckError`); Z3's own model evaluation is
never used.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import z3

# node tags: three leaves, then one per operator
VAR, NUM, BOOL, AND, OR, NOT, IMPLIES, XOR, ITE, EQ, DISTINCT, LE, LT, GE, GT, ADD, SUB, NEG, MUL, DIV, TOREAL, TOINT, \
    ATMOST, ATLEAST = range(24)

#: operands beyond which an n-ary operator is written as a call over all of them
#: (no deep expression trees for Python's compiler)
CHAIN = 8


@dataclass(frozen=True)
class Op:
    """``text``: the meaning, with ``{0}``, ``{1}``, ... the operands, ``{all}`` an
    iterable of all of them and ``{n}`` the node's integer parameter; ``infix``: for an n-ary operator, the same meaning as the
    operands joined by it (written so up to :data:`CHAIN` operands)."""

    kinds: tuple[int, ...]
    text: str
    infix: str | None = None


OPS: dict[int, Op] = {
    AND: Op((z3.Z3_OP_AND,), "all({all})", " and "),
    OR: Op((z3.Z3_OP_OR,), "any({all})", " or "),
    NOT: Op((z3.Z3_OP_NOT,), "not {0}"),
    IMPLIES: Op((z3.Z3_OP_IMPLIES,), "(not {0}) or {1}"),
    XOR: Op((z3.Z3_OP_XOR,), "{0} != {1}"),
    ITE: Op((z3.Z3_OP_ITE,), "{1} if {0} else {2}"),
    EQ: Op((z3.Z3_OP_EQ,), "{0} == {1}"),
    DISTINCT: Op((z3.Z3_OP_DISTINCT,), "_distinct({all})"),
    LE: Op((z3.Z3_OP_LE,), "{0} <= {1}"),
    LT: Op((z3.Z3_OP_LT,), "{0} < {1}"),
    GE: Op((z3.Z3_OP_GE,), "{0} >= {1}"),
    GT: Op((z3.Z3_OP_GT,), "{0} > {1}"),
    ADD: Op((z3.Z3_OP_ADD,), "sum({all}, _zero)", " + "),
    SUB: Op((z3.Z3_OP_SUB,), "_minus({all})", " - "),
    NEG: Op((z3.Z3_OP_UMINUS,), "-{0}"),
    MUL: Op((z3.Z3_OP_MUL,), "_prod({all})", " * "),
    DIV: Op((z3.Z3_OP_DIV,), "{0} / {1}"),  # a zero divisor raises ZeroDivisionError
    TOREAL: Op((z3.Z3_OP_TO_REAL,), "{0}"),
    TOINT: Op((z3.Z3_OP_TO_INT,), "_floor({0})"),
    ATMOST: Op((z3.Z3_OP_PB_AT_MOST,), "sum({all}) <= {n}"),
    ATLEAST: Op((z3.Z3_OP_PB_AT_LEAST,), "sum({all}) >= {n}"),
}

#: Z3 declaration kind -> tag
TAGS: dict[int, int] = {k: tag for tag, op in OPS.items() for k in op.kinds}

#: operators whose node carries an integer parameter (the bound of a pseudo-Boolean constraint)
PARAMETRIZED = (ATMOST, ATLEAST)


def floor_value(v: Fraction) -> Fraction:
    """``to_int``: the largest integer at most v."""
    return Fraction(v.numerator // v.denominator)


def product(vs: Iterable[Fraction]) -> Fraction:
    acc = Fraction(1)
    for v in vs:
        acc *= v
    return acc


def minus(vs: Iterable[Fraction]) -> Fraction:
    """The first value minus all the others (n-ary subtraction, left to right)."""
    it = iter(vs)
    acc = next(it)
    for v in it:
        acc -= v
    return acc


def distinct(vs: Iterable[Fraction | bool]) -> bool:
    """No two values equal."""
    seen = list(vs)
    return len(set(seen)) == len(seen)


#: the names the rendered expressions use
NAMES: dict[str, object] = {"_zero": Fraction(0), "_prod": product, "_minus": minus, "_floor": floor_value,
                            "_distinct": distinct}


def render(tag: int, operands: list[str], every: str, n: int | None = None) -> str:
    """The meaning of operator ``tag`` as a Python expression over ``operands``
    (their texts) or ``every`` (the text of an iterable of all of them)."""
    op = OPS[tag]
    if op.infix is not None and 0 < len(operands) <= CHAIN:
        return op.infix.join(operands)
    return op.text.format(*operands, all=every, n=n)
