"""CCA files: per-step programs, symbolically executed into If-terms (thesis B.1).

A CCA file is a sequence of optional state declarations followed by statements::

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

Visibility (what a sender observes at step t).  A bare observation name means its
latest visible value; ``X[t - k]`` reads an older one:

=================  ==============  =====================================
name               unit            latest visible value
=================  ==============  =====================================
A                  bytes           A(t−1)       own sends
S                  bytes           S(t−R)       ACKs travel back R
Ld                 bytes           Ld(t)        losses detected so far
timeout            bool            timeout(t)
rate, cwnd, state  own             value at t−1
c_lo, c_hi         bytes/second    at t−R       (Eq. 4.1.2)
qdel_lo, qdel_hi   seconds         at t−R       (Eq. 4.1.1)
c_lo_lambda        bytes/second    at t−R       (Eq. 4.2.2)
q_hi               bytes           at t−1       (§4.2.2.1)
MSS                bytes           (constant)
R, D, T            seconds         (constants)
=================  ==============  =====================================

Reading the link rate ``C``, waste ``W``, true losses ``L``, the queue, the buffer,
or a future step is a load-time error.  Steps before the program's deepest read
(its *warm-up*) leave rate, cwnd and state free: initial conditions are the
solver's choice.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import z3

from ccmatic.errors import Loc, SpecError
from ccmatic.lang.expr import Compiler, Val
from ccmatic.lang.source import HOLE_PREFIX, Source, parse, read_source
from ccmatic.lang.units import BYTES, DECLARABLE, RATE, SECONDS, Unit, unit_name

if TYPE_CHECKING:
    from ccmatic.smt import Encoding
    from ccmatic.trace import Trace

# observation name -> (unit or None for bool, lag kind)
OBSERVATIONS: dict[str, tuple[Unit | None, str]] = {
    "A": (BYTES, "send"),
    "S": (BYTES, "ack"),
    "Ld": (BYTES, "now"),
    "timeout": (None, "now"),
    "c_lo": (RATE, "ack"),
    "c_hi": (RATE, "ack"),
    "qdel_lo": (SECONDS, "ack"),
    "qdel_hi": (SECONDS, "ack"),
    "c_lo_lambda": (RATE, "ack"),
    "q_hi": (BYTES, "send"),
}
OUTPUTS = {"rate": RATE, "cwnd": BYTES}
HIDDEN = {
    "C": "the link rate C is hidden from the sender; use the beliefs c_lo/c_hi (or c_lo_lambda)",
    "W": "wasted tokens W are network state a sender cannot observe",
    "L": "true losses L are hidden; read Ld (losses the sender detected)",
    "queue": "the queue is hidden; use qdel_lo/qdel_hi or q_hi",
    "bq": "the bottleneck queue is hidden; use qdel_lo/qdel_hi or q_hi",
    "tokens": "the token curve is network state a sender cannot observe",
    "buffer": "the buffer size is hidden from the sender",
    "C0": "C0 is network state a sender cannot observe",
}
PARAM_NAMES = ("MSS", "R", "D", "T")


@dataclass(frozen=True)
class StateDecl:
    name: str
    unit: Unit | None  # None: bool
    init: ast.expr | None
    node: ast.AnnAssign


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
    body: list[ast.stmt]
    sets_rate: bool
    sets_cwnd: bool
    reads: set[str] = field(default_factory=set)
    max_lag: int = 0  # deepest read, in steps (R=1 default; recomputed per model)
    lag_fn: Callable[[int, int, int], int] | None = None
    sim_only: bool = False
    holes: dict[str, HoleDecl] = field(default_factory=dict)

    @property
    def is_template(self) -> bool:
        return bool(self.holes)

    def warmup(self, R: int, D: int = 1, T: int = 10) -> int:
        """Number of leading steps in which the program cannot run (reads before 0),
        for a model's R and D and the horizon T (indices may use all three)."""
        return self.lag_fn(R, D, T) if self.lag_fn is not None else self.max_lag

    def uses(self, *names: str) -> bool:
        return any(n in self.reads for n in names)


def _lag(kind: str, R: int) -> int:
    return {"send": 1, "ack": R, "now": 0}[kind]


