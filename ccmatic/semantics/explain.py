"""Why a concrete trace violates a formula: the checked tree (:mod:`ccmatic.spec.ir`)
read once more, over a counterexample's exact values.

Every truth value and every number comes from the one meaning,
:func:`ccmatic.semantics.evaluate.value` over exact rationals, its leaves read from
the :class:`~ccmatic.core.results.ConcreteTrace`; this module only chooses which
parts of a false formula to show, and how:

* a comparison: both sides, their values, and its *margin*, how far it holds
  (lhs − rhs for ``>=``/``>``, rhs − lhs for ``<=``/``<``, −|lhs − rhs| for ``==``):
  zero or negative when it is violated;
* ``and`` (an unrolled ``all(...)``): the conjuncts that fail, earliest first;
* ``or`` (an unrolled ``any(...)``): its disjuncts, all of which fail;
* ``a => b``: the conclusion, its premise holding;
* ``not x``: x, explained as required false (``not (x <= y)`` fails with
  ``x <= y`` holding: the margin of the required ``x > y``).

Each part names the step by which the trace violates it, i.e. the prefix of the
trace that already decides the failure: a comparison's last step read; an ``and``'s
earliest failing conjunct; an ``or``'s latest disjunct.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

from ccmatic.core.errors import EngineError
from ccmatic.core.objectives import ParamValue
from ccmatic.core.quantities import QUANTITIES
from ccmatic.core.results import ConcreteTrace, Value
from ccmatic.core.scenario import Query
from ccmatic.semantics.domain import EXACT
from ccmatic.semantics.evaluate import Context, value
from ccmatic.semantics.network import in_network
from ccmatic.spec import ir
from ccmatic.spec.formula import QueryContext
from ccmatic.spec.objectives import objective_condition, param_values
from ccmatic.spec.render import number, render

#: the failing items of one ``and``/``or`` kept in an explanation (the rest are counted)
MAX_SHOWN = 4

Read = tuple[str, int | None, int]  # a quantity, its flow (None: aggregate or shared), its step
Kind = Literal["compare", "fact", "all", "any", "implies"]

_NEGATE: dict[ir.CmpOp, ir.CmpOp] = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
SYMBOL: dict[ir.CmpOp, str] = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@dataclass(frozen=True)
class Comparison:
    """A violated comparison ``lhs required rhs``.  ``linear``: lhs − rhs as
    coefficients of the reads and a constant, when it is linear (plots draw the
    bound from it)."""

    required: ir.CmpOp
    lhs: str
    rhs: str
    lhs_value: Fraction
    rhs_value: Fraction
    margin: Fraction
    linear: tuple[tuple[tuple[Read, Fraction], ...], Fraction] | None = None

    @property
    def actual(self) -> str:
        """The relation that holds instead, e.g. '<' for a violated '>='."""
        return SYMBOL[_NEGATE[self.required]]


@dataclass(frozen=True)
class Violation:
    """Why a formula (``text``, this instance of it) is false on a trace.

    ``compare``: ``cmp`` says which comparison and by how much; ``fact``: a condition
    that is ``value`` where the formula needs the opposite; ``all``: ``count`` of the
    ``total`` items that must hold fail (``parts``: the first :data:`MAX_SHOWN` of
    them, earliest first); ``any``: none of the ``total`` alternatives holds
    (``parts``: the first few); ``implies``: the premise ``text`` holds and the
    conclusion fails (``parts``: the conclusion)."""

    kind: Kind
    text: str
    step: int | None
    parts: tuple[Violation, ...] = ()
    count: int = 0
    total: int = 0
    cmp: Comparison | None = None
    value: Value | None = None

    def comparisons(self) -> list[Violation]:
        """The violated comparisons shown (kind ``compare``), in order."""
        if self.cmp is not None:
            return [self]
        return [c for p in self.parts for c in p.comparisons()]

    def json(self) -> dict[str, Any]:
        """Exact values as rational strings."""
        d: dict[str, Any] = {"kind": self.kind, "text": self.text, "step": self.step}
        if self.cmp is not None:
            c = self.cmp
            d.update(lhs=c.lhs, op=SYMBOL[c.required], rhs=c.rhs, lhs_value=str(c.lhs_value),
                     rhs_value=str(c.rhs_value), margin=str(c.margin))
        if self.kind == "fact":
            d["value"] = self.value
        if self.kind in ("all", "any"):
            d.update(failing=self.count, of=self.total)
        if self.parts:
            d["parts"] = [p.json() for p in self.parts]
        return d


def trace_context(tr: ConcreteTrace) -> Context[Any]:
    """An exact evaluation whose leaves read the trace and its parameters."""
    return Context(EXACT, at=lambda a: read(tr, a), param=lambda n: _param(tr, n))


def read(tr: ConcreteTrace, a: ir.At) -> Value:
    """A quantity at a step, as a formula reads it (:meth:`ccmatic.encode.trace.SymbolicTrace.term`)."""
    return read_quantity(tr, a.name, a.flow, a.step)


def read_quantity(tr: ConcreteTrace, name: str, flow: int | None, step: int) -> Value:
    """``name`` at ``step``: of one flow, or the aggregate (shared quantities, sums over flows)."""
    q = QUANTITIES.get(name)
    if name in tr.aggregate and (flow is None or (q is not None and not q.per_flow)):
        return tr.aggregate[name][step]
    flows = tr.flows if flow is None else [tr.flows[flow]]
    vals: list[Fraction] = []
    for fl in flows:
        if name in fl:
            v = fl[name][step]
            if flow is not None:
                return v
            vals.append(Fraction(v))
        elif name == "queue" and all(n in fl for n in ("A", "L", "S")):
            vals.append(in_network(EXACT, fl["A"][step], fl["L"][step], fl["S"][step]))
        else:
            raise EngineError(f"the counterexample does not record '{name}'")
    return vals[0] if flow is not None else sum(vals, Fraction(0))


def _param(tr: ConcreteTrace, name: str) -> Fraction:
    v = tr.params.get(name)
    if v is None:
        raise EngineError(f"the counterexample has no value of '{name}'")
    return v


def explain(e: ir.Expr, tr: ConcreteTrace) -> Violation | None:
    """None if the condition holds on the trace; else why it does not."""
    x = _Explainer(trace_context(tr), tr.N > 1)
    return None if x.truth(e) else x.why(e, True)


def last_step(e: ir.Expr) -> int | None:
    """The latest step an expression reads (None: it reads none)."""
    return max((n.step for n in ir.walk(e) if isinstance(n, ir.At)), default=None)


def _later(*steps: int | None) -> int | None:
    return max((s for s in steps if s is not None), default=None)


def _earliest(steps: list[int | None]) -> int | None:
    return min((s for s in steps if s is not None), default=None)


class _Explainer:
    def __init__(self, cx: Context[Any], flows: bool) -> None:
        self.cx = cx
        self.flows = flows  # show flow indices

    def truth(self, e: ir.Expr) -> bool:
        return bool(value(e, self.cx))

    def text(self, e: ir.Expr) -> str:
        return render(e, self.flows)

    def why(self, e: ir.Expr, want: bool) -> Violation:
        """Why ``e`` is not ``want`` (it is not)."""
        if isinstance(e, ir.Not):
            inner = self.why(e.x, not want)
            return inner if inner.kind == "compare" else replace(inner, text=self.text(e))
        if isinstance(e, ir.Cmp) and not isinstance(value(e.a, self.cx), bool):
            return self.compare(e, want)
        if isinstance(e, ir.Logic):
            return self.logic(e, want)
        if isinstance(e, ir.Implies):
            return self.implies(e, want)
        if isinstance(e, ir.Ite):
            taken = self.why(e.a if self.truth(e.c) else e.b, want)
            return replace(taken, step=_later(last_step(e.c), taken.step))
        return Violation("fact", self.text(e), last_step(e), value=self.truth(e))

    def implies(self, e: ir.Implies, want: bool) -> Violation:
        if want:  # the premise holds, the conclusion fails
            concl = self.why(e.b, True)
            return Violation("implies", self.text(e.a), _later(last_step(e.a), concl.step), (concl,))
        parts = ([] if self.truth(e.a) else [self.why(e.a, True)]) + \
            ([self.why(e.b, False)] if self.truth(e.b) else [])
        return Violation("all", self.text(e), _earliest([p.step for p in parts]), tuple(parts), len(parts), 2)

    def logic(self, e: ir.Logic, want: bool) -> Violation:
        every = (e.op == "and") == want  # every item must be `want` (else: some item must be)
        kind: Kind = "all" if every else "any"
        failing = [x for x in e.items if self.truth(x) != want] if every else list(e.items)
        parts: list[Violation] = []
        steps: list[int | None] = []
        count, total = 0, len(e.items)
        for x in failing:  # an 'and' in an 'and' (an 'or' in an 'or') is one list
            w = self.why(x, want)
            steps.append(w.step)
            if w.kind == kind:
                parts += w.parts
                count, total = count + w.count, total - 1 + w.total
            else:
                parts.append(w)
                count += 1
        if every:
            parts.sort(key=lambda w: -1 if w.step is None else w.step)
        step = _earliest(steps) if every else _later(*steps)
        return Violation(kind, self.text(e), step, tuple(parts[:MAX_SHOWN]), count, total)

    def compare(self, e: ir.Cmp, want: bool) -> Violation:
        op = e.op if want else _NEGATE[e.op]
        lhs, rhs = Fraction(value(e.a, self.cx)), Fraction(value(e.b, self.cx))
        margin = {"ge": lhs - rhs, "gt": lhs - rhs, "le": rhs - lhs, "lt": rhs - lhs,
                  "eq": -abs(lhs - rhs), "ne": abs(lhs - rhs)}[op]
        left, right = _linear(e.a, self.cx), _linear(e.b, self.cx)
        linear = None
        if left is not None and right is not None:
            terms = dict(left[0])
            for r, k in right[0].items():
                terms[r] = terms.get(r, Fraction(0)) - k
            linear = (tuple((r, k) for r, k in terms.items() if k != 0), left[1] - right[1])
        c = Comparison(op, self.text(e.a), self.text(e.b), lhs, rhs, margin, linear)
        return Violation("compare", f"{c.lhs} {SYMBOL[op]} {c.rhs}", last_step(e), cmp=c)


def _linear(e: ir.Expr, cx: Context[Any]) -> tuple[dict[Read, Fraction], Fraction] | None:
    """``e`` as coefficients of its reads and a constant, if it is linear."""
    if isinstance(e, ir.At):
        return {(e.name, e.flow, e.step): Fraction(1)}, Fraction(0)
    if isinstance(e, ir.Num | ir.Param):
        return {}, Fraction(value(e, cx))
    if isinstance(e, ir.Neg):
        x = _linear(e.x, cx)
        return None if x is None else ({r: -k for r, k in x[0].items()}, -x[1])
    if not isinstance(e, ir.Arith) or e.op == "pow":
        return None
    a, b = _linear(e.a, cx), _linear(e.b, cx)
    if a is None or b is None:
        return None
    if e.op in ("add", "sub"):
        sign = 1 if e.op == "add" else -1
        terms = dict(a[0])
        for r, k in b[0].items():
            terms[r] = terms.get(r, Fraction(0)) + sign * k
        return terms, a[1] + sign * b[1]
    if e.op == "mul" and (not a[0] or not b[0]):
        k, x = (a[1], b) if not a[0] else (b[1], a)
        return {r: k * c for r, c in x[0].items()}, k * x[1]
    if e.op == "div" and not b[0] and b[1] != 0:
        return {r: c / b[1] for r, c in a[0].items()}, a[1] / b[1]
    return None


# -- objectives -------------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectiveCheck:
    """One objective of a query against a result: ``holds`` True/False on a
    counterexample (``why``: how it fails), True if proved, None if unknown."""

    name: str  # the objective's label, or its kind
    kind: str
    params: dict[str, ParamValue]
    formula: str  # as written
    holds: bool | None
    why: Violation | None = None

    @property
    def title(self) -> str:
        """e.g. 'utilization (min = 0.5)'."""
        ps = ", ".join(f"{k} = {_param_text(v)}" for k, v in self.params.items())
        return f"{self.name} ({ps})" if ps else self.name

    def json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind,
                             "params": {k: v if isinstance(v, bool) else str(v) for k, v in self.params.items()},
                             "formula": self.formula, "holds": self.holds}
        if self.why is not None:
            d.update(violation_json(self.why))
        return d


def violation_json(why: Violation) -> dict[str, Any]:
    """The fields that say how a result's formula (an objective, a lemma's conclusion)
    fails: the step by which it fails, the violated comparisons shown, and the tree."""
    return {"step": why.step, "comparisons": [c.json() for c in why.comparisons()], "violation": why.json()}


def _param_text(v: ParamValue) -> str:
    if isinstance(v, Fraction):
        return number(v)
    return str(v).lower() if isinstance(v, bool) else v


def objective_checks(query: Query, ctx: QueryContext, trace: ConcreteTrace | None,
                     holds: bool | None) -> list[ObjectiveCheck]:
    """Each objective of the query: against the trace of a counterexample, or all
    ``holds`` (True: proved; None: unknown)."""
    out = []
    for o in query.objectives:
        kind = query.library.kinds.get(o.kind) if query.library is not None else None
        params = param_values(kind, o) if kind is not None else {}
        formula = kind.formula.text if kind is not None else (o.source.text if o.source is not None else "")
        why = None
        if trace is not None:
            why = explain(objective_condition(o, query.library, ctx), trace)
        out.append(ObjectiveCheck(o.label or o.kind, o.kind, params, " ".join(formula.split()),
                                  holds if trace is None else why is None, why))
    if trace is not None and not query.exists and all(c.holds for c in out):  # a witness meets its
        # exists conditions, which the exact re-check confirmed; it violates no objective
        raise EngineError("the counterexample violates no objective when evaluated exactly")
    return out
