"""The checked tree (:mod:`ccmatic.spec.ir`) as text, in the spec language's own
syntax, for explanations: ``S[9] - S[0] >= 4/5``.

Comprehensions are unrolled and constants folded in the tree, so the text shows one
instance with its numbers (``queue[3] <= 4 + 3 * MSS``), not the formula as
written; long sums and conjunctions are shortened to their first and last items.
"""

from __future__ import annotations

from fractions import Fraction

from ccmatic.spec import ir

#: items of a sum, min, max, and or or shown in full; longer ones show the first and the last
SHOWN_ITEMS = 4
#: at most this many characters of one rendered formula
MAX_CHARS = 240

_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}
# binding strength: a child binding more weakly than its parent needs parentheses
_PREC = {"ite": 1, "implies": 2, "or": 3, "and": 4, "not": 5, "cmp": 6, "add": 7, "sub": 7,
         "mul": 8, "div": 8, "neg": 9, "pow": 10, "atom": 11}


def number(x: Fraction) -> str:
    """A rational as a short decimal when it has one (``0.78``), else ``p/q``."""
    if x.denominator == 1:
        return str(x.numerator)
    d = x.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    if d == 1:
        s = f"{float(x):.6f}".rstrip("0")
        if Fraction(s) == x:
            return s
    return f"{x.numerator}/{x.denominator}"


def render(e: ir.Expr, flows: bool = True) -> str:
    """An expression as text (at most :data:`MAX_CHARS` characters); without
    ``flows``, reads of a single flow's quantities show no flow index."""
    s = _Renderer(flows).render(e)[0]
    return s if len(s) <= MAX_CHARS else s[:MAX_CHARS - 1] + "…"


class _Renderer:
    def __init__(self, flows: bool) -> None:
        self.flows = flows

    def wrap(self, child: ir.Expr, prec: int, strict: bool = False) -> str:
        s, p = self.render(child)
        return f"({s})" if p < prec or (strict and p == prec) else s

    def items(self, items: tuple[ir.Expr, ...], sep: str, prec: int) -> str:
        if len(items) > SHOWN_ITEMS:  # the first and the last only (a comprehension may unroll to thousands)
            return sep.join([self.wrap(items[0], prec), f"... ({len(items)} items)", self.wrap(items[-1], prec)])
        return sep.join(self.wrap(x, prec) for x in items)

    def render(self, e: ir.Expr) -> tuple[str, int]:
        """The text and its binding strength."""
        leaf = self.leaf(e)
        return leaf if leaf is not None else self.operator(e)

    def leaf(self, e: ir.Expr) -> tuple[str, int] | None:
        atom = _PREC["atom"]
        if isinstance(e, ir.Num):
            return number(e.value), atom if e.value >= 0 else _PREC["neg"]
        if isinstance(e, ir.Bool):
            return ("True" if e.value else "False"), atom
        if isinstance(e, ir.At):
            idx = f"{e.step}" if e.flow is None or not self.flows else f"{e.flow}, {e.step}"
            return f"{e.name}[{idx}]", atom
        if isinstance(e, ir.Obs):
            return (e.name if e.lag == 0 else f"{e.name}[t - {e.lag}]"), atom
        if isinstance(e, ir.Param | ir.Local):
            return e.name, atom
        if isinstance(e, ir.Hole):
            return f"?{e.name}", atom
        return None

    def operator(self, e: ir.Expr) -> tuple[str, int]:
        if isinstance(e, ir.Neg | ir.Not):
            p = _PREC["neg" if isinstance(e, ir.Neg) else "not"]
            return ("-" if isinstance(e, ir.Neg) else "not ") + self.wrap(e.x, p), p
        if isinstance(e, ir.Arith):
            p = _PREC[e.op]
            left = self.wrap(e.a, p + 1 if e.op == "pow" else p)
            return f"{left} {_ARITH[e.op]} {self.wrap(e.b, p, strict=e.op in ('sub', 'div'))}", p
        if isinstance(e, ir.Cmp | ir.Implies):
            p = _PREC["cmp" if isinstance(e, ir.Cmp) else "implies"]
            op = _CMP[e.op] if isinstance(e, ir.Cmp) else "=>"
            return f"{self.wrap(e.a, p, True)} {op} {self.wrap(e.b, p, True)}", p
        if isinstance(e, ir.Logic):
            p = _PREC[e.op]
            return self.items(e.items, f" {e.op} ", p + 1), p
        if isinstance(e, ir.Ite):
            p = _PREC["ite"]
            return f"{self.wrap(e.a, p, True)} if {self.wrap(e.c, p, True)} else {self.wrap(e.b, p)}", p
        if isinstance(e, ir.Reduce):
            return f"{e.op}({self.items(e.items, ', ', 0)})", _PREC["atom"]
        assert isinstance(e, ir.Choose)
        return f"choose({self.items(e.options, ', ', 0)})", _PREC["atom"]
