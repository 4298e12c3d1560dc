"""Unit checks for templates as formulas over the hole variables, for the CEGIS
generator (thesis §4.1): the negation of each condition under which two units meet
(:func:`ccmatic.spec.template_units.unit_conflicts`), in the one meaning of the
checked tree (:mod:`ccmatic.semantics.evaluate`) over Z3."""

from __future__ import annotations

from typing import cast

import z3

from ccmatic.semantics.evaluate import Context, value
from ccmatic.semantics.z3domain import Z3Domain
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.source import HOLE_PREFIX
from ccmatic.spec.template_units import unit_conflicts


def hole_var(name: str) -> z3.ArithRef:
    return z3.Real(HOLE_PREFIX + name)


class _HoleDomain(Z3Domain):
    """Z3 terms with ``≠`` written operand first: ``?a * 2 ≠ 0`` is ``(distinct (* ?a 2) 0)``,
    where Python's ``!=`` on a Z3 numeral would take the numeral's reflected
    comparison, ``(distinct 0 (* ?a 2))``.  The same formula, but the generator's
    search (which candidate comes first, hence the numbering of solution files)
    follows the terms as written."""

    def ne(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        return cast(z3.BoolRef, z3.Distinct(a, b))


def unit_constraints(prog: CcaProgram) -> list[z3.BoolRef]:
    """Formulas over the hole variables that exclude every ill-typed candidate."""
    uc = unit_conflicts(prog)
    cx = Context(_HoleDomain(), hole=hole_var)
    conflicts = {id(c) for c in uc.conflicts}
    negated: dict[int, z3.BoolRef] = {}
    for e in uc.built:  # the terms in the order the analysis built them
        v = value(e, cx)
        if id(e) in conflicts:
            negated[id(e)] = z3.Not(v)
    out = []
    for c in uc.conflicts:
        s = z3.simplify(negated[id(c)])
        if not z3.is_true(s):
            out.append(s)
    return out