def unknown_name_error(loc: Loc, ident: str, undefined: set[str], local_names: list[str]) -> SpecError:
    """The error for a name a CCA step cannot read: hidden network state, a name
    assigned only in some branches, or an unknown name (with a close match).
    Shared by the Z3 compiler and the concrete interpreter."""
    if ident in HIDDEN:
        return SpecError(loc, f"the CCA reads '{ident}', which a sender cannot observe", HIDDEN[ident])
    if ident in undefined:
        return SpecError(loc, f"'{ident}' may be undefined here (assigned only in some branches)",
                         "assign it before the if, or in every branch")
    known = list(OBSERVATIONS) + list(OUTPUTS) + list(PARAM_NAMES) + local_names
    close = difflib.get_close_matches(ident, known, n=1)
    hint = f"did you mean '{close[0]}'?" if close else "see 'ccmatic list' or the CCA file docs for names"
    return SpecError(loc, f"unknown name '{ident}'", hint)


class _StepScope:
    """Name resolution for one step of one flow.

    ``fetch(name, lag)`` returns the term of an observation/output/state ``lag``
    steps back; ``on_choose`` creates the fresh variable for ``choose``."""

    def __init__(self, prog: CcaProgram, R: int, D: int, T: int, mss: z3.ArithRef,
                 fetch: Callable[[str, int], z3.ExprRef],
                 on_choose: Callable[[list[Val], ast.AST], Val],
                 holes: dict[str, Val] | None = None) -> None:
        self.source = prog.source
        self.holes = holes
        self.lenient_units = holes is not None and any(v.hole for v in holes.values())
        self.prog = prog
        self.R, self.D, self.T = R, D, T
        self.mss = mss
        self.fetch = fetch
        self.on_choose = on_choose
        self.env: dict[str, Val] = {}
        self.undefined: set[str] = set()
        self.lags: dict[str, int] = {}
        self.state_units = {s.name: s.unit for s in prog.states}

    def _record(self, name: str, lag: int) -> None:
        self.lags[name] = max(self.lags.get(name, 0), lag)

    def _kind_unit(self, ident: str, node: ast.AST) -> tuple[Unit | None, int]:
        """(unit, minimum lag) of a readable trace quantity."""
        if ident in OBSERVATIONS:
            u, kind = OBSERVATIONS[ident]
            return u, _lag(kind, self.R)
        if ident in OUTPUTS:
            if (ident == "rate" and not self.prog.sets_rate) or (ident == "cwnd" and not self.prog.sets_cwnd):
                raise SpecError(self.source.node_loc(node), f"'{ident}' is read but never set by this CCA",
                                f"assign {ident} somewhere, or do not read it")
            return OUTPUTS[ident], 1
        if ident in self.state_units:
            return self.state_units[ident], 1
        raise self._unknown(ident, node)

    def _unknown(self, ident: str, node: ast.AST) -> SpecError:
        return unknown_name_error(self.source.node_loc(node), ident, self.undefined,
                                  list(self.state_units) + list(self.env))

    def _val(self, ident: str, unit: Unit | None, term: z3.ExprRef) -> Val:
        return Val(term, unit is None, unit)

    # Scope protocol --------------------------------------------------------------
    def hole(self, name: str, node: ast.AST) -> Val | None:
        if self.holes is None:
            return None
        if name not in self.holes:
            raise SpecError(self.source.node_loc(node), f"hole '?{name}' has no value")
        return self.holes[name]

    def name(self, ident: str, node: ast.AST) -> Val:
        if ident in self.env:
            return self.env[ident]
        if ident == "MSS":
            return Val(self.mss, False, BYTES)
        if ident in ("R", "D", "T"):
            v = {"R": self.R, "D": self.D, "T": self.T}[ident]
            return Val.num(Fraction(v), SECONDS)
        if ident == "t":
            raise SpecError(self.source.node_loc(node), "'t' can only be used inside an index, e.g. S[t - 2]")
        unit, lag = self._kind_unit(ident, node)
        self._record(ident, lag)
        return self._val(ident, unit, self.fetch(ident, lag))

    def index(self, ident: str, index: list[int | tuple[str, int]], node: ast.AST) -> Val:
        loc = self.source.node_loc(node)
        if ident in ("MSS", "R", "D", "T") or ident in self.env:
            raise SpecError(loc, f"'{ident}' cannot be indexed")
        unit, minlag = self._kind_unit(ident, node)
        if len(index) != 1 or not isinstance(index[0], tuple):
            raise SpecError(loc, f"a CCA indexes '{ident}' relative to the current step, e.g. {ident}[t - {max(1, minlag)}]",
                            "absolute steps and flow indices are for queries, not CCA files")
        lag = -index[0][1]
        if lag < minlag:
            what = "the future" if lag < 0 else ("the current step" if lag == 0 else f"step t-{lag}")
            shown = f"t{index[0][1]:+d}" if index[0][1] else "t"
            raise SpecError(loc, f"'{ident}[{shown}]' reads {what}, which the sender cannot see yet",
                            f"the latest visible value is {ident}[t - {minlag}] (plain '{ident}')")
        self._record(ident, lag)
        return self._val(ident, unit, self.fetch(ident, lag))

    def choose(self, options: list[Val], node: ast.AST) -> Val:
        return self.on_choose(options, node)

    def int_name(self, ident: str) -> int | None:
        return {"R": self.R, "D": self.D, "T": self.T}.get(ident)


