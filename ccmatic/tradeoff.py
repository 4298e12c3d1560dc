"""Loss vs. convergence-time tradeoff calculator (Theorem 4.2.1, Fig. 4.4 of the thesis).

A CCA that risks ``O(f(C))`` packet loss needs ``Omega(F^-1(C) * (R + beta_s))`` time to
ramp from ``C0`` up to the link rate ``C``, where

    F(0) = C0,   F(k) = F(k-1) + f(F(k-1)) / beta_s,

and ``F^-1(C)`` is the smallest integer ``k >= 0`` with ``F(k) >= C``.  ``f(C) = C`` gives
``Theta(log(C/C0))`` RTTs, a constant ``f`` gives ``Theta(C - C0)``.

The loss allowance is user text: :func:`parse_loss` checks it with :mod:`ast` against a
small whitelist and builds the sympy expression itself (user text is never evaluated).
:func:`compute` finds closed forms (sympy ``rsolve``) where ``f`` is linear in ``C``, and
evaluates ``F`` and ``F^-1`` by iterating the recurrence, in exact :class:`Fraction`
arithmetic while ``f`` is a rational function of ``C`` (floats once the numbers grow past
``max_bits``, or from the start when ``f`` needs log, sqrt or exp).

sympy is imported lazily so that registering the subcommand costs nothing.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ccmatic.errors import Loc, SpecError

if TYPE_CHECKING:
    import sympy

Num = Fraction | float
"""A value of F: exact while possible, float otherwise (see :attr:`Reach.exact`)."""

FUNCTIONS = ("log", "sqrt", "exp")
MAX_STEPS = 10**6
MAX_BITS = 4096
_MAX_LEN = 500
_MAX_EXPONENT = 1000
_MAX_CONST_BITS = 100_000
_HINT = "f(C) may use the rate C, numbers, + - * / ** and log, sqrt, exp; e.g. 'C', '2', 'sqrt(C)'"
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_BAD_OPS = {ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.BitXor: "^", ast.BitOr: "|",
            ast.BitAnd: "&", ast.LShift: "<<", ast.RShift: ">>"}


@cache
def rate_symbol() -> sympy.Symbol:
    """The symbol ``C`` (a positive rate) used in every loss allowance and in ``F^-1``."""
    import sympy as sp

    return sp.Symbol("C", positive=True)


@cache
def step_symbol() -> sympy.Symbol:
    """The symbol ``k`` (RTTs, a nonnegative integer) used in the closed form of ``F``."""
    import sympy as sp

    return sp.Symbol("k", integer=True, nonnegative=True)


# -- parsing -------------------------------------------------------------------------------

def parse_loss(text: str, source: str = "<--loss>") -> sympy.Expr:
    """Parse a loss allowance ``f(C)`` (Theorem 4.2.1) safely into a sympy expression.

    Allowed: numbers, the name ``C``, binary ``+ - * / **``, unary ``-``/``+`` and
    ``log``/``sqrt``/``exp`` of one argument.  Anything else raises :class:`SpecError`
    at ``source:1:col`` (1-based column of the offending part).
    """
    def fail(col: int, message: str, hint: str | None = _HINT) -> SpecError:
        return SpecError(Loc(source, 1, col), message, hint)

    for i, ch in enumerate(text):
        if not ch.isprintable():
            raise fail(i + 1, f"control character {ch!r} in f(C)", "write f(C) on one line")
    if len(text) > _MAX_LEN:
        raise fail(_MAX_LEN + 1, f"f(C) is longer than {_MAX_LEN} characters")
    body = text.lstrip()
    lead = len(text) - len(body)
    if not body.strip():
        raise fail(1, "empty loss allowance f(C)")
    try:
        tree = ast.parse(body, mode="eval")
    except SyntaxError as e:
        col = e.offset if e.offset is not None and e.offset > 0 else len(body.rstrip()) + 1
        what = "invalid syntax" if e.msg == "invalid syntax" else f"invalid syntax: {e.msg}"
        raise fail(lead + col, f"{what} in f(C)") from None
    except (RecursionError, MemoryError, ValueError):
        raise fail(1, "f(C) is too deeply nested") from None
    try:
        return _Builder(body, lead, fail).expr(tree.body)
    except RecursionError:
        raise fail(1, "f(C) is too deeply nested") from None


def _describe(node: ast.expr) -> str:
    return {ast.Attribute: "attribute access", ast.Subscript: "indexing", ast.Compare: "a comparison",
            ast.BoolOp: "and/or", ast.Lambda: "lambda", ast.IfExp: "if/else", ast.Tuple: "a tuple",
            ast.List: "a list", ast.NamedExpr: ":=", ast.Call: "a call of a call"}.get(type(node), "this syntax")


class _Builder:
    """Turns a whitelisted :mod:`ast` expression into sympy, node by node."""

    def __init__(self, body: str, lead: int, fail: Callable[..., SpecError]) -> None:
        self.raw = body.encode("utf-8")
        self.lead = lead
        self.fail = fail

    def col(self, byte: int) -> int:
        # ast offsets count UTF-8 bytes; report 1-based characters
        return len(self.raw[:byte].decode("utf-8", errors="ignore")) + 1 + self.lead

    def err(self, node: ast.expr, message: str, hint: str | None = _HINT, byte: int | None = None) -> SpecError:
        return self.fail(self.col(node.col_offset if byte is None else byte), message, hint)

    def expr(self, node: ast.expr) -> Any:
        import sympy as sp

        res = self._expr(node)
        if res.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
            raise self.err(node, "f(C) is undefined here (division by zero or log(0)?)", None)
        if res.is_number and res.is_extended_real is False:
            raise self.err(node, f"{res} is not a real number", None)
        return res

    def _expr(self, node: ast.expr) -> Any:
        import sympy as sp

        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise self.err(node, f"{type(v).__name__} constants are not allowed in f(C)")
            if isinstance(v, float):
                if not math.isfinite(v):
                    raise self.err(node, "number out of range", None)
                return sp.Rational(Fraction(repr(v)))  # the literal, exactly
            return sp.Integer(v)
        if isinstance(node, ast.Name):
            if node.id == "C":
                return rate_symbol()
            if node.id in FUNCTIONS:
                raise self.err(node, f"{node.id} is a function", f"call it, e.g. {node.id}(C)")
            raise self.err(node, f"unknown name '{node.id}'", "the only variable is C, the link rate")
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return -self.expr(node.operand)
            if isinstance(node.op, ast.UAdd):
                return self.expr(node.operand)
            raise self.err(node, "only unary - and + are allowed in f(C)")
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.Call):
            fn = node.func
            if not isinstance(fn, ast.Name):
                raise self.err(fn, f"{_describe(fn)} is not allowed in f(C)",
                               "the only functions are log, sqrt and exp")
            if fn.id not in FUNCTIONS:
                raise self.err(node, f"unknown function '{fn.id}'", "the only functions are log, sqrt and exp")
            if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
                raise self.err(node, f"{fn.id} takes exactly one argument", None)
            arg = self.expr(node.args[0])
            return {"log": sp.log, "sqrt": sp.sqrt, "exp": sp.exp}[fn.id](arg)
        raise self.err(node, f"{_describe(node)} is not allowed in f(C)")

    def _binop(self, node: ast.BinOp) -> Any:
        op = _OPS.get(type(node.op))
        if op is None:
            sym = _BAD_OPS.get(type(node.op), "this operator")
            hint = "use ** for powers" if sym == "^" else _HINT
            byte = None  # point at the operator: after the left operand, its spaces and ')'
            if node.left.end_lineno == node.lineno and node.left.end_col_offset is not None:
                byte = node.left.end_col_offset
                while byte < len(self.raw) and self.raw[byte:byte + 1] in (b" ", b"\t", b")"):
                    byte += 1
            raise self.err(node, f"operator {sym} is not allowed in f(C)", hint, byte)
        left, right = self.expr(node.left), self.expr(node.right)
        if op == "/" and right == 0:
            raise self.err(node.right, "division by zero", None)
        if op == "**" and right.is_number and abs(right) > _MAX_EXPONENT:
            raise self.err(node.right, f"exponent too large (at most {_MAX_EXPONENT} in size)", None)
        if op == "**" and left.is_Rational and right.is_number and right.is_extended_real:
            size = max(int(left.p).bit_length(), int(left.q).bit_length())
            if abs(float(right)) * size > _MAX_CONST_BITS:
                raise self.err(node, "number too large", None)
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if op == "/":
            return left / right
        return left**right


# -- evaluation ----------------------------------------------------------------------------

def _normalize(f: Any) -> Any:
    """Check ``f`` (a sympy expression in C) and use the canonical positive symbol C."""
    import sympy as sp

    if isinstance(f, str):
        raise TypeError("give a sympy expression; parse user text with parse_loss")
    f = sp.sympify(f, strict=True)  # strict: never parse strings
    others = sorted(s.name for s in f.free_symbols if s.name != "C")
    if others:
        raise SpecError(None, f"f may only use the variable C, not {', '.join(others)}", _HINT)
    f = f.xreplace({s: rate_symbol() for s in f.free_symbols})
    f = f.xreplace({x: sp.nsimplify(x, rational=True) for x in f.atoms(sp.Float)})
    if f.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise SpecError(None, f"f(C) = {f} is undefined", _HINT)
    return f


def _is_rational_function(f: Any) -> bool:
    """True when ``f`` evaluates to a rational at every rational C (Fraction arithmetic)."""
    import sympy as sp

    for node in sp.preorder_traversal(f):
        if node.is_Symbol or node.is_Rational or node.is_Add or node.is_Mul:
            continue
        if node.is_Pow and node.exp.is_Integer:
            continue
        return False
    return True


class _Undefined(Exception):
    """f cannot be evaluated at this point (log of a negative number, division by zero, ...)."""


def _compile(f: Any, exact: bool) -> Callable[[Num], Num]:
    """A Python closure for ``f``: Fraction in, Fraction out when ``exact``, else floats."""
    import sympy as sp

    if f.is_Symbol:
        return lambda x: x
    if f.is_Rational:
        q = Fraction(int(f.p), int(f.q))
        v: Num = q if exact else float(q)
        return lambda x: v
    if f.is_number:  # e.g. log(2), E, sqrt(2): only ever in float mode
        try:
            fv = float(f)
        except TypeError:
            raise SpecError(None, f"{f} is not a real number", _HINT) from None
        return lambda x: fv
    args = [_compile(a, exact) for a in f.args]
    if f.is_Add:
        def add(x: Num) -> Num:
            s: Num = args[0](x)
            for g in args[1:]:
                s = s + g(x)
            return s
        return add
    if f.is_Mul:
        def mul(x: Num) -> Num:
            p: Num = args[0](x)
            for g in args[1:]:
                p = p * g(x)
            return p
        return mul
    if f.is_Pow:
        base, expo = args
        if f.exp.is_Integer:
            n = int(f.exp)
            return lambda x: base(x) ** n
        return lambda x: math.pow(float(base(x)), float(expo(x)))
    if isinstance(f, sp.log) and len(args) == 1:
        (a,) = args
        return lambda x: math.log(float(a(x)))
    if isinstance(f, sp.exp):
        (a,) = args
        return lambda x: math.exp(float(a(x)))
    raise SpecError(None, f"cannot evaluate {f} numerically", _HINT)


def _fmt(x: Num) -> str:
    if isinstance(x, Fraction) and len(str(x)) <= 24:
        return str(x)
    return f"{float(x):.6g}"


def _bits(x: Fraction) -> int:
    return x.numerator.bit_length() + x.denominator.bit_length()


@dataclass(frozen=True)
class Reach:
    """``F^-1(C) = k`` with ``F(k) = F_k >= C``; ``k is None`` when F never reaches C (``reason``)."""

    C: Fraction
    k: int | None
    F_k: Num | None
    reason: str | None = None
    exact: bool = True  # F_k (hence k) computed in exact arithmetic


@dataclass
class Tradeoff:
    """The result of :func:`compute` for one loss allowance ``f`` (Theorem 4.2.1)."""

    loss: str                      # f as the user wrote it (or str(f))
    f: sympy.Expr
    C0: Fraction
    beta_s: Fraction
    F_closed: sympy.Expr | None     # F(k) in the symbol k, when rsolve finds it
    F_inv_closed: sympy.Expr | None  # ceiling(...) in the symbol C, valid for C > C0
    growth: str                    # see growth_class
    exact: bool                    # f is a rational function: F is iterated in Fractions
    points: tuple[Reach, ...] = ()
    max_steps: int = MAX_STEPS
    max_bits: int = MAX_BITS
    _f_exact: Callable[[Num], Num] | None = field(default=None, repr=False, compare=False)
    _f_float: Callable[[Num], Num] | None = field(default=None, repr=False, compare=False)
    _sup: Fraction | None = field(default=None, repr=False, compare=False)

    def recurrence(self) -> str:
        """``F(k) = ...`` in terms of ``F(k-1)``, simplified."""
        import sympy as sp

        prev = sp.Symbol("F(k-1)")
        step = sp.expand(prev + self.f.subs(rate_symbol(), prev) / sp.Rational(self.beta_s))
        return f"F(0) = {self.C0}, F(k) = {step}"

    def _f_at(self, x: Num) -> Num:
        try:
            if self._f_exact is not None and isinstance(x, Fraction):
                return self._f_exact(x)
            assert self._f_float is not None
            fx = self._f_float(float(x))
        except (ValueError, ZeroDivisionError) as e:
            raise _Undefined(str(e)) from None
        except OverflowError:
            return math.inf
        if math.isnan(fx):
            raise _Undefined("not a number")
        return fx

    def _next(self, x: Num, fx: Num) -> Num:
        if isinstance(x, Fraction) and isinstance(fx, Fraction):
            nx = x + fx / self.beta_s
            if _bits(nx) <= self.max_bits:
                return nx
            x, fx = nx, Fraction(0)  # too big: continue in floats from the exact value
        try:
            return float(x) + float(fx) / float(self.beta_s)
        except OverflowError:
            return math.inf

    def F(self, k: int) -> Num:
        """F(k) by iterating the recurrence literally (k steps)."""
        if k < 0:
            raise ValueError("k must be nonnegative")
        if k > self.max_steps:
            raise SpecError(None, f"F({k}) needs more than {self.max_steps} steps (iteration cap)")
        x: Num = self.C0
        for j in range(k):
            try:
                x = self._next(x, self._f_at(x))
            except _Undefined as e:
                raise SpecError(None, f"F({j + 1}) is undefined: f(F({j})) = f({_fmt(x)}) is undefined ({e})",
                                _HINT) from None
        return x

    def F_inv(self, C: Fraction) -> int | None:
        """F^-1(C): the smallest k with F(k) >= C, or None when F never reaches C."""
        return self.reach_many([C])[0].k

    def reach(self, C: Fraction) -> Reach:
        """F^-1(C) with the F value reached, or why F never reaches C."""
        return self.reach_many([C])[0]

    def reach_many(self, Cs: Sequence[Fraction]) -> list[Reach]:
        """F^-1 at every C in one pass of the recurrence (at most ``max_steps`` steps).

        F never reaches C when f(F(k)) <= 0 at some k before (F stops increasing), when F
        is bounded below C (linear f with negative slope), when f is undefined at F(k), or
        when the float increment vanishes.  More than ``max_steps`` steps is a SpecError.
        (F(k) is the largest rate reachable in k RTTs: an allowance f <= 0 permits no increase,
        so the ramp ends there even if the literal recurrence would later turn upwards.)
        """
        targets = [Fraction(c) for c in Cs]
        res: list[Reach | None] = [None] * len(targets)
        x: Num = self.C0
        k = 0
        stopped: str | None = None
        for i in sorted(range(len(targets)), key=targets.__getitem__):
            c = targets[i]
            if stopped is None and x < c and self._sup is not None and c >= self._sup:
                res[i] = Reach(c, None, None, f"F(k) increases towards {self._sup} but never reaches it",
                               isinstance(x, Fraction))
                continue
            while stopped is None and x < c:
                if k >= self.max_steps:
                    raise SpecError(None, f"F^-1({_fmt(c)}) is more than {self.max_steps} RTTs (iteration cap)",
                                    "use a smaller C, a larger loss allowance f or a smaller beta_s")
                try:
                    fx = self._f_at(x)
                except _Undefined as e:
                    stopped = f"f(F({k})) = f({_fmt(x)}) is undefined ({e}), so F never reaches C"
                    break
                if not fx > 0:
                    stopped = (f"f(F({k})) = {_fmt(fx)} <= 0 at F({k}) = {_fmt(x)}: F stops increasing, "
                               "so it never reaches C")
                    break
                nx = self._next(x, fx)
                if nx == x:
                    stopped = (f"the increment f(F({k}))/beta_s = {_fmt(fx / self.beta_s)} is below float "
                               f"precision at F({k}) = {_fmt(x)}")
                    break
                x, k = nx, k + 1
            if stopped is not None:
                res[i] = Reach(c, None, None, stopped, isinstance(x, Fraction))
            else:
                res[i] = Reach(c, k, x, None, isinstance(x, Fraction))
        return [r for r in res if r is not None]


# -- closed forms and growth ---------------------------------------------------------------

def _linear(f: Any) -> tuple[Any, Any] | None:
    """``(a, b)`` when ``f = a*C + b`` with real constants a, b."""
    import sympy as sp

    C = rate_symbol()
    if not f.is_polynomial(C):
        return None
    p = sp.Poly(f, C)
    if p.degree() > 1:
        return None
    a, b = p.coeff_monomial(C), p.coeff_monomial(1)
    if not (a.is_number and b.is_number and a.is_extended_real and b.is_extended_real):
        return None
    return a, b


def growth_class(f: sympy.Expr, C0: Fraction, beta_s: Fraction) -> str:
    """Asymptotic class of ``F^-1(C)`` (Theorem 4.2.1), read off the closed form.

    ``"log"``: ``f = a*C + b`` with ``a > 0`` (F grows geometrically, ``F^-1 = Theta(log C)``);
    ``"linear"``: constant ``f > 0`` (``F^-1 = Theta(C - C0)``); ``"bounded"``: linear ``f``
    for which F never grows without bound (``a < 0`` or ``f(C0) <= 0``); ``"other"``: f is
    not linear in C (no closed form here, e.g. ``sqrt(C)`` lies between log and linear).
    ``beta_s`` only scales the curve and does not change the class.
    """
    import sympy as sp

    f = _normalize(f)
    lin = _linear(f)
    if lin is None:
        return "other"
    a, b = lin
    if not bool(a * sp.Rational(Fraction(C0)) + b > 0):
        return "bounded"
    if bool(a > 0):
        return "log"
    return "linear" if a == 0 else "bounded"


def _closed_forms(f: Any, C0: Fraction, beta_s: Fraction) -> tuple[Any, Any]:
    """(F(k), F^-1(C) for C > C0) in closed form when f is linear in C; else None."""
    import sympy as sp

    lin = _linear(f)
    if lin is None:
        return None, None
    a, b = lin
    C, k = rate_symbol(), step_symbol()
    c0, beta = sp.Rational(C0), sp.Rational(beta_s)
    Fn = sp.Function("F")
    try:
        F_k = sp.rsolve(Fn(k + 1) - Fn(k) - f.subs(C, Fn(k)) / beta, Fn(k), {Fn(0): c0})
    except (ValueError, TypeError, NotImplementedError):
        F_k = None
    if F_k is None:
        return None, None
    # defensive: the closed form must agree with the recurrence on its first steps (two
    # solutions of this first-order linear recurrence that agree at k = 0 are equal)
    A, B, r = (c0 + b / a, -b / a, 1 + a / beta) if a != 0 else (0, 0, 1)
    x = c0
    for j in range(4):
        if sp.simplify(F_k.subs(k, j) - x) != 0 or (a != 0 and sp.simplify(A * r**j + B - x) != 0):
            return None, None
        x = x + f.subs(C, x) / beta
    if not bool(a * c0 + b > 0) or bool(a < 0):
        return F_k, None  # F does not grow without bound: F^-1 is not defined on all C
    if a == 0:  # F(k) = C0 + k*b/beta_s >= C  <=>  k >= (C - C0)*beta_s/b
        return F_k, sp.ceiling((C - c0) * beta / b)
    # F(k) = A*r**k + B with r = 1 + a/beta_s > 1, A = C0 + b/a > 0: solve the generic form
    # for k, then substitute (solving the instance directly gives unreadable logs)
    gA, gB, gr, sol = _generic_inverse()
    if len(sol) != 1:
        return F_k, None
    inv = sol[0].subs({gA: A, gB: B, gr: r})
    return F_k, sp.ceiling(inv.replace(sp.log, lambda u: sp.log(sp.factor(u))))


@cache
def _generic_inverse() -> tuple[Any, Any, Any, list[Any]]:
    """sympy's solution of ``A*r**k + B = C`` for k (A, r > 0)."""
    import sympy as sp

    gA, gr = sp.Symbol("A", positive=True), sp.Symbol("r", positive=True)
    gB, kk = sp.Symbol("B", real=True), sp.Symbol("kk", real=True)
    return gA, gB, gr, sp.solve(sp.Eq(gA * gr**kk + gB, rate_symbol()), kk)


