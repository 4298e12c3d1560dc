"""A template's checked form for synthesis (thesis §4.1-4.2), made once, on first use.

The checked tree (:mod:`ccmatic.spec.ir`) cannot serve here: it folds ``R`` into a
unitless number and ``x / R`` into ``x * 1``, and a symbolic template such as
``?a * c_lo + ?b * R`` has no one unit (it is well typed only if ``?a`` or ``?b``
is 0).  So a template's statements are kept as written (for its candidates to be
written back as CCA files, :mod:`ccmatic.spec.template_fill`), with every name and
indexed read resolved by the step checker (:func:`ccmatic.spec.step.read_elaborator`)
and carrying its unit, and holes left unit-polymorphic: the unit analysis
(:mod:`ccmatic.spec.template_units`) and hole filling work on this tree, not on
Python's syntax tree.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from ccmatic.core.errors import Loc
from ccmatic.core.quantities import OUTPUTS
from ccmatic.core.units import Unit
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.source import HOLE_PREFIX
from ccmatic.spec.step import Program, read_elaborator


@dataclass(frozen=True, eq=False)
class Const:
    """A literal as written (``0.5`` stays ``0.5``)."""

    value: int | float


@dataclass(frozen=True, eq=False)
class Hole:
    name: str


@dataclass(frozen=True, eq=False)
class Read:
    """A name (``index`` None) or an indexed read, with the unit the step checker
    gives it (None: a condition, a plain number, or not needed: inside a
    comprehension or an argument the unit analysis does not look into)."""

    name: str
    index: Expr | None
    unit: Unit | None


@dataclass(frozen=True, eq=False)
class Local:
    """A temporary (or boolean state variable) assigned earlier in the step."""

    name: str


@dataclass(frozen=True, eq=False)
class Unary:
    op: str  # "-", "+", "not"
    x: Expr


@dataclass(frozen=True, eq=False)
class Bin:
    op: str  # "+", "-", "*", "/", "**"
    a: Expr
    b: Expr
    loc: Loc | None = None  # where it is written (None: made by filling holes)


@dataclass(frozen=True, eq=False)
class Compare:
    """``items[0] ops[0] items[1] ops[1] ...`` (a chain)."""

    ops: tuple[str, ...]
    items: tuple[Expr, ...]


@dataclass(frozen=True, eq=False)
class BoolOp:
    op: str  # "and", "or"
    items: tuple[Expr, ...]


@dataclass(frozen=True, eq=False)
class IfExp:
    c: Expr
    a: Expr
    b: Expr


@dataclass(frozen=True, eq=False)
class Call:
    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, eq=False)
class Comp:
    """A comprehension, ``(elt for v in iter if ...)`` (``listed``: ``[...]``)."""

    elt: Expr
    loops: tuple[tuple[str, Expr, tuple[Expr, ...]], ...]
    listed: bool


Expr = Const | Hole | Read | Local | Unary | Bin | Compare | BoolOp | IfExp | Call | Comp


@dataclass(frozen=True, eq=False)
class Assign:
    """``unit``: the unit the target must have (rate, cwnd, a state variable with a
    unit); None for a temporary, whose unit is its value's."""

    name: str
    value: Expr
    unit: Unit | None


@dataclass(frozen=True, eq=False)
class If:
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True, eq=False)
class Pass:
    doc: str | None = None  # a docstring, or None: 'pass'


Stmt = Assign | If | Pass


@dataclass(frozen=True, eq=False)
class TemplateTree:
    """The state declarations (as written) and the statements of a template."""

    decls: tuple[str, ...]
    body: tuple[Stmt, ...]


# -- from parsed text (once per template) -----------------------------------------------------

_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.FloorDiv: "//", ast.Mod: "%"}
_UNARY = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not", ast.Invert: "~"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
#: operators under which the unit analysis looks at the operands' units
_UNIT_OPS = ("+", "-", "*", "/")
#: functions whose arguments' units the unit analysis compares
UNIT_CALLS = ("min", "max", "abs")


def template_of(prog: CcaProgram) -> TemplateTree:
    """A template's checked form, made on first use and kept with the loaded file
    (a loaded file is valid, so making it raises no input error: that is why it need
    not be made at load time, where a command that reads no template would pay for
    this module)."""
    if not prog.is_template:
        raise ValueError(f"{prog.name} is not a template")
    if prog._template is None:
        prog._template = template_tree(prog)
    return prog._template


def template_tree(prog: Program) -> TemplateTree:
    """The template's checked form (a loaded, valid CCA file's statements)."""
    b = _Builder(prog)
    return TemplateTree(tuple(ast.unparse(s.node) for s in prog.states), b.block(prog.body))


