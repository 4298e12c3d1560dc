"""Independent exact re-check of solver models.

Z3's model gives a value to every variable; this module evaluates every constraint
of an encoding *itself*, walking the formula with :class:`fractions.Fraction`
arithmetic, so that a counterexample is only shown once our own exact evaluation
agrees that it satisfies the network, the CCA, the assumptions and the negated
property.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Union

import z3

Value = Union[Fraction, bool]


class RecheckError(Exception):
    """A model violates a constraint under exact evaluation (an engine bug)."""


class Evaluator:
    def __init__(self, model: z3.ModelRef) -> None:
        self.model = model
        # keyed by AST id; the AST is stored too, so that its id cannot be recycled
        # by Z3 for another term while the memo lives
        self.memo: dict[int, tuple[z3.ExprRef, Value]] = {}

    def var(self, e: z3.ExprRef) -> Value:
        v = self.model.eval(e, model_completion=True)
        if z3.is_true(v):
            return True
        if z3.is_false(v):
            return False
        if z3.is_rational_value(v):
            return Fraction(v.numerator_as_long(), v.denominator_as_long())
        if z3.is_int_value(v):
            return Fraction(v.as_long())
        raise RecheckError(f"cannot read a value for {e}: {v}")

    def ev(self, e: z3.ExprRef) -> Value:
        key = e.get_id()
        hit = self.memo.get(key)
        if hit is not None:
            return hit[1]
        r = self._ev(e)
        self.memo[key] = (e, r)
        return r

    def num(self, e: z3.ExprRef) -> Fraction:
        v = self.ev(e)
        if isinstance(v, bool):
            raise RecheckError(f"expected a number: {e}")
        return v

    def boolean(self, e: z3.ExprRef) -> bool:
        v = self.ev(e)
        if not isinstance(v, bool):
            raise RecheckError(f"expected a boolean: {e}")
        return v

    def _ev(self, e: z3.ExprRef) -> Value:
        if z3.is_rational_value(e):
            return Fraction(e.numerator_as_long(), e.denominator_as_long())  # type: ignore[attr-defined]
        if z3.is_int_value(e):
            return Fraction(e.as_long())  # type: ignore[attr-defined]
        if z3.is_true(e):
            return True
        if z3.is_false(e):
            return False
        k = e.decl().kind()
        ch = e.children()
        if k == z3.Z3_OP_UNINTERPRETED and not ch:
            return self.var(e)
        if k == z3.Z3_OP_AND:
            return all(self.boolean(c) for c in ch)
        if k == z3.Z3_OP_OR:
            return any(self.boolean(c) for c in ch)
        if k == z3.Z3_OP_NOT:
            return not self.boolean(ch[0])
        if k == z3.Z3_OP_IMPLIES:
            return (not self.boolean(ch[0])) or self.boolean(ch[1])
        if k == z3.Z3_OP_XOR:
            return self.boolean(ch[0]) != self.boolean(ch[1])
        if k == z3.Z3_OP_ITE:
            return self.ev(ch[1]) if self.boolean(ch[0]) else self.ev(ch[2])
        if k == z3.Z3_OP_EQ:
            return self.ev(ch[0]) == self.ev(ch[1])
        if k == z3.Z3_OP_DISTINCT:
            vals = [self.ev(c) for c in ch]
            return len(set(vals)) == len(vals)
        if k == z3.Z3_OP_LE:
            return self.num(ch[0]) <= self.num(ch[1])
        if k == z3.Z3_OP_LT:
            return self.num(ch[0]) < self.num(ch[1])
        if k == z3.Z3_OP_GE:
            return self.num(ch[0]) >= self.num(ch[1])
        if k == z3.Z3_OP_GT:
            return self.num(ch[0]) > self.num(ch[1])
        if k == z3.Z3_OP_ADD:
            return sum((self.num(c) for c in ch), Fraction(0))
        if k == z3.Z3_OP_SUB:
            acc = self.num(ch[0])
            for c in ch[1:]:
                acc -= self.num(c)
            return acc
        if k == z3.Z3_OP_UMINUS:
            return -self.num(ch[0])
        if k == z3.Z3_OP_MUL:
            acc = Fraction(1)
            for c in ch:
                acc *= self.num(c)
            return acc
        if k == z3.Z3_OP_DIV:
            d = self.num(ch[1])
            if d == 0:
                raise RecheckError("division by zero during re-check")
            return self.num(ch[0]) / d
        if k in (z3.Z3_OP_TO_REAL, z3.Z3_OP_TO_INT):
            v = self.num(ch[0])
            return v if k == z3.Z3_OP_TO_REAL else Fraction(v.numerator // v.denominator)
        if k == z3.Z3_OP_PB_AT_MOST:
            bound = int(z3.Z3_get_decl_int_parameter(e.ctx_ref(), e.decl().ast, 0))
            return sum(1 for c in ch if self.boolean(c)) <= bound
        if k == z3.Z3_OP_PB_AT_LEAST:
            bound = int(z3.Z3_get_decl_int_parameter(e.ctx_ref(), e.decl().ast, 0))
            return sum(1 for c in ch if self.boolean(c)) >= bound
        raise RecheckError(f"re-check cannot evaluate operator {e.decl().name()}")


def recheck(model: z3.ModelRef, constraints: list[tuple[str, z3.BoolRef]]) -> Evaluator:
    """Evaluate every constraint exactly; raise :class:`RecheckError` naming the
    first violated one.  Returns the evaluator (its values are reused for display)."""
    ev = Evaluator(model)
    for tag, c in constraints:
        if not ev.boolean(c):
            raise RecheckError(f"constraint [{tag}] is violated by the solver's model: {c}")
    return ev