def default_grid(C0: Fraction, C_max: Fraction) -> list[Fraction]:
    """C0 times 1, 2, 5, 10, 20, 50, ... up to C_max (C_max included)."""
    out: list[Fraction] = []
    scale = Fraction(1)
    while True:
        for m in (1, 2, 5):
            c = C0 * m * scale
            if c >= C_max:
                return [*out, C_max]
            out.append(c)
        scale *= 10


def compute(f: sympy.Expr, C0: Fraction, beta_s: Fraction, C_max: Fraction | None = None, *,
            Cs: Sequence[Fraction] | None = None, loss: str | None = None,
            max_steps: int = MAX_STEPS, max_bits: int = MAX_BITS) -> Tradeoff:
    """Theorem 4.2.1 for loss allowance ``f``: closed forms, growth class, and F^-1 at
    ``Cs`` (default: :func:`default_grid` from C0 to ``C_max``, default ``1000*C0``)."""
    C0, beta_s = Fraction(C0), Fraction(beta_s)
    if C0 <= 0:
        raise SpecError(Loc("--C0"), f"the initial rate C0 must be positive, got {C0}")
    if beta_s <= 0:
        raise SpecError(Loc("--beta-s"), f"the buffer beta_s (seconds) must be positive, got {beta_s}")
    f = _normalize(f)
    top = Fraction(C_max) if C_max is not None else 1000 * C0
    if top <= 0:
        raise SpecError(Loc("--C"), f"C must be positive, got {top}")
    exact = _is_rational_function(f)
    F_k, F_inv = _closed_forms(f, C0, beta_s)
    sup = None
    lin = _linear(f)
    if lin is not None and lin[0].is_Rational and lin[1].is_Rational:
        a = Fraction(int(lin[0].p), int(lin[0].q))
        b = Fraction(int(lin[1].p), int(lin[1].q))
        if a < 0 < a * C0 + b and 1 + a / beta_s > 0:
            sup = -b / a  # F(k) = sup - (sup - C0)*(1 + a/beta_s)**k < sup
    t = Tradeoff(loss=loss if loss is not None else str(f), f=f, C0=C0, beta_s=beta_s, F_closed=F_k,
                 F_inv_closed=F_inv, growth=growth_class(f, C0, beta_s), exact=exact,
                 max_steps=max_steps, max_bits=max_bits,
                 _f_exact=_compile(f, True) if exact else None, _f_float=_compile(f, False), _sup=sup)
    t.points = tuple(t.reach_many(list(Cs) if Cs is not None else default_grid(C0, top)))
    return t


