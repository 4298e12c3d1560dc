"""A CCA's constraints: its step (:func:`ccmatic.semantics.cca.run_step`) over Z3
terms at every step after its warm-up (symbolic execution into If-terms, thesis B.1),
with the delay buckets' atoms as literals
(:meth:`ccmatic.encode.trace.SymbolicTrace.rewrite`).

Before the warm-up (the steps whose reads would reach before step 0) rate and cwnd
are free but non-negative and each state variable takes one of its declared initial
values: initial conditions are the adversary's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import z3

from ccmatic.core.errors import EngineError
from ccmatic.encode.trace import Constraints, SymbolicTrace
from ccmatic.semantics.cca import initial_values, run_step
from ccmatic.semantics.domain import Domain, V
from ccmatic.semantics.z3domain import Z3
from ccmatic.spec import ir
from ccmatic.spec.step import StepCode

Choice = tuple[str, ir.Choose, list[z3.ExprRef], z3.ExprRef]


@dataclass
class CcaEncoding:
    """The constraints, and every ``choose()`` made: (where, the call, its options,
    the adversary's pick: a variable or a term)."""

    constraints: Constraints = field(default_factory=Constraints)
    choices: list[Choice] = field(default_factory=list)

    def chooser(self, tr: SymbolicTrace, tag: str,
                as_term: bool = True) -> Callable[[list[z3.ExprRef], ir.Choose], z3.ExprRef]:
        """choose(): one of the options, the adversary's pick (any value without).

        Numeric options in a step (``as_term``) are the term
        ``If(p1, o1, If(p2, o2, ... on))`` over fresh booleans p1..p(n−1), which takes
        exactly the options' values, and no constraint: when the step's branches join
        (:meth:`ccmatic.semantics.z3domain.Z3Domain.ite`), such terms over the same
        options merge into one If (Copa's ``choose(up, down)`` and its ``up``/``down``
        branches are one ``If(g, up, down)``), where a fresh variable equal to one of
        the options would be a real variable and two equalities more per choice.
        Conditions, initial values (one equality to a state variable anyway) and
        ``choose()`` stay a fresh variable, constrained to equal one option."""
        def choose(options: list[z3.ExprRef], node: ir.Choose) -> z3.ExprRef:
            if as_term and options and not node.is_bool:
                picks = [z3.FreshBool(tag) for _ in options[1:]]
                term = options[-1]
                for p, o in zip(reversed(picks), reversed(options[:-1])):
                    term = z3.If(p, o, term)
                tr.extra_vars.extend(picks)
                self.choices.append((tag, node, options, term))
                return term
            v: z3.ExprRef = z3.FreshBool(tag) if node.is_bool else z3.FreshReal(tag)
            if options:
                self.constraints.add("CCA choose", z3.Or(*[v == o for o in options]))
            tr.extra_vars.append(v)
            self.choices.append((tag, node, options, v))
            return v
        return choose


def encode_cca(code: StepCode, tr: SymbolicTrace, f: int, name: str,
               hole: Callable[[str], z3.ExprRef] | None = None) -> CcaEncoding:
    """The CCA's constraints for flow f (``hole``: the value of each template hole)."""
    enc = CcaEncoding()
    e = enc.constraints
    t0 = code.warmup

    for t in range(tr.T):
        if t < t0:
            _warm_up(code, tr, f, t, enc)
            continue

        def fetch(q: str, lag: int, t: int = t) -> z3.ExprRef:
            if t - lag < 0:  # would wrap around to the last step: the warm-up is wrong
                raise EngineError(f"step {t} reads {q} {lag} steps back, before step 0")
            return tr.series(q, f)[t - lag]

        out = run_step(code, Z3, fetch, tr.param, enc.chooser(tr, f"choose_{f}_{t}"), hole)
        for n, _is_bool in code.outputs:
            var = tr.series(n, f)[t]
            e.add(f"CCA {name}", var == out[n])
    # the delay buckets' atoms as literals (equivalent under the encoding's constraints)
    e.items = list(zip([tag for tag, _c in e.items], tr.rewrite([c for _tag, c in e.items])))
    return enc


def _warm_up(code: StepCode, tr: SymbolicTrace, f: int, t: int, enc: CcaEncoding) -> None:
    """Free initial conditions (non-negative outputs; rate and cwnd are clamped at 0
    by the sending rule anyway), state variables at one of their initial values."""
    e = enc.constraints
    if tr.sets_rate:
        e.add("CCA warm-up", tr.rate_f[f][t] >= 0)
    if tr.sets_cwnd:
        e.add("CCA warm-up", tr.cwnd_f[f][t] >= 0)
    init = initial_values(code, Z3, tr.param, enc.chooser(tr, f"init_{f}_{t}", as_term=False))
    for n, v in init.items():
        e.add("CCA state init", tr.state_f[f][n][t] == v)


def outputs_on_values(code: StepCode, t: int, mss: Fraction, value: Callable[[str, int], Fraction | bool],
                      d: Domain[V], hole: Callable[[str], V]) -> dict[str, V]:
    """The template's outputs at step t over domain ``d`` (Z3 terms over the hole
    variables, or :class:`ccmatic.encode.finite.HoleDomain`'s guarded linear forms),
    when every observation takes its value from a concrete trace
    (``value(name, step)``).  Used by the CEGIS generator for Eq. B.1.4 pruning."""

    def fetch(name: str, lag: int) -> V:
        v = value(name, t - lag)
        return d.boolean(v) if isinstance(v, bool) else d.num(v)

    def choose(options: list[V], node: ir.Choose) -> V:
        raise EngineError("a template has no choose() (the checker refuses it)")

    return run_step(code, d, fetch, lambda p: d.num(mss), choose, hole)
