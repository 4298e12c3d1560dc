"""A code-generating float domain: the one semantics emits a Python function.

Running a CCA step (:func:`ccmatic.semantics.cca.run_step`) over :class:`PyDomain`
evaluates nothing: each operation appends one line ``tN = <expr>`` and its value is
the temporary's name, as over C text (:mod:`ccmatic.export.cdomain`) or Z3 terms.
The lines become one straight-line function that computes, with Python's floats,
what the interpreter computes over :data:`~ccmatic.semantics.domain.FLOAT`:

* every operation is :class:`~ccmatic.semantics.domain.FloatDomain`'s, on the same
  operands in the same order, so each value is the same double;
* constants are folded by ``FLOAT`` itself;
* nothing is decided but constants, so both branches of a condition are computed
  and joined by ``(a if c else b)``.  A division by zero or a failed power must not
  raise on a branch not taken, so the generated code computes NaN there
  (:func:`_div`, :func:`_pow`) and also returns whether any such operation gave
  NaN; if one did, :class:`CompiledStep` runs the step again through the
  interpreter, which evaluates only the branches taken: the same result where the
  failure was on a branch not taken (a guarded division), the interpreter's one
  error line where it was not.

An adversary's ``choose()`` is drawn only where the interpreter would draw it: the
evaluator tells the domain which side of which condition it is generating
(:attr:`~ccmatic.semantics.evaluate.Context.guard`), and the call is guarded by that
path, so the draws, and the simulator's random stream, are the interpreter's.  (A
``choose()`` inside ``and``, ``or`` or ``==>``, which the interpreter evaluates
lazily, is not compiled: :func:`compile_step` returns None.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ccmatic.core.errors import EngineError
from ccmatic.semantics.cca import run_step
from ccmatic.semantics.domain import FLOAT
from ccmatic.semantics.evaluate import Context, run
from ccmatic.semantics.textdomain import TextDomain
from ccmatic.spec import ir
from ccmatic.spec.step import StepCode

Value = float | bool
Fetch = Callable[[str, int], Value]
Param = Callable[[str], Value]
Chooser = Callable[[list[Value], ir.Choose], Value]

_OPS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@dataclass(frozen=True, slots=True)
class PyVal:
    """A Python expression (a temporary, an argument or a literal) and, for a
    constant, its value."""

    expr: str
    const: Value | None = None


class PyDomain(TextDomain[PyVal]):
    """Emits one Python line per operation (see the module doc)."""

    name = "python"

    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[tuple[str, int], str] = {}   # (name, lag) -> argument variable
        self.params: dict[str, str] = {}
        self.risky: list[str] = []   # the temporaries that are NaN where FLOAT raises
        self.path: list[str] = []    # the conditions of the sides being generated
        self.choices: list[ir.Choose] = []

    def temporary(self, k: int) -> str:
        return f"t{k}"

    def line(self, target: str, expr: str) -> str:
        return f"{target} = {expr}"

    def value(self, expr: str) -> PyVal:
        return PyVal(expr)

    def join(self, kept: list[PyVal], absorbing: bool) -> str:
        return f"{'any' if absorbing else 'all'}(({', '.join(k.expr for k in kept)},))"

    def select(self, c: PyVal, a: PyVal, b: PyVal) -> str:
        return f"({a.expr} if {c.expr} else {b.expr})"

    def _const(self, x: Value) -> PyVal:
        return PyVal(repr(x), x)

    def num(self, x: Fraction) -> PyVal:
        return self._const(FLOAT.num(x))

    def whole(self, k: int) -> PyVal:
        return self._const(FLOAT.whole(k))

    def boolean(self, b: bool) -> PyVal:
        return self._const(b)

    def _binary(self, op: Callable[[Any, Any], Any], text: str, a: PyVal | bool, b: PyVal | bool) -> PyVal:
        a, b = self._v(a), self._v(b)
        if a.const is not None and b.const is not None:
            return self._const(op(a.const, b.const))
        return self.emit(text.format(a.expr, b.expr))

    def add(self, a: PyVal, b: PyVal) -> PyVal:
        return self._binary(FLOAT.add, "{} + {}", a, b)

    def sub(self, a: PyVal, b: PyVal) -> PyVal:
        return self._binary(FLOAT.sub, "{} - {}", a, b)

    def mul(self, a: PyVal, b: PyVal) -> PyVal:
        return self._binary(FLOAT.mul, "{} * {}", a, b)

    def div(self, a: PyVal, b: PyVal) -> PyVal:
        if a.const is not None and b.const is not None and b.const != 0:
            return self._const(FLOAT.div(a.const, b.const))
        return self._risky(f"_div({a.expr}, {b.expr})")

    def pow(self, a: PyVal, b: PyVal) -> PyVal:
        if a.const is not None and b.const is not None:
            try:
                return self._const(FLOAT.pow(a.const, b.const))
            except (ZeroDivisionError, ValueError, OverflowError):
                pass
        return self._risky(f"_pow({a.expr}, {b.expr})")

    def _risky(self, expr: str) -> PyVal:
        v = self.emit(expr)
        self.risky.append(v.expr)
        return v

    def neg(self, a: PyVal) -> PyVal:
        if a.const is not None:
            return self._const(FLOAT.neg(a.const))
        return self.emit(f"-{a.expr}")

    def sum(self, items: list[PyVal]) -> PyVal:
        if all(it.const is not None for it in items):
            return self._const(FLOAT.sum([it.const for it in items]))
        return self.emit(f"float(0 + {' + '.join(it.expr for it in items)})" if items else "0.0")

    def _cmp(self, op: str, a: PyVal | bool, b: PyVal | bool) -> PyVal:
        return self._binary(getattr(FLOAT, op), "{} " + _OPS[op] + " {}", a, b)

    def lt(self, a: PyVal, b: PyVal) -> PyVal:
        return self._cmp("lt", a, b)

    def le(self, a: PyVal, b: PyVal) -> PyVal:
        return self._cmp("le", a, b)

    def gt(self, a: PyVal, b: PyVal) -> PyVal:
        return self._cmp("gt", a, b)

    def ge(self, a: PyVal, b: PyVal) -> PyVal:
        return self._cmp("ge", a, b)

    def eq(self, a: PyVal, b: PyVal) -> PyVal:
        return self._cmp("eq", a, b)

    def ne(self, a: PyVal, b: PyVal) -> PyVal:
        return self._cmp("ne", a, b)

    def not_(self, a: PyVal | bool) -> PyVal:
        v = self._v(a)
        if v.const is not None:
            return self._const(FLOAT.not_(v.const))
        return self.emit(f"not {v.expr}")

    def implies(self, a: PyVal | bool, b: PyVal | bool) -> PyVal:
        known = self.decide(a)
        if known is not None:
            return self._const(True) if not known else self._v(self.or_([False, b]))
        bv = self._v(b)
        return self.emit(f"(not {self._v(a).expr}) or bool({bv.expr})")

    # -- the step's inputs -------------------------------------------------------------
    def read(self, name: str, lag: int) -> PyVal:
        var = self.reads.get((name, lag))
        if var is None:
            var = self.reads[(name, lag)] = f"r{len(self.reads)}"
        return PyVal(var)

    @contextmanager
    def guard(self, c: PyVal | bool, side: bool) -> Iterator[None]:
        v = self._v(c)
        self.path.append(v.expr if side else f"not {v.expr}")
        try:
            yield
        finally:
            self.path.pop()

    def choose(self, opts: list[PyVal], node: ir.Choose) -> PyVal:
        """The adversary's pick, drawn only on the path the interpreter takes."""
        self.choices.append(node)
        call = f"_choose({len(self.choices) - 1}, [{', '.join(self._v(o).expr for o in opts)}])"
        if not self.path:
            return self.emit(call)
        return self.emit(f"{call} if ({') and ('.join(self.path)}) else 0.0")

    def param(self, name: str) -> PyVal:
        var = self.params.get(name)
        if var is None:
            var = self.params[name] = f"p{len(self.params)}"
        return PyVal(var)


