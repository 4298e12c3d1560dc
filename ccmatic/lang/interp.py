"""Concrete interpreter for CCA files: one step of one flow on numbers, not Z3 terms.

The semantics mirror the Z3 compiler construct by construct (:class:`ccmatic.lang.expr.Compiler`
under ``cca._StepScope`` / ``cca._Executor``): literals are exact rationals (``1.25`` is 5/4),
a bare observation reads its latest visible value (lag 1, R or 0 by kind), rate/cwnd/state
read before their assignment in a step give the previous step's value and afterwards the
new one, comprehensions over ``range`` are unrolled, and a persistent name a step leaves
unassigned keeps its previous value.  Errors in the file are the Z3 path's :class:`SpecError` s
with the same messages, raised on first use for every branch (not only the one taken);
run-time errors (division by zero, ...) are SpecErrors at the offending expression.

Each program is compiled once per ``(R, D, T, exact)`` into a tree of closures (cached per
program object), so the float mode runs fast.  Two things are wider than the Z3 path, for
simulator-only files: nonlinear arithmetic (products, division by non-constants, ``**``),
and comprehension filters that depend on the trace (evaluated at run time).  Evaluation is
lazy like Python's: only the taken branch of an ``if`` / if-expression runs, ``and``/``or``
and comparison chains short-circuit, so ``choose`` is called once per evaluated call, in
evaluation order.  Units are not checked (validated files passed that check at load time).
"""

from __future__ import annotations

import ast
import math
import operator
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ccmatic.errors import Loc, SpecError
from ccmatic.lang.cca import (
    _STATEMENT_WORDS,
    HIDDEN,
    OBSERVATIONS,
    OUTPUTS,
    PARAM_NAMES,
    CcaProgram,
    _lag,
    unknown_name_error,
)
from ccmatic.lang.expr import Compiler, Val
from ccmatic.lang.source import HOLE_PREFIX, IMPLIES, Source
from ccmatic.lang.units import Unit, unit_name

Value = Fraction | float | bool

__all__ = ["Value", "initial_state", "run_step"]


class _Ctx:
    """Run-time inputs of one evaluation: the step's slots for assigned names, and the callbacks."""

    __slots__ = ("choose", "env", "fetch", "holes", "mss")

    def __init__(self, env: list[Any], fetch: Callable[[str, int], Value],
                 choose: Callable[[list[Value]], Value], holes: Mapping[str, Fraction] | None,
                 mss: Value) -> None:
        self.env = env
        self.fetch = fetch
        self.choose = choose
        self.holes = holes
        self.mss = mss


_Fn = Callable[[_Ctx], Any]
_Stmt = Callable[[_Ctx], None]


@dataclass(frozen=True, slots=True)
class _E:
    """A compiled expression: its evaluator, whether it is a condition, and its exact
    value when known at compile time (the Z3 compiler's ``Val.const``, plus folded conditions)."""

    fn: _Fn
    is_bool: bool
    const: Fraction | bool | None = None

    @property
    def number(self) -> Fraction:
        """The constant of a numeric expression (only when ``const`` is set)."""
        assert isinstance(self.const, Fraction)
        return self.const


class _Entry:
    """A name bound in the step's environment (one per assignment or if-merge, compared by
    identity like the Z3 executor's ``Val`` s); its run-time value lives in ``env[slot]``."""

    __slots__ = ("const", "is_bool", "slot")

    def __init__(self, slot: int, is_bool: bool, const: Fraction | bool | None) -> None:
        self.slot = slot
        self.is_bool = is_bool
        self.const = const


@dataclass(frozen=True, slots=True)
class _Code:
    body: tuple[_Stmt, ...]
    outputs: tuple[tuple[str, _Fn], ...]
    nslots: int
    max_lag: int  # the deepest read, in steps


class _IntScope:
    """Lets :meth:`Compiler.static_int` evaluate indices and range bounds (the only use)."""

    def __init__(self, source: Source, int_name: Callable[[str], int | None]) -> None:
        self.source = source
        self._int_name = int_name

    def name(self, ident: str, node: ast.AST) -> Val:
        raise AssertionError("static_int resolves no names")

    def index(self, ident: str, index: list[int | tuple[str, int]], node: ast.AST) -> Val:
        raise AssertionError("static_int reads no trace")

    def choose(self, options: list[Val], node: ast.AST) -> Val:
        raise AssertionError("static_int makes no choices")

    def int_name(self, ident: str) -> int | None:
        return self._int_name(ident)


def _to_fraction(v: Any) -> Fraction:
    return v if type(v) is Fraction else Fraction(v)