# -- command line --------------------------------------------------------------------------

def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
               parents: Sequence[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``ccmatic tradeoff`` (handler :func:`cmd_tradeoff` in ``handler``)."""
    p = sub.add_parser(
        "tradeoff", parents=list(parents),
        help="loss vs convergence time (Theorem 4.2.1): RTTs F^-1(C) to ramp up under loss allowance f(C)",
        description="Theorem 4.2.1: a CCA risking O(f(C)) loss needs F^-1(C) * (R + beta_s) time to ramp from "
                    "C0 to C, where F(0) = C0 and F(k) = F(k-1) + f(F(k-1))/beta_s.")
    p.add_argument("--loss", action="append", required=True, metavar="f(C)",
                   help="loss allowance in C, e.g. 'C', '1', 'sqrt(C)', 'C/log(C)' (repeat for several curves; "
                        "write --loss=-C when it starts with a minus)")
    p.add_argument("--C0", required=True, metavar="X", help="initial rate C0 > 0 (e.g. 1, 0.5, 1/2)")
    p.add_argument("--beta-s", dest="beta_s", required=True, metavar="Y", help="buffer size in seconds > 0")
    p.add_argument("--C", default=None, metavar="C1,C2,...",
                   help="rates to evaluate F^-1 at (default: C0 times 1, 2, 5, ..., 1000)")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="plot F^-1(C) against C (like Fig. 4.4)")
    p.set_defaults(handler=cmd_tradeoff)
    return p


def _number(text: str, where: Loc, what: str) -> Fraction:
    try:
        v = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise SpecError(where, f"{what} is not a number: {text!r}", "write e.g. 3, 0.5 or 1/2") from None
    if v <= 0:
        raise SpecError(where, f"{what} must be positive, got {text.strip()}")
    return v


def _rates(text: str) -> list[Fraction]:
    out: list[Fraction] = []
    col = 1
    for item in text.split(","):
        out.append(_number(item, Loc("--C", 1, col + len(item) - len(item.lstrip())), "C"))
        col += len(item) + 1
    return out


def _plot_path(path: str) -> Path:
    p = Path(path)
    if p.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise SpecError(Loc(path), "plot file must end in .png, .pdf or .svg")
    if not p.parent.exists():
        raise SpecError(Loc(path), "the plot's folder does not exist", "create it first")
    return p


def _plot(curves: list[Tradeoff], p: Path, C0: Fraction, top: Fraction) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = 200
    ratio = float(top / C0)
    grid = sorted({C0 * Fraction(ratio ** (i / n)) for i in range(n + 1)} | {top})
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for t in curves:
        pts = [(float(r.C), r.k) for r in t.reach_many(grid) if r.k is not None]
        label = f"f(C) = {t.loss}" + ("" if len(pts) == len(grid) else " (F never reaches larger C)")
        ax.plot([c for c, _ in pts], [k for _, k in pts], label=label)
    ax.set_xscale("log")
    ax.set_xlabel("link rate C")
    ax.set_ylabel("F^-1(C)  [RTTs, times (R + beta_s)]")
    ax.set_title(f"Loss vs convergence (Theorem 4.2.1): C0 = {C0}, beta_s = {curves[0].beta_s}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(p)
    plt.close(fig)


def _curve_json(t: Tradeoff) -> dict[str, Any]:
    def num(x: Num | None) -> str | None:
        return None if x is None else str(x) if isinstance(x, Fraction) else repr(x)

    pts: list[dict[str, Any]] = []
    for r in t.points:
        d: dict[str, Any] = {"C": str(r.C), "k": r.k, "F_k": num(r.F_k), "exact": r.exact}
        if r.reason is not None:
            d["reason"] = r.reason
        pts.append(d)
    return {"loss": t.loss, "f": str(t.f), "C0": str(t.C0), "beta_s": str(t.beta_s),
            "recurrence": t.recurrence(),
            "F": None if t.F_closed is None else str(t.F_closed),
            "F_inv": None if t.F_inv_closed is None else str(t.F_inv_closed),
            "growth": t.growth, "exact": t.exact, "points": pts}


_GROWTH_TEXT = {
    "log": "F^-1(C) = Theta(log(C/C0)) RTTs: fast convergence, but loss grows with C",
    "linear": "F^-1(C) = Theta(C - C0) RTTs: constant loss, slow convergence",
    "bounded": "F is bounded: F^-1(C) is undefined for large C",
    "other": "no closed form here; see the table",
}


def _curve_text(t: Tradeoff) -> str:
    lines = [f"f(C) = {t.loss}    (C0 = {t.C0}, beta_s = {t.beta_s})",
             f"  recurrence: {t.recurrence()}"]
    lines.append(f"  F(k)       = {t.F_closed}" if t.F_closed is not None else "  F(k)       : no closed form")
    if t.F_inv_closed is not None:
        lines.append(f"  F^-1(C)    = {t.F_inv_closed}   for C > C0 (0 for C <= C0)")
    else:
        lines.append("  F^-1(C)    : no closed form")
    lines.append(f"  growth     : {t.growth} -- {_GROWTH_TEXT[t.growth]}")
    if not t.exact or not all(r.exact for r in t.points):
        lines.append("  arithmetic : floats (f needs log/sqrt/exp, or exact numbers grew too large)"
                     if not t.exact else "  arithmetic : exact, then floats where the fractions grew too large")
    lines.append(f"  {'C':>14}  {'F^-1(C)':>8}  {'F(F^-1(C))':>12}   (time = F^-1(C) x (R + beta_s))")
    for r in t.points:
        if r.k is None:
            lines.append(f"  {_fmt(r.C):>14}  {'never':>8}  {'':>12}   {r.reason}")
        else:
            assert r.F_k is not None
            lines.append(f"  {_fmt(r.C):>14}  {r.k:>8}  {_fmt(r.F_k):>12}")
    return "\n".join(lines) + "\n"


def cmd_tradeoff(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``ccmatic tradeoff``: F, F^-1 and growth of Theorem 4.2.1 for each ``--loss``."""
    C0 = _number(args.C0, Loc("--C0"), "C0")
    beta_s = _number(args.beta_s, Loc("--beta-s"), "beta_s")
    Cs = _rates(args.C) if args.C else None
    losses: list[str] = list(args.loss or [])
    if not losses:
        raise SpecError(Loc("--loss"), "give at least one loss allowance", "e.g. --loss C --loss 1")
    plot = _plot_path(args.plot) if args.plot else None
    fs = [parse_loss(s, "<--loss>" if len(losses) == 1 else f"<--loss #{i}>") for i, s in enumerate(losses, 1)]
    curves = [compute(f, C0, beta_s, Cs=Cs, loss=s.strip()) for f, s in zip(fs, losses, strict=True)]
    if plot is not None:
        top = max(Cs) if Cs else 1000 * C0
        _plot(curves, plot, C0, max(top, 2 * C0))
    if getattr(args, "json", False):
        out.write(json.dumps({"curves": [_curve_json(t) for t in curves]}, indent=2) + "\n")
        return 0
    out.write("Theorem 4.2.1: ramping from C0 to C under loss allowance f takes >= F^-1(C) x (R + beta_s)\n"
              "with F(0) = C0, F(k) = F(k-1) + f(F(k-1))/beta_s; F^-1(C) = min k with F(k) >= C.\n\n")
    out.write("\n".join(_curve_text(t) for t in curves))
    if args.plot:
        out.write(f"plot: {args.plot}\n")
    return 0
