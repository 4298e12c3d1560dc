"""The template unit analysis (ccmatic.spec.template_units): its conflict conditions,
given their one meaning (ccmatic.semantics.evaluate, exact rationals), hold of a
candidate exactly when checking that candidate's CCA strictly finds a unit error."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import pytest

from ccmatic.core.errors import SpecError
from ccmatic.semantics.domain import EXACT
from ccmatic.semantics.evaluate import Context, value
from ccmatic.spec.cca import load_cca
from ccmatic.spec.template_units import unit_conflicts

TEMPLATES = {
    # a rate from a belief, a delay and a per-step constant: only one kind may be weighted
    "sum": "rate = ?a * c_lo + ?b * R + ?c * MSS / R\n",
    # a comparison of a delay with a rate term, and branches that must agree with cwnd
    "branches": ("if ?a * qdel_lo > ?b * c_lo:\n    cwnd = ?c * MSS\nelse:\n"
                 "    cwnd = ?d * c_lo * R + ?c * R\n"),
    # a temporary carries both alternatives into max() and into a state variable
    "temporary": ("q: bytes\nx = ?a * S[t - 1] + ?b * R\nq = max(x, ?c * MSS)\nrate = c_lo\n"),
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_conflicts_hold_exactly_of_ill_typed_candidates(tmp_path: Path, name: str) -> None:
    """Over every candidate with holes in {-1, 0, 1}: some conflict condition is true
    iff the strict check of the filled-in CCA reports a unit mismatch; both kinds of
    candidate occur."""
    path = tmp_path / f"{name}.cca"
    path.write_text(TEMPLATES[name])
    prog = load_cca(path)
    conflicts = unit_conflicts(prog).conflicts
    holes = sorted(prog.holes)
    seen = set()
    for values in itertools.product((-1, 0, 1), repeat=len(holes)):
        cand = {h: Fraction(v) for h, v in zip(holes, values)}
        cx = Context(EXACT, hole=cand.__getitem__)
        flagged = any(value(c, cx) is True for c in conflicts)
        try:
            prog.code(1, 1, 10, cand)
            ill_typed = False
        except SpecError as e:
            assert "unit" in e.message, e
            ill_typed = True
        assert flagged == ill_typed, (cand, flagged)
        seen.add(ill_typed)
    assert seen == {True, False}
