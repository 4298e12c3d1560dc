"""Independent exact re-check of solver models.

Z3's model gives a value to every variable; this module evaluates every constraint
of an encoding *itself*, walking the formula with :class:`fractions.Fraction`
arithmetic, so that a counterexample is only shown once our own exact evaluation
agrees that it satisfies the network, the CCA, the assumptions and the negated
property.

Formulas are translated once into plain Python tuples (:class:`FormulaCache`); a
CEGIS run re-checks many models of the same base encoding and reuses the cache.
What each node kind means is :mod:`ccmatic.engine.exact_ops`' table, which the
compiled re-check (:mod:`ccmatic.engine.recheck_compiled`) uses too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import z3

from ccmatic.engine.exact_ops import (
    BOOL,
    CHAIN,
    NAMES,
    NUM,
    PARAMETRIZED,
    TAGS,
    VAR,
    render,
)

Value = Fraction | bool

Node = tuple[Any, ...]  # (tag, payload...)


class RecheckError(Exception):
    """A model violates a constraint under exact evaluation (an engine bug)."""


class FormulaCache:
    """Translation of Z3 terms into tuples, shared by every evaluation.

    Keys are the terms' addresses (Z3 shares every term: one term, one address, read
    without a call into Z3); every term given to :meth:`node` is kept alive in the
    cache (and with it each of its subterms), so that Z3 cannot reuse an address for
    another term while the cache exists.  The walk reads the terms through Z3's C API (no Python
    wrapper per node: several times cheaper on large encodings); only variables are
    wrapped, for the model's completion."""

    def __init__(self) -> None:
        self.nodes: dict[int, Node] = {}
        self.roots: list[z3.ExprRef] = []

    def node(self, e: z3.ExprRef) -> Node:
        a = e.as_ast()
        hit = self.nodes.get(a.value)
        if hit is not None:
            return hit
        self.roots.append(e)
        return self._node(e.ctx, a)

    def _node(self, ctx: z3.Context, a: Any) -> Node:
        key = a.value
        hit = self.nodes.get(key)
        if hit is None:
            hit = self.nodes[key] = self._translate(ctx, a)
        return hit

    def _translate(self, ctx: z3.Context, a: Any) -> Node:
        c = ctx.ref()
        kind = z3.Z3_get_ast_kind(c, a)
        if kind == z3.Z3_NUMERAL_AST:
            return (NUM, Fraction(z3.Z3_get_numeral_string(c, a)))
        if kind != z3.Z3_APP_AST:
            raise RecheckError(f"re-check cannot evaluate {z3.Z3_ast_to_string(c, a)}")
        d = z3.Z3_get_app_decl(c, a)
        k = z3.Z3_get_decl_kind(c, d)
        n = z3.Z3_get_app_num_args(c, a)
        if k == z3.Z3_OP_TRUE:
            return (BOOL, True)
        if k == z3.Z3_OP_FALSE:
            return (BOOL, False)
        if k == z3.Z3_OP_UNINTERPRETED and n == 0:
            return (VAR, z3.z3._to_expr_ref(a, ctx), z3.Z3_get_symbol_string(c, z3.Z3_get_decl_name(c, d)))
        tag = TAGS.get(k)
        if tag is None:
            raise RecheckError(f"re-check cannot evaluate operator {z3.Z3_get_symbol_string(c, z3.Z3_get_decl_name(c, d))}")
        kids = tuple(self._node(ctx, z3.Z3_get_app_arg(c, a, i)) for i in range(n))
        if tag in PARAMETRIZED:
            return (tag, kids, int(z3.Z3_get_decl_int_parameter(c, d, 0)))
        return (tag, kids)


