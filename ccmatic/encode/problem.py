"""A scenario as constraints: the one function that builds every problem.

:func:`build` is pure: it first finds everything the scenario will read (the CCA's
reads and those of every formula that will be asked about it), builds those
quantities, and returns every constraint; compiling a formula afterwards
(:meth:`Problem.formula`) adds nothing, and the result does not depend on the order
in which formulas are compiled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction

import z3

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.quantities import families_needed
from ccmatic.core.scenario import Initial, Scenario
from ccmatic.encode import derived
from ccmatic.encode.cca import CcaEncoding, encode_cca
from ccmatic.encode.network import encode_network, periodic
from ccmatic.encode.trace import Constraints, SymbolicTrace, Tagged
from ccmatic.semantics.evaluate import Context, value
from ccmatic.semantics.z3domain import Z3
from ccmatic.spec import ir
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.formula import QueryContext, QueryScope, condition
from ccmatic.spec.step import HoleValues


@dataclass
class Problem:
    """A scenario's constraints, in groups: the derived quantities the scenario reads
    (delay buckets, beliefs), the CCA, the network (model family, periodicity), the
    initial conditions and the assumptions.
    ``holes`` is the candidate a template was filled with (None: not a template, or
    holes left symbolic)."""

    scenario: Scenario
    prog: CcaProgram
    trace: SymbolicTrace
    derived: Constraints
    cca: CcaEncoding
    network: Constraints
    initial: Constraints
    assumptions: Constraints
    holes: dict[str, Fraction] | None = None
    reads: set[str] = field(default_factory=set)

    @property
    def context(self) -> QueryContext:
        return QueryContext.of(self.scenario, self.prog)

    def base(self, with_cca: bool = True) -> list[Tagged]:
        """Every constraint, in the order they are given to the solver."""
        cca = self.cca.constraints.items if with_cca else []
        return [*self.derived.items, *cca, *self.network.items, *self.initial.items, *self.assumptions.items]

    def formula(self, e: ir.Expr) -> z3.BoolRef:
        """A checked formula over this scenario's trace (it may read only what
        :func:`build` was told it would)."""
        return to_z3(e, self.trace)


def to_z3(e: ir.Expr, tr: SymbolicTrace) -> z3.ExprRef:
    cx: Context[z3.ExprRef] = Context(Z3, at=lambda a: tr.term(a.name, a.flow, a.step), param=tr.param)
    return tr.rewrite([value(e, cx)])[0]


def build(scenario: Scenario, prog: CcaProgram, formulas: Iterable[ir.Expr] = (),
          holes: HoleValues = None, hole_vars: Callable[[str], z3.ExprRef] | None = None) -> Problem:
    """Every constraint of the scenario, for a CCA (a template with its holes left
    symbolic, ``hole_vars`` giving their variables, or filled with a candidate), with
    the quantities that the CCA and ``formulas`` read."""
    m, T = scenario.model, scenario.T
    encodable(prog, holes)
    codes = {R: prog.code(R, m.D, T, holes) for R in sorted({m.flow_R(f) for f in range(m.N)})}
    formulas = list(formulas)
    ctx = QueryContext.of(scenario, prog)
    assumptions = [condition(src, QueryScope(src, ctx)) for src in scenario.assumptions]
    reads = {n for code in codes.values() for n in code.lags} | {n for e in [*formulas, *assumptions] for n in ir.series_read(e)}
    tr = SymbolicTrace(m, T, prog.sets_rate, prog.sets_cwnd, {s.name: s.unit for s in prog.states})
    built = derived.build(tr, families_needed(reads))
    cca = CcaEncoding()
    for f in range(tr.N):
        one = encode_cca(codes[m.flow_R(f)], tr, f, prog.name, hole_vars)
        cca.constraints.extend(one.constraints)
    network = encode_network(tr, scenario.parts)
    if scenario.periodic is not None:
        network.extend(periodic(tr, scenario.periodic, scenario.periodic_all))
    assumed = Constraints()
    for src, e in zip(scenario.assumptions, assumptions):
        assumed.add(f"assume {src.text}", to_z3(e, tr))
    filled = holes if isinstance(holes, dict) else None
    return Problem(scenario, prog, tr, built, cca, network, initial_conditions(tr, scenario.initial, scenario.start),
                   assumed, filled, reads)


def encodable(prog: CcaProgram, holes: HoleValues) -> None:
    """A CCA the solver can take: linear (not simulator-only), holes filled or left
    symbolic on purpose."""
    if prog.sim_only:
        raise SpecError(Loc(prog.path, 1, 1), "this CCA file is marked simulator-only (nonlinear arithmetic)",
                        "use it with 'ccmatic simulate'; verify, synth and prove need a linear CCA")
    if prog.is_template and holes is None:
        first = next(iter(prog.holes.values()))
        raise SpecError(first.loc, f"'{prog.name}' is a template with holes ({', '.join('?' + h for h in prog.holes)})",
                        "run 'ccmatic synth' on it, or fill the holes to get a concrete CCA")


def initial_conditions(tr: SymbolicTrace, initial: Initial, t: int) -> Constraints:
    """``[initial]`` at step t (:class:`ccmatic.core.scenario.Initial`): the same in
    queries and proofs; a proof also asks whether they hold again at its last step."""
    e = Constraints()
    if initial.no_initial_loss:
        for f in range(tr.N):
            e.add("initial: no undetected loss", tr.L_f[f][t] == tr.Ld_f[f][t])
            if t == 0:
                e.add("initial: no loss (curves are shift invariant)", tr.L_f[f][0] == 0)
    if initial.beliefs_consistent:
        if "rate_beliefs" in tr.built:
            for f in range(tr.N):
                lo, hi = tr.derived["c_lo"][f][t], tr.derived["c_hi"][f][t]
                e.add("initial: beliefs consistent", tr.MSS <= lo, lo <= tr.C, tr.C <= hi)
        if "cbr_beliefs" in tr.built:
            e.add("initial: CBR-delay beliefs consistent", cbr_consistent(tr, t))
    return e


def cbr_consistent(tr: SymbolicTrace, t: int) -> z3.BoolRef:
    """CBR-delay beliefs are consistent (§4.2.2.1): C ≥ c_lo_lambda, the buffer belief
    of Eq. 4.2.3, C·R + β ≥ c_lo_lambda·(R + D) (R + D + 1 with the tool's divisor), and
    q_hi ≥ the queue."""
    m = tr.model
    out = []
    for f in range(tr.N):
        cl, qh = tr.derived["c_lo_lambda"][f][t], tr.derived["q_hi"][f][t]
        c = [cl <= tr.C, qh >= tr.bq(t)]
        if tr.buffer is not None:
            c.append(tr.C * m.R + tr.buffer >= cl * (m.R + m.D + m.lambda_extra))
        out.append(z3.And(*c))
    return z3.And(*out)