# how disallowed statements are named in error messages (default: the AST class name)
_STATEMENT_WORDS: dict[type, str] = {
    ast.While: "'while' loops", ast.For: "'for' loops", ast.FunctionDef: "function definitions ('def')",
    ast.ClassDef: "class definitions", ast.Import: "imports", ast.ImportFrom: "imports",
    ast.Return: "'return' statements",
    ast.Expr: "bare expressions",
}


class _Executor:
    """Symbolic execution of the statement list under a step scope."""

    def __init__(self, scope: _StepScope) -> None:
        self.scope = scope
        self.comp = Compiler(scope)
        self.persistent = set(OUTPUTS) | set(scope.state_units)

    def err(self, node: ast.AST, msg: str, hint: str | None = None) -> SpecError:
        return SpecError(self.scope.source.node_loc(node), msg, hint)

    def run(self, stmts: list[ast.stmt]) -> None:
        for st in stmts:
            self.stmt(st)

    def stmt(self, st: ast.stmt) -> None:
        env = self.scope.env
        if isinstance(st, ast.Assign):
            if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
                raise self.err(st, "assign to one plain name at a time, e.g. rate = 2 * c_lo")
            name = st.targets[0].id
            self._check_target(name, st.targets[0])
            v = self.comp.expr(st.value)
            want = self._target_unit(name)
            if want is not None:
                if want == "bool":
                    if not v.is_bool:
                        raise self.err(st.value, f"'{name}' is a boolean state variable; assign a condition")
                else:
                    if v.is_bool:
                        raise self.err(st.value, f"'{name}' needs a number in {unit_name(want)}, found a condition")
                    if v.unit is not None and v.unit != want and not self.scope.lenient_units:
                        raise self.err(st.value, f"unit mismatch: '{name}' is in {unit_name(want)} but the value is in {unit_name(v.unit)}",
                                       "rate is bytes/second, cwnd is bytes" if name in OUTPUTS else None)
                    v = Val(v.term, False, want, v.const)
            env[name] = v
            self.scope.undefined.discard(name)
        elif isinstance(st, ast.If):
            cond = self.comp.boolean(st.test)
            before = dict(env)
            und_before = set(self.scope.undefined)
            self.run(st.body)
            after_then = dict(env)
            und_then = set(self.scope.undefined)
            env.clear()
            env.update(before)
            self.scope.undefined = set(und_before)
            self.run(st.orelse)
            after_else = dict(env)
            und_else = set(self.scope.undefined)
            env.clear()
            names = set(after_then) | set(after_else)
            undefined = und_then | und_else
            for n in names:
                a = after_then.get(n)
                b = after_else.get(n)
                if a is None or b is None:
                    if n in self.persistent:
                        prev = self._previous(n, st)
                        a = a if a is not None else prev
                        b = b if b is not None else prev
                    else:
                        undefined.add(n)
                        continue
                if a is b:
                    env[n] = a
                    continue
                if a.is_bool != b.is_bool:
                    raise self.err(st, f"'{n}' is a condition in one branch and a number in the other")
                unit = a.unit if a.unit is not None else b.unit
                if a.unit is not None and b.unit is not None and a.unit != b.unit and not self.scope.lenient_units:
                    raise self.err(st, f"'{n}' has unit {unit_name(a.unit)} in one branch and {unit_name(b.unit)} in the other")
                env[n] = Val(z3.If(cond.term, a.term, b.term), a.is_bool, unit)
            self.scope.undefined = undefined - set(env)
        elif isinstance(st, ast.Pass):
            pass
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
            pass  # docstring
        elif isinstance(st, ast.AnnAssign):
            raise self.err(st, "state variables must be declared at the top of the file, before any statement")
        elif isinstance(st, ast.AugAssign):
            raise self.err(st, "augmented assignment is not supported", "write 'x = x + ...'")
        else:
            what = _STATEMENT_WORDS.get(type(st), f"'{type(st).__name__}' statements")
            raise self.err(st, f"{what} are not allowed in a CCA file",
                           "to set a value write 'name = ...' (one '=')" if isinstance(st, ast.Expr)
                           else "use assignments and if/elif/else")

    def _previous(self, name: str, node: ast.AST) -> Val:
        unit = OUTPUTS.get(name) if name in OUTPUTS else self.scope.state_units[name]
        self.scope._record(name, 1)
        return Val(self.scope.fetch(name, 1), unit is None, unit)

    def _target_unit(self, name: str) -> Unit | Literal["bool"] | None:
        if name in OUTPUTS:
            return OUTPUTS[name]
        if name in self.scope.state_units:
            u = self.scope.state_units[name]
            return "bool" if u is None else u
        return None

    def _check_target(self, name: str, node: ast.AST) -> None:
        if name in OBSERVATIONS or name in PARAM_NAMES or name in HIDDEN or name == "t":
            raise self.err(node, f"cannot assign to '{name}'", "CCAs set rate, cwnd, state variables or temporaries")


