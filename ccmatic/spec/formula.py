"""Formulas of queries and proofs: assumptions, objectives, lemmas, states.

They may read everything, hidden network state included (they describe the
scenario and the property, not what the CCA can do).  Trace quantities are indexed
by absolute step (``S[T-1]``; ``S[-1]`` is the last step, as in Python); with N > 1
flows ``X[i, t]`` reads flow i, and summable quantities (``A S L Ld queue``) without a
flow index are the aggregates.  Static facts of the scenario are names too:
``finite_buffer``, ``sets_rate``, ``sets_cwnd`` (true or false).

Reads that the scenario cannot provide (``rate`` of a CCA that sets none, the size
of an infinite buffer) are errors only if they survive constant folding, so a
library formula may write ``(rate[T-1] > rate[1]) if sets_rate else (cwnd[T-1] >
cwnd[1])``.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from fractions import Fraction

from ccmatic.core.errors import SpecError
from ccmatic.core.model import ModelConfig
from ccmatic.core.quantities import (
    PARAMETERS,
    QUANTITIES,
    SIM_OBSERVATIONS,
    SIM_PARAMETERS,
)
from ccmatic.core.scenario import Scenario
from ccmatic.core.source import Definition, Source
from ccmatic.core.units import COUNT, RATE, SECONDS, Unit
from ccmatic.spec import ir
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.elaborate import Elaborator
from ccmatic.spec.source import parse
from ccmatic.spec.typed import BaseScope, Elab, Index, Typed

STATIC_FACTS = ("finite_buffer", "sets_rate", "sets_cwnd")


@dataclass(frozen=True)
class QueryContext:
    """What a formula may read in one scenario (no solver needed)."""

    model: ModelConfig
    T: int
    sets_rate: bool
    sets_cwnd: bool
    states: dict[str, Unit | None]  # the CCA's state variables (None: a condition)

    @staticmethod
    def of(scenario: Scenario, prog: CcaProgram) -> QueryContext:
        return QueryContext(scenario.model, scenario.T, prog.sets_rate, prog.sets_cwnd,
                            {s.name: s.unit for s in prog.states})

    @property
    def N(self) -> int:
        return self.model.N

    def facts(self) -> dict[str, bool]:
        return {"finite_buffer": self.model.buffer.mode != "infinite", "sets_rate": self.sets_rate,
                "sets_cwnd": self.sets_cwnd}


class QueryScope(BaseScope):
    def __init__(self, source: Source, ctx: QueryContext, pending: dict[int, tuple[ir.Expr, SpecError]] | None = None) -> None:
        super().__init__(source)
        self.ctx = ctx
        # reads the scenario cannot provide, by node (kept alive here, so that its id
        # is not reused): an error if the node survives folding
        self.pending: dict[int, tuple[ir.Expr, SpecError]] = {} if pending is None else pending

    def name(self, ident: str, node: ast.AST) -> Typed:
        ctx, m = self.ctx, self.ctx.model
        loc = self.source.node_loc(node)
        if ident == "C":
            return Typed.num(m.C, RATE)
        if ident in ("R", "D", "T", "Dmax", "Dlambda"):
            return Typed.num(Fraction(self.int_name(ident) or 0), SECONDS)
        if ident == "N":
            return Typed.num(Fraction(ctx.N), COUNT)
        if ident in STATIC_FACTS:
            return Typed.boolean(ctx.facts()[ident])
        if ident in ("MSS", "C0", "buffer"):
            p = ir.Param(ident, loc)
            if ident == "buffer" and m.buffer.mode == "infinite":
                self.pending[id(p)] = (p, SpecError(loc, "the buffer is infinite in this model",
                                                    "use a finite/arbitrary buffer mode, or guard with 'finite_buffer'"))
            return Typed(p, False, PARAMETERS[ident].unit)
        if ident in QUANTITIES or ident in ctx.states:
            raise self.err(node, f"'{ident}' is a per-step quantity; index it, e.g. {ident}[T-1]")
        if ident in SIM_OBSERVATIONS or ident in SIM_PARAMETERS:
            raise self.err(node, f"'{ident}' is measured only by the simulator; the models have no such quantity",
                           "state the property over the models' quantities ('ccmatic list' shows them)")
        if ident in ("true", "false"):  # TOML's spelling
            raise self.err(node, f"unknown name '{ident}'", f"write {ident.capitalize()}, as in Python")
        known = ["C", "R", "D", "T", "N", "MSS", "C0", "buffer", *STATIC_FACTS, *QUANTITIES, *ctx.states]
        close = difflib.get_close_matches(ident, known, n=1)
        raise self.err(node, f"unknown name '{ident}'", f"did you mean '{close[0]}'?" if close else None)

    def index(self, ident: str, index: list[Index], node: ast.AST) -> Typed:
        ctx = self.ctx
        if any(isinstance(i, tuple) for i in index):
            raise self.err(node, "'t' is not bound here", "use an absolute step, or 'all(... for t in range(1, T))'")
        ints = [i for i in index if isinstance(i, int)]
        q = QUANTITIES.get(ident)
        if q is not None:
            if (why := _topology_only(q.family, ctx.model)) is not None:
                raise self.err(node, f"'{ident}' exists only in a model {why[0]}", why[1])
            unit, per_flow, summable = q.unit, q.per_flow, q.summable
        elif ident in ctx.states:
            unit, per_flow, summable = ctx.states[ident], True, False
        else:
            return self.name(ident, node)
        flow, step = self._flow_step(ident, ints, per_flow, summable, node)
        if step < 0:
            step += ctx.T
        if not 0 <= step < ctx.T:
            raise self.err(node, f"step {ints[-1]} is outside the trace (0..{ctx.T - 1})")
        at = ir.At(ident, flow, step, unit is None, self.source.node_loc(node))
        if (ident == "rate" and not ctx.sets_rate) or (ident == "cwnd" and not ctx.sets_cwnd):
            self.pending[id(at)] = (at, SpecError(at.loc, f"'{ident}' is not available for this CCA/model",
                                                  f"the CCA never sets {ident}"))
        return Typed(at, unit is None, unit)

    def _flow_step(self, ident: str, ints: list[int], per_flow: bool, summable: bool,
                   node: ast.AST) -> tuple[int | None, int]:
        N = self.ctx.N
        if len(ints) == 2:
            if not per_flow:
                raise self.err(node, f"'{ident}' is shared by all flows; index it by step only")
            if not 0 <= ints[0] < N:
                raise self.err(node, f"flow index {ints[0]} out of range (N = {N})")
            return ints[0], ints[1]
        if len(ints) != 1:
            raise self.err(node, "index with [step] or [flow, step]")
        if not per_flow or (N > 1 and summable):
            return None, ints[0]
        if N > 1:
            raise self.err(node, f"with {N} flows, write {ident}[flow, step]")
        return 0, ints[0]

    def int_name(self, ident: str) -> int | None:
        m = self.ctx.model
        return {"T": self.ctx.T, "R": m.R, "D": m.D, "Dmax": m.net_D, "Dlambda": m.D + m.lambda_extra,
                "N": self.ctx.N}.get(ident)


def _topology_only(family: str, m: ModelConfig) -> tuple[str, str] | None:
    """Why a quantity of this family is missing from model m (what it needs, a hint)."""
    if family == "fifo" and not m.split:
        return ("that splits the bottleneck's output per flow",
                "use N > 1 with fifo = true, per-flow jitter = [...], or topology = \"parking_lot\"")
    if family == "hops" and m.hops == 1:
        return "with two bottlenecks", "use topology = \"parking_lot\""
    return None


class DefinitionScope(QueryScope):
    """A query scope with named constants and definitions (``name`` or ``name(t)``,
    expanded where used; ``name(k)`` with ``t = k``, negative k from the end)."""

    def __init__(self, source: Source, ctx: QueryContext, constants: dict[str, Typed],
                 defines: dict[str, Definition], pending: dict[int, tuple[ir.Expr, SpecError]] | None = None,
                 stack: tuple[str, ...] = ()) -> None:
        super().__init__(source, ctx, pending)
        self.text_literals = any(isinstance(c.const, str) for c in constants.values())
        self.constants = constants
        self.defines = defines
        self.stack = stack

    def sub(self, source: Source, name: str) -> DefinitionScope:
        """The scope a definition's body is elaborated in."""
        return DefinitionScope(source, self.ctx, self.constants, self.defines, self.pending, (*self.stack, name))

    def name(self, ident: str, node: ast.AST) -> Typed:
        if ident in self.constants:
            return self.constants[ident]
        d = self.defines.get(ident)
        if d is not None:
            if d.params:
                raise self.err(node, f"'{ident}' takes a step argument", f"write {ident}(0) or {ident}(-1)")
            return self.expand(d, None, node)
        return super().name(ident, node)

    def call(self, fn: str, node: ast.Call, elab: Elab) -> Typed | None:
        d = self.definition(fn)
        if d is None:
            return None
        if len(node.args) != len(d.params):
            want = "one step argument" if d.params else "no argument"
            raise self.err(node, f"'{fn}' takes {want}")
        step = None
        if d.params:
            v = elab.static_int(node.args[0], allow_t=False)
            assert isinstance(v, int)
            step = v + self.ctx.T if v < 0 else v
            if not 0 <= step < self.ctx.T:
                raise self.err(node, f"step {v} is outside the trace (0..{self.ctx.T - 1})")
        return self.expand(d, step, node)

    def definition(self, fn: str) -> Definition | None:
        return self.defines.get(fn)

    def expand(self, d: Definition, step: int | None, node: ast.AST) -> Typed:
        if d.name in self.stack:
            raise self.err(node, f"definition cycle: {' -> '.join((*self.stack, d.name))}")
        elab = Elaborator(self.sub(d.source, d.name))
        if step is not None:
            elab.loop_vars[d.params[0]] = step
        return elab.expr(body(d.source))


def body(source: Source) -> ast.expr:
    """The expression tree of a formula's text."""
    tree = parse(source, "eval")
    assert isinstance(tree, ast.Expression)
    return tree.body


def check_available(e: ir.Expr, pending: dict[int, tuple[ir.Expr, SpecError]]) -> None:
    """Raise the first unavailable read that survived folding."""
    if pending:
        for n in ir.walk(e):
            hit = pending.get(id(n))
            if hit is not None and hit[0] is n:
                raise hit[1]


def condition(source: Source, scope: QueryScope, t: int | None = None) -> ir.Expr:
    """A condition (of step ``t``, if given) as a checked tree."""
    elab = Elaborator(scope)
    if t is not None:
        elab.loop_vars["t"] = t
    e = elab.boolean(body(source)).expr
    check_available(e, scope.pending)
    return e


def number(source: Source, scope: QueryScope) -> Typed:
    """A numeric formula (a factor, a step) as a checked tree."""
    v = Elaborator(scope).num(body(source))
    check_available(v.expr, scope.pending)
    return v