_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_UNIT_CASTS = ("bytes", "seconds", "rate")
_ZERO_HINT = "guard the divisor, e.g. 'x / d if d != 0 else ...'"


class _ExprCompiler:
    """Compiles expressions to closures; subclasses resolve names (a step, or an initial value)."""

    def __init__(self, source: Source, exact: bool) -> None:
        self.source = source
        self.exact = exact
        self.conv: Callable[[Any], Any] = _to_fraction if exact else float
        self.loop_vars: dict[str, int] = {}
        self.max_lag = 0
        self._static = Compiler(_IntScope(source, self.int_name))
        self._static.loop_vars = self.loop_vars  # shared: indices see the unrolled loop variables

    # -- name resolution (overridden) -----------------------------------------------
    def int_name(self, ident: str) -> int | None:
        return None

    def resolve_name(self, ident: str, node: ast.AST) -> _E:
        raise NotImplementedError

    def resolve_index(self, ident: str, index: list[int | tuple[str, int]], node: ast.AST) -> _E:
        raise NotImplementedError

    def resolve_hole(self, name: str, node: ast.AST) -> _E:
        raise self.err(node, f"hole '?{name}' has no value here",
                       "holes are filled by 'ccmatic synth'; 'verify' needs a concrete CCA")

    # -- helpers ---------------------------------------------------------------------
    def loc(self, node: ast.AST) -> Loc:
        return self.source.node_loc(node)

    def err(self, node: ast.AST, msg: str, hint: str | None = None) -> SpecError:
        return SpecError(self.loc(node), msg, hint)

    def const(self, x: Fraction | bool) -> _E:
        rv: Any = x if self.exact or isinstance(x, bool) else float(x)
        return _E(lambda c: rv, isinstance(x, bool), x)

    def fetch_node(self, ident: str, lag: int, is_bool: bool) -> _E:
        conv = bool if is_bool else self.conv
        self.max_lag = max(self.max_lag, lag)

        def f(c: _Ctx) -> Any:
            return conv(c.fetch(ident, lag))
        return _E(f, is_bool)

    def num(self, node: ast.AST) -> _E:
        v = self.expr(node)
        if v.is_bool:
            raise self.err(node, "expected a number, found a boolean condition")
        return v

    def boolean(self, node: ast.AST) -> _E:
        v = self.expr(node)
        if not v.is_bool:
            raise self.err(node, "expected a condition (true/false), found a number", "compare it, e.g. 'x > 0'")
        return v

    def expr(self, node: ast.AST) -> _E:
        method = _EXPR_METHODS.get(type(node))
        if method is None:
            raise self.err(node, f"'{type(node).__name__}' is not allowed in the spec language",
                           "use arithmetic, comparisons, and/or/not, if-expressions, min/max/sum/all/any")
        return method(self, node)

    # -- leaves ----------------------------------------------------------------------
    def _constant(self, node: ast.Constant) -> _E:
        v = node.value
        if isinstance(v, bool):
            return self.const(v)
        if isinstance(v, int):
            return self.const(Fraction(v))
        if isinstance(v, float):
            if not math.isfinite(v):
                raise self.err(node, f"literal {v!r} is not a finite number")
            return self.const(Fraction(repr(v)))  # exactly as written: 0.1 is 1/10
        raise self.err(node, f"literal {v!r} is not a number")

    def _name(self, node: ast.Name) -> _E:
        if node.id in self.loop_vars:
            return self.const(Fraction(self.loop_vars[node.id]))
        if node.id in ("True", "False"):
            return self.const(node.id == "True")
        if node.id.startswith(HOLE_PREFIX):
            return self.resolve_hole(node.id[len(HOLE_PREFIX):], node)
        return self.resolve_name(node.id, node)

    def _subscript(self, node: ast.Subscript) -> _E:
        if not isinstance(node.value, ast.Name):
            raise self.err(node, "only named trace quantities can be indexed, e.g. S[t - 1]")
        sl = node.slice
        parts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        idx = [self._static.static_int(p, allow_t=True) for p in parts]
        for p, i in zip(parts, idx):
            if isinstance(i, int) and i < 0 and any(isinstance(n, ast.Name) and n.id in self.loop_vars
                                                    for n in ast.walk(p)):
                raise self.err(p, f"step {i} is before the first step (0)", "start the loop later, or shift the index less")
        return self.resolve_index(node.value.id, idx, node)

    # -- operators -------------------------------------------------------------------
    def _unaryop(self, node: ast.UnaryOp) -> _E:
        if isinstance(node.op, ast.Not):
            v = self.boolean(node.operand)
            if v.const is not None:
                return self.const(not v.const)
            f = v.fn
            return _E(lambda c: not f(c), True)
        v = self.num(node.operand)
        if isinstance(node.op, ast.USub):
            if v.const is not None:
                return self.const(-v.number)
            f = v.fn
            return _E(lambda c: -f(c), False)
        if isinstance(node.op, ast.UAdd):
            return v
        raise self.err(node, "unsupported unary operator")

    def _binop(self, node: ast.BinOp) -> _E:
        a = self.num(node.left)
        b = self.num(node.right)
        op = node.op
        if isinstance(op, (ast.Add, ast.Sub, ast.Mult)):
            return self._linear(op, a, b)
        if isinstance(op, ast.Div):
            return self._div(node, a, b)
        if isinstance(op, ast.Pow):
            return self._pow(node, a, b)
        raise self.err(node, f"operator '{type(op).__name__}' is not allowed", "use + - * / with one constant factor")

    def _linear(self, op: ast.operator, a: _E, b: _E) -> _E:
        ka, kb = a.const, b.const
        if ka is not None and kb is not None:
            pyop = operator.add if isinstance(op, ast.Add) else operator.sub if isinstance(op, ast.Sub) else operator.mul
            return self.const(pyop(a.number, b.number))
        fa, fb = a.fn, b.fn
        f: _Fn
        if isinstance(op, ast.Mult):
            if ka == 0 or kb == 0:  # like Val: zero times anything is the constant 0
                return self.const(Fraction(0))
            if ka is not None:
                x = self.const(ka).fn(_NO_CTX)
                f = lambda c: x * fb(c)
            elif kb is not None:
                y = self.const(kb).fn(_NO_CTX)
                f = lambda c: fa(c) * y
            else:
                f = lambda c: fa(c) * fb(c)
        elif isinstance(op, ast.Add):
            if ka is not None:
                x = self.const(ka).fn(_NO_CTX)
                f = lambda c: x + fb(c)
            elif kb is not None:
                y = self.const(kb).fn(_NO_CTX)
                f = lambda c: fa(c) + y
            else:
                f = lambda c: fa(c) + fb(c)
        else:
            if ka is not None:
                x = self.const(ka).fn(_NO_CTX)
                f = lambda c: x - fb(c)
            elif kb is not None:
                y = self.const(kb).fn(_NO_CTX)
                f = lambda c: fa(c) - y
            else:
                f = lambda c: fa(c) - fb(c)
        return _E(f, False)

    def _div(self, node: ast.BinOp, a: _E, b: _E) -> _E:
        if b.const is not None:
            if b.const == 0:
                raise self.err(node, "division by zero")
            if a.const is not None:
                return self.const(a.number / b.number)
            fa = a.fn
            y = self.const(b.const).fn(_NO_CTX)
            return _E(lambda c: fa(c) / y, False)
        fa, fb = a.fn, b.fn
        loc = self.loc(node)

        def div(c: _Ctx) -> Any:
            x = fa(c)
            y = fb(c)
            if not y:
                raise SpecError(loc, "division by zero at step evaluation", _ZERO_HINT)
            return x / y
        return _E(div, False)

    def _pow(self, node: ast.BinOp, a: _E, b: _E) -> _E:
        loc = self.loc(node)
        exact = self.exact

        def power(x: Any, y: Any) -> Any:
            try:
                if exact:
                    if y.denominator == 1:
                        return x ** int(y)  # exact
                    if x < 0:
                        raise SpecError(loc, "a negative number raised to a non-integer power at step evaluation")
                    return Fraction(float(x) ** float(y))  # no exact value: computed in float
                r = x ** y
                if isinstance(r, complex):
                    raise SpecError(loc, "a negative number raised to a non-integer power at step evaluation")
                return r
            except ZeroDivisionError:
                raise SpecError(loc, "division by zero at step evaluation (0 raised to a negative power)",
                                _ZERO_HINT) from None
            except OverflowError:
                raise SpecError(loc, "numeric overflow in '**' at step evaluation") from None

        if a.const is not None and b.const is not None and isinstance(b.const, Fraction) and b.const.denominator == 1:
            if a.const == 0 and b.const < 0:
                raise self.err(node, "division by zero")
            return self.const(Fraction(a.const) ** int(b.const))
        fa, fb = a.fn, b.fn
        return _E(lambda c: power(fa(c), fb(c)), False)

    def _boolop(self, node: ast.BoolOp) -> _E:
        vals = [self.boolean(v) for v in node.values]
        is_and = isinstance(node.op, ast.And)
        if all(v.const is not None for v in vals):
            return self.const(all(v.const for v in vals) if is_and else any(v.const for v in vals))
        fns = tuple(v.fn for v in vals)
        if len(fns) == 2:
            f0, f1 = fns
            return _E((lambda c: f0(c) and f1(c)) if is_and else (lambda c: f0(c) or f1(c)), True)
        if is_and:
            return _E(lambda c: all(f(c) for f in fns), True)
        return _E(lambda c: any(f(c) for f in fns), True)

    def _compare(self, node: ast.Compare) -> _E:
        left = self.expr(node.left)
        items = [left]
        ops: list[Callable[[Any, Any], bool]] = []
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if left.is_bool or right.is_bool:
                if not (left.is_bool and right.is_bool and isinstance(op, (ast.Eq, ast.NotEq))):
                    raise self.err(node, "cannot compare a condition with a number")
            elif type(op) not in _COMPARE:
                raise self.err(node, "unsupported comparison")
            ops.append(_COMPARE[type(op)])
            items.append(right)
            left = right
        if all(it.const is not None for it in items):
            return self.const(all(o(x.const, y.const) for o, x, y in zip(ops, items, items[1:])))
        if len(ops) == 1:
            o = ops[0]
            fa, fb = items[0].fn, items[1].fn
            ka, kb = items[0].const, items[1].const
            if kb is not None:
                y = self.const(kb).fn(_NO_CTX)
                return _E(lambda c: o(fa(c), y), True)
            if ka is not None:
                x = self.const(ka).fn(_NO_CTX)
                return _E(lambda c: o(x, fb(c)), True)
            return _E(lambda c: o(fa(c), fb(c)), True)
        first = items[0].fn
        rest = tuple(zip(ops, (it.fn for it in items[1:])))

        def chain(c: _Ctx) -> bool:
            x = first(c)
            for o, g in rest:
                y = g(c)
                if not o(x, y):
                    return False
                x = y
            return True
        return _E(chain, True)

    def _ifexp(self, node: ast.IfExp) -> _E:
        cond = self.boolean(node.test)
        a = self.expr(node.body)
        b = self.expr(node.orelse)
        if a.is_bool != b.is_bool:
            raise self.err(node, "both branches of an if-expression must be numbers, or both conditions")
        fc, fa, fb = cond.fn, a.fn, b.fn
        return _E(lambda c: fa(c) if fc(c) else fb(c), a.is_bool)

    # -- calls -----------------------------------------------------------------------
    def _unroll(self, node: ast.GeneratorExp | ast.ListComp) -> Iterator[tuple[_Fn, ...]]:
        """Bind the loop variables to each combination in turn, yielding the filters
        that could not be decided at compile time (checked at run time)."""
        gens = node.generators

        def rec(i: int, guards: tuple[_Fn, ...]) -> Iterator[tuple[_Fn, ...]]:
            if i == len(gens):
                yield guards
                return
            g = gens[i]
            name, values = self._static.comprehension_range(g)
            old = self.loop_vars.get(name)
            for value in values:
                self.loop_vars[name] = value
                ok = True
                extra: list[_Fn] = []
                for cond in g.ifs:
                    cv = self.boolean(cond)
                    if cv.const is None:
                        extra.append(cv.fn)
                    elif not cv.const:
                        ok = False
                        break
                if ok:
                    yield from rec(i + 1, guards + tuple(extra))
            if old is None:
                self.loop_vars.pop(name, None)
            else:
                self.loop_vars[name] = old

        return rec(0, ())

    def _items(self, args: list[ast.expr], node: ast.Call) -> list[tuple[tuple[_Fn, ...], _E, ast.AST]]:
        """The arguments of min/max/sum/all/any: (run-time filters, item, node for errors)."""
        if not args:
            raise self.err(node, f"{getattr(node.func, 'id', 'this function')}() needs at least one argument")
        if len(args) == 1 and isinstance(args[0], (ast.GeneratorExp, ast.ListComp)):
            gen = args[0]
            out: list[tuple[tuple[_Fn, ...], _E, ast.AST]] = [
                (guards, self.expr(gen.elt), gen) for guards in self._unroll(gen)]
            if not out:
                raise self.err(node, "the comprehension ranges over nothing")
            return out
        return [((), self.expr(a), a) for a in args]

    def _values(self, items: list[tuple[tuple[_Fn, ...], _E, ast.AST]], node: ast.Call) -> Callable[[_Ctx], list[Any]]:
        """Evaluator of the item list (skipping items whose run-time filters fail)."""
        if all(not guards for guards, _, _ in items):
            fns = tuple(e.fn for _, e, _ in items)
            return lambda c: [f(c) for f in fns]
        pairs = tuple((guards, e.fn) for guards, e, _ in items)
        loc = self.loc(node)

        def vals(c: _Ctx) -> list[Any]:
            out = [f(c) for guards, f in pairs if all(g(c) for g in guards)]
            if not out:
                raise SpecError(loc, "the comprehension ranges over nothing")
            return out
        return vals

    def _call(self, node: ast.Call) -> _E:
        if not isinstance(node.func, ast.Name):
            raise self.err(node, "only built-in functions can be called")
        fn = node.func.id
        if node.keywords:
            raise self.err(node, f"{fn}() takes no keyword arguments")
        if fn == IMPLIES:
            p = self.boolean(node.args[0])
            q = self.boolean(node.args[1])
            if p.const is not None and q.const is not None:
                return self.const(not p.const or bool(q.const))
            fp, fq = p.fn, q.fn
            return _E(lambda c: (not fp(c)) or fq(c), True)
        if fn in ("min", "max", "sum"):
            items = self._items(node.args, node)
            what = "add" if fn == "sum" else f"take {fn} of"
            for _, it, _ in items:
                if it.is_bool:
                    raise self.err(node, f"cannot {what} a boolean and a number")
            consts = [it.number for g, it, _ in items if it.const is not None and not g]
            red: Callable[[list[Any]], Any]
            if fn == "sum":
                zero = Fraction(0) if self.exact else 0.0
                red = lambda xs: sum(xs, zero)
            else:
                red = min if fn == "min" else max
            if len(consts) == len(items):
                folded = sum(consts, Fraction(0)) if fn == "sum" else min(consts) if fn == "min" else max(consts)
                return self.const(folded)
            if len(items) == 2 and fn != "sum" and not items[0][0] and not items[1][0]:
                f0, f1 = items[0][1].fn, items[1][1].fn
                m = min if fn == "min" else max
                return _E(lambda c: m(f0(c), f1(c)), False)
            vals = self._values(items, node)
            return _E(lambda c: red(vals(c)), False)
        if fn in ("all", "any"):
            items = self._items(node.args, node)
            for _, it, at in items:
                if not it.is_bool:
                    raise self.err(at, f"{fn}() needs conditions, found a number")
            if all(it.const is not None and not g for g, it, _ in items):
                cs = [bool(it.const) for _, it, _ in items]
                return self.const(all(cs) if fn == "all" else any(cs))
            if all(not g for g, _, _ in items):
                fns = tuple(it.fn for _, it, _ in items)
                if fn == "all":
                    return _E(lambda c: all(f(c) for f in fns), True)
                return _E(lambda c: any(f(c) for f in fns), True)
            vals = self._values(items, node)
            return _E((lambda c: all(vals(c))) if fn == "all" else (lambda c: any(vals(c))), True)
        if fn == "abs":
            if len(node.args) != 1:
                raise self.err(node, "abs() takes one argument")
            v = self.num(node.args[0])
            if v.const is not None:
                return self.const(abs(v.number))
            f = v.fn
            return _E(lambda c: abs(f(c)), False)
        if fn in _UNIT_CASTS:
            if len(node.args) != 1:
                raise self.err(node, f"{fn}() takes one argument")
            return self.num(node.args[0])  # a unit annotation: the value is unchanged
        if fn == "choose":
            return self._choose([self.expr(a) for a in node.args], node)
        raise self.err(node, f"unknown function '{fn}'",
                       "available: min, max, sum, all, any, abs, choose, bytes, seconds, rate")

    def _choose(self, opts: list[_E], node: ast.AST) -> _E:
        is_bool = bool(opts) and opts[0].is_bool
        if any(o.is_bool != is_bool for o in opts):
            raise self.err(node, "choose() options must all be numbers or all be conditions")
        conv = bool if is_bool else self.conv
        fns = tuple(o.fn for o in opts)
        return _E(lambda c: conv(c.choose([f(c) for f in fns])), is_bool)


