"""The template as one linear formula (encode/selectors.py): under a candidate's
assumptions it means exactly what substituting the candidate's values means."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
import z3

from ccmatic.core.options import SynthOptions
from ccmatic.encode.selectors import NotLinear, Selectors
from ccmatic.engine.cegis import Synthesizer
from ccmatic.engine.smt2 import qf_lra_violations
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query

T41 = Path(__file__).resolve().parent.parent / "queries" / "table4_1"


def _synth(name: str, T: int) -> Synthesizer:
    lib = Library.default()
    q = load_query(T41 / f"{name}.toml", lib, load_objectives(lib))
    return Synthesizer(replace(q, scenario=replace(q.scenario, T=T)), SynthOptions())


@pytest.mark.parametrize(("name", "T"), [("G1-T5", 5), ("G4-small", 5), ("G6", 4)])
def test_rewritten_template_equals_the_substituted_cca(name: str, T: int) -> None:
    """For sampled candidates (2- and 3-expression templates, and G6's beliefs):
    template ∧ assumptions ⇔ the substituted CCA constraints, proved by Z3 (unsat of
    the difference), and the rewritten template is pure QF_LRA."""
    syn = _synth(name, T)
    sel = syn.checker.selectors
    assert sel is not None
    cca = [c for _tag, c in syn.problem.cca.constraints.items]
    rewritten = [sel.rewrite(c) for c in cca]
    assert qf_lra_violations(rewritten) == []
    rng = random.Random(0)
    for _ in range(5):
        cand = {h: rng.choice(dom) for h, dom in syn.domains.items()}
        concrete = [c for _tag, c in syn.checker.cca_constraints(cand)]
        s = z3.Solver()
        s.add(*sel.assumptions(cand))
        s.add(z3.And(*rewritten) != z3.And(*concrete))
        assert s.check() == z3.unsat, cand


def test_assumptions_pick_one_value_per_hole() -> None:
    h = z3.Real("?h")
    sel = Selectors({"h": h}, {"h": (Fraction(-1), Fraction(0), Fraction(1, 2))})
    lits = sel.assumptions({"h": Fraction(1, 2)})
    assert len(lits) == 3
    x = z3.Real("x")
    s = z3.Solver()
    s.add(*lits, x == 4, sel.rewrite(h * x) != 2)  # 1/2 * 4
    assert s.check() == z3.unsat
    s = z3.Solver()
    s.add(*lits, x == 4, sel.rewrite(h * x) == 2)
    assert s.check() == z3.sat


def test_a_hole_in_a_divisor_is_not_linear() -> None:
    h, x = z3.Real("?h"), z3.Real("x")
    sel = Selectors({"h": h}, {"h": (Fraction(1), Fraction(2))})
    with pytest.raises(NotLinear):
        sel.rewrite(x / h)
    s = z3.Solver()  # a hole outside a product is fine: a choice among constants
    s.add(*sel.assumptions({"h": Fraction(2)}), sel.rewrite(x + h) != x + 2)
    assert s.check() == z3.unsat
