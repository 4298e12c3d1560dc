"""A template as one linear formula, a candidate as assumptions.

The symbolic encoding of a template multiplies hole variables with trace terms
(``?b0 * c_lo[t]``), which is not linear.  Every hole ranges over a finite domain, so
each product can be written as a choice among its linear instances,
``If(sel_b0_1, 1 * c_lo[t], If(sel_b0_2, 2 * c_lo[t], ...))``, where the selector
booleans say which value the hole takes.  The verifier then holds the whole template
once, and checks a candidate by assuming its selectors (thesis B.1's verifier without
re-encoding the CCA per candidate; learned facts about the network stay in the
solver from one candidate to the next).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import z3

from ccmatic.semantics.z3domain import rat

Candidate = dict[str, Fraction]


class NotLinear(Exception):
    """A hole sits where a choice among values would still not be linear (a divisor)."""


class Selectors:
    def __init__(self, hole_vars: dict[str, z3.ArithRef], domains: dict[str, tuple[Fraction, ...]]) -> None:
        self.domains = domains
        self._hole = {v.get_id(): h for h, v in hole_vars.items()}
        self.sel = {h: {v: z3.Bool(f"sel!{h}!{v}") for v in dom} for h, dom in domains.items()}
        self._off = {h: {v: z3.Not(s) for v, s in sels.items()} for h, sels in self.sel.items()}
        self._memo: dict[int, z3.ExprRef] = {}

    def assumptions(self, cand: Candidate) -> list[z3.BoolRef]:
        """The candidate's selectors: its value's true, every other one false."""
        return [s if v == cand[h] else self._off[h][v] for h in self.domains for v, s in self.sel[h].items()]

    def rewrite(self, e: z3.ExprRef) -> z3.ExprRef:
        """``e`` with every hole (and every product with holes) a choice among values."""
        k = e.get_id()
        hit = self._memo.get(k)
        if hit is None:
            hit = self._rewrite(e)
            self._memo[k] = hit
        return hit

    def _rewrite(self, e: z3.ExprRef) -> z3.ExprRef:
        if not z3.is_app(e):
            return e
        if e.num_args() == 0:
            h = self._hole.get(e.get_id())
            return e if h is None else self._choice([h], lambda vals: rat(vals[0]))
        kids = e.children()
        if z3.is_mul(e):
            holes = [self._hole[c.get_id()] for c in kids if c.get_id() in self._hole]
            if holes:
                rest = [self.rewrite(c) for c in kids if c.get_id() not in self._hole]
                return self._choice(holes, lambda vals: _product(vals, rest))
        if z3.is_div(e) and self._mentions_hole(kids[1]):
            raise NotLinear(f"a hole in a divisor: {e}")
        return e.decl()(*[self.rewrite(c) for c in kids])

    def _choice(self, holes: Sequence[str], build: Callable[[list[Fraction]], z3.ExprRef],
                chosen: tuple[Fraction, ...] = ()) -> z3.ExprRef:
        """A nested If over every value of each hole in ``holes`` (the last value is
        the else branch: the assumptions make exactly one selector true)."""
        if len(chosen) == len(holes):
            return build(list(chosen))
        h = holes[len(chosen)]
        vals = self.domains[h]
        out = self._choice(holes, build, (*chosen, vals[-1]))
        for v in reversed(vals[:-1]):
            out = z3.If(self.sel[h][v], self._choice(holes, build, (*chosen, v)), out)
        return out

    def _mentions_hole(self, e: z3.ExprRef) -> bool:
        if e.get_id() in self._hole:
            return True
        return z3.is_app(e) and any(self._mentions_hole(c) for c in e.children())


def _product(vals: list[Fraction], rest: list[z3.ExprRef]) -> z3.ExprRef:
    coef = Fraction(1)
    for v in vals:
        coef *= v
    if not rest:
        return rat(coef)
    term = rest[0] if len(rest) == 1 else z3.Product(*rest)
    return rat(coef) * term
