"""Pruning clauses decided over the hole domains (encode/finite.py, engine/pruning.py):
equivalent to the clause over Z3 terms for every candidate in the domains."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from ccmatic.core.options import SynthOptions
from ccmatic.encode.finite import MAX_SOLUTIONS, FormBuilder, HoleDomain, NotLinear
from ccmatic.engine.cegis import Synthesizer
from ccmatic.engine.recheck import recheck
from ccmatic.engine.session import Sat
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query
from ccmatic.semantics.z3domain import rat

T41 = Path(__file__).resolve().parent.parent / "queries" / "table4_1"
F = Fraction


def _synth(name: str, T: int) -> Synthesizer:
    lib = Library.default()
    q = load_query(T41 / f"{name}.toml", lib, load_objectives(lib))
    return Synthesizer(replace(q, scenario=replace(q.scenario, T=T)), SynthOptions())


def _in_domains(syn: Synthesizer) -> list[z3.BoolRef]:
    return [z3.Or(*[syn.hvars[h] == rat(v) for v in dom]) for h, dom in syn.domains.items()]


@pytest.mark.parametrize(("name", "T"), [("G1-T5", 5), ("G4-small", 5), ("G6", 4)])
def test_decided_clause_equals_the_clause_over_terms(name: str, T: int) -> None:
    """For counterexamples to sampled candidates: the decided clause ⇔ the clause
    over Z3 terms wherever the holes are in their domains (unsat of the difference),
    and the refuted candidate itself violates it."""
    syn = _synth(name, T)
    rng = random.Random(1)
    found = 0
    for _ in range(40):
        cand = {h: rng.choice(dom) for h, dom in syn.domains.items()}
        r = syn.checker.check(cand, None, lambda: False)
        if not isinstance(r, Sat):
            continue
        bind = {syn.hole_names[h]: v for h, v in cand.items()}
        ev = recheck(r.model, [*syn.checker.base, *syn.problem.cca.constraints.items, syn.checker.neg_prop],
                     syn.fcache, bind)
        values, mss = syn._record_values(ev)
        decided = syn.pruner.forms.build(syn.pruner._decided(values, mss))
        terms = syn.pruner._over_terms(values, mss)
        s = z3.Solver()
        s.add(*_in_domains(syn), decided != terms)
        assert s.check() == z3.unsat, cand
        own = z3.substitute(decided, *[(syn.hvars[h], rat(v)) for h, v in cand.items()])
        assert z3.is_false(z3.simplify(own)), cand
        found += 1
        if found == 4:
            break
    assert found == 4


def _brute(coeffs: dict[str, F], k: F, doms: dict[str, tuple[F, ...]]) -> set[tuple[tuple[str, F], ...]]:
    names = sorted(coeffs)
    return {tuple(zip(names, vals)) for vals in itertools.product(*(doms[h] for h in names))
            if sum((coeffs[h] * v for h, v in zip(names, vals)), F(0)) + k == 0}


VALUES = st.sampled_from([F(-2), F(-3, 2), F(-1), F(0), F(1, 2), F(1), F(2), F(3)])


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), VALUES.filter(bool), min_size=1, max_size=4), VALUES)
def test_equal_sets_are_exact(coeffs: dict[str, F], k: F) -> None:
    doms = {h: (F(-2), F(-1), F(-1, 2), F(0), F(1), F(3, 2), F(2)) for h in "abcd"}
    d = HoleDomain(doms)
    got = d.solutions((tuple(sorted(coeffs.items())), k))
    want = _brute(coeffs, k, doms)
    if got is None:
        assert len(want) > MAX_SOLUTIONS
    else:
        assert set(got) == want


def test_one_hole_inequality_lists_its_values() -> None:
    d = HoleDomain({"a": (F(-1), F(0), F(1), F(2))})
    a = d.hole("a")
    assert d.gt(d.mul(d.num(F(2)), a), d.num(F(1))) == ("or", (("is", "a", F(1)), ("is", "a", F(2))))
    assert d.ge(a, d.num(F(0))) == ("or", (("is", "a", F(0)), ("is", "a", F(1)), ("is", "a", F(2))))
    assert d.lt(a, d.num(F(-1))) is False
    assert d.le(a, d.num(F(2))) is True


def test_two_hole_inequality_stays_a_linear_atom_and_ite_is_guarded() -> None:
    doms = {"a": (F(-1), F(0), F(1)), "b": (F(0), F(1))}
    d = HoleDomain(doms)
    a, b = d.hole("a"), d.hole("b")
    c = d.gt(d.add(a, b), d.num(F(0)))
    assert c == ("cmp", "gt", ((("a", F(1)), ("b", F(1))), F(0)))
    v = d.ite(c, d.mul(d.num(F(3)), b), d.num(F(1)))  # 3b if a + b > 0 else 1
    ne = d.ne(v, d.num(F(3)))
    hv = {"a": z3.Real("a"), "b": z3.Real("b")}
    fb = FormBuilder(hv, doms)
    for av, bv in itertools.product(doms["a"], doms["b"]):
        want = (3 * bv if av + bv > 0 else 1) != 3
        s = z3.Solver()
        s.add(hv["a"] == rat(av), hv["b"] == rat(bv), fb.build(ne) != want)
        assert s.check() == z3.unsat, (av, bv)


def test_products_of_holes_and_holes_in_divisors_are_not_linear() -> None:
    d = HoleDomain({"a": (F(1), F(2)), "b": (F(1), F(2))})
    with pytest.raises(NotLinear):
        d.mul(d.hole("a"), d.hole("b"))
    with pytest.raises(NotLinear):
        d.div(d.num(F(1)), d.hole("a"))
    assert d.div(d.hole("a"), d.num(F(2))).leaves == ((True, ((("a", F(1, 2)),), F(0))),)
