"""Compile spec-language expressions to Z3 terms, checking units and linearity.

Only linear real arithmetic is accepted: a product needs one side that is a
constant known at load time (a literal, a fixed model parameter such as ``R``, or a
comprehension variable), and a divisor must be such a constant.  Comprehensions
(``min/max/sum/all/any(... for i in range(a, b))``) are unrolled, so their bounds
must be constants too.  Names and indexed reads are resolved by a :class:`Scope`,
which is where the visibility rules (what a sender may observe) live.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

import z3

from ccmatic.errors import SpecError
from ccmatic.lang.source import HOLE_PREFIX, IMPLIES, Source
from ccmatic.lang.units import (
    BYTES,
    COUNT,
    RATE,
    SECONDS,
    Unit,
    div_units,
    mul_units,
    unit_name,
)


def rat(x: Fraction) -> z3.ArithRef:
    """An exact Z3 rational."""
    return z3.Q(x.numerator, x.denominator) if x.denominator != 1 else z3.RealVal(x.numerator)


@dataclass(frozen=True)
class Val:
    """A compiled expression.

    ``unit`` is None for booleans and for *polymorphic* numeric literals; ``const``
    holds the exact value when it is known at load time.
    """

    term: z3.ExprRef
    is_bool: bool
    unit: Unit | None = None
    const: Fraction | None = None
    #: depends on template holes but not on the trace: a constant once a candidate
    #: is chosen, so it may multiply trace terms (linear for every candidate)
    hole: bool = False

    @property
    def symbolic(self) -> bool:
        """Depends on the trace (neither a load-time constant nor a hole term)."""
        return self.const is None and not self.hole

    @staticmethod
    def num(x: Fraction, unit: Unit | None = None) -> Val:
        return Val(rat(x), False, unit, x)

    @staticmethod
    def boolean(b: bool) -> Val:
        return Val(z3.BoolVal(b), True)


class Scope(Protocol):
    """Resolves names for one compilation context (a CCA step, or a query)."""

    source: Source

    def name(self, ident: str, node: ast.AST) -> Val: ...

    def index(self, ident: str, index: list[int | tuple[str, int]], node: ast.AST) -> Val: ...

    def choose(self, options: list[Val], node: ast.AST) -> Val: ...

    def int_name(self, ident: str) -> int | None:
        """Value of a name usable in static integer contexts (indices, ranges)."""
        ...


class Compiler:
    """Compiles expression ASTs under a scope.  Comprehension variables live in
    ``self.loop_vars`` while their body is unrolled."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.loop_vars: dict[str, int] = {}

    # -- helpers ---------------------------------------------------------------
    def err(self, node: ast.AST, msg: str, hint: str | None = None) -> SpecError:
        return SpecError(self.scope.source.node_loc(node), msg, hint)

    def _unify(self, a: Val, b: Val, node: ast.AST, what: str) -> Unit | None:
        if a.is_bool or b.is_bool:
            raise self.err(node, f"cannot {what} a boolean and a number")
        if a.unit is None:
            return b.unit
        if b.unit is None or a.unit == b.unit:
            return a.unit
        if getattr(self.scope, "lenient_units", False):
            # a template with symbolic holes: its unit checks are constraints on the
            # holes (ccmatic.lang.template_units); each candidate is checked strictly
            return None
        raise self.err(
            node,
            f"unit mismatch: cannot {what} {unit_name(a.unit)} and {unit_name(b.unit)}",
            "both sides must have the same unit (bytes, seconds or bytes/second)",
        )

    def num(self, node: ast.AST) -> Val:
        v = self.expr(node)
        if v.is_bool:
            raise self.err(node, "expected a number, found a boolean condition")
        return v

    def boolean(self, node: ast.AST) -> Val:
        v = self.expr(node)
        if not v.is_bool:
            raise self.err(node, "expected a condition (true/false), found a number",
                           "compare it, e.g. 'x > 0'")
        return v

    # -- static integers (indices, range bounds) -----------------------------------
    def static_int(self, node: ast.AST, allow_t: bool) -> int | tuple[str, int]:
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
            a = self.static_int(node.left, allow_t)
            b = self.static_int(node.right, allow_t)
            if isinstance(node.op, ast.Add):
                if isinstance(a, tuple) and isinstance(b, tuple):
                    raise self.err(node, "an index may contain t only once")
                if isinstance(a, tuple):
                    return (a[0], a[1] + int(b))  # type: ignore[arg-type]
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
        raise self.err(node, "expected a whole-number constant expression here")

    # -- comprehensions --------------------------------------------------------------
    def comprehension_range(self, g: ast.comprehension) -> tuple[str, range]:
        """The loop variable of ``for name in range(a[, b[, step]])`` and its values
        (bounds known at load time); shared with the concrete interpreter."""
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
        return g.target.id, range(*bounds)

    def _unroll(self, node: ast.GeneratorExp | ast.ListComp) -> Iterator[None]:
        gens = node.generators

        def rec(i: int) -> Iterator[None]:
            if i == len(gens):
                yield None
                return
            g = gens[i]
            name, values = self.comprehension_range(g)
            old = self.loop_vars.get(name)
            for value in values:
                self.loop_vars[name] = value
                ok = True
                for cond in g.ifs:
                    c = self.boolean(cond)
                    simp = z3.simplify(c.term)
                    if z3.is_true(simp):
                        continue
                    if z3.is_false(simp):
                        ok = False
                        break
                    raise self.err(cond, "comprehension filters must be decidable at load time")
                if ok:
                    yield from rec(i + 1)
            if old is None:
                self.loop_vars.pop(name, None)
            else:
                self.loop_vars[name] = old

        return rec(0)

    def _items(self, args: list[ast.expr], node: ast.Call) -> list[Val]:
        if not args:
            raise self.err(node, f"{getattr(node.func, 'id', 'this function')}() needs at least one argument")
        if len(args) == 1 and isinstance(args[0], (ast.GeneratorExp, ast.ListComp)):
            gen = args[0]
            out = []
            for _ in self._unroll(gen):
                out.append(self.expr(gen.elt))
            if not out:
                raise self.err(node, "the comprehension ranges over nothing")
            return out
        return [self.expr(a) for a in args]

    # -- expressions -------------------------------------------------------------------
    def expr(self, node: ast.AST) -> Val:
        method: Callable[[ast.AST], Val] | None = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise self.err(node, f"'{type(node).__name__}' is not allowed in the spec language",
                           "use arithmetic, comparisons, and/or/not, if-expressions, min/max/sum/all/any")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Val:
        v = node.value
        if isinstance(v, bool):
            return Val.boolean(v)
        if isinstance(v, int):
            return Val.num(Fraction(v))
        if isinstance(v, float):
            if not math.isfinite(v):
                raise self.err(node, f"literal {v!r} is not a finite number")
            return Val.num(Fraction(repr(v)))
        raise self.err(node, f"literal {v!r} is not a number")

    def _Name(self, node: ast.Name) -> Val:
        if node.id in self.loop_vars:
            return Val.num(Fraction(self.loop_vars[node.id]))
        if node.id in ("True", "False"):
            return Val.boolean(node.id == "True")
        if node.id.startswith(HOLE_PREFIX):
            hole = getattr(self.scope, "hole", None)
            v: Val | None = hole(node.id[len(HOLE_PREFIX):], node) if hole is not None else None
            if v is None:
                raise self.err(node, f"hole '?{node.id[len(HOLE_PREFIX):]}' has no value here",
                               "holes are filled by 'ccmatic synth'; 'verify' needs a concrete CCA")
            return v
        return self.scope.name(node.id, node)

    def _Subscript(self, node: ast.Subscript) -> Val:
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

    def _UnaryOp(self, node: ast.UnaryOp) -> Val:
        if isinstance(node.op, ast.Not):
            v = self.boolean(node.operand)
            return Val(z3.Not(v.term), True)
        v = self.num(node.operand)
        if isinstance(node.op, ast.USub):
            return Val(-v.term, False, v.unit, -v.const if v.const is not None else None, v.hole)
        if isinstance(node.op, ast.UAdd):
            return v
        raise self.err(node, "unsupported unary operator")

    def _BinOp(self, node: ast.BinOp) -> Val:
        a = self.num(node.left)
        b = self.num(node.right)
        op = node.op
        if isinstance(op, (ast.Add, ast.Sub)):
            unit = self._unify(a, b, node, "add" if isinstance(op, ast.Add) else "subtract")
            if a.const is not None and b.const is not None:
                c = a.const + b.const if isinstance(op, ast.Add) else a.const - b.const
                return Val.num(c, unit)
            term = a.term + b.term if isinstance(op, ast.Add) else a.term - b.term
            return Val(term, False, unit, hole=not (a.symbolic or b.symbolic))
        if isinstance(op, ast.Mult):
            unit = mul_units(a.unit, b.unit)
            if a.const is None and b.const is None:
                if a.hole and b.hole:
                    raise self.err(node, "product of two holes is nonlinear",
                                   "a hole may multiply a trace term or a constant, not another hole")
                if a.hole or b.hole:  # linear once the candidate's holes are fixed
                    return Val(a.term * b.term, False, unit)
                raise self.err(node, "nonlinear product of two non-constant terms",
                               "ccmatic only accepts linear arithmetic; multiply by a constant")
            if a.const is not None and b.const is not None:
                return Val.num(a.const * b.const, unit if a.const * b.const != 0 else None)
            k, other = (a, b) if a.const is not None else (b, a)
            assert k.const is not None
            if k.const == 0:  # zero has every unit: '0 * c_lo + 0 * R' is well typed
                return Val.num(Fraction(0))
            return Val(rat(k.const) * other.term, False, unit, hole=other.hole)
        if isinstance(op, ast.Div):
            if b.hole:
                raise self.err(node, "division by a hole is nonlinear", "multiply by a hole instead")
            if b.const is None:
                raise self.err(node, "division by a non-constant term is nonlinear",
                               "divide only by load-time constants, e.g. 2 or R")
            if b.const == 0:
                raise self.err(node, "division by zero")
            unit = div_units(a.unit, b.unit)
            if a.const is not None:
                return Val.num(a.const / b.const, unit if a.const != 0 else None)
            return Val(a.term * rat(1 / b.const), False, unit, hole=a.hole)
        raise self.err(node, f"operator '{type(op).__name__}' is not allowed",
                       "use + - * / with one constant factor")

    def _BoolOp(self, node: ast.BoolOp) -> Val:
        vals = [self.boolean(v).term for v in node.values]
        return Val(z3.And(*vals) if isinstance(node.op, ast.And) else z3.Or(*vals), True)

    def _Compare(self, node: ast.Compare) -> Val:
        left = self.expr(node.left)
        out = []
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if left.is_bool or right.is_bool:
                if left.is_bool and right.is_bool and isinstance(op, (ast.Eq, ast.NotEq)):
                    t = left.term == right.term if isinstance(op, ast.Eq) else left.term != right.term
                    out.append(t)
                    left = right
                    continue
                raise self.err(node, "cannot compare a condition with a number")
            self._unify(left, right, node, "compare")
            a, b = left.term, right.term
            if isinstance(op, ast.Lt):
                out.append(a < b)
            elif isinstance(op, ast.LtE):
                out.append(a <= b)
            elif isinstance(op, ast.Gt):
                out.append(a > b)
            elif isinstance(op, ast.GtE):
                out.append(a >= b)
            elif isinstance(op, ast.Eq):
                out.append(a == b)
            elif isinstance(op, ast.NotEq):
                out.append(a != b)
            else:
                raise self.err(node, "unsupported comparison")
            left = right
        return Val(out[0] if len(out) == 1 else z3.And(*out), True)

    def _IfExp(self, node: ast.IfExp) -> Val:
        c = self.boolean(node.test)
        a = self.expr(node.body)
        b = self.expr(node.orelse)
        if a.is_bool != b.is_bool:
            raise self.err(node, "both branches of an if-expression must be numbers, or both conditions")
        if a.is_bool:
            return Val(z3.If(c.term, a.term, b.term), True)
        unit = self._unify(a, b, node, "choose between")
        return Val(z3.If(c.term, a.term, b.term), False, unit)

    def _Call(self, node: ast.Call) -> Val:
        if not isinstance(node.func, ast.Name):
            raise self.err(node, "only built-in functions can be called")
        fn = node.func.id
        if node.keywords:
            raise self.err(node, f"{fn}() takes no keyword arguments")
        if fn == IMPLIES:
            p = self.boolean(node.args[0])
            q = self.boolean(node.args[1])
            return Val(z3.Implies(p.term, q.term), True)
        if fn in ("min", "max"):
            items = self._items(node.args, node)
            unit = None
            for it in items:
                unit = self._unify(Val(it.term, False, unit), it, node, f"take {fn} of")
            acc = items[0].term
            for it in items[1:]:
                if fn == "min":
                    acc = z3.If(it.term < acc, it.term, acc)
                else:
                    acc = z3.If(it.term > acc, it.term, acc)
            consts = [it.const for it in items if it.const is not None]
            if len(consts) == len(items):
                return Val.num(min(consts) if fn == "min" else max(consts), unit)
            return Val(acc, False, unit)
        if fn == "sum":
            items = self._items(node.args, node)
            unit = None
            for it in items:
                unit = self._unify(Val(it.term, False, unit), it, node, "add")
            consts = [it.const for it in items if it.const is not None]
            if len(consts) == len(items):
                return Val.num(sum(consts, Fraction(0)), unit)
            return Val(z3.Sum([it.term for it in items]), False, unit)
        if fn in ("all", "any"):
            items = self._items(node.args, node)
            for it, a in zip(items, node.args):
                if not it.is_bool:
                    raise self.err(a, f"{fn}() needs conditions, found a number")
            terms = [it.term for it in items]
            return Val(z3.And(*terms) if fn == "all" else z3.Or(*terms), True)
        if fn == "abs":
            if len(node.args) != 1:
                raise self.err(node, "abs() takes one argument")
            v = self.num(node.args[0])
            if v.const is not None:
                return Val.num(abs(v.const), v.unit)
            return Val(z3.If(v.term >= 0, v.term, -v.term), False, v.unit)
        if fn in _UNIT_CASTS:
            if len(node.args) != 1:
                raise self.err(node, f"{fn}() takes one argument")
            v = self.num(node.args[0])
            if v.unit not in (None, COUNT):
                raise self.err(node, f"{fn}() converts a plain number, not {unit_name(v.unit)}")
            return Val(v.term, False, _UNIT_CASTS[fn], v.const)
        if fn == "choose":
            opts = [self.expr(a) for a in node.args]
            return self.scope.choose(opts, node)
        user = getattr(self.scope, "call", None)  # a scope's own definitions (proof files)
        if user is not None:
            v = user(fn, node, self)
            if isinstance(v, Val):
                return v
        raise self.err(node, f"unknown function '{fn}'",
                       "available: min, max, sum, all, any, abs, choose, bytes, seconds, rate")


_UNIT_CASTS = {"bytes": BYTES, "seconds": SECONDS, "rate": RATE}


