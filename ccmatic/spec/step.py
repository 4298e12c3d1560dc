"""One step of a CCA program, checked into a :class:`StepCode` for a model's R, D
and T: names resolved with their lags (what a sender observes, and how late: the
registry, :mod:`ccmatic.core.quantities`), units and linearity checked, and which
names are assigned on every path tracked as the step will run them."""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Protocol

from ccmatic.core.errors import Loc, SpecError, SpecWarning
from ccmatic.core.quantities import (
    OBSERVATIONS,
    OUTPUTS,
    PARAMETERS,
    QUANTITIES,
    SIM_OBSERVATIONS,
    SIM_PARAMETERS,
    hidden_hint,
    lag_steps,
)
from ccmatic.core.source import Source
from ccmatic.core.units import BYTES, SECONDS, Unit, unit_name
from ccmatic.spec import ir
from ccmatic.spec.elaborate import Elaborator
from ccmatic.spec.typed import BaseScope, Index, Typed

#: model parameters a CCA may read (in steps and bytes)
VISIBLE_PARAMS = tuple(p.name for p in PARAMETERS.values() if p.visible)

#: a template's holes: left symbolic, filled with a candidate's values, or none
HoleValues = dict[str, Fraction] | Literal["symbolic"] | None


@dataclass(frozen=True)
class StateDecl:
    name: str
    unit: Unit | None  # None: bool
    init: ast.expr | None
    node: ast.AnnAssign


@dataclass(frozen=True)
class StepCode:
    """One step of the program, checked for given R, D and T.

    ``outputs``: the persistent names in order (rate, cwnd if set, then the state
    variables) with whether each is a condition; ``lags``: how far back each name
    is read; ``warmup``: the deepest read (the steps before it cannot run)."""

    body: tuple[ir.Stmt, ...]
    outputs: tuple[tuple[str, bool], ...]
    lags: dict[str, int]
    init: dict[str, ir.Expr]
    #: valid but suspicious comparisons (a delay in steps against a seconds-like literal)
    warnings: tuple[SpecWarning, ...] = ()

    @property
    def warmup(self) -> int:
        return max(self.lags.values(), default=0)


class Program(Protocol):
    """What checking a step needs of a CCA file (:class:`ccmatic.spec.cca.CcaProgram`)."""

    source: Source
    states: list[StateDecl]
    body: list[ast.stmt]
    sets_rate: bool
    sets_cwnd: bool
    sim_only: bool

    @property
    def outputs(self) -> list[str]: ...


def unknown_name_error(loc: Loc, ident: str, undefined: set[str], local_names: list[str],
                       sim: bool = False) -> SpecError:
    """The error for a name a CCA step cannot read: hidden network state, a name
    assigned only in some branches, or an unknown name (with a close match)."""
    hint = hidden_hint(ident)
    if hint is not None:
        return SpecError(loc, f"the CCA reads '{ident}', which a sender cannot observe", hint)
    if ident in undefined:
        return SpecError(loc, f"'{ident}' may be undefined here (assigned only in some branches)",
                         "assign it before the if, or in every branch")
    sim_names = [*SIM_OBSERVATIONS, *SIM_PARAMETERS] if sim else []
    close = difflib.get_close_matches(ident, [*OBSERVATIONS, *OUTPUTS, *VISIBLE_PARAMS, *sim_names, *local_names], n=1)
    hint = f"did you mean '{close[0]}'?" if close else "see 'ccmatic list' or the CCA file docs for names"
    if ident in ("true", "false"):  # TOML's spelling
        hint = f"write {ident.capitalize()}, as in Python"
    return SpecError(loc, f"unknown name '{ident}'", hint)


def need_sim(prog: Program, ident: str, loc: Loc) -> None:
    """Only a simulator-only file may read what only the simulator measures
    (:data:`ccmatic.core.quantities.SIM_OBSERVATIONS`, ``SIM_PARAMETERS``)."""
    if not prog.sim_only:
        raise SpecError(loc, f"'{ident}' is measured only by the simulator",
                        "mark the file '# simulator-only' on its first line (verify, synth and prove then "
                        "refuse it), or read what the models observe (rtt, qdel_lo/qdel_hi, c_lo/c_hi)")


def sim_param(prog: Program, ident: str, loc: Loc) -> Typed:
    """A simulator-only parameter (``SECOND``), read where only such a file may."""
    need_sim(prog, ident, loc)
    return Typed(ir.Param(ident, loc), False, SIM_PARAMETERS[ident].unit)