def _div(a: float, b: float) -> float:
    """FLOAT's a / b, or NaN where it raises (a zero divisor)."""
    return math.nan if b == 0 else float(a) / float(b)


def _pow(a: float, b: float) -> float:
    """FLOAT's a ** b, or NaN where it raises."""
    try:
        return float(FLOAT.pow(a, b))
    except (ZeroDivisionError, ValueError, OverflowError):
        return math.nan


@dataclass
class CompiledStep:
    """A CCA step as one Python function (see the module doc); call it as
    :func:`~ccmatic.semantics.cca.run_step` over ``FLOAT`` is called."""

    code: StepCode
    source: str
    reads: tuple[tuple[str, int], ...]
    params: tuple[str, ...]
    names: tuple[str, ...]
    choices: tuple[ir.Choose, ...]
    fn: Callable[..., tuple[Value, ...]] = field(repr=False)

    def __call__(self, fetch: Fetch, param: Param, choose: Chooser | None = None,
                 read: list[Value] | None = None) -> dict[str, Value]:
        """``read``: the values of :attr:`reads` if the caller has them at hand (else
        ``fetch`` gives each)."""
        drawn: list[Value] = []

        def pick(i: int, opts: list[Value]) -> Value:
            if choose is None:
                raise EngineError("this step draws a choice and has no chooser")
            v = choose(opts, self.choices[i])
            drawn.append(v)
            return v

        args = (read if read is not None else [fetch(n, lag) for n, lag in self.reads]) + [param(p) for p in self.params]
        *values, failed = self.fn(pick, *args)
        if failed:  # a division by zero or a failed power somewhere: the interpreter decides
            replay = iter(drawn)
            return run_step(self.code, FLOAT, fetch, param, lambda opts, node: next(replay))
        return dict(zip(self.names, values, strict=True))


