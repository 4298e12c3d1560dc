"""The exact re-check of many models of one encoding, compiled once.

A CEGIS run re-checks every counterexample against the same constraints (the
network, the template with the candidate's holes bound, the negated property).
:class:`CompiledCheck` translates those constraints once into one straight-line
Python function over :class:`fractions.Fraction` and ``bool`` (one local per
shared subterm, in dependency order) and then, per model, reads only the variables
the constraints mention, straight from their declarations.

It computes exactly what :class:`~ccmatic.engine.recheck.Evaluator` computes: each
node is the same expression of :mod:`ccmatic.engine.exact_ops`' table, written here
over the names of its computed children; it is faster because nothing is
interpreted per node (``tests/test_recheck.py`` checks that both agree with Z3 on
random formulas).  One difference in order: every subterm is computed, including the branch an ``If``
does not take.  Constraints with a division by anything but a non-zero numeral are
therefore not compiled (:func:`compile_check` returns ``None``) and are left to the
interpreter, which evaluates only the branch taken.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import z3

from ccmatic.engine import exact_ops as tags  # the node tags
from ccmatic.engine.exact_ops import NAMES, render
from ccmatic.engine.recheck import (
    Evaluator,
    FormulaCache,
    Node,
    RecheckError,
    Value,
    interp_value,
)

Tagged = tuple[str, z3.BoolRef]

_NUMERALS = 1 << 16  # parsed numerals kept for the next models (many values recur)


class _Writer:
    """Writes the function: one assignment per node, children first."""

    def __init__(self, cache: FormulaCache) -> None:
        self.cache = cache
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        self.consts: dict[str, object] = dict(NAMES)
        self.vars: list[tuple[str, z3.ExprRef]] = []

    def name(self, n: Node) -> str:
        hit = self.names.get(id(n))
        if hit is None:
            hit = self.names[id(n)] = self._write(n)
        return hit

    def _write(self, n: Node) -> str:
        tag = n[0]
        if tag in (tags.NUM, tags.BOOL):
            nm = f"k{len(self.consts)}"
            self.consts[nm] = n[1]
            return nm
        if tag == tags.VAR:
            nm = f"v{len(self.vars)}"
            self.lines.append(f"{nm} = V[{len(self.vars)}]")
            self.vars.append((n[2], n[1]))
            return nm
        if tag == tags.DIV and not (n[1][1][0] == tags.NUM and n[1][1][1] != 0):
            raise _NotCompiled
        ch = [self.name(c) for c in n[1]]
        nm = f"t{len(self.lines)}"
        every = "(" + ", ".join(ch) + ",)" if ch else "()"
        self.lines.append(f"{nm} = {render(tag, ch, every, n[2] if len(n) > 2 else None)}")
        return nm


class _NotCompiled(Exception):
    pass


class CompiledCheck:
    """One encoding's constraints as a Python function of its variables' values."""

    def __init__(self, cache: FormulaCache, constraints: Sequence[Tagged]) -> None:
        w = _Writer(cache)
        outs = [w.name(cache.node(c)) for _tag, c in constraints]
        src = "def check(V):\n    " + "\n    ".join([*w.lines, f"return ({', '.join(outs)},)"]) + "\n"
        env: dict[str, object] = dict(w.consts)
        exec(compile(src, "<ccmatic re-check>", "exec"), env)  # noqa: S102 (source written above from the nodes)
        self._fn: Callable[[list[Value]], tuple[Value, ...]] = env["check"]  # type: ignore[assignment]
        self.cache = cache
        self.constraints = list(constraints)
        self.vars = w.vars
        self._decls = [e.decl().ast for _n, e in w.vars]
        self._numerals: dict[str, Fraction] = {}

    def recheck(self, model: z3.ModelRef, bind: dict[str, Value] | None = None) -> Evaluator:
        """As :func:`~ccmatic.engine.recheck.recheck`: evaluate every constraint
        exactly; raise :class:`RecheckError` naming the first violated one.  The
        returned evaluator knows every variable's value (for display and pruning)."""
        ev = Evaluator(model, self.cache, bind)
        values = self._read(ev)
        for ok, (tag, c) in zip(self._fn(values), self.constraints):
            if ok is not True:
                raise RecheckError(f"constraint [{tag}] is violated by the solver's model: {c}")
        return ev

    def _read(self, ev: Evaluator) -> list[Value]:
        """The variables' values: bound ones from ``bind``, the others from the model's
        interpretation of their declarations (completed by Z3 when it has none)."""
        ctx, m = ev.model.ctx.ref(), ev.model.model
        known, out = ev.vars, []
        for (name, e), d in zip(self.vars, self._decls):
            v = known.get(name)
            if v is None:
                v = known[name] = self._value(ctx, m, d, ev, name, e)
            out.append(v)
        return out

    def _value(self, ctx: object, m: object, d: object, ev: Evaluator, name: str, e: z3.ExprRef) -> Value:
        a = z3.Z3_model_get_const_interp(ctx, m, d)
        if not a:  # a null pointer: the model leaves it out
            return ev.var(e, name)
        v = interp_value(ctx, a, self._parse)
        return ev.var(e, name) if v is None else v

    def _parse(self, s: str) -> Fraction:
        """A numeral string as a rational, parsed once (many values recur)."""
        f = self._numerals.get(s)
        if f is None:
            if len(self._numerals) > _NUMERALS:
                self._numerals.clear()
            f = self._numerals[s] = Fraction(s)
        return f


def compile_check(cache: FormulaCache, constraints: Sequence[Tagged]) -> CompiledCheck | None:
    """The constraints compiled, or ``None`` where only the interpreter is safe (a
    division by a term that is not a non-zero numeral)."""
    try:
        return CompiledCheck(cache, constraints)
    except _NotCompiled:
        return None
