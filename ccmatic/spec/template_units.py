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
read is the one elaboration gives it (:func:`ccmatic.spec.step.read_elaborator`).
(A candidate that still fails to type-check is rejected and blocked by the CEGIS
loop itself.)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

from ccmatic.core.errors import Loc
from ccmatic.core.quantities import OUTPUTS
from ccmatic.core.units import Unit, div_units, mul_units
from ccmatic.spec import ir
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.source import HOLE_PREFIX
from ccmatic.spec.step import read_elaborator

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


def _number(node: ast.AST) -> Fraction | None:
    """The value of a numeric literal (as written: 0.1 is 1/10)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return Fraction(repr(node.value)) if isinstance(node.value, float) else Fraction(node.value)
    return None


class _Analyzer:
    def __init__(self, prog: CcaProgram) -> None:
        self.prog = prog
        self.reads = read_elaborator(prog)
        self.forbidden: list[ir.Expr] = []
        self.built: list[ir.Expr] = []
        self.env: dict[str, Alts] = {}
        self.state_units = {s.name: s.unit for s in prog.states}

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

    def loc(self, node: ast.AST) -> Loc:
        return self.prog.source.node_loc(node)

    def hole_term(self, node: ast.AST) -> ir.Expr | None:
        """The node as a linear term over holes and numbers, if it is one."""
        if isinstance(node, ast.Name) and node.id.startswith(HOLE_PREFIX):
            return self.make(ir.Hole(node.id[len(HOLE_PREFIX):]))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            h = self.hole_term(node.operand)
            return self.make(ir.Neg(h)) if h is not None else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            h, v = self.hole_term(node.left), _number(node.right)
            if h is not None and v is not None:
                if isinstance(node.op, ast.Mult):
                    return self.make(ir.Arith("mul", h, ir.Num(v), self.loc(node)))
                return self.make(ir.Arith("div", h, ir.Num(v), self.loc(node))) if v else None
            h, v = self.hole_term(node.right), _number(node.left)
            if h is not None and isinstance(node.op, ast.Mult) and v is not None:
                return self.make(ir.Arith("mul", h, ir.Num(v), self.loc(node)))
        return None

    def nonzero(self, h: ir.Expr, alts: Alts) -> Alts:
        return [(u, self.both(g, self.make(ir.Cmp("ne", h, ir.Num(Fraction(0)))))) for u, g in alts]

    # -- expressions ---------------------------------------------------------------
    def read(self, node: ast.Name | ast.Subscript) -> Alts:
        """A name or indexed read: a temporary's alternatives, else its elaborated unit."""
        if isinstance(node, ast.Name) and node.id.startswith(HOLE_PREFIX):
            return [(None, TRUE)]
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.env[node.id]
        return [(self.reads.expr(node).unit, TRUE)]

    def alts(self, node: ast.AST) -> Alts:
        if isinstance(node, (ast.Name, ast.Subscript)):
            return self.read(node)
        if isinstance(node, ast.UnaryOp):
            a = self.alts(node.operand)
            return [(None, TRUE)] if isinstance(node.op, ast.Not) else a
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Compare):
            parts = [self.alts(node.left)] + [self.alts(c) for c in node.comparators]
            for x, y in pairwise(parts):
                self.conflict(x, y)
            return [(None, TRUE)]
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.alts(v)
            return [(None, TRUE)]
        if isinstance(node, ast.IfExp):
            self.alts(node.test)
            a, b = self.alts(node.body), self.alts(node.orelse)
            self.conflict(a, b)
            return self.merge(a, b)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max", "abs"):
            groups = [self.alts(a) for a in node.args]
            for i in range(len(groups)):
                for j in range(i + 1, len(groups)):
                    self.conflict(groups[i], groups[j])
            return self.merge(*groups) if groups else [(None, TRUE)]
        return [(None, TRUE)]  # constants; comprehensions etc.: left to the per-candidate check

    def binop(self, node: ast.BinOp) -> Alts:
        if isinstance(node.op, (ast.Add, ast.Sub)):
            a, b = self.alts(node.left), self.alts(node.right)
            self.conflict(a, b)
            return self.merge(a, b)
        if isinstance(node.op, ast.Mult):
            ha, hb = self.hole_term(node.left), self.hole_term(node.right)
            if ha is not None and hb is None:
                return self.nonzero(ha, self.alts(node.right))
            if hb is not None and ha is None:
                return self.nonzero(hb, self.alts(node.left))
            return [(mul_units(ua, ub), self.both(ga, gb)) for ua, ga in self.alts(node.left) for ub, gb in self.alts(node.right)]
        if isinstance(node.op, ast.Div):
            return [(div_units(ua, ub), self.both(ga, gb)) for ua, ga in self.alts(node.left) for ub, gb in self.alts(node.right)]
        return [(None, TRUE)]

    # -- statements ------------------------------------------------------------------
    def run(self, stmts: list[ast.stmt]) -> None:
        for st in stmts:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                name = st.targets[0].id
                a = self.alts(st.value)
                want = OUTPUTS.get(name) or self.state_units.get(name)
                if want is not None:
                    self.conflict(a, [(want, TRUE)])
                else:
                    self.env[name] = self.merge(self.env.get(name, []), a) if name in self.env else a
            elif isinstance(st, ast.If):
                self.alts(st.test)
                self.run(st.body)
                self.run(st.orelse)


def unit_conflicts(prog: CcaProgram) -> UnitConflicts:
    """The template's unit conflicts (:class:`UnitConflicts`)."""
    an = _Analyzer(prog)
    an.run(prog.body)
    return UnitConflicts(tuple(an.forbidden), tuple(an.built))
