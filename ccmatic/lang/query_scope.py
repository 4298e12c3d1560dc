"""Name resolution for query expressions (assumptions, objectives, lemmas).

Queries may read everything, including hidden network state: they describe the
scenario and the property, not what the CCA can do.  Trace quantities are indexed by
absolute step (``S[T-1]``, ``S[-1]`` is the last step, as in Python); with N > 1
flows ``X[i, t]`` reads flow i, and ``A/S/L/Ld[t]`` are the aggregates.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING

import z3

from ccmatic.errors import SpecError
from ccmatic.lang.expr import Compiler, Val
from ccmatic.lang.source import Source, parse
from ccmatic.lang.units import BYTES, RATE, SECONDS, Unit

if TYPE_CHECKING:
    from ccmatic.trace import Trace

# per-flow series: name -> unit (None = bool)
FLOW_SERIES: dict[str, Unit | None] = {
    "A": BYTES, "S": BYTES, "L": BYTES, "Ld": BYTES, "rate": RATE, "cwnd": BYTES,
    "timeout": None, "c_lo": RATE, "c_hi": RATE, "qdel_lo": SECONDS, "qdel_hi": SECONDS,
    "c_lo_lambda": RATE, "q_hi": BYTES, "queue": BYTES,
}
AGG_SERIES: dict[str, Unit | None] = {"W": BYTES, "tokens": BYTES, "bq": BYTES}
SUMMABLE = {"A", "S", "L", "Ld", "queue"}


class QueryScope:
    def __init__(self, source: Source, tr: Trace,
                 series: Callable[[str, int | None, int], z3.ExprRef]) -> None:
        self.source = source
        self.tr = tr
        self.series = series

    def err(self, node: ast.AST, msg: str, hint: str | None = None) -> SpecError:
        return SpecError(self.source.node_loc(node), msg, hint)

    def name(self, ident: str, node: ast.AST) -> Val:
        tr = self.tr
        m = tr.model
        if ident == "C":
            return Val.num(m.C, RATE)
        if ident in ("R", "D"):
            return Val.num(Fraction(m.R if ident == "R" else m.D), SECONDS)
        if ident == "T":
            return Val.num(Fraction(tr.T), SECONDS)
        if ident == "MSS":
            return Val(tr.MSS, False, BYTES)
        if ident == "C0":
            return Val(tr.C0, False, BYTES)
        if ident == "buffer":
            if tr.buffer is None:
                raise self.err(node, "the buffer is infinite in this model", "use a finite/arbitrary buffer mode")
            return Val(tr.buffer, False, BYTES)
        if ident in FLOW_SERIES or ident in AGG_SERIES or self._is_state(ident):
            raise self.err(node, f"'{ident}' is a per-step quantity; index it, e.g. {ident}[T-1]")
        known = ["C", "R", "D", "T", "MSS", "C0", "buffer"] + list(FLOW_SERIES) + list(AGG_SERIES)
        close = difflib.get_close_matches(ident, known, n=1)
        raise self.err(node, f"unknown name '{ident}'", f"did you mean '{close[0]}'?" if close else None)

    def _is_state(self, ident: str) -> bool:
        return any(ident in d for d in self.tr.state_f)

    def index(self, ident: str, index: list[int | tuple[str, int]], node: ast.AST) -> Val:
        tr = self.tr
        if any(isinstance(i, tuple) for i in index):
            raise self.err(node, "'t' is not bound here", "use an absolute step, or 'all(... for t in range(1, T))'")
        ints = [int(i) for i in index]  # type: ignore[arg-type]
        unit: Unit | None
        flow: int | None
        if ident in FLOW_SERIES:
            unit = FLOW_SERIES[ident]
        elif ident in AGG_SERIES:
            unit = AGG_SERIES[ident]
        elif self._is_state(ident):
            unit = tr.state_units.get(ident)
        else:
            return self.name(ident, node)
        if len(ints) == 2:
            if ident in AGG_SERIES:
                raise self.err(node, f"'{ident}' is shared by all flows; index it by step only")
            flow, step = ints
            if not 0 <= flow < tr.N:
                raise self.err(node, f"flow index {flow} out of range (N = {tr.N})")
        elif len(ints) == 1:
            flow, step = (None if ident in AGG_SERIES else (None if (tr.N > 1 and ident in SUMMABLE) else 0)), ints[0]
            if tr.N > 1 and flow == 0 and ident not in AGG_SERIES:
                raise self.err(node, f"with {tr.N} flows, write {ident}[flow, step]")
        else:
            raise self.err(node, "index with [step] or [flow, step]")
        if step < 0:
            step += tr.T
        if not 0 <= step < tr.T:
            raise self.err(node, f"step {ints[-1]} is outside the trace (0..{tr.T - 1})")
        try:
            term = self.series(ident, flow, step)
        except KeyError:
            raise self.err(node, f"'{ident}' is not available for this CCA/model") from None
        return Val(term, unit is None, unit)

    def choose(self, options: list[Val], node: ast.AST) -> Val:
        raise self.err(node, "choose() is only for CCA files")

    def int_name(self, ident: str) -> int | None:
        m = self.tr.model
        return {"T": self.tr.T, "R": m.R, "D": m.D, "N": self.tr.N}.get(ident)


def compile_bool(source: Source, tr: Trace, series: Callable[[str, int | None, int], z3.ExprRef]) -> z3.BoolRef:
    tree = parse(source, "eval")
    assert isinstance(tree, ast.Expression)
    comp = Compiler(QueryScope(source, tr, series))
    v = comp.boolean(tree.body)
    return v.term
