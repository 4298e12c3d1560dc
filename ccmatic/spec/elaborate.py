"""From parsed text to the checked tree (:mod:`ccmatic.spec.ir`): names, units,
linearity, static indices, unrolled comprehensions and folded constants.

Only linear real arithmetic is accepted unless the scope allows more (simulator-only
CCA files): a product needs one side that is a constant known at load time (a
literal, a fixed model parameter such as ``R``, a comprehension variable) or a
template hole, and a divisor must be such a constant.  Comprehensions
(``min/max/sum/all/any(... for i in range(a, b))``) are unrolled, so their bounds,
and their ``if`` filters, must be constants too.  Names and indexed reads are
resolved by a :class:`Scope`, which is where the visibility rules live (what a
sender may observe, what a query may read).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterator
from fractions import Fraction

from ccmatic.core.errors import SpecError
from ccmatic.core.limits import MAX_UNROLL
from ccmatic.core.units import (
    COUNT,
    Unit,
    div_units,
    mul_units,
    unit_name,
)
from ccmatic.spec import ir
from ccmatic.spec.builtins import CALLS
from ccmatic.spec.source import HOLE_PREFIX
from ccmatic.spec.typed import BaseScope, Index, Scope, Typed, logic

_CMP: dict[type[ast.cmpop], ir.CmpOp] = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge",
                                          ast.Eq: "eq", ast.NotEq: "ne"}
_PY_CMP: dict[ir.CmpOp, Callable[[Fraction, Fraction], bool]] = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


class Elaborator:
    """Elaborates expression ASTs under a scope.  Comprehension variables live in
    ``self.loop_vars`` while their body is unrolled."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.loop_vars: dict[str, int] = {}

    # -- helpers ---------------------------------------------------------------
    def err(self, node: ast.AST, msg: str, hint: str | None = None) -> SpecError:
        return SpecError(self.scope.source.node_loc(node), msg, hint)

    def unify(self, a: Typed, b: Typed, node: ast.AST, what: str) -> Unit | None:
        if a.is_bool or b.is_bool:
            raise self.err(node, f"cannot {what} a boolean and a number")
        if a.unit is None:
            return b.unit
        if b.unit is None or a.unit == b.unit:
            return a.unit
        if self.scope.lenient_units:
            # a template with symbolic holes: its unit checks are constraints on the
            # holes (ccmatic.encode.template_units); each candidate is checked strictly
            return None
        raise self.err(node, f"unit mismatch: cannot {what} {unit_name(a.unit)} and {unit_name(b.unit)}",
                       "both sides must have the same unit (bytes, seconds or bytes/second)")

    def num(self, node: ast.AST) -> Typed:
        v = self.expr(node)
        if v.is_bool:
            raise self.err(node, "expected a number, found a boolean condition")
        return v

    def boolean(self, node: ast.AST) -> Typed:
        v = self.expr(node)
        if not v.is_bool:
            raise self.err(node, "expected a condition (true/false), found a number", "compare it, e.g. 'x > 0'")
        return v

    # -- static integers (indices, range bounds) -----------------------------------
    def static_int(self, node: ast.AST, allow_t: bool) -> Index:
        """Evaluate an integer expression at load time.  With ``allow_t`` the
        current step ``t`` may appear as ``t + k``; the result is then ('t', k)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return int(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.loop_vars:
                return self.loop_vars[node.id]
            if node.id == "t" and allow_t:
                return ("t", 0)
            v = self.scope.int_name(node.id)
            if v is not None:
                return v
            raise self.err(node, f"'{node.id}' is not a whole-number constant",
                           "indices and range bounds use integers, t, T, R, D or loop variables")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.static_int(node.operand, allow_t)
            if isinstance(inner, tuple):
                raise self.err(node, "'-t' is not a valid index", "write t - k")
            return -inner
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            return self._static_binop(node, self.static_int(node.left, allow_t), self.static_int(node.right, allow_t))
        raise self.err(node, "expected a whole-number constant expression here")

    def _static_binop(self, node: ast.BinOp, a: Index, b: Index) -> Index:
        if isinstance(node.op, ast.Add):
            if isinstance(a, tuple) and isinstance(b, tuple):
                raise self.err(node, "an index may contain t only once")
            if isinstance(a, tuple):
                assert isinstance(b, int)
                return (a[0], a[1] + b)
            if isinstance(b, tuple):
                return (b[0], b[1] + a)
            return a + b
        if isinstance(node.op, ast.Sub):
            if isinstance(b, tuple):
                raise self.err(node, "an index may not subtract t", "write t - k")
            if isinstance(a, tuple):
                return (a[0], a[1] - b)
            return a - b
        if isinstance(a, tuple) or isinstance(b, tuple):
            raise self.err(node, "t may only be shifted by a constant, e.g. S[t - 2]")
        if isinstance(node.op, ast.Mult):
            return a * b
        if b == 0:
            raise self.err(node, "division by zero")
        return a // b

    # -- comprehensions --------------------------------------------------------------
    def comprehension_range(self, g: ast.comprehension) -> tuple[str, range]:
        """The loop variable of ``for name in range(a[, b[, step]])`` and its values."""
        if not isinstance(g.target, ast.Name):
            raise self.err(g.target, "comprehension variable must be a plain name")
        it = g.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords):
            raise self.err(it, "comprehensions range over 'range(a, b)' only")
        bounds = []
        for a in it.args:
            v = self.static_int(a, allow_t=False)
            assert isinstance(v, int)
            bounds.append(v)
        if len(bounds) == 3 and bounds[2] == 0:
            raise self.err(it.args[2], "range() step must not be zero")
        if len(values := range(*bounds)) > MAX_UNROLL:
            raise self.err(it, f"range of {len(values):,} values: comprehensions unroll to {MAX_UNROLL:,} terms at most")
        return g.target.id, values

    def _unroll(self, node: ast.GeneratorExp | ast.ListComp) -> Iterator[None]:
        gens = node.generators
        count = 0

        def rec(i: int) -> Iterator[None]:
            nonlocal count
            if i == len(gens):
                yield None
                return
            g = gens[i]
            name, values = self.comprehension_range(g)
            old = self.loop_vars.get(name)
            for value in values:
                self.loop_vars[name] = value
                if all(self._filter(cond) for cond in g.ifs):
                    if (count := count + 1) > MAX_UNROLL:
                        raise self.err(node, f"the comprehension unrolls to more than {MAX_UNROLL:,} terms")
                    yield from rec(i + 1)
            if old is None:
                self.loop_vars.pop(name, None)
            else:
                self.loop_vars[name] = old

        return rec(0)

    def _filter(self, cond: ast.expr) -> bool:
        c = self.boolean(cond)
        if not isinstance(c.const, bool):
            raise self.err(cond, "comprehension filters must be decidable at load time",
                           "filter on loop variables and constants only")
        return c.const

    def items(self, args: list[ast.expr], node: ast.Call) -> list[Typed]:
        if not args:
            raise self.err(node, f"{getattr(node.func, 'id', 'this function')}() needs at least one argument")
        if len(args) == 1 and isinstance(args[0], (ast.GeneratorExp, ast.ListComp)):
            gen = args[0]
            out = [self.expr(gen.elt) for _ in self._unroll(gen)]
            if not out:
                raise self.err(node, "the comprehension ranges over nothing")
            return out
        return [self.expr(a) for a in args]

    # -- expressions -------------------------------------------------------------------
    def expr(self, node: ast.AST, text_ok: bool = False) -> Typed:
        """Elaborate one node; a name (a string, e.g. an objective's choice) only
        where ``text_ok`` (an operand of == or !=)."""
        method: Callable[[ast.AST], Typed] | None = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise self.err(node, f"'{type(node).__name__}' is not allowed in the spec language",
                           "use arithmetic, comparisons, and/or/not, if-expressions, min/max/sum/all/any")
        v = method(node)
        if isinstance(v.const, str) and not text_ok:
            raise self.err(node, f"'{v.const}' is a name, not a value", "compare it, e.g. shrink == \"width\"")
        return v

    def _Constant(self, node: ast.Constant) -> Typed:
        v = node.value
        if isinstance(v, bool):
            return Typed.boolean(v)
        if isinstance(v, int):
            return Typed.num(Fraction(v))
        if isinstance(v, float):
            if not math.isfinite(v):
                raise self.err(node, f"literal {v!r} is not a finite number")
            return Typed.num(Fraction(repr(v)))  # exactly as written: 0.1 is 1/10
        if isinstance(v, str) and self.scope.text_literals:
            return Typed.text(v)
        raise self.err(node, f"literal {v!r} is not a number")

    def _Name(self, node: ast.Name) -> Typed:
        if node.id in self.loop_vars:
            return Typed.num(Fraction(self.loop_vars[node.id]))
        if node.id in ("True", "False"):
            return Typed.boolean(node.id == "True")
        if node.id.startswith(HOLE_PREFIX):
            name = node.id[len(HOLE_PREFIX):]
            v = self.scope.hole(name, node)
            if v is None:
                raise self.err(node, f"hole '?{name}' has no value here",
                               "holes are filled by 'ccmatic synth'; 'verify' needs a concrete CCA")
            return v
        return self.scope.name(node.id, node)

    def _Subscript(self, node: ast.Subscript) -> Typed:
        if not isinstance(node.value, ast.Name):
            raise self.err(node, "only named trace quantities can be indexed, e.g. S[t - 1]")
        sl = node.slice
        parts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        idx = [self.static_int(p, allow_t=True) for p in parts]
        for p, i in zip(parts, idx):
            # Negative steps count from the end only when written as literals: a
            # loop variable or a proof's t shifted below 0 (S[t - 2] at t = 1) is an
            # error, not a silent read of the last steps.
            if isinstance(i, int) and i < 0 and self._uses_loop_var(p):
                raise self.err(p, f"step {i} is before the first step (0)",
                               "start the loop later, or shift the index less")
        return self.scope.index(node.value.id, idx, node)

    def _uses_loop_var(self, node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id in self.loop_vars for n in ast.walk(node))

    def _UnaryOp(self, node: ast.UnaryOp) -> Typed:
        if isinstance(node.op, ast.Not):
            v = self.boolean(node.operand)
            if isinstance(v.const, bool):
                return Typed.boolean(not v.const)
            return Typed(ir.Not(v.expr), True)
        v = self.num(node.operand)
        if isinstance(node.op, ast.USub):
            if v.const is not None:
                return Typed.num(-v.number, v.unit)
            return Typed(ir.Neg(v.expr), False, v.unit, None, v.hole)
        if isinstance(node.op, ast.UAdd):
            return v
        raise self.err(node, "unsupported unary operator")

    def _BinOp(self, node: ast.BinOp) -> Typed:
        a = self.num(node.left)
        b = self.num(node.right)
        op = node.op
        if isinstance(op, (ast.Add, ast.Sub)):
            return self._add(node, a, b, isinstance(op, ast.Add))
        if isinstance(op, ast.Mult):
            return self._mul(node, a, b)
        if isinstance(op, ast.Div):
            return self._div(node, a, b)
        if isinstance(op, ast.Pow) and self.scope.nonlinear:
            return self._pow(node, a, b)
        raise self.err(node, f"operator '{type(op).__name__}' is not allowed",
                       "use + - * / with one constant factor")

    def _add(self, node: ast.BinOp, a: Typed, b: Typed, add: bool) -> Typed:
        unit = self.unify(a, b, node, "add" if add else "subtract")
        if a.const is not None and b.const is not None:
            return Typed.num(a.number + b.number if add else a.number - b.number, unit)
        e = ir.Arith("add" if add else "sub", a.expr, b.expr, self.scope.source.node_loc(node))
        return Typed(e, False, unit, None, not (a.symbolic or b.symbolic))

    def _mul(self, node: ast.BinOp, a: Typed, b: Typed) -> Typed:
        unit = mul_units(a.unit, b.unit)
        loc = self.scope.source.node_loc(node)
        if a.const is not None and b.const is not None:
            c = a.number * b.number
            return Typed.num(c, unit if c != 0 else None)
        if a.const is None and b.const is None:
            if a.hole and b.hole:
                raise self.err(node, "product of two holes is nonlinear",
                               "a hole may multiply a trace term or a constant, not another hole")
            if not (a.hole or b.hole or self.scope.nonlinear):
                raise self.err(node, "nonlinear product of two non-constant terms",
                               "ccmatic only accepts linear arithmetic; multiply by a constant")
            return Typed(ir.Arith("mul", a.expr, b.expr, loc), False, unit)
        k, other = (a, b) if a.const is not None else (b, a)
        if k.number == 0:  # zero has every unit: '0 * c_lo + 0 * R' is well typed
            return Typed.num(Fraction(0))
        return Typed(ir.Arith("mul", ir.Num(k.number), other.expr, loc), False, unit, None, other.hole)

    def _div(self, node: ast.BinOp, a: Typed, b: Typed) -> Typed:
        loc = self.scope.source.node_loc(node)
        unit = div_units(a.unit, b.unit)
        if b.hole:
            raise self.err(node, "division by a hole is nonlinear", "multiply by a hole instead")
        if b.const is None:
            if not self.scope.nonlinear:
                raise self.err(node, "division by a non-constant term is nonlinear",
                               "divide only by load-time constants, e.g. 2 or R")
            return Typed(ir.Arith("div", a.expr, b.expr, loc), False, unit)
        if b.number == 0:
            raise self.err(node, "division by zero")
        if a.const is not None:
            return Typed.num(a.number / b.number, unit if a.number != 0 else None)
        return Typed(ir.Arith("mul", a.expr, ir.Num(1 / b.number), loc), False, unit, None, a.hole)

    def _pow(self, node: ast.BinOp, a: Typed, b: Typed) -> Typed:
        loc = self.scope.source.node_loc(node)
        if b.const is not None and b.number.denominator == 1:
            unit = a.unit
            n = int(b.number)
            if unit is not None:
                unit = Unit(unit.byte * n, unit.sec * n)
            if a.const is not None:
                if a.number == 0 and n < 0:
                    raise self.err(node, "division by zero")
                return Typed.num(a.number ** n, unit)
            return Typed(ir.Arith("pow", a.expr, b.expr, loc), False, unit)
        if a.unit not in (None, COUNT) or b.unit not in (None, COUNT):
            raise self.err(node, "a non-integer power needs plain numbers on both sides")
        return Typed(ir.Arith("pow", a.expr, b.expr, loc), False, None)

    def _BoolOp(self, node: ast.BoolOp) -> Typed:
        return logic("and" if isinstance(node.op, ast.And) else "or", [self.boolean(v) for v in node.values])

    def _Compare(self, node: ast.Compare) -> Typed:
        left = self.expr(node.left, text_ok=True)
        out: list[Typed] = []
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node, text_ok=True)
            out.append(self._compare(node, op, left, right))
            left = right
        return out[0] if len(out) == 1 else logic("and", out)

    def _compare(self, node: ast.Compare, op: ast.cmpop, left: Typed, right: Typed) -> Typed:
        cmp = _CMP.get(type(op))
        if cmp is None:
            raise self.err(node, "unsupported comparison")
        if isinstance(left.const, str) or isinstance(right.const, str):
            if not (isinstance(left.const, str) and isinstance(right.const, str) and cmp in ("eq", "ne")):
                raise self.err(node, "a name can only be compared with == or != to another name")
            return Typed.boolean((left.const == right.const) == (cmp == "eq"))
        if left.is_bool or right.is_bool:
            if left.is_bool and right.is_bool and cmp in ("eq", "ne"):
                if isinstance(left.const, bool) and isinstance(right.const, bool):
                    return Typed.boolean((left.const == right.const) == (cmp == "eq"))
                return Typed(ir.Cmp(cmp, left.expr, right.expr), True)
            raise self.err(node, "cannot compare a condition with a number")
        self.unify(left, right, node, "compare")
        if left.const is not None and right.const is not None:
            return Typed.boolean(_PY_CMP[cmp](left.number, right.number))
        return Typed(ir.Cmp(cmp, left.expr, right.expr), True)

    def _IfExp(self, node: ast.IfExp) -> Typed:
        c = self.boolean(node.test)
        a = self.expr(node.body)
        b = self.expr(node.orelse)
        if a.is_bool != b.is_bool:
            raise self.err(node, "both branches of an if-expression must be numbers, or both conditions")
        unit = None if a.is_bool else self.unify(a, b, node, "choose between")
        if isinstance(c.const, bool):
            chosen = a if c.const else b
            return Typed(chosen.expr, chosen.is_bool, unit if not chosen.is_bool else None, chosen.const,
                         chosen.hole)
        return Typed(ir.Ite(c.expr, a.expr, b.expr), a.is_bool, unit)

    def _Call(self, node: ast.Call) -> Typed:
        if not isinstance(node.func, ast.Name):
            raise self.err(node, "only built-in functions can be called")
        fn = node.func.id
        if node.keywords:
            raise self.err(node, f"{fn}() takes no keyword arguments")
        handler = CALLS.get(fn)
        if handler is not None:
            return handler(self, node)
        v = self.scope.call(fn, node, self)  # a scope's own definitions (proof files)
        if v is not None:
            return v
        raise self.err(node, f"unknown function '{fn}'",
                       "available: min, max, sum, all, any, abs, choose, bytes, seconds, rate, count")



__all__ = ["BaseScope", "Elaborator", "Index", "Scope", "Typed", "logic"]
