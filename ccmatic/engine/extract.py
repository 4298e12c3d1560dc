"""A solver model as a :class:`~ccmatic.core.results.ConcreteTrace` with exact values:
every quantity of the registry the scenario recorded, and the CCA's state."""

from __future__ import annotations

from fractions import Fraction

from ccmatic.core.quantities import QUANTITIES
from ccmatic.core.results import ConcreteTrace, Value
from ccmatic.encode.trace import SymbolicTrace
from ccmatic.engine.recheck import Evaluator


def extract(tr: SymbolicTrace, ev: Evaluator) -> ConcreteTrace:
    T, m = tr.T, tr.model
    params: dict[str, Fraction | None] = {
        "C": m.C, "R": Fraction(m.R), "D": Fraction(m.D), "MSS": ev.num(tr.MSS), "C0": ev.num(tr.C0),
        "buffer": ev.num(tr.buffer) if tr.buffer is not None else None,
    }
    if len(tr.hops) > 1:
        params["C0_2"] = ev.num(tr.hops[1].C0)
    aggregate = {name: [ev.num(tr.term(name, None, t)) for t in range(T)]
                 for name, q in QUANTITIES.items() if q.extract in ("aggregate", "both") and q.family in tr.built}
    flows: list[dict[str, list[Value]]] = []
    for f in range(tr.N):
        d: dict[str, list[Value]] = {name: [ev.ev(x) for x in tr.series(name, f)]
                                     for name, q in QUANTITIES.items()
                                     if q.extract in ("flow", "both") and tr.recorded(name)}
        for name, vs in tr.state_f[f].items():
            d[name] = [ev.ev(x) for x in vs]
        flows.append(d)
    return ConcreteTrace(T, tr.N, params, aggregate, flows)
