"""Concrete CCA files from a template and a candidate's hole values (synthesized
solutions are valid input of ``verify``), and which holes weight trace terms
(§4.2.1): both work on the template's checked form (:mod:`ccmatic.spec.template_tree`)."""

from __future__ import annotations

from fractions import Fraction

from ccmatic.spec import template_tree as tt
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.step import VISIBLE_PARAMS

Candidate = dict[str, Fraction]


def variable_term_holes(prog: CcaProgram) -> list[str]:
    """Holes that weight a trace-dependent term (a belief, an observation, ...).
    Holes weighting only constants (MSS/R, R) are 'constant-term' holes: a solution
    blocks all candidates that differ from it only there (§4.2.1).  Holes are listed
    in the order they are met, statement by statement, each read level by level."""
    out: list[str] = []
    for st in tt.template_of(prog).body:
        for node in tt.walk(st):
            if isinstance(node, tt.Bin) and node.op == "*":
                for side, other in ((node.a, node.b), (node.b, node.a)):
                    if isinstance(side, tt.Hole) and _trace_dependent(other) and side.name not in out:
                        out.append(side.name)
    return out


def _trace_dependent(e: tt.Expr | tt.Stmt) -> bool:
    """Whether a term reads anything but holes, numbers and fixed parameters (a
    call or a comprehension counts as reading: its value is left to the check)."""
    return any(isinstance(n, (tt.Local, tt.Call, tt.Comp)) or (isinstance(n, tt.Read) and (
        n.index is not None or n.name not in VISIBLE_PARAMS)) for n in tt.walk(e))


def _fmt_frac(v: Fraction) -> tt.Expr:
    if v < 0:
        return tt.Unary("-", _fmt_frac(-v))
    if v.denominator == 1:
        return tt.Const(v.numerator)
    return tt.Bin("/", tt.Const(v.numerator), tt.Const(v.denominator))


def _val(n: tt.Expr) -> Fraction | None:
    if isinstance(n, tt.Const) and not isinstance(n.value, bool):
        return Fraction(repr(n.value)) if isinstance(n.value, float) else Fraction(n.value)
    if isinstance(n, tt.Unary) and n.op == "-":
        v = _val(n.x)
        return -v if v is not None else None
    if isinstance(n, tt.Bin) and n.op == "/":
        a, b = _val(n.a), _val(n.b)
        if a is not None and b:
            return a / b
    return None


def _fill(e: tt.Expr, values: Candidate) -> tt.Expr:
    """Replace holes by values and drop zero terms: 0 * x -> 0, x + 0 -> x, 1 * x -> x."""
    if isinstance(e, tt.Hole):
        return _fmt_frac(values[e.name])
    if isinstance(e, tt.Bin):
        return _simplify(tt.Bin(e.op, _fill(e.a, values), _fill(e.b, values), e.loc))
    if isinstance(e, tt.Read):
        return e if e.index is None else tt.Read(e.name, _fill(e.index, values), e.unit)
    if isinstance(e, tt.Unary):
        return tt.Unary(e.op, _fill(e.x, values))
    if isinstance(e, tt.Compare):
        return tt.Compare(e.ops, tuple(_fill(x, values) for x in e.items))
    if isinstance(e, tt.BoolOp):
        return tt.BoolOp(e.op, tuple(_fill(x, values) for x in e.items))
    if isinstance(e, tt.IfExp):
        return tt.IfExp(_fill(e.c, values), _fill(e.a, values), _fill(e.b, values))
    if isinstance(e, tt.Call):
        return tt.Call(e.fn, tuple(_fill(x, values) for x in e.args))
    if isinstance(e, tt.Comp):
        loops = tuple((v, _fill(it, values), tuple(_fill(i, values) for i in ifs)) for v, it, ifs in e.loops)
        return tt.Comp(_fill(e.elt, values), loops, e.listed)
    return e


def _simplify(node: tt.Bin) -> tt.Expr:
    lv, rv = _val(node.a), _val(node.b)
    if node.op == "*":
        if lv == 0 or rv == 0:
            return tt.Const(0)
        if lv == 1:
            return node.b
        if rv == 1:
            return node.a
        if lv == -1:
            return tt.Unary("-", node.b)
    if node.op == "/" and lv == 0:
        return tt.Const(0)
    if node.op == "+":
        if lv == 0:
            return node.b
        if rv == 0:
            return node.a
        neg = _negated(node.b)
        if neg is not None:
            return tt.Bin("-", node.a, neg)
    if node.op == "-":
        if rv == 0:
            return node.a
        if lv == 0:
            return tt.Unary("-", node.b)
    return node


def _negated(n: tt.Expr) -> tt.Expr | None:
    """For a term written with a leading minus (-x, -2 * x, -x / R), the term without it."""
    if isinstance(n, tt.Unary) and n.op == "-":
        return n.x
    if isinstance(n, tt.Bin) and n.op in ("*", "/"):
        inner = _negated(n.a)
        if inner is not None:
            return tt.Bin(n.op, inner, n.b)
    return None


def _fill_stmt(st: tt.Stmt, values: Candidate) -> tt.Stmt:
    if isinstance(st, tt.Assign):
        return tt.Assign(st.name, _fill(st.value, values), st.unit)
    if isinstance(st, tt.If):
        return tt.If(_fill(st.cond, values), tuple(_fill_stmt(s, values) for s in st.then),
                     tuple(_fill_stmt(s, values) for s in st.orelse))
    return st


def fill_template(prog: CcaProgram, values: Candidate, header: str) -> str:
    """A concrete CCA file (valid input of ``ccmatic verify``) for a candidate."""
    tree = tt.template_of(prog)
    lines = [f"# {line}" for line in header.splitlines()]
    lines.extend(tree.decls)
    lines.extend(tt.to_source(_fill_stmt(st, values)) for st in tree.body)
    return "\n".join(lines) + "\n"
