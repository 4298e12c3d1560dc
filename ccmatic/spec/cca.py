"""CCA files: per-step programs, checked into a :class:`StepCode` (thesis B.1).

A CCA file is a sequence of optional hole domains and state declarations followed
by statements::

    # comments
    recover: bytes            # state variable, free initial value
    phase: count = choose(0, 1, 2, 3)   # initial value constrained
    if qdel_lo > 0:
        rate = c_lo / 2
    else:
        rate = 2 * c_lo

Statements are assignments and ``if/elif/else``.  ``rate``, ``cwnd`` and state
variables persist: read before being assigned in a step they give the previous
step's value, and a step that does not assign them keeps it.  Other names assigned
in the program are temporaries of the current step.

What a sender observes, and how late, is the registry's business
(:mod:`ccmatic.core.quantities`): a bare name means its latest visible value and
``X[t - k]`` an older one; reading hidden state (``C``, ``L``, the queue, ...) or a
future step is a load-time error.  Steps before the program's deepest read (its
*warm-up*) leave rate, cwnd and state free: initial conditions are the adversary's.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from ccmatic.core.errors import Loc, SpecError, SpecWarning
from ccmatic.core.limits import MAX_HOLE_VALUES
from ccmatic.core.quantities import (
    PARAMETERS,
    QUANTITIES,
    SIM_OBSERVATIONS,
    SIM_PARAMETERS,
)
from ccmatic.core.source import Source
from ccmatic.core.units import DECLARABLE
from ccmatic.spec.elaborate import Elaborator
from ccmatic.spec.source import HOLE_PREFIX, parse, read_source
from ccmatic.spec.step import HoleValues, StateDecl, StepCode, elaborate_program
from ccmatic.spec.typed import BaseScope, Index, Typed

if TYPE_CHECKING:  # made on first use (template_tree.template_of): verify's start-up does not load it
    from ccmatic.spec.template_tree import TemplateTree


@dataclass(frozen=True)
class HoleDecl:
    """A template hole ``?name`` and its finite domain (None: to be given by the query)."""

    name: str
    domain: tuple[Fraction, ...] | None
    loc: Loc


@dataclass
class CcaProgram:
    """A loaded, validated CCA file (a template when it has holes)."""

    path: str
    name: str
    source: Source
    states: list[StateDecl]
    body: list[ast.stmt]  # parsed statements, for the step checker (spec.step) only
    sets_rate: bool
    sets_cwnd: bool
    sim_only: bool = False
    holes: dict[str, HoleDecl] = field(default_factory=dict)
    _template: TemplateTree | None = field(default=None, repr=False)  # template_tree.template_of's
    _codes: dict[tuple[int, int, int, object], StepCode] = field(default_factory=dict, repr=False)

    @property
    def is_template(self) -> bool:
        return bool(self.holes)

    @property
    def outputs(self) -> list[str]:
        """The CCA's persistent names: rate and cwnd (those it sets) and its state."""
        return [n for n, on in (("rate", self.sets_rate), ("cwnd", self.sets_cwnd)) if on] + \
            [s.name for s in self.states]

    def code(self, R: int, D: int, T: int, holes: HoleValues = None) -> StepCode:
        """The checked step for these R, D, T (indices may use them), with holes left
        symbolic (``"symbolic"``), filled with a candidate's values, or (None) none."""
        if holes is None and self.is_template:
            holes = "symbolic"
        key = (R, D, T, holes if isinstance(holes, str) or holes is None else tuple(sorted(holes.items())))
        hit = self._codes.get(key)
        if hit is None:
            hit = self._codes[key] = elaborate_program(self, R, D, T, holes)
        return hit

    def warmup(self, R: int, D: int, T: int) -> int:
        """Number of leading steps in which the program cannot run (reads before 0)."""
        return self.code(R, D, T).warmup

    @property
    def reads(self) -> set[str]:
        """The names the program reads (with R = D = 1, T = 10)."""
        return set(self.code(1, 1, 10).lags)

    @property
    def warnings(self) -> tuple[SpecWarning, ...]:
        """Valid but suspicious lines (with R = D = 1, T = 10), for the CLI to print."""
        return self.code(1, 1, 10).warnings

    def uses(self, *names: str) -> bool:
        return any(n in self.reads for n in names)


# -- loading --------------------------------------------------------------------------------

#: what a query writes for no CCA (``cca = "none"``, or no ``cca`` key)
NO_CCA = "none"


def no_cca() -> CcaProgram:
    """No CCA: any sender.  It sets neither rate nor cwnd, so the sending rule binds
    nothing and what is sent is free but for the network's own rules (A never
    decreases); a scenario stores it as the CCA path ""."""
    return CcaProgram("", NO_CCA, Source("", ""), [], [], False, False)