class Evaluator:
    """Exact evaluation of terms under one model."""

    def __init__(self, model: z3.ModelRef, cache: FormulaCache | None = None,
                 bind: dict[str, Value] | None = None) -> None:
        """``bind``: variables given by name, whatever the model says (a synthesis
        candidate's holes, so that the template's terms are evaluated as its CCA)."""
        self.model = model
        self.cache = cache if cache is not None else FormulaCache()
        self.memo: dict[int, Value] = {}
        self.vars: dict[str, Value] = dict(bind) if bind else {}
        self._values: dict[str, Value] | None = None

    def _assignment(self) -> dict[str, Value]:
        """The model's constants by name, read once through Z3's C API (much cheaper
        than evaluating each variable through the model, or wrapping every value)."""
        if self._values is None:
            self._values = model_values(self.model)
        return self._values

    def var(self, e: z3.ExprRef, name: str) -> Value:
        """The value of variable ``e``, named ``name`` (its declaration's name)."""
        hit = self.vars.get(name)
        if hit is not None:
            return hit
        r = self._assignment().get(name)
        if r is None:  # not in the model: any value will do; Z3's completion picks it and
            # records it in the model (later evaluations of terms then see it too)
            r = _value(self.model.eval(e, model_completion=True), e)
        self.vars[name] = r
        return r

    def ev(self, e: z3.ExprRef) -> Value:
        return self._ev(self.cache.node(e))

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

    def _ev(self, n: Node) -> Value:
        key = id(n)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        r = self._compute(n)
        self.memo[key] = r
        return r

    def _compute(self, n: Node) -> Value:
        tag = n[0]
        if tag == NUM or tag == BOOL:
            return n[1]  # type: ignore[no-any-return]
        if tag == VAR:
            return self.var(n[1], n[2])
        try:
            return _operator(tag, len(n[1]), n[2] if len(n) > 2 else None)(self._ev, n[1])
        except ZeroDivisionError:
            raise RecheckError("division by zero during re-check") from None


_Apply = Callable[[Callable[[Node], Value], tuple[Node, ...]], Value]
_APPLY: dict[tuple[int, int, int | None], _Apply] = {}


def _operator(tag: int, arity: int, param: int | None) -> _Apply:
    """Operator ``tag`` applied to children that are evaluated (by ``e``) only when
    its meaning reaches them: the table's expression, compiled once per shape."""
    key = (tag, min(arity, CHAIN + 1), param)  # beyond CHAIN operands, one form over all of them
    fn = _APPLY.get(key)
    if fn is None:
        operands = [f"e(c[{i}])" for i in range(min(arity, CHAIN + 1))]
        src = f"lambda e, c: {render(tag, operands, '(e(x) for x in c)', param)}"
        fn = _APPLY[key] = eval(src, dict(NAMES))  # the table's expression, not user text
    return fn


def model_values(model: z3.ModelRef) -> dict[str, Value]:
    """Every constant the model interprets, by name: exact rationals and booleans
    (other sorts are left out; :meth:`Evaluator.var` reads them one by one)."""
    ctx, m = model.ctx.ref(), model.model
    out: dict[str, Value] = {}
    for i in range(z3.Z3_model_get_num_consts(ctx, m)):
        d = z3.Z3_model_get_const_decl(ctx, m, i)
        a = z3.Z3_model_get_const_interp(ctx, m, d)
        if a is None:
            continue
        v = interp_value(ctx, a)
        if v is not None:
            out[z3.Z3_get_symbol_string(ctx, z3.Z3_get_decl_name(ctx, d))] = v
    return out


def interp_value(ctx: Any, a: Any, parse: Callable[[str], Fraction] = Fraction) -> Value | None:
    """A model's interpretation ``a`` (a C API AST) as an exact rational (its numeral
    string through ``parse``) or a boolean; None for anything else."""
    if z3.Z3_get_ast_kind(ctx, a) == z3.Z3_NUMERAL_AST:
        return parse(z3.Z3_get_numeral_string(ctx, a))
    b = z3.Z3_get_bool_value(ctx, a)
    return None if b == z3.Z3_L_UNDEF else b == z3.Z3_L_TRUE


def _value(v: z3.ExprRef, e: z3.ExprRef) -> Value:
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    if z3.is_rational_value(v):
        return Fraction(v.numerator_as_long(), v.denominator_as_long())
    if z3.is_int_value(v):
        return Fraction(v.as_long())
    raise RecheckError(f"cannot read a value for {e}: {v}")


def recheck(model: z3.ModelRef, constraints: Iterable[tuple[str, z3.BoolRef]],
            cache: FormulaCache | None = None, bind: dict[str, Value] | None = None) -> Evaluator:
    """Evaluate every constraint exactly (with ``bind``'s variables fixed); raise
    :class:`RecheckError` naming the first violated one.  Returns the evaluator (its
    values are reused for display)."""
    ev = Evaluator(model, cache, bind)
    for tag, c in constraints:
        if not ev.boolean(c):
            raise RecheckError(f"constraint [{tag}] is violated by the solver's model: {c}")
    return ev
