"""The Z3 domain: the one semantics as SMT terms (linear real arithmetic).

Values are Z3 terms; Python booleans are accepted where a condition is already
decided (e.g. a window that is eligible in every trace).  Nothing is folded here
beyond what decided Python booleans give, but for one rewrite of If-terms that
gives the same value in every model (:func:`join`): the terms are what the solver
sees.
"""

from __future__ import annotations

from fractions import Fraction
from typing import cast

import z3


def rat(x: Fraction) -> z3.ArithRef:
    """An exact Z3 rational (the numeral ``z3.Q`` gives, built without its
    simplify call: ten times faster, and pruning builds thousands)."""
    return z3.RealVal(x.numerator if x.denominator == 1 else f"{x.numerator}/{x.denominator}")


def as_bool(c: z3.BoolRef | bool) -> z3.BoolRef:
    return z3.BoolVal(c) if isinstance(c, bool) else c


class Z3Domain:
    name = "z3"

    def num(self, x: Fraction) -> z3.ArithRef:
        return rat(x)

    def whole(self, k: int) -> z3.ArithRef:
        return z3.RealVal(k)

    def boolean(self, b: bool) -> z3.BoolRef:
        return z3.BoolVal(b)

    def add(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return a + b

    def sub(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return a - b

    def mul(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return a * b

    def div(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return a / b

    def pow(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return cast(z3.ArithRef, a ** b)

    def neg(self, a: z3.ArithRef) -> z3.ArithRef:
        return -a

    def sum(self, items: list[z3.ArithRef]) -> z3.ArithRef:
        return z3.Sum(items)

    def lt(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
        return a < b

    def le(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
        return a <= b

    def gt(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
        return a > b

    def ge(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
        return a >= b

    def eq(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        return cast(z3.BoolRef, a == b)

    def ne(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        return cast(z3.BoolRef, a != b)

    def not_(self, a: z3.BoolRef | bool) -> z3.BoolRef:
        return z3.BoolVal(not a) if isinstance(a, bool) else z3.Not(a)

    def and_(self, items: list[z3.BoolRef | bool]) -> z3.BoolRef:
        if any(i is False for i in items):
            return z3.BoolVal(False)
        terms = [i for i in items if not isinstance(i, bool)]
        return z3.And(*terms) if terms else z3.BoolVal(True)

    def or_(self, items: list[z3.BoolRef | bool]) -> z3.BoolRef:
        if any(i is True for i in items):
            return z3.BoolVal(True)
        terms = [i for i in items if not isinstance(i, bool)]
        return z3.Or(*terms) if terms else z3.BoolVal(False)

    def implies(self, a: z3.BoolRef | bool, b: z3.BoolRef | bool) -> z3.BoolRef:
        if a is False or b is True:
            return z3.BoolVal(True)
        if a is True:
            return as_bool(b)
        return z3.Implies(as_bool(a), as_bool(b))

    def ite(self, c: z3.BoolRef | bool, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
        if isinstance(c, bool):
            return a if c else b
        return join(c, a, b)

    def decide(self, c: z3.BoolRef | bool) -> bool | None:
        return c if isinstance(c, bool) else None


def _split(x: z3.ExprRef) -> tuple[z3.BoolRef, z3.ExprRef, z3.ExprRef] | None:
    """(p, x, y) of ``If(p, x, y)``, else None (asked through Z3's C API: the encoder
    asks it of every If it builds)."""
    ctx, a = x.ctx_ref(), x.as_ast()
    if z3.Z3_get_ast_kind(ctx, a) != z3.Z3_APP_AST or \
            z3.Z3_get_decl_kind(ctx, z3.Z3_get_app_decl(ctx, a)) != z3.Z3_OP_ITE:
        return None
    return cast(z3.BoolRef, x.arg(0)), x.arg(1), x.arg(2)


def join(c: z3.BoolRef, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    """``If(c, a, b)``, with the branches' choice between the same two values moved
    into the condition: where a or b is itself ``If(p, x, y)`` and the other is x, y or
    ``If(q, x, y)``, the result is one ``If(g, x, y)`` (g a formula over c, p, q), equal
    to ``If(c, a, b)`` in every model.  A CCA's if/elif joins whose branches pick among
    the same values (Copa: ``up``, ``down`` and ``choose(up, down)``,
    :meth:`ccmatic.encode.cca.CcaEncoding.chooser`) so give the solver one arithmetic
    If where nested ones would each be a real variable of its own (Z3 names every
    arithmetic If-term); the choice becomes propositional."""
    if not (isinstance(a, z3.ExprRef) and isinstance(b, z3.ExprRef)):
        return z3.If(c, a, b)
    sa, sb = _split(a), _split(b)
    if sa is not None and sa[1].eq(b):  # If(c, If(p, b, y), b): y iff c and not p
        return z3.If(z3.And(c, z3.Not(sa[0])), sa[2], b)
    if sa is not None and sa[2].eq(b):  # If(c, If(p, x, b), b): x iff c and p
        return z3.If(z3.And(c, sa[0]), sa[1], b)
    if sb is not None and sb[1].eq(a):  # If(c, a, If(q, a, y)): a iff c or q
        return z3.If(z3.Or(c, sb[0]), a, sb[2])
    if sb is not None and sb[2].eq(a):  # If(c, a, If(q, x, a)): x iff not c and q
        return z3.If(z3.And(z3.Not(c), sb[0]), sb[1], a)
    if sa is not None and sb is not None and sa[1].eq(sb[1]) and sa[2].eq(sb[2]):
        return z3.If(z3.If(c, sa[0], sb[0]), sa[1], sa[2])
    return z3.If(c, a, b)


Z3 = Z3Domain()