def load_cca(path: str | Path, text: str | None = None) -> CcaProgram:
    """Load and check a CCA file; every problem is a :class:`SpecError`.  The path
    "" is no CCA (:func:`no_cca`)."""
    if path == "":
        return no_cca()
    p = Path(path)
    if text is None:
        text = read_source(path, "CCA file")
    src = Source(str(path), text)
    sim_only = any(line.strip().lower().startswith("# simulator-only") for line in text.splitlines()[:20])
    tree = parse(src, "exec")
    assert isinstance(tree, ast.Module)
    states: list[StateDecl] = []
    body: list[ast.stmt] = []
    holes: dict[str, HoleDecl] = {}
    for st in tree.body:
        if not body and _is_hole_domain(st):
            assert isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)
            hname = st.targets[0].id[len(HOLE_PREFIX):]
            if hname in holes:
                raise SpecError(src.node_loc(st), f"domain of hole '?{hname}' declared twice")
            holes[hname] = HoleDecl(hname, _hole_domain(src, st.value), src.node_loc(st))
        elif isinstance(st, ast.AnnAssign) and not body:
            states.append(_state_decl(src, st, states))
        else:
            body.append(st)
    _collect_holes(src, body, holes)
    assigned = {n.id for st in body for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    prog = CcaProgram(str(path), p.stem, src, states, body, "rate" in assigned, "cwnd" in assigned, sim_only=sim_only,
                      holes=holes)
    prog.code(1, 1, 10)  # every error at load time (a specific one, e.g. 'rate == x', first)
    if not prog.sets_rate and not prog.sets_cwnd:
        raise SpecError(Loc(str(path), 1, 1), "the CCA never sets rate or cwnd", "assign 'rate = ...' and/or 'cwnd = ...'")
    return prog


def _is_hole_domain(st: ast.stmt) -> bool:
    return (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
            and st.targets[0].id.startswith(HOLE_PREFIX))


def _state_decl(src: Source, st: ast.AnnAssign, states: list[StateDecl]) -> StateDecl:
    if not isinstance(st.target, ast.Name):
        raise SpecError(src.node_loc(st), "state declarations look like 'name: unit = initial'")
    ann = st.annotation
    if not isinstance(ann, ast.Name) or (ann.id not in DECLARABLE and ann.id != "bool"):
        raise SpecError(src.node_loc(ann), "unknown unit in state declaration",
                        "use bytes, seconds, rate, count or bool")
    name = st.target.id
    if any(name in names for names in (QUANTITIES, PARAMETERS, SIM_OBSERVATIONS, SIM_PARAMETERS)):
        raise SpecError(src.node_loc(st.target), f"'{name}' is a reserved name and cannot be a state variable")
    if any(s.name == name for s in states):
        raise SpecError(src.node_loc(st.target), f"state variable '{name}' declared twice")
    return StateDecl(name, None if ann.id == "bool" else DECLARABLE[ann.id], st.value, st)


def _collect_holes(src: Source, body: list[ast.stmt], holes: dict[str, HoleDecl]) -> None:
    for node in (n for st in body for n in ast.walk(st)):
        if isinstance(node, ast.Name) and node.id.startswith(HOLE_PREFIX):
            hname = node.id[len(HOLE_PREFIX):]
            if hname not in holes:
                holes[hname] = HoleDecl(hname, None, src.node_loc(node))
            if isinstance(node.ctx, ast.Store):
                raise SpecError(src.node_loc(node), f"cannot assign to hole '?{hname}' here",
                                "declare hole domains at the top of the file: ?name = {v1, v2, ...}")


class _ConstScope(BaseScope):
    def name(self, ident: str, node: ast.AST) -> Typed:
        raise self.err(node, "hole domains contain numbers only")

    def index(self, ident: str, index: list[Index], node: ast.AST) -> Typed:
        raise self.err(node, "hole domains contain numbers only")

    def choose(self, options: list[Typed], node: ast.AST) -> Typed:
        raise self.err(node, "hole domains contain numbers only")


def _literal(e: ast.expr) -> Fraction | None:
    """``3``, ``-3`` or ``0.5`` written as such (exactly as written: 0.1 is 1/10),
    or None for anything else (elaborated instead)."""
    neg = isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub)
    c = e.operand if isinstance(e, ast.UnaryOp) and neg else e
    if not isinstance(c, ast.Constant) or isinstance(c.value, bool) or not isinstance(c.value, (int, float)):
        return None
    if isinstance(c.value, float) and not math.isfinite(c.value):
        return None  # the elaborator says why
    v = Fraction(c.value) if isinstance(c.value, int) else Fraction(repr(c.value))
    return -v if neg else v


def _hole_domain(src: Source, node: ast.expr) -> tuple[Fraction, ...]:
    """Parse ``{v1, v2, ...}`` (or a list/tuple, or ``range(a, b)``) of constants."""
    elab = Elaborator(_ConstScope(src))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        bounds = [elab.static_int(a, allow_t=False) for a in node.args]
        if not 1 <= len(bounds) <= 3 or (len(bounds) == 3 and bounds[2] == 0):
            raise SpecError(src.node_loc(node), "a hole domain range is range(a, b) or range(a, b, step), step not 0")
        span = range(*[int(b) for b in bounds])  # type: ignore[arg-type]
        if len(span) > MAX_HOLE_VALUES:
            raise SpecError(src.node_loc(node), f"a hole domain of {len(span):,} values is over the limit of "
                            f"{MAX_HOLE_VALUES:,}", "give a coarser range (a step) or fewer values")
        values = [Fraction(v) for v in span]
    elif isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        values = []
        for e in node.elts:
            lit = _literal(e)
            if lit is not None:  # a plain number: no elaboration (large domains load fast)
                values.append(lit)
                continue
            v = elab.num(e)
            if v.const is None:
                raise SpecError(src.node_loc(e), "hole domains contain numbers only")
            values.append(v.number)
    else:
        raise SpecError(src.node_loc(node), "a hole domain is a set of numbers, e.g. ?a = {-1, 0, 1}")
    if not values:
        raise SpecError(src.node_loc(node), "a hole domain cannot be empty")
    if len(set(values)) != len(values):
        raise SpecError(src.node_loc(node), "a hole domain lists a value twice")
    return tuple(values)