# -- one step: name resolution -----------------------------------------------------------

class _StepScope(BaseScope):
    """Names of one step: what was assigned so far (statically), observations with
    their lags, parameters, holes."""

    def __init__(self, prog: Program, R: int, D: int, T: int, holes: HoleValues) -> None:
        super().__init__(prog.source)
        self.prog = prog
        self.R, self.D, self.T = R, D, T
        self.holes = holes
        self.lenient_units = holes == "symbolic"
        self.nonlinear = prog.sim_only
        self.env: dict[str, Typed] = {}
        self.undefined: set[str] = set()
        self.lags: dict[str, int] = {}
        self.state_units = {s.name: s.unit for s in prog.states}

    def record(self, name: str, lag: int) -> None:
        self.lags[name] = max(self.lags.get(name, 0), lag)

    def kind_unit(self, ident: str, node: ast.AST) -> tuple[Unit | None, int]:
        """(unit, minimum lag) of a readable trace quantity."""
        q = OBSERVATIONS.get(ident) or SIM_OBSERVATIONS.get(ident)
        if q is not None:
            assert q.lag is not None
            if q.family == "sim":
                need_sim(self.prog, ident, self.source.node_loc(node))
            return q.unit, lag_steps(q.lag, self.R)
        if ident in OUTPUTS:
            if (ident == "rate" and not self.prog.sets_rate) or (ident == "cwnd" and not self.prog.sets_cwnd):
                raise self.err(node, f"'{ident}' is read but never set by this CCA",
                               f"assign {ident} somewhere, or do not read it")
            return OUTPUTS[ident], 1
        if ident in self.state_units:
            return self.state_units[ident], 1
        raise unknown_name_error(self.source.node_loc(node), ident, self.undefined,
                                 list(self.state_units) + list(self.env), self.prog.sim_only)

    def obs(self, ident: str, unit: Unit | None, lag: int) -> Typed:
        self.record(ident, lag)
        return Typed(ir.Obs(ident, lag, unit is None), unit is None, unit)

    def hole(self, name: str, node: ast.AST) -> Typed | None:
        if self.holes is None:
            return None
        if self.holes == "symbolic":
            return Typed(ir.Hole(name), False, None, None, True)
        if name not in self.holes:
            raise self.err(node, f"hole '?{name}' has no value")
        return Typed.num(self.holes[name])

    def name(self, ident: str, node: ast.AST) -> Typed:
        if ident in self.env:
            v = self.env[ident]
            if v.const is not None:
                return v
            return Typed(ir.Local(ident), v.is_bool, v.unit, None, v.hole)
        if ident == "MSS":
            return Typed(ir.Param("MSS", self.source.node_loc(node)), False, BYTES)
        if ident in SIM_PARAMETERS:
            return sim_param(self.prog, ident, self.source.node_loc(node))
        if ident in ("R", "D", "T"):
            return Typed.num(Fraction(self.int_name(ident) or 0), SECONDS)
        if ident == "t":
            raise self.err(node, "'t' can only be used inside an index, e.g. S[t - 2]")
        unit, lag = self.kind_unit(ident, node)
        return self.obs(ident, unit, lag)

    def index(self, ident: str, index: list[Index], node: ast.AST) -> Typed:
        if ident in VISIBLE_PARAMS or ident in SIM_PARAMETERS or ident in self.env:
            raise self.err(node, f"'{ident}' cannot be indexed")
        unit, minlag = self.kind_unit(ident, node)
        if len(index) != 1 or not isinstance(index[0], tuple):
            raise self.err(node, f"a CCA indexes '{ident}' relative to the current step, e.g. {ident}[t - {max(1, minlag)}]",
                           "absolute steps and flow indices are for queries, not CCA files")
        lag = -index[0][1]
        if lag < minlag:
            what = "the future" if lag < 0 else ("the current step" if lag == 0 else f"step t-{lag}")
            shown = f"t{index[0][1]:+d}" if index[0][1] else "t"
            raise self.err(node, f"'{ident}[{shown}]' reads {what}, which the sender cannot see yet",
                           f"the latest visible value is {ident}[t - {minlag}] (plain '{ident}')")
        return self.obs(ident, unit, lag)

    def choose(self, options: list[Typed], node: ast.AST) -> Typed:
        if self.holes is not None:
            raise self.err(node, "choose() cannot be used in a synthesis template")
        return choose_typed(self.source, options, node)

    def int_name(self, ident: str) -> int | None:
        return {"R": self.R, "D": self.D, "T": self.T}.get(ident)


