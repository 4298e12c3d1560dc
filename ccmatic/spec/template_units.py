"""Unit checks for templates, as conditions on the holes (thesis §4.1: the
generator "only search[es] for CCAs that pass unit checks").

A term ``?a * c_lo`` has unit bytes/second *when ?a ≠ 0*, and no unit when ?a = 0.
Every expression is analysed into alternatives ``(unit, guard)``; wherever two
alternatives with different units meet (a sum, a comparison, the branches of an if,
min/max, an assignment to ``rate``), the conjunction of their guards is forbidden.
Guards are checked-tree conditions (:mod:`ccmatic.spec.ir`) over :class:`~ccmatic.spec.ir.Hole`
leaves only, so they mean what every other condition means
(:mod:`ccmatic.semantics.evaluate`); :mod:`ccmatic.encode.template_units` turns
them into formulas for the CEGIS generator.  The unit of every name and indexed
read is the one the step checker gives it, recorded in the template's checked form
(:mod:`ccmatic.spec.template_tree`), which this analysis walks.
(A candidate that still fails to type-check is rejected and blocked by the CEGIS
loop itself.)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

from ccmatic.core.errors import Loc
from ccmatic.core.units import Unit, div_units, mul_units
from ccmatic.spec import ir
from ccmatic.spec import template_tree as tt
from ccmatic.spec.cca import CcaProgram

Alts = list[tuple[Unit | None, ir.Expr]]
TRUE = ir.Bool(True)


@dataclass(frozen=True)
class UnitConflicts:
    """``conflicts``: conditions over the holes, each true of a candidate only if it
    is ill-typed (two different units meet), in the order the program meets them;
    ``built``: every condition and hole term the analysis built, in the order it
    built them (children first), so that a solver's terms can be made in the same
    order (the generator's search, hence which solution is found first, follows
    the order its terms were created in)."""

    conflicts: tuple[ir.Expr, ...]
    built: tuple[ir.Expr, ...]


def _number(node: tt.Expr) -> Fraction | None:
    """The value of a numeric literal (as written: 0.1 is 1/10)."""
    if isinstance(node, tt.Const):
        return Fraction(repr(node.value)) if isinstance(node.value, float) else Fraction(node.value)
    return None


class _Analyzer:
    def __init__(self) -> None:
        self.forbidden: list[ir.Expr] = []
        self.built: list[ir.Expr] = []
        self.env: dict[str, Alts] = {}

    # -- helpers -----------------------------------------------------------------
    def make(self, e: ir.Expr) -> ir.Expr:
        self.built.append(e)
        return e

    def both(self, a: ir.Expr, b: ir.Expr) -> ir.Expr:
        return self.make(ir.Logic("and", (a, b)))

    def conflict(self, a: Alts, b: Alts) -> None:
        for ua, ga in a:
            for ub, gb in b:
                if ua is not None and ub is not None and ua != ub:
                    self.forbidden.append(self.both(ga, gb))

    def merge(self, *groups: Alts) -> Alts:
        out: dict[Unit | None, list[ir.Expr]] = {}
        for g in groups:
            for u, c in g:
                out.setdefault(u, []).append(c)
        return [(u, self.make(ir.Logic("or", tuple(cs))) if len(cs) > 1 else cs[0]) for u, cs in out.items()]

    def hole_term(self, node: tt.Expr) -> ir.Expr | None:
        """The node as a linear term over holes and numbers, if it is one."""
        if isinstance(node, tt.Hole):
            return self.make(ir.Hole(node.name))
        if isinstance(node, tt.Unary) and node.op == "-":
            h = self.hole_term(node.x)
            return self.make(ir.Neg(h)) if h is not None else None
        if isinstance(node, tt.Bin) and node.op in ("*", "/"):
            loc = node.loc or Loc("")
            h, v = self.hole_term(node.a), _number(node.b)
            if h is not None and v is not None:
                if node.op == "*":
                    return self.make(ir.Arith("mul", h, ir.Num(v), loc))
                return self.make(ir.Arith("div", h, ir.Num(v), loc)) if v else None
            h, v = self.hole_term(node.b), _number(node.a)
            if h is not None and node.op == "*" and v is not None:
                return self.make(ir.Arith("mul", h, ir.Num(v), loc))
        return None

    def nonzero(self, h: ir.Expr, alts: Alts) -> Alts:
        return [(u, self.both(g, self.make(ir.Cmp("ne", h, ir.Num(Fraction(0)))))) for u, g in alts]

    # -- expressions ---------------------------------------------------------------
    def alts(self, node: tt.Expr) -> Alts:
        if isinstance(node, tt.Read):  # its unit as the step checker resolves it
            return [(node.unit, TRUE)]
        if isinstance(node, tt.Local):
            return self.env[node.name]
        if isinstance(node, tt.Unary):
            a = self.alts(node.x)
            return [(None, TRUE)] if node.op == "not" else a
        if isinstance(node, tt.Bin):
            return self.binop(node)
        if isinstance(node, tt.Compare):
            parts = [self.alts(c) for c in node.items]
            for x, y in pairwise(parts):
                self.conflict(x, y)
            return [(None, TRUE)]
        if isinstance(node, tt.BoolOp):
            for v in node.items:
                self.alts(v)
            return [(None, TRUE)]
        if isinstance(node, tt.IfExp):
            self.alts(node.c)
            a, b = self.alts(node.a), self.alts(node.b)
            self.conflict(a, b)
            return self.merge(a, b)
        if isinstance(node, tt.Call) and node.fn in tt.UNIT_CALLS:
            groups = [self.alts(a) for a in node.args]
            for i in range(len(groups)):
                for j in range(i + 1, len(groups)):
                    self.conflict(groups[i], groups[j])
            return self.merge(*groups) if groups else [(None, TRUE)]
        return [(None, TRUE)]  # holes, constants; comprehensions etc.: left to the per-candidate check

    def binop(self, node: tt.Bin) -> Alts:
        if node.op in ("+", "-"):
            a, b = self.alts(node.a), self.alts(node.b)
            self.conflict(a, b)
            return self.merge(a, b)
        if node.op == "*":
            ha, hb = self.hole_term(node.a), self.hole_term(node.b)
            if ha is not None and hb is None:
                return self.nonzero(ha, self.alts(node.b))
            if hb is not None and ha is None:
                return self.nonzero(hb, self.alts(node.a))
            return [(mul_units(ua, ub), self.both(ga, gb)) for ua, ga in self.alts(node.a) for ub, gb in self.alts(node.b)]
        if node.op == "/":
            return [(div_units(ua, ub), self.both(ga, gb)) for ua, ga in self.alts(node.a) for ub, gb in self.alts(node.b)]
        return [(None, TRUE)]

    # -- statements ------------------------------------------------------------------
    def run(self, stmts: tuple[tt.Stmt, ...]) -> None:
        for st in stmts:
            if isinstance(st, tt.Assign):
                a = self.alts(st.value)
                if st.unit is not None:
                    self.conflict(a, [(st.unit, TRUE)])
                else:
                    self.env[st.name] = self.merge(self.env.get(st.name, []), a) if st.name in self.env else a
            elif isinstance(st, tt.If):
                self.alts(st.cond)
                self.run(st.then)
                self.run(st.orelse)


def unit_conflicts(prog: CcaProgram) -> UnitConflicts:
    """The template's unit conflicts (:class:`UnitConflicts`)."""
    an = _Analyzer()
    an.run(tt.template_of(prog).body)
    return UnitConflicts(tuple(an.forbidden), tuple(an.built))
