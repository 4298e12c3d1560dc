"""Concrete CCA files from a template and a candidate's hole values (synthesized
solutions are valid input of ``verify``), and which holes weight trace terms
(§4.2.1): both read the template's parsed text, which only the spec layer does."""

from __future__ import annotations

import ast
from fractions import Fraction

from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.source import HOLE_PREFIX
from ccmatic.spec.step import VISIBLE_PARAMS

Candidate = dict[str, Fraction]


def variable_term_holes(prog: CcaProgram) -> list[str]:
    """Holes that weight a trace-dependent term (a belief, an observation, ...).
    Holes weighting only constants (MSS/R, R) are 'constant-term' holes: a solution
    blocks all candidates that differ from it only there (§4.2.1)."""
    const_names = set(VISIBLE_PARAMS)
    out: list[str] = []

    def trace_dependent(node: ast.AST) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and not n.id.startswith(HOLE_PREFIX) and n.id not in const_names:
                return True
            if isinstance(n, ast.Subscript):
                return True
        return False

    for st in prog.body:
        for node in ast.walk(st):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                for side, other in ((node.left, node.right), (node.right, node.left)):
                    if isinstance(side, ast.Name) and side.id.startswith(HOLE_PREFIX) and trace_dependent(other):
                        h = side.id[len(HOLE_PREFIX):]
                        if h not in out:
                            out.append(h)
    return out


def _fmt_frac(v: Fraction) -> ast.expr:
    if v < 0:
        return ast.UnaryOp(ast.USub(), _fmt_frac(-v))
    if v.denominator == 1:
        return ast.Constant(v.numerator)
    return ast.BinOp(ast.Constant(v.numerator), ast.Div(), ast.Constant(v.denominator))


class _Fill(ast.NodeTransformer):
    """Replace holes by values and drop zero terms: 0 * x -> 0, x + 0 -> x, 1 * x -> x."""

    def __init__(self, values: Candidate) -> None:
        self.values = values

    @staticmethod
    def _val(n: ast.AST) -> Fraction | None:
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            return Fraction(repr(n.value)) if isinstance(n.value, float) else Fraction(n.value)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            v = _Fill._val(n.operand)
            return -v if v is not None else None
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
            a, b = _Fill._val(n.left), _Fill._val(n.right)
            if a is not None and b:
                return a / b
        return None

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id.startswith(HOLE_PREFIX):
            return _fmt_frac(self.values[node.id[len(HOLE_PREFIX):]])
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        lv, rv = self._val(node.left), self._val(node.right)
        if isinstance(node.op, ast.Mult):
            if lv == 0 or rv == 0:
                return ast.Constant(0)
            if lv == 1:
                return node.right
            if rv == 1:
                return node.left
            if lv == -1:
                return ast.UnaryOp(ast.USub(), node.right)
        if isinstance(node.op, ast.Div) and lv == 0:
            return ast.Constant(0)
        if isinstance(node.op, ast.Add):
            if lv == 0:
                return node.right
            if rv == 0:
                return node.left
            neg = _negated(node.right)
            if neg is not None:
                return ast.BinOp(node.left, ast.Sub(), neg)
        if isinstance(node.op, ast.Sub):
            if rv == 0:
                return node.left
            if lv == 0:
                return ast.UnaryOp(ast.USub(), node.right)
        return node


def _negated(n: ast.AST) -> ast.expr | None:
    """For a term written with a leading minus (-x, -2 * x, -x / R), the term without it."""
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        return n.operand
    if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mult, ast.Div)):
        inner = _negated(n.left)
        if inner is not None:
            return ast.BinOp(inner, n.op, n.right)
    return None


def fill_template(prog: CcaProgram, values: Candidate, header: str) -> str:
    """A concrete CCA file (valid input of ``ccmatic verify``) for a candidate."""
    body = [_Fill(values).visit(ast.parse(ast.unparse(st))) for st in prog.body]
    lines = [f"# {line}" for line in header.splitlines()]
    for s in prog.states:
        lines.append(ast.unparse(s.node))
    for mod in body:
        lines.append(ast.unparse(ast.fix_missing_locations(mod)))
    return "\n".join(lines) + "\n"
