"""The generator's pruning by counterexamples (thesis Eq. B.1.4): the next candidate
must not make the same choices (rate, cwnd, state) at every step of a trace that
refuted one.

The clause is decided over the hole domains (:mod:`ccmatic.encode.finite`): equal
sets of candidates, and far easier for the generator's solver than disequalities of
real terms.  A template outside guarded linear forms gets the clause over Z3 terms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction

import z3

from ccmatic.encode.cca import outputs_on_values
from ccmatic.encode.finite import Form, FormBuilder, HoleDomain, NotLinear, differs, or_
from ccmatic.semantics.domain import Domain, V
from ccmatic.semantics.z3domain import Z3, rat
from ccmatic.spec.step import StepCode

Values = dict[str, dict[int, list[Fraction | bool]]]  # name -> flow -> per-step values


class Pruner:
    def __init__(self, code: StepCode, flows: int, T: int, hole_vars: dict[str, z3.ArithRef],
                 domains: dict[str, tuple[Fraction, ...]]) -> None:
        self.code, self.flows, self.T, self.hole_vars = code, flows, T, hole_vars
        self.domain = HoleDomain(domains)
        self.forms = FormBuilder(hole_vars, domains)
        self.decided = True  # False: always over Z3 terms (for comparisons)

    def clause(self, values: Values, mss: Fraction) -> z3.BoolRef:
        """On this trace's observations, differ from its recorded choices at some
        step of some flow."""
        if self.decided:
            try:
                return self.forms.build(self._decided(values, mss))
            except NotLinear:
                pass
        return self._over_terms(values, mss)

    def _outputs(self, values: Values, mss: Fraction, d: Domain[V],
                 hole: Callable[[str], V]) -> Iterator[tuple[V, Fraction | bool]]:
        """Each output at each step of each flow over ``d``, with its recorded value."""
        for f in range(self.flows):
            for t in range(self.code.warmup, self.T):
                def value(name: str, step: int, f: int = f) -> Fraction | bool:
                    return values[name][f][step]
                outs = outputs_on_values(self.code, t, mss, value, d, hole)
                for name, _b in self.code.outputs:
                    yield outs[name], values[name][f][t]

    def _decided(self, values: Values, mss: Fraction) -> Form:
        d = self.domain
        return or_([differs(d, out, rec) for out, rec in self._outputs(values, mss, d, d.hole)])

    def _over_terms(self, values: Values, mss: Fraction) -> z3.BoolRef:
        return z3.Or(*[out != (z3.BoolVal(rec) if isinstance(rec, bool) else rat(rec))
                       for out, rec in self._outputs(values, mss, Z3, self.hole_vars.__getitem__)])