_EXPR_METHODS: dict[type[ast.AST], Callable[[_ExprCompiler, Any], _E]] = {
    ast.Constant: _ExprCompiler._constant, ast.Name: _ExprCompiler._name, ast.Subscript: _ExprCompiler._subscript,
    ast.UnaryOp: _ExprCompiler._unaryop, ast.BinOp: _ExprCompiler._binop, ast.BoolOp: _ExprCompiler._boolop,
    ast.Compare: _ExprCompiler._compare, ast.IfExp: _ExprCompiler._ifexp, ast.Call: _ExprCompiler._call,
}


def _no_fetch(name: str, lag: int) -> Value:
    raise AssertionError("constant evaluation reads no trace")


def _no_choose(options: list[Value]) -> Value:
    raise AssertionError("constant evaluation makes no choices")


_NO_CTX = _Ctx([], _no_fetch, _no_choose, None, Fraction(0))  # for evaluating compiled constants


class _StepCompiler(_ExprCompiler):
    """Compiles a program's body, tracking statically (as ``_Executor`` does) which names
    are bound in the step's environment at each point."""

    def __init__(self, prog: CcaProgram, R: int, D: int, T: int, exact: bool) -> None:
        self.prog = prog
        self.R, self.D, self.T = R, D, T
        super().__init__(prog.source, exact)
        self.state_units: dict[str, Unit | None] = {s.name: s.unit for s in prog.states}
        self.persistent = set(OUTPUTS) | set(self.state_units)
        self.env: dict[str, _Entry] = {}
        self.undefined: set[str] = set()
        self.slots: dict[str, int] = {}

    def int_name(self, ident: str) -> int | None:
        return {"R": self.R, "D": self.D, "T": self.T}.get(ident)

    # -- names (mirrors _StepScope) ----------------------------------------------------
    def _slot(self, name: str) -> int:
        return self.slots.setdefault(name, len(self.slots))

    def _read(self, e: _Entry) -> _E:
        if e.const is not None:
            return self.const(e.const)
        slot = e.slot
        return _E(lambda c: c.env[slot], e.is_bool)

    def _kind(self, ident: str, node: ast.AST) -> tuple[bool, int]:
        """(is a condition, minimum lag) of a readable trace quantity."""
        if ident in OBSERVATIONS:
            u, kind = OBSERVATIONS[ident]
            return u is None, _lag(kind, self.R)
        if ident in OUTPUTS:
            if (ident == "rate" and not self.prog.sets_rate) or (ident == "cwnd" and not self.prog.sets_cwnd):
                raise self.err(node, f"'{ident}' is read but never set by this CCA",
                               f"assign {ident} somewhere, or do not read it")
            return False, 1
        if ident in self.state_units:
            return self.state_units[ident] is None, 1
        raise self._unknown(ident, node)

    def _unknown(self, ident: str, node: ast.AST) -> SpecError:
        return unknown_name_error(self.loc(node), ident, self.undefined, list(self.state_units) + list(self.env))

    def resolve_hole(self, name: str, node: ast.AST) -> _E:
        loc = self.loc(node)
        conv = self.conv

        def hole(c: _Ctx) -> Any:
            if c.holes is None:
                raise SpecError(loc, f"hole '?{name}' has no value here",
                                "holes are filled by 'ccmatic synth'; 'verify' needs a concrete CCA")
            if name not in c.holes:
                raise SpecError(loc, f"hole '?{name}' has no value")
            return conv(c.holes[name])
        return _E(hole, False)

    def resolve_name(self, ident: str, node: ast.AST) -> _E:
        e = self.env.get(ident)
        if e is not None:
            return self._read(e)
        if ident == "MSS":
            return _E(lambda c: c.mss, False)
        if ident in ("R", "D", "T"):
            return self.const(Fraction({"R": self.R, "D": self.D, "T": self.T}[ident]))
        if ident == "t":
            raise self.err(node, "'t' can only be used inside an index, e.g. S[t - 2]")
        is_bool, lag = self._kind(ident, node)
        return self.fetch_node(ident, lag, is_bool)

    def resolve_index(self, ident: str, index: list[int | tuple[str, int]], node: ast.AST) -> _E:
        if ident in PARAM_NAMES or ident in self.env:
            raise self.err(node, f"'{ident}' cannot be indexed")
        is_bool, minlag = self._kind(ident, node)
        if len(index) != 1 or not isinstance(index[0], tuple):
            raise self.err(node, f"a CCA indexes '{ident}' relative to the current step, e.g. {ident}[t - {max(1, minlag)}]",
                           "absolute steps and flow indices are for queries, not CCA files")
        k = index[0][1]
        lag = -k
        if lag < minlag:
            what = "the future" if lag < 0 else ("the current step" if lag == 0 else f"step t-{lag}")
            shown = f"t{k:+d}" if k else "t"
            raise self.err(node, f"'{ident}[{shown}]' reads {what}, which the sender cannot see yet",
                           f"the latest visible value is {ident}[t - {minlag}] (plain '{ident}')")
        return self.fetch_node(ident, lag, is_bool)

    # -- statements (mirrors _Executor) ------------------------------------------------
    def compile(self) -> _Code:
        body = self.block(self.prog.body)
        names = [n for n, on in (("rate", self.prog.sets_rate), ("cwnd", self.prog.sets_cwnd)) if on]
        outputs: list[tuple[str, _Fn]] = []
        for n in names + [s.name for s in self.prog.states]:
            e = self.env.get(n)
            outputs.append((n, self._read(e).fn if e is not None else self._previous(n).fn))
        return _Code(tuple(body), tuple(outputs), len(self.slots), self.max_lag)

    def _previous(self, name: str) -> _E:
        return self.fetch_node(name, 1, name not in OUTPUTS and self.state_units[name] is None)

    def block(self, stmts: list[ast.stmt]) -> list[_Stmt]:
        out: list[_Stmt] = []
        for st in stmts:
            out.extend(self.stmt(st))
        return out

    def stmt(self, st: ast.stmt) -> list[_Stmt]:
        if isinstance(st, ast.Assign):
            return [self._assign(st)]
        if isinstance(st, ast.If):
            return [self._if(st)]
        if isinstance(st, ast.Pass):
            return []
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
            return []  # docstring
        if isinstance(st, ast.AnnAssign):
            raise self.err(st, "state variables must be declared at the top of the file, before any statement")
        if isinstance(st, ast.AugAssign):
            raise self.err(st, "augmented assignment is not supported", "write 'x = x + ...'")
        what = _STATEMENT_WORDS.get(type(st), f"'{type(st).__name__}' statements")
        raise self.err(st, f"{what} are not allowed in a CCA file",
                       "to set a value write 'name = ...' (one '=')" if isinstance(st, ast.Expr)
                       else "use assignments and if/elif/else")

    def _assign(self, st: ast.Assign) -> _Stmt:
        if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
            raise self.err(st, "assign to one plain name at a time, e.g. rate = 2 * c_lo")
        name = st.targets[0].id
        if name in OBSERVATIONS or name in PARAM_NAMES or name in HIDDEN or name == "t":
            raise self.err(st.targets[0], f"cannot assign to '{name}'",
                           "CCAs set rate, cwnd, state variables or temporaries")
        v = self.expr(st.value)
        if name in OUTPUTS or name in self.state_units:
            want = OUTPUTS[name] if name in OUTPUTS else self.state_units[name]
            if want is None and not v.is_bool:
                raise self.err(st.value, f"'{name}' is a boolean state variable; assign a condition")
            if want is not None and v.is_bool:
                raise self.err(st.value, f"'{name}' needs a number in {unit_name(want)}, found a condition")
        slot = self._slot(name)
        self.env[name] = _Entry(slot, v.is_bool, v.const)
        self.undefined.discard(name)
        f = v.fn

        def assign(c: _Ctx) -> None:
            c.env[slot] = f(c)
        return assign

    def _fill(self, name: str) -> _Stmt:
        """In a branch that leaves a persistent name unassigned: it keeps last step's value."""
        slot = self._slot(name)
        f = self._previous(name).fn

        def fill(c: _Ctx) -> None:
            c.env[slot] = f(c)
        return fill

    def _if(self, st: ast.If) -> _Stmt:
        cond = self.boolean(st.test)
        before = dict(self.env)
        und_before = set(self.undefined)
        then_code = self.block(st.body)
        after_then, und_then = self.env, self.undefined
        self.env, self.undefined = dict(before), set(und_before)
        else_code = self.block(st.orelse)
        after_else, und_else = self.env, self.undefined
        env: dict[str, _Entry] = {}
        undefined = und_then | und_else
        for n in set(after_then) | set(after_else):
            a = after_then.get(n)
            b = after_else.get(n)
            if a is None or b is None:
                if n not in self.persistent:
                    undefined.add(n)
                    continue
                prev = _Entry(self._slot(n), self._previous(n).is_bool, None)
                (then_code if a is None else else_code).append(self._fill(n))
                a = a if a is not None else prev
                b = b if b is not None else prev
            if a is b:
                env[n] = a
                continue
            if a.is_bool != b.is_bool:
                raise self.err(st, f"'{n}' is a condition in one branch and a number in the other")
            env[n] = _Entry(self._slot(n), a.is_bool, None)
        self.env = env
        self.undefined = undefined - set(env)
        tb, eb = tuple(then_code), tuple(else_code)
        if cond.const is not None:
            chosen = tb if cond.const else eb

            def run_const(c: _Ctx) -> None:
                for s in chosen:
                    s(c)
            return run_const
        fc = cond.fn

        def run_if(c: _Ctx) -> None:
            for s in (tb if fc(c) else eb):
                s(c)
        return run_if