def load_cca(path: str | Path, text: str | None = None) -> CcaProgram:
    """Load and validate a CCA file; every problem is a :class:`SpecError`."""
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
        if (isinstance(st, ast.Assign) and not body and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and st.targets[0].id.startswith(HOLE_PREFIX)):
            hname = st.targets[0].id[len(HOLE_PREFIX):]
            if hname in holes:
                raise SpecError(src.node_loc(st), f"domain of hole '?{hname}' declared twice")
            holes[hname] = HoleDecl(hname, _hole_domain(src, st.value), src.node_loc(st))
            continue
        if isinstance(st, ast.AnnAssign) and not body:
            if not isinstance(st.target, ast.Name):
                raise SpecError(src.node_loc(st), "state declarations look like 'name: unit = initial'")
            ann = st.annotation
            if not isinstance(ann, ast.Name) or (ann.id not in DECLARABLE and ann.id != "bool"):
                raise SpecError(src.node_loc(ann), "unknown unit in state declaration",
                                "use bytes, seconds, rate, count or bool")
            unit = None if ann.id == "bool" else DECLARABLE[ann.id]
            name = st.target.id
            if name in OBSERVATIONS or name in OUTPUTS or name in PARAM_NAMES or name in HIDDEN:
                raise SpecError(src.node_loc(st.target), f"'{name}' is a reserved name and cannot be a state variable")
            if any(s.name == name for s in states):
                raise SpecError(src.node_loc(st.target), f"state variable '{name}' declared twice")
            states.append(StateDecl(name, unit, st.value, st))
        else:
            body.append(st)
    assigned = {n.id for st in body for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for node in (n for st in body for n in ast.walk(st)):
        if isinstance(node, ast.Name) and node.id.startswith(HOLE_PREFIX):
            hname = node.id[len(HOLE_PREFIX):]
            if hname not in holes:
                holes[hname] = HoleDecl(hname, None, src.node_loc(node))
            if isinstance(node.ctx, ast.Store):
                raise SpecError(src.node_loc(node), f"cannot assign to hole '?{hname}' here",
                                "declare hole domains at the top of the file: ?name = {v1, v2, ...}")
    prog = CcaProgram(str(path), p.stem, src, states, body, "rate" in assigned, "cwnd" in assigned, sim_only=sim_only,
                      holes=holes)
    if not sim_only:
        _validate(prog)  # first: a specific error (e.g. 'rate == x' for 'rate = x') beats the one below
    if not prog.sets_rate and not prog.sets_cwnd:
        raise SpecError(Loc(str(path), 1, 1), "the CCA never sets rate or cwnd", "assign 'rate = ...' and/or 'cwnd = ...'")
    return prog


def _hole_domain(src: Source, node: ast.expr) -> tuple[Fraction, ...]:
    """Parse ``{v1, v2, ...}`` (or a list/tuple, or ``range(a, b)``) of constants."""

    class ConstScope:
        source = src

        def name(self, ident: str, n: ast.AST) -> Val:
            raise SpecError(src.node_loc(n), "hole domains contain numbers only")

        def index(self, ident: str, index: list[int | tuple[str, int]], n: ast.AST) -> Val:
            raise SpecError(src.node_loc(n), "hole domains contain numbers only")

        def choose(self, options: list[Val], n: ast.AST) -> Val:
            raise SpecError(src.node_loc(n), "hole domains contain numbers only")

        def int_name(self, ident: str) -> int | None:
            return None

    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        comp = Compiler(ConstScope())
        bounds = [comp.static_int(a, allow_t=False) for a in node.args]
        elts_v = [Fraction(v) for v in range(*[int(b) for b in bounds])]  # type: ignore[arg-type]
    elif isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        comp = Compiler(ConstScope())
        elts_v = []
        for e in node.elts:
            v = comp.num(e)
            if v.const is None:
                raise SpecError(src.node_loc(e), "hole domains contain numbers only")
            elts_v.append(v.const)
    else:
        raise SpecError(src.node_loc(node), "a hole domain is a set of numbers, e.g. ?a = {-1, 0, 1}")
    if not elts_v:
        raise SpecError(src.node_loc(node), "a hole domain cannot be empty")
    if len(set(elts_v)) != len(elts_v):
        raise SpecError(src.node_loc(node), "a hole domain lists a value twice")
    return tuple(elts_v)


def _validate(prog: CcaProgram) -> None:
    """Dry-run the program on fresh symbols to surface every error at load time
    and to record which names it reads and how far back."""
    lags_by: dict[tuple[int, int, int], int] = {}

    def dry(R: int, D: int, T: int) -> int:
        counter = [0]

        def fetch(name: str, lag: int) -> z3.ExprRef:
            counter[0] += 1
            if name in OBSERVATIONS and OBSERVATIONS[name][0] is None:
                return z3.Bool(f"__probe_{counter[0]}")
            u = None
            for s in prog.states:
                if s.name == name:
                    u = s.unit
                    if u is None:
                        return z3.Bool(f"__probe_{counter[0]}")
            return z3.Real(f"__probe_{counter[0]}")

        def on_choose(opts: list[Val], node: ast.AST) -> Val:
            return _choose_val(opts, node, prog.source, lambda c: None, "probe")

        symbolic = {h: Val(z3.Real(HOLE_PREFIX + h), False, None, None, True) for h in prog.holes}
        scope = _StepScope(prog, R, D, T, z3.Real("__probe_mss"), fetch, on_choose, symbolic)
        _Executor(scope).run(prog.body)
        for s in prog.states:
            if s.init is not None:
                _compile_init(prog, s, R, z3.Real("__probe_mss"), lambda c: None)
        prog.reads = set(scope.lags)
        return max(scope.lags.values(), default=0)

    lags_by[(1, 1, 10)] = dry(1, 1, 10)
    prog.max_lag = lags_by[(1, 1, 10)]

    def lag_fn(R: int, D: int = 1, T: int = 10) -> int:
        # an index may use R, D and T (e.g. qdel_hi[t - R - D]): the warm-up depends on all three
        if (R, D, T) not in lags_by:
            lags_by[(R, D, T)] = dry(R, D, T)
        return lags_by[(R, D, T)]

    prog.lag_fn = lag_fn


def _choose_val(opts: list[Val], node: ast.AST, src: Source, add: Callable[[z3.BoolRef], None], tag: str) -> Val:
    if not opts:  # choose(): any value at all (unit taken from the context)
        v0 = z3.FreshReal(tag)
        return Val(v0, False, None)
    is_bool = opts[0].is_bool
    unit = None
    for o in opts:
        if o.is_bool != is_bool:
            raise SpecError(src.node_loc(node), "choose() options must all be numbers or all be conditions")
        if not is_bool and o.unit is not None:
            if unit is not None and unit != o.unit:
                raise SpecError(src.node_loc(node), f"choose() options mix {unit_name(unit)} and {unit_name(o.unit)}")
            unit = o.unit
    v: z3.ExprRef = z3.FreshBool(tag) if is_bool else z3.FreshReal(tag)
    add(z3.Or(*[v == o.term for o in opts]))
    return Val(v, is_bool, unit)


def _compile_init(prog: CcaProgram, s: StateDecl, R: int, mss: z3.ArithRef,
                  add: Callable[[z3.BoolRef], None]) -> Val:
    """Compile a state variable's initial-value expression (constants, params, choose)."""

    class InitScope:
        source = prog.source

        def name(self, ident: str, node: ast.AST) -> Val:
            if ident == "MSS":
                return Val(mss, False, BYTES)
            if ident in ("R", "D"):
                return Val.num(Fraction(R if ident == "R" else 1), SECONDS)
            raise SpecError(prog.source.node_loc(node), f"an initial value may only use constants, MSS, R, D and choose(); found '{ident}'")

        def index(self, ident: str, index: list[int | tuple[str, int]], node: ast.AST) -> Val:
            raise SpecError(prog.source.node_loc(node), "an initial value cannot read the trace")

        def choose(self, options: list[Val], node: ast.AST) -> Val:
            return _choose_val(options, node, prog.source, add, f"init_{s.name}")

        def int_name(self, ident: str) -> int | None:
            return None

    assert s.init is not None
    v = Compiler(InitScope()).expr(s.init)
    if (s.unit is None) != v.is_bool or (v.unit is not None and s.unit is not None and v.unit != s.unit):
        raise SpecError(prog.source.node_loc(s.init),
                        f"initial value of '{s.name}' does not match its declared unit {unit_name(s.unit) if s.unit else 'bool'}")
    return v


def trace_series(tr: Trace, f: int, name: str) -> list[z3.ExprRef]:
    """The per-step terms of a quantity a CCA may read, for flow f (builds beliefs
    and delay booleans on first use)."""
    from ccmatic.beliefs import cbr_beliefs, rate_beliefs
    from ccmatic.network.delay import qdel_bounds

    direct = {"A": tr.A_f, "S": tr.S_f, "Ld": tr.Ld_f, "timeout": tr.timeout_f, "rate": tr.rate_f, "cwnd": tr.cwnd_f}
    if name in direct:
        return list(direct[name][f])
    if name in tr.state_f[f]:
        return list(tr.state_f[f][name])
    if name in ("c_lo", "c_hi"):
        b = rate_beliefs(tr)
        return list((b.c_lo if name == "c_lo" else b.c_hi)[f])
    if name in ("qdel_lo", "qdel_hi"):
        lo, hi = qdel_bounds(tr)
        return list((lo if name == "qdel_lo" else hi)[f])
    if name in ("c_lo_lambda", "q_hi"):
        cb = cbr_beliefs(tr)
        return list((cb.c_lo_lambda if name == "c_lo_lambda" else cb.q_hi)[f])
    raise KeyError(name)


def compile_into(prog: CcaProgram, tr: Trace, flow: int, enc: Encoding | None = None,
                 holes: dict[str, Fraction | Val] | None = None) -> None:
    """Add the CCA's constraints for one flow to ``enc`` (default ``tr.enc``).

    A template needs ``holes`` (a candidate: one value per hole).  Beliefs the CCA
    reads are built on first use and always go to ``tr.enc``."""
    if prog.sim_only:
        raise SpecError(Loc(prog.path, 1, 1), "this CCA file is marked simulator-only (nonlinear arithmetic)",
                        "use it with 'ccmatic simulate'; verify needs a linear CCA")
    if prog.is_template and holes is None:
        first = next(iter(prog.holes.values()))
        raise SpecError(first.loc, f"'{prog.name}' is a template with holes ({', '.join('?' + h for h in prog.holes)})",
                        "run 'ccmatic synth' on it, or fill the holes to get a concrete CCA")
    hole_vals = {h: (v if isinstance(v, Val) else Val.num(v)) for h, v in (holes or {}).items()}
    m = tr.model
    R, T = m.R, tr.T
    f = flow
    e = tr.enc if enc is None else enc
    tr.has_rate[f] = prog.sets_rate
    tr.has_cwnd[f] = prog.sets_cwnd
    states: dict[str, list[z3.ExprRef]] = {}
    for s in prog.states:
        if s.unit is None:
            states[s.name] = [z3.Bool(f"{s.name}_{f},{t}") for t in range(T)]
        else:
            states[s.name] = [z3.Real(f"{s.name}_{f},{t}") for t in range(T)]
    tr.state_f[f] = states
    tr.state_units.update({s.name: s.unit for s in prog.states})

    def series(name: str) -> list[z3.ExprRef]:
        return trace_series(tr, f, name)

    t0 = prog.warmup(R, m.D, T)
    for t in range(T):
        if t < t0:
            # warm-up: initial conditions are free (non-negative outputs; rate and
            # cwnd are clamped at 0 by the sending rule anyway)
            if prog.sets_rate:
                e.add("CCA warm-up", tr.rate_f[f][t] >= 0)
            if prog.sets_cwnd:
                e.add("CCA warm-up", tr.cwnd_f[f][t] >= 0)
            for s in prog.states:
                if s.init is not None:
                    v = _compile_init(prog, s, R, tr.MSS, lambda c: e.add("CCA state init", c))
                    e.add("CCA state init", states[s.name][t] == v.term)
            continue

        def fetch(name: str, lag: int, t: int = t) -> z3.ExprRef:
            if t - lag < 0:  # would wrap around to the last step: the warm-up is wrong
                raise RuntimeError(f"{prog.path}: step {t} reads {name} {lag} steps back, before step 0")
            return series(name)[t - lag]

        def on_choose(opts: list[Val], node: ast.AST, t: int = t) -> Val:
            v = _choose_val(opts, node, prog.source, lambda c: e.add("CCA choose", c), f"choose_{f}_{t}")
            tr.extra_vars.append(v.term)
            return v

        scope = _StepScope(prog, R, m.D, T, tr.MSS, fetch, on_choose, hole_vals if prog.is_template else None)
        _Executor(scope).run(prog.body)
        env = scope.env
        for name, var in (("rate", tr.rate_f[f][t]), ("cwnd", tr.cwnd_f[f][t])):
            if (name == "rate" and prog.sets_rate) or (name == "cwnd" and prog.sets_cwnd):
                val = env[name].term if name in env else series(name)[t - 1]
                e.add(f"CCA {prog.name}", var == val)
        for s in prog.states:
            val = env[s.name].term if s.name in env else states[s.name][t - 1]
            e.add(f"CCA {prog.name}", states[s.name][t] == val)


def step_outputs_on_values(prog: CcaProgram, R: int, D: int, T: int, t: int, mss: Fraction,
                           value: Callable[[str, int], Fraction | bool],
                           holes: dict[str, z3.ArithRef]) -> dict[str, z3.ExprRef]:
    """The template's outputs (rate, cwnd, state) at step t as terms over the hole
    variables, when every observation takes its value from a concrete trace
    (``value(name, step)``).  Used by the CEGIS generator for Eq. B.1.4 pruning."""
    from ccmatic.lang.expr import rat

    def fetch(name: str, lag: int) -> z3.ExprRef:
        v = value(name, t - lag)
        return z3.BoolVal(v) if isinstance(v, bool) else rat(v)

    def on_choose(opts: list[Val], node: ast.AST) -> Val:
        raise SpecError(prog.source.node_loc(node), "choose() cannot be used in a synthesis template")

    hv = {h: Val(x, False, None, None, True) for h, x in holes.items()}
    scope = _StepScope(prog, R, D, T, rat(mss), fetch, on_choose, hv)
    _Executor(scope).run(prog.body)
    out: dict[str, z3.ExprRef] = {}
    for name in ("rate", "cwnd"):
        if (name == "rate" and prog.sets_rate) or (name == "cwnd" and prog.sets_cwnd):
            out[name] = scope.env[name].term if name in scope.env else fetch(name, 1)
    for s in prog.states:
        out[s.name] = scope.env[s.name].term if s.name in scope.env else fetch(s.name, 1)
    return out
