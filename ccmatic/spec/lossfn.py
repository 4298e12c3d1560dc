"""Loss allowances f(C) for Theorem 4.2.1: user text checked with :mod:`ast` against a
small whitelist, built into a sympy expression by this module (user text is never
evaluated).  sympy is imported lazily: it is large, and only ``tradeoff`` needs it."""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from fractions import Fraction
from functools import cache
from typing import TYPE_CHECKING, Any

from ccmatic.core.errors import Loc, SpecError

if TYPE_CHECKING:
    import sympy

FUNCTIONS = ("log", "sqrt", "exp")
MAX_STEPS = 10**6
MAX_BITS = 4096
_MAX_LEN = 500
_MAX_EXPONENT = 1000
_MAX_CONST_BITS = 100_000
HINT = "f(C) may use the rate C, numbers, + - * / ** and log, sqrt, exp; e.g. 'C', '2', 'sqrt(C)'"
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
    def fail(col: int, message: str, hint: str | None = HINT) -> SpecError:
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

    def err(self, node: ast.expr, message: str, hint: str | None = HINT, byte: int | None = None) -> SpecError:
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
            hint = "use ** for powers" if sym == "^" else HINT
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

def normalize(f: Any) -> Any:
    """Check ``f`` (a sympy expression in C) and use the canonical positive symbol C."""
    import sympy as sp

    if isinstance(f, str):
        raise TypeError("give a sympy expression; parse user text with parse_loss")
    f = sp.sympify(f, strict=True)  # strict: never parse strings
    others = sorted(s.name for s in f.free_symbols if s.name != "C")
    if others:
        raise SpecError(None, f"f may only use the variable C, not {', '.join(others)}", HINT)
    f = f.xreplace({s: rate_symbol() for s in f.free_symbols})
    f = f.xreplace({x: sp.nsimplify(x, rational=True) for x in f.atoms(sp.Float)})
    if f.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise SpecError(None, f"f(C) = {f} is undefined", HINT)
    return f




def undefined_reason(f: Any, x: Fraction, fallback: str) -> str:
    """Why ``f`` is undefined at C = ``x``, in the user's terms: a logarithm of a
    number that is not positive, a root of a negative number, or a division by zero
    (naming a ``log(1) = 0``)."""
    import sympy as sp

    C = rate_symbol()
    at = sp.Rational(x.numerator, x.denominator)
    zero_logs = []
    for lg in sorted(f.atoms(sp.log), key=str):
        arg = lg.args[0].subs(C, at)
        if arg.is_nonpositive:
            return f"{lg} = log({arg}) is undefined"
        if arg == 1:
            zero_logs.append(f"{lg} = log(1) = 0")
    for pw in sorted(f.atoms(sp.Pow), key=str):
        base = pw.base.subs(C, at)
        if not pw.exp.is_integer and base.is_negative:
            return f"{pw} takes a root of {base}"
    den = sp.fraction(sp.together(f))[1]
    if den.subs(C, at) == 0:
        return "a division by zero" + (f": {zero_logs[0]}" if zero_logs else "")
    return fallback
