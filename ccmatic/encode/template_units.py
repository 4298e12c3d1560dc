"""Unit checks for templates, as constraints on the holes (thesis §4.1: the
generator "only search[es] for CCAs that pass unit checks").

A term ``?a * c_lo`` has unit bytes/second *when ?a ≠ 0*, and no unit when ?a = 0.
Every expression is analysed into alternatives ``(unit, guard)``; wherever two
alternatives with different units meet (a sum, a comparison, the branches of an if,
min/max, an assignment to ``rate``), the conjunction of their guards is forbidden.
The resulting formulas over the hole variables go into the CEGIS generator before
the search starts.  (A candidate that still fails to type-check is rejected and
blocked by the CEGIS loop itself.)
"""

from __future__ import annotations

import ast
from itertools import pairwise

import z3

from ccmatic.core.quantities import OBSERVATIONS, OUTPUTS
from ccmatic.core.units import BYTES, SECONDS, Unit, div_units, mul_units
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.source import HOLE_PREFIX

Alts = list[tuple[Unit | None, z3.BoolRef]]
PARAM_UNITS = {"MSS": BYTES, "R": SECONDS, "D": SECONDS, "T": SECONDS}


def hole_var(name: str) -> z3.ArithRef:
    return z3.Real(HOLE_PREFIX + name)


class _Analyzer:
    def __init__(self, prog: CcaProgram) -> None:
        self.prog = prog
        self.constraints: list[z3.BoolRef] = []
        self.env: dict[str, Alts] = {}
        self.state_units = {s.name: s.unit for s in prog.states}

    # -- helpers -----------------------------------------------------------------
    def conflict(self, a: Alts, b: Alts) -> None:
        for ua, ga in a:
            for ub, gb in b:
                if ua is not None and ub is not None and ua != ub:
                    self.constraints.append(z3.Not(z3.And(ga, gb)))

    @staticmethod
    def merge(*groups: Alts) -> Alts:
        out: dict[Unit | None, list[z3.BoolRef]] = {}
        for g in groups:
            for u, c in g:
                out.setdefault(u, []).append(c)
        return [(u, z3.Or(*cs) if len(cs) > 1 else cs[0]) for u, cs in out.items()]

    def hole_expr(self, node: ast.AST) -> z3.ArithRef | None:
        """The node as a linear term over holes and numbers, if it is one."""
        if isinstance(node, ast.Name) and node.id.startswith(HOLE_PREFIX):
            return hole_var(node.id[len(HOLE_PREFIX):])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            h = self.hole_expr(node.operand)
            return -h if h is not None else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            h = self.hole_expr(node.left)
            if h is not None and isinstance(node.right, ast.Constant) and isinstance(node.right.value, (int, float)):
                v = node.right.value
                return h * v if isinstance(node.op, ast.Mult) else (h / v if v else None)
            h = self.hole_expr(node.right)
            if h is not None and isinstance(node.op, ast.Mult) and isinstance(node.left, ast.Constant) \
                    and isinstance(node.left.value, (int, float)):
                return h * node.left.value
        return None

    # -- expressions ---------------------------------------------------------------
    def alts(self, node: ast.AST) -> Alts:
        T = z3.BoolVal(True)
        if isinstance(node, ast.Constant):
            return [(None, T)]
        if isinstance(node, ast.Name):
            n = node.id
            if n.startswith(HOLE_PREFIX):
                return [(None, T)]
            if n in self.env:
                return self.env[n]
            if n in PARAM_UNITS:
                return [(PARAM_UNITS[n], T)]
            if n in OBSERVATIONS:
                return [(OBSERVATIONS[n].unit, T)]
            if n in OUTPUTS:
                return [(OUTPUTS[n], T)]
            if n in self.state_units:
                return [(self.state_units[n], T)]
            return [(None, T)]
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            n = node.value.id
            if n in OBSERVATIONS:
                return [(OBSERVATIONS[n].unit, T)]
            if n in OUTPUTS:
                return [(OUTPUTS[n], T)]
            return [(self.state_units.get(n), T)]
        if isinstance(node, ast.UnaryOp):
            a = self.alts(node.operand)
            return [(None, T)] if isinstance(node.op, ast.Not) else a
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, (ast.Add, ast.Sub)):
                a, b = self.alts(node.left), self.alts(node.right)
                self.conflict(a, b)
                return self.merge(a, b)
            if isinstance(node.op, ast.Mult):
                ha, hb = self.hole_expr(node.left), self.hole_expr(node.right)
                if ha is not None and hb is None:
                    return [(u, z3.And(g, ha != 0)) for u, g in self.alts(node.right)]
                if hb is not None and ha is None:
                    return [(u, z3.And(g, hb != 0)) for u, g in self.alts(node.left)]
                return [(mul_units(ua, ub), z3.And(ga, gb)) for ua, ga in self.alts(node.left) for ub, gb in self.alts(node.right)]
            if isinstance(node.op, ast.Div):
                return [(div_units(ua, ub), z3.And(ga, gb)) for ua, ga in self.alts(node.left) for ub, gb in self.alts(node.right)]
            return [(None, T)]
        if isinstance(node, ast.Compare):
            parts = [self.alts(node.left)] + [self.alts(c) for c in node.comparators]
            for x, y in pairwise(parts):
                self.conflict(x, y)
            return [(None, T)]
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.alts(v)
            return [(None, T)]
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
            return self.merge(*groups) if groups else [(None, T)]
        return [(None, T)]  # comprehensions etc.: left to the per-candidate check

    # -- statements ------------------------------------------------------------------
    def run(self, stmts: list[ast.stmt]) -> None:
        for st in stmts:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                name = st.targets[0].id
                a = self.alts(st.value)
                want = OUTPUTS.get(name) or self.state_units.get(name)
                if want is not None:
                    self.conflict(a, [(want, z3.BoolVal(True))])
                else:
                    self.env[name] = self.merge(self.env.get(name, []), a) if name in self.env else a
            elif isinstance(st, ast.If):
                self.alts(st.test)
                self.run(st.body)
                self.run(st.orelse)


def unit_constraints(prog: CcaProgram) -> list[z3.BoolRef]:
    """Formulas over the hole variables that exclude every ill-typed candidate."""
    an = _Analyzer(prog)
    an.run(prog.body)
    out = []
    for c in an.constraints:
        s = z3.simplify(c)
        if not z3.is_true(s):
            out.append(s)
    return out

