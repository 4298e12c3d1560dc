"""The encoding is pure: building a problem returns all its constraints, compiling a
formula afterwards adds none, and the result does not depend on the order in which
formulas are given.  The registry of quantities is the one list the docs state."""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction as F

import pytest
from helpers import ROOT, query

from ccmatic.core.model import Buffer, ModelConfig
from ccmatic.core.quantities import OBSERVATIONS, OUTPUTS, PARAMETERS, QUANTITIES
from ccmatic.core.units import unit_name
from ccmatic.encode.problem import build
from ccmatic.engine.verify import property_conditions, query_cca
from ccmatic.io.library import Library

LIB = Library.default()
CCAC = ModelConfig(name="ccac", family="ccac", C=F(100), R=1, D=1, buffer=Buffer("finite", F(2)), loss="droptail")


def _sexprs(cs: list[tuple[str, object]]) -> list[str]:
    """The constraints as text, fresh variables (choose()) numbered per build."""
    return [re.sub(r"!\d+", "!", c.sexpr()) for _tag, c in cs]  # type: ignore[attr-defined]


def test_formula_order_does_not_change_the_problem() -> None:
    """Two formulas reading different derived quantities (delay bounds, beliefs), given
    in either order: the same constraints, in the same order."""
    q = query(CCAC, 5, "qdel_hi[T-1] <= 3 and c_lo[T-1] <= C")
    prog = query_cca(q)
    a, b = (property_conditions(replace(q, objectives=(o,)), prog)[0] for o in q.objectives * 2)
    q2 = query(CCAC, 5, "c_hi[1] >= 0 and q_hi[2] >= 0")
    c = property_conditions(q2, prog)[0]
    one = build(q.scenario, prog, [a, c])
    two = build(q.scenario, prog, [c, b])
    assert _sexprs(one.base()) == _sexprs(two.base())
    assert {"qdel", "rate_beliefs", "cbr_beliefs"} <= one.trace.built


def test_compiling_a_formula_adds_no_constraint() -> None:
    q = query(CCAC, 5, "c_lo[T-1] <= C")
    prog = query_cca(q)
    cond = property_conditions(q, prog)[0]
    prob = build(q.scenario, prog, [cond])
    before = _sexprs(prob.base())
    prob.formula(cond)
    prob.formula(cond)
    assert _sexprs(prob.base()) == before


def test_a_read_the_build_was_not_told_about_is_an_engine_error() -> None:
    """Nothing is built behind the caller's back: a formula reading a quantity that
    build() did not know of fails loudly instead of adding constraints."""
    q = query(CCAC, 5, "c_lo[T-1] <= C")
    prog = query_cca(q)
    cond = property_conditions(q, prog)[0]
    prob = build(q.scenario, prog, [])  # not told about c_lo
    with pytest.raises(Exception, match="not built"):
        prob.formula(cond)


# -- the registry is the documented list -------------------------------------------------

DOC = (ROOT / "docs" / "language.md").read_text()


def test_docs_list_every_observation_with_its_unit() -> None:
    """docs/language.md's 'What a CCA may read' table is the registry's visible part."""
    table = DOC.split("### What a CCA may read", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`([A-Za-z_]+)`", cells[0]):
            rows[name] = cells[1]
    for name, q in OBSERVATIONS.items():
        assert name in rows, f"docs/language.md does not list the observation {name}"
        assert rows[name] == ("bool" if q.unit is None else unit_name(q.unit)), name
    for name in OUTPUTS:
        assert name in rows
    for p in PARAMETERS.values():
        assert (p.name in rows) == p.visible or p.name == "N", p.name


def test_docs_list_every_query_quantity() -> None:
    text = DOC.split("## Query expressions", 1)[1].split("##", 1)[0]
    for name in QUANTITIES:
        assert f"`{name}`" in text or re.search(rf"\b{name}\b", text), f"docs/language.md misses {name}"
