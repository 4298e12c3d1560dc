"""The template unit analysis (ccmatic.spec.template_units): its conflict conditions,
given their one meaning (ccmatic.semantics.evaluate, exact rationals), hold of a
candidate exactly when checking that candidate's CCA strictly finds a unit error."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import pytest

from ccmatic.core.errors import SpecError
from ccmatic.core.units import BYTES, SECONDS
from ccmatic.semantics.domain import EXACT
from ccmatic.semantics.evaluate import Context, value
from ccmatic.spec import template_tree as tt
from ccmatic.spec.cca import load_cca
from ccmatic.spec.template_fill import fill_template
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


def test_template_tree_reads_carry_the_step_checkers_units(tmp_path: Path) -> None:
    """The template's checked form resolves each read once, with the unit the step
    checker gives it (R in seconds, MSS in bytes, c_lo in bytes/second), and marks
    holes and temporaries as such rather than as reads."""
    path = tmp_path / "t.cca"
    path.write_text("x = ?a * c_lo + ?b * MSS / R\nrate = x + ?c * S[t - 1] / R\n")
    prog = load_cca(path)
    units = {}
    for st in tt.template_of(prog).body:
        for n in tt.walk(st):
            if isinstance(n, tt.Read):
                units[n.name] = n.unit
    assert units == {"c_lo": BYTES / SECONDS, "MSS": BYTES, "R": SECONDS, "S": BYTES, "t": None}
    second = tt.template_of(prog).body[1]
    assert isinstance(second, tt.Assign) and second.unit == BYTES / SECONDS
    assert isinstance(second.value, tt.Bin) and isinstance(second.value.a, tt.Local)


def test_filling_writes_the_template_as_written(tmp_path: Path) -> None:
    """A candidate is written with the template's own spelling (R, MSS / R, 0.5,
    comprehensions, elif), its values as exact fractions, and zero and unit factors
    dropped; the file it writes loads as a plain CCA."""
    path = tmp_path / "t.cca"
    path.write_text("q: bytes\nif ?a * c_lo > 0:\n    q = ?b * 0.5 * MSS + ?a * R * c_lo\nelse:\n"
                    "    if ?b * qdel_lo > R:\n        q = MSS\n    else:\n        q = ?b * 2 * MSS\n"
                    "rate = max(c_lo, ?a * sum(S[t - i] for i in range(1, 3)) / R - ?b * MSS / R)\n")
    prog = load_cca(path)
    text = fill_template(prog, {"a": Fraction(1), "b": Fraction(-1, 2)}, "made by a test")
    assert text == ("# made by a test\nq: bytes\nif c_lo > 0:\n    q = -(1 / 2) * 0.5 * MSS + R * c_lo\n"
                    "elif -(1 / 2) * qdel_lo > R:\n    q = MSS\nelse:\n    q = -(1 / 2) * 2 * MSS\n"
                    "rate = max(c_lo, sum((S[t - i] for i in range(1, 3))) / R - -(1 / 2) * MSS / R)\n")
    out = tmp_path / "filled.cca"
    out.write_text(text)
    assert not load_cca(out).is_template