def _no_choice(opts: list[Value], node: ir.Choose) -> Value:
    raise EngineError("a compiled step has no choose()")


def _lazy_choice(stmts: tuple[ir.Stmt, ...]) -> bool:
    """Whether a choose() sits inside and/or/==> (evaluated lazily by the interpreter)."""
    return any(isinstance(e, (ir.Logic, ir.Implies)) and any(isinstance(x, ir.Choose) for x in ir.walk(e))
               for e in ir.walk_stmts(stmts))


def compile_step(code: StepCode) -> CompiledStep | None:
    """The step as a Python function, or None where it is not compiled (a
    ``choose()`` the interpreter evaluates lazily, or a step the interpreter runs
    only path by path)."""
    if _lazy_choice(code.body):
        return None
    d = PyDomain()
    cx: Context[PyVal] = Context(d, fetch=d.read, param=d.param, choose=d.choose, guard=d.guard)
    try:
        run(code.body, cx)
    except EngineError:
        return None
    outs = [d._v(cx.env[n]) if n in cx.env else d.read(n, 1) for n, _ in code.outputs]
    args = ["_choose", *d.reads.values(), *d.params.values()]
    body = [f"    {line}" for line in d.lines]
    failed = " or ".join(f"{t} != {t}" for t in d.risky) or "False"  # NaN: x != x
    source = "\n".join([f"def step({', '.join(args)}):", *body,
                        f"    return ({''.join(o.expr + ', ' for o in outs)}{failed})", ""])
    scope: dict[str, Any] = {"_div": _div, "_pow": _pow}
    exec(compile(source, f"<step of {len(code.body)} statements>", "exec"), scope)  # noqa: S102 - our own text
    return CompiledStep(code, source, tuple(d.reads), tuple(d.params), tuple(n for n, _ in code.outputs),
                        tuple(d.choices), scope["step"])