class _Builder:
    def __init__(self, prog: Program) -> None:
        self.reads = read_elaborator(prog)
        self.source = prog.source
        self.state_units = {s.name: s.unit for s in prog.states}
        self.temps: set[str] = set()

    def block(self, stmts: list[ast.stmt]) -> tuple[Stmt, ...]:
        return tuple(self.stmt(st) for st in stmts)

    def stmt(self, st: ast.stmt) -> Stmt:
        if isinstance(st, ast.Assign):
            target = st.targets[0]
            assert isinstance(target, ast.Name)
            value = self.expr(st.value, True)
            want = OUTPUTS.get(target.id) or self.state_units.get(target.id)
            if want is None:
                self.temps.add(target.id)
            return Assign(target.id, value, want)
        if isinstance(st, ast.If):
            cond = self.expr(st.test, True)
            return If(cond, self.block(st.body), self.block(st.orelse))
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
            return Pass(st.value.value)
        assert isinstance(st, ast.Pass), "a loaded CCA file has assignments, ifs and pass only"
        return Pass()

    def expr(self, node: ast.expr, typed: bool) -> Expr:
        """``typed``: the unit analysis looks here, so reads carry their units."""
        if isinstance(node, ast.Constant):
            assert isinstance(node.value, (int, float))
            return Const(node.value)
        if isinstance(node, ast.Name):
            if node.id.startswith(HOLE_PREFIX):
                return Hole(node.id[len(HOLE_PREFIX):])
            if node.id in self.temps:
                return Local(node.id)
            return Read(node.id, None, self.reads.expr(node).unit if typed else None)
        if isinstance(node, ast.Subscript):
            assert isinstance(node.value, ast.Name)
            return Read(node.value.id, self.expr(node.slice, False), self.reads.expr(node).unit if typed else None)
        if isinstance(node, ast.UnaryOp):
            return Unary(_UNARY[type(node.op)], self.expr(node.operand, typed))
        if isinstance(node, ast.BinOp):
            op = _BIN[type(node.op)]
            typed = typed and op in _UNIT_OPS
            return Bin(op, self.expr(node.left, typed), self.expr(node.right, typed), self.source.node_loc(node))
        if isinstance(node, ast.Compare):
            items = [node.left, *node.comparators]
            return Compare(tuple(_CMP[type(o)] for o in node.ops), tuple(self.expr(i, typed) for i in items))
        if isinstance(node, ast.BoolOp):
            return BoolOp("and" if isinstance(node.op, ast.And) else "or", tuple(self.expr(v, typed) for v in node.values))
        if isinstance(node, ast.IfExp):
            return IfExp(self.expr(node.test, typed), self.expr(node.body, typed), self.expr(node.orelse, typed))
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            typed = typed and node.func.id in UNIT_CALLS
            return Call(node.func.id, tuple(self.expr(a, typed) for a in node.args))
        assert isinstance(node, (ast.GeneratorExp, ast.ListComp)), "the elaborator accepts no other expression"
        loops = []
        for g in node.generators:
            assert isinstance(g.target, ast.Name)
            loops.append((g.target.id, self.expr(g.iter, False), tuple(self.expr(i, False) for i in g.ifs)))
        return Comp(self.expr(node.elt, False), tuple(loops), isinstance(node, ast.ListComp))


# -- walking and writing ---------------------------------------------------------------------

def children(n: Expr | Stmt) -> tuple[Expr | Stmt, ...]:
    """A node's parts, in the order they are written."""
    if isinstance(n, Assign):
        return (n.value,)
    if isinstance(n, If):
        return (n.cond, *n.then, *n.orelse)
    if isinstance(n, Read):
        return () if n.index is None else (n.index,)
    if isinstance(n, Unary):
        return (n.x,)
    if isinstance(n, Bin):
        return (n.a, n.b)
    if isinstance(n, (Compare, BoolOp)):
        return n.items
    if isinstance(n, IfExp):
        return (n.c, n.a, n.b)
    if isinstance(n, Call):
        return n.args
    if isinstance(n, Comp):
        return (n.elt, *(x for _, it, ifs in n.loops for x in (it, *ifs)))
    return ()


def walk(n: Expr | Stmt) -> Iterator[Expr | Stmt]:
    """Every node under ``n``, breadth first (as the text is read, level by level)."""
    todo: deque[Expr | Stmt] = deque([n])
    while todo:
        x = todo.popleft()
        yield x
        todo.extend(children(x))


_BIN_AST = {v: k for k, v in _BIN.items()}
_UNARY_AST = {v: k for k, v in _UNARY.items()}
_CMP_AST = {v: k for k, v in _CMP.items()}


def to_source(st: Stmt) -> str:
    """A statement as CCA text (the spec language is Python's syntax)."""
    return ast.unparse(ast.fix_missing_locations(ast.Module([_stmt_ast(st)], [])))


def _stmt_ast(st: Stmt) -> ast.stmt:
    if isinstance(st, Assign):
        return ast.Assign([ast.Name(st.name, ast.Store())], _ast(st.value))
    if isinstance(st, If):
        return ast.If(_ast(st.cond), [_stmt_ast(s) for s in st.then], [_stmt_ast(s) for s in st.orelse])
    return ast.Pass() if st.doc is None else ast.Expr(ast.Constant(st.doc))


def _ast(e: Expr) -> ast.expr:
    if isinstance(e, Const):
        return ast.Constant(e.value)
    if isinstance(e, Hole):
        return ast.Name(HOLE_PREFIX + e.name)
    if isinstance(e, Local):
        return ast.Name(e.name)
    if isinstance(e, Read):
        return ast.Name(e.name) if e.index is None else ast.Subscript(ast.Name(e.name), _ast(e.index))
    if isinstance(e, Unary):
        return ast.UnaryOp(_UNARY_AST[e.op](), _ast(e.x))
    if isinstance(e, Bin):
        return ast.BinOp(_ast(e.a), _BIN_AST[e.op](), _ast(e.b))
    if isinstance(e, Compare):
        return ast.Compare(_ast(e.items[0]), [_CMP_AST[o]() for o in e.ops], [_ast(i) for i in e.items[1:]])
    if isinstance(e, BoolOp):
        return ast.BoolOp(ast.And() if e.op == "and" else ast.Or(), [_ast(i) for i in e.items])
    if isinstance(e, IfExp):
        return ast.IfExp(_ast(e.c), _ast(e.a), _ast(e.b))
    if isinstance(e, Call):
        return ast.Call(ast.Name(e.fn), [_ast(a) for a in e.args], [])
    gens = [ast.comprehension(ast.Name(v, ast.Store()), _ast(it), [_ast(i) for i in ifs], 0) for v, it, ifs in e.loops]
    return ast.ListComp(_ast(e.elt), gens) if e.listed else ast.GeneratorExp(_ast(e.elt), gens)
