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

sympy is imported lazily: it is large, and only this command needs it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from typing import TYPE_CHECKING, Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.spec.lossfn import (
    HINT,
    MAX_BITS,
    MAX_STEPS,
    normalize,
    rate_symbol,
    step_symbol,
    undefined_reason,
)

if TYPE_CHECKING:
    import sympy

Num = Fraction | float
"""A value of F: exact while possible, float otherwise (see :attr:`Reach.exact`)."""

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
            raise SpecError(None, f"{f} is not a real number", HINT) from None
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
    raise SpecError(None, f"cannot evaluate {f} numerically", HINT)


def fmt_num(x: Num) -> str:
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
                raise SpecError(None, f"F({j + 1}) is undefined: f(F({j})) = f({fmt_num(x)}) is undefined ({e})",
                                HINT) from None
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
                    raise SpecError(None, f"F^-1({fmt_num(c)}) is more than {self.max_steps} RTTs (iteration cap)",
                                    "use a smaller C, a larger loss allowance f or a smaller beta_s")
                try:
                    fx = self._f_at(x)
                except _Undefined as e:
                    stopped = f"f(F({k})) = f({fmt_num(x)}) is undefined ({e}), so F never reaches C"
                    break
                if not fx > 0:
                    stopped = (f"f(F({k})) = {fmt_num(fx)} <= 0 at F({k}) = {fmt_num(x)}: F stops increasing, "
                               "so it never reaches C")
                    break
                nx = self._next(x, fx)
                if nx == x:
                    stopped = (f"the increment f(F({k}))/beta_s = {fmt_num(fx / self.beta_s)} is below float "
                               f"precision at F({k}) = {fmt_num(x)}")
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

    f = normalize(f)
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


def _example_C0(t: Tradeoff) -> str:
    """``, e.g. --C0 X`` for a nearby X where f is defined and positive (or nothing)."""
    for x in (2 * t.C0, t.C0 + 1, 10 * t.C0, t.C0 + 10):
        try:
            if t._f_at(x) > 0:
                return f", e.g. --C0 {x}"
        except _Undefined:
            continue
    return ""


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
    f = normalize(f)
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
    try:
        t._f_at(C0)
    except _Undefined as e:  # F never leaves C0: one line, not a row per C
        raise SpecError(Loc("--C0"), f"f(C) = {t.loss} is undefined at C0 = {C0} ({undefined_reason(f, C0, str(e))}), "
                        "so F never leaves C0", "give a C0 where f(C) is defined" + _example_C0(t)) from None
    t.points = tuple(t.reach_many(list(Cs) if Cs is not None else default_grid(C0, top)))
    return t