def read_elaborator(prog: Program) -> Elaborator:
    """A template's names and indexed reads, resolved (with units) as in a step (R = D = 1, T = 10)."""
    return Elaborator(_StepScope(prog, 1, 1, 10, "symbolic"))


def choose_typed(source: Source, options: list[Typed], node: ast.AST) -> Typed:
    """``choose(a, b, ...)``: options all numbers of one unit, or all conditions."""
    loc = source.node_loc(node)
    if not options:  # choose(): any value at all (unit taken from the context)
        return Typed(ir.Choose((), False, loc), False, None)
    is_bool = options[0].is_bool
    unit = None
    for o in options:
        if o.is_bool != is_bool:
            raise SpecError(loc, "choose() options must all be numbers or all be conditions")
        if not is_bool and o.unit is not None:
            if unit is not None and unit != o.unit:
                raise SpecError(loc, f"choose() options mix {unit_name(unit)} and {unit_name(o.unit)}")
            unit = o.unit
    return Typed(ir.Choose(tuple(o.expr for o in options), is_bool, loc), is_bool, unit)


# how disallowed statements are named in error messages (default: the AST class name)
_STATEMENT_WORDS: dict[type, str] = {
    ast.While: "'while' loops", ast.For: "'for' loops", ast.FunctionDef: "function definitions ('def')",
    ast.ClassDef: "class definitions", ast.Import: "imports", ast.ImportFrom: "imports",
    ast.Return: "'return' statements",
    ast.Expr: "bare expressions",
}


# -- one step: statements -----------------------------------------------------------------

