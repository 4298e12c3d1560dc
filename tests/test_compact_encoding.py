"""The encoding's compact forms mean what the plain ones mean (issue 26, Copa at long
horizons): the join of If-terms over the same two values, choose() as a term over
fresh booleans, and the delay buckets' literals in place of ``qdel_hi == dt + 1``.
Each is checked by the solver: no model tells the two forms apart."""

from __future__ import annotations

from dataclasses import replace

import z3

from ccmatic.core.errors import Loc
from ccmatic.encode.problem import build
from ccmatic.engine.verify import query_cca
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query
from ccmatic.semantics.z3domain import join
from ccmatic.spec import ir

LIB = Library.default()


def _valid(f: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.add(z3.Not(f))
    return s.check() == z3.unsat


def test_join_is_if_in_every_model() -> None:
    c, p, q = z3.Bools("c p q")
    x, y, w = z3.Reals("x y w")
    same = [(z3.If(p, x, y), x), (z3.If(p, x, y), y), (x, z3.If(q, x, y)), (y, z3.If(q, x, y)),
            (z3.If(p, x, y), z3.If(q, x, y))]
    other = [(z3.If(p, x, y), z3.If(q, y, x)), (x, w), (z3.If(p, x, y), w)]
    for a, b in same + other:
        assert _valid(join(c, a, b) == z3.If(c, a, b)), (a, b)
    for a, b in same:  # one If over x and y, its condition propositional
        j = join(c, a, b)
        assert {j.arg(1).get_id(), j.arg(2).get_id()} == {x.get_id(), y.get_id()}, j
    for a, b in other:
        assert join(c, a, b).eq(z3.If(c, a, b))


def test_a_chosen_term_takes_exactly_its_options() -> None:
    q = load_query(LIB.require("queries", "ccac/copa_low_util"), LIB, load_objectives(LIB))
    prob = build(replace(q.scenario, T=5), query_cca(q))
    options = [z3.RealVal(1), z3.RealVal(2), z3.RealVal(7)]
    node = ir.Choose((), False, Loc(None, 1, 1))  # the chooser reads only is_bool
    term = prob.cca.chooser(prob.trace, "t")(options, node)
    assert _valid(z3.Or(*[term == o for o in options]))
    for o in options:  # and every option can be picked
        s = z3.Solver()
        s.add(term == o)
        assert s.check() == z3.sat


def test_bucket_literals_are_implied_by_the_buckets() -> None:
    """``qdel_hi == dt + 1`` and bucket dt agree in every model of the delay buckets'
    constraints (Copa's question, T = 6: every step and bucket)."""
    q = load_query(LIB.require("queries", "ccac/copa_low_util"), LIB, load_objectives(LIB))
    prob = build(replace(q.scenario, T=6), query_cca(q))
    lits = prob.trace.literals
    assert len(lits) == 2 * 6 * 6
    s = z3.Solver()
    for _tag, c in prob.derived.items:
        s.add(c)
    s.add(z3.Or(*[atom != lit for atom, lit in lits]))
    assert s.check() == z3.unsat