class _InitCompiler(_ExprCompiler):
    """Initial values of state variables (mirrors ``cca._compile_init``'s scope)."""

    def __init__(self, prog: CcaProgram, R: int, exact: bool) -> None:
        super().__init__(prog.source, exact)
        self.R = R

    def resolve_name(self, ident: str, node: ast.AST) -> _E:
        if ident == "MSS":
            return _E(lambda c: c.mss, False)
        if ident in ("R", "D"):
            return self.const(Fraction(self.R if ident == "R" else 1))  # D is 1 here, as in _compile_init
        raise self.err(node, f"an initial value may only use constants, MSS, R, D and choose(); found '{ident}'")

    def resolve_index(self, ident: str, index: list[int | tuple[str, int]], node: ast.AST) -> _E:
        raise self.err(node, "an initial value cannot read the trace")


# id(prog) -> (weak reference to prog, compiled code per (R, D, T, exact))
_CACHE: dict[int, tuple[weakref.ref[CcaProgram], dict[tuple[int, int, int, bool], _Code]]] = {}


def _code(prog: CcaProgram, R: int, D: int, T: int, exact: bool) -> _Code:
    key = id(prog)
    hit = _CACHE.get(key)
    if hit is None or hit[0]() is not prog:
        def forget(ref: weakref.ref[CcaProgram], key: int = key) -> None:
            if _CACHE.get(key, (None,))[0] is ref:
                del _CACHE[key]
        hit = (weakref.ref(prog, forget), {})
        _CACHE[key] = hit
    ck = (R, D, T, exact)
    code = hit[1].get(ck)
    if code is None:
        code = hit[1][ck] = _StepCompiler(prog, R, D, T, exact).compile()
    return code