class _Checker:
    """Checks the statement list under a step scope, tracking which names are
    assigned on every path (as the step will run them)."""

    def __init__(self, scope: _StepScope) -> None:
        self.scope = scope
        self.elab = Elaborator(scope)
        self.persistent = set(OUTPUTS) | set(scope.state_units)

    def err(self, node: ast.AST, msg: str, hint: str | None = None) -> SpecError:
        return self.scope.err(node, msg, hint)

    def block(self, stmts: list[ast.stmt]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for st in stmts:
            s = self.stmt(st)
            if s is not None:
                out.append(s)
        return tuple(out)

    def stmt(self, st: ast.stmt) -> ir.Stmt | None:
        if isinstance(st, ast.Assign):
            return self.assign(st)
        if isinstance(st, ast.If):
            return self.if_(st)
        if isinstance(st, ast.Pass):
            return None
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
            return None  # docstring
        if isinstance(st, ast.AnnAssign):
            raise self.err(st, "state variables must be declared at the top of the file, before any statement")
        if isinstance(st, ast.AugAssign):
            raise self.err(st, "augmented assignment is not supported", "write 'x = x + ...'")
        what = _STATEMENT_WORDS.get(type(st), f"'{type(st).__name__}' statements")
        raise self.err(st, f"{what} are not allowed in a CCA file",
                       "to set a value write 'name = ...' (one '=')" if isinstance(st, ast.Expr)
                       else "use assignments and if/elif/else")

    def assign(self, st: ast.Assign) -> ir.Stmt:
        if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
            raise self.err(st, "assign to one plain name at a time, e.g. rate = 2 * c_lo")
        name = st.targets[0].id
        if (name in PARAMETERS or name in SIM_PARAMETERS or name in SIM_OBSERVATIONS
                or (name in QUANTITIES and name not in OUTPUTS) or name == "t"):
            raise self.err(st.targets[0], f"cannot assign to '{name}'",
                           "CCAs set rate, cwnd, state variables or temporaries")
        v = self.elab.expr(st.value)
        want = self.target_unit(name)
        if want == "bool":
            if not v.is_bool:
                raise self.err(st.value, f"'{name}' is a boolean state variable; assign a condition")
        elif want is not None:
            if v.is_bool:
                raise self.err(st.value, f"'{name}' needs a number in {unit_name(want)}, found a condition")
            if v.unit is not None and v.unit != want and not self.scope.lenient_units:
                raise self.err(st.value, f"unit mismatch: '{name}' is in {unit_name(want)} but the value is in {unit_name(v.unit)}",
                               "rate is bytes/second, cwnd is bytes" if name in OUTPUTS else None)
            v = Typed(v.expr, False, want, v.const, v.hole)
        self.scope.env[name] = v
        self.scope.undefined.discard(name)
        return ir.Assign(name, v.expr)

    def if_(self, st: ast.If) -> ir.Stmt:
        sc = self.scope
        cond = self.elab.boolean(st.test)
        before, und_before = dict(sc.env), set(sc.undefined)
        then = self.block(st.body)
        after_then, und_then = sc.env, sc.undefined
        sc.env, sc.undefined = dict(before), set(und_before)
        orelse = self.block(st.orelse)
        after_else, und_else = sc.env, sc.undefined
        env: dict[str, Typed] = dict(before)
        undefined = und_then | und_else
        merged: list[tuple[str, bool]] = []
        for n in sorted(set(after_then) | set(after_else)):
            a, b = after_then.get(n), after_else.get(n)
            if a is None or b is None:
                if n not in self.persistent:
                    undefined.add(n)
                    env.pop(n, None)
                    continue
                sc.record(n, 1)  # a branch keeps the previous step's value
                unit = OUTPUTS[n] if n in OUTPUTS else sc.state_units[n]
                prev = Typed(ir.Obs(n, 1, unit is None), unit is None, unit)
                a, b = a or prev, b or prev
            if a is b:
                env[n] = a
                continue
            if a.is_bool != b.is_bool:
                raise self.err(st, f"'{n}' is a condition in one branch and a number in the other")
            unit = a.unit if a.unit is not None else b.unit
            if a.unit is not None and b.unit is not None and a.unit != b.unit and not sc.lenient_units:
                raise self.err(st, f"'{n}' has unit {unit_name(a.unit)} in one branch and {unit_name(b.unit)} in the other")
            env[n] = Typed(ir.Local(n), a.is_bool, unit)
            merged.append((n, n in self.persistent))
        sc.env = env
        sc.undefined = undefined - set(env)
        return ir.If(cond.expr, then, orelse, tuple(merged))

    def target_unit(self, name: str) -> Unit | Literal["bool"] | None:
        if name in OUTPUTS:
            return OUTPUTS[name]
        if name in self.scope.state_units:
            u = self.scope.state_units[name]
            return "bool" if u is None else u
        return None


class _InitScope(BaseScope):
    """Initial values of state variables: constants, the parameters a sender knows
    (MSS, R, D, T, with the model's values) and choose()."""

    def __init__(self, prog: Program, R: int, D: int, T: int) -> None:
        super().__init__(prog.source)
        self.prog = prog
        self.values = {"R": R, "D": D, "T": T}

    def name(self, ident: str, node: ast.AST) -> Typed:
        if ident == "MSS":
            return Typed(ir.Param("MSS", self.source.node_loc(node)), False, BYTES)
        if ident in SIM_PARAMETERS:
            return sim_param(self.prog, ident, self.source.node_loc(node))
        if ident in self.values:
            return Typed.num(Fraction(self.values[ident]), SECONDS)
        raise self.err(node, f"an initial value may only use constants, MSS, R, D, T and choose(); found '{ident}'")

    def index(self, ident: str, index: list[Index], node: ast.AST) -> Typed:
        raise self.err(node, "an initial value cannot read the trace")

    def choose(self, options: list[Typed], node: ast.AST) -> Typed:
        return choose_typed(self.source, options, node)

    def int_name(self, ident: str) -> int | None:
        return self.values.get(ident)


def _elaborate_init(prog: Program, R: int, D: int, T: int) -> dict[str, ir.Expr]:
    out: dict[str, ir.Expr] = {}
    for s in prog.states:
        if s.init is None:
            continue
        v = Elaborator(_InitScope(prog, R, D, T)).expr(s.init)
        if (s.unit is None) != v.is_bool or (v.unit is not None and s.unit is not None and v.unit != s.unit):
            raise SpecError(prog.source.node_loc(s.init),
                            f"initial value of '{s.name}' does not match its declared unit "
                            f"{unit_name(s.unit) if s.unit else 'bool'}")
        out[s.name] = v.expr
    return out


def elaborate_program(prog: Program, R: int, D: int, T: int, holes: HoleValues) -> StepCode:
    scope = _StepScope(prog, R, D, T, holes)
    body = _Checker(scope).block(prog.body)
    outputs: list[tuple[str, bool]] = []
    for n in prog.outputs:
        is_bool = n not in OUTPUTS and next(s.unit for s in prog.states if s.name == n) is None
        outputs.append((n, is_bool))
        if n not in scope.env:
            scope.record(n, 1)  # not assigned on every path: keeps the previous value
    return StepCode(body, tuple(outputs), dict(scope.lags), _elaborate_init(prog, R, D, T), tuple(scope.warnings))