def max_lag(prog: CcaProgram, *, R: int, D: int, T: int) -> int:
    """The deepest step the program reads back (its warm-up: the steps before it
    cannot run), for these R, D and T; unlike ``prog.warmup`` it also covers
    simulator-only files, which the loader does not compile."""
    return _code(prog, R, D, T, False).max_lag


def run_step(prog: CcaProgram, *, R: int, D: int, T: int, mss: Fraction | float,
             fetch: Callable[[str, int], Value],
             choose: Callable[[list[Value]], Value],
             holes: Mapping[str, Fraction] | None = None,
             exact: bool = True) -> dict[str, Value]:
    """Execute the program's body once (one step of one flow). `fetch(name, lag)` gives
    an observation / output / state variable `lag` steps back (lag >= 0), as the
    Z3 compiler's fetch does. Returns the value at this step of every persistent name:
    'rate' if prog.sets_rate, 'cwnd' if prog.sets_cwnd, and every state variable
    (a persistent name the step does not assign keeps fetch(name, 1)).

    With ``exact`` numbers are Fractions (a non-integer ``**`` is computed in float and
    converted back exactly), else floats.  ``choose(options)`` gets the evaluated options
    of each ``choose(...)`` the step evaluates.  The program is compiled on first use and
    cached per program object (do not mutate a program after running it).  Problems in the
    file, and run-time errors such as division by zero, raise :class:`SpecError`."""
    code = _code(prog, R, D, T, exact)
    ctx = _Ctx([None] * code.nslots, fetch, choose, holes, Fraction(mss) if exact else float(mss))
    for s in code.body:
        s(ctx)
    return {name: f(ctx) for name, f in code.outputs}


def initial_state(prog: CcaProgram, *, R: int, mss: Fraction | float,
                  choose: Callable[[list[Value]], Value], exact: bool = True) -> dict[str, Value]:
    """Initial values of the state variables that declare one (`phase: count = choose(0, 1, 2, 3)`),
    with the same scope rules as cca._compile_init (constants, MSS, R, D, choose)."""
    ctx = _Ctx([], _no_fetch, choose, None, Fraction(mss) if exact else float(mss))
    out: dict[str, Value] = {}
    for s in prog.states:
        if s.init is None:
            continue
        e = _InitCompiler(prog, R, exact).expr(s.init)
        if (s.unit is None) != e.is_bool:
            raise SpecError(prog.source.node_loc(s.init),
                            f"initial value of '{s.name}' does not match its declared unit "
                            f"{unit_name(s.unit) if s.unit else 'bool'}")
        out[s.name] = e.fn(ctx)
    return out
