"""Templates: hole domains; which holes weight trace terms (§4.2.1) and concrete
CCA files from a candidate (synthesized solutions are valid input of ``verify``)
are the spec layer's (:mod:`ccmatic.spec.template_fill`)."""

from __future__ import annotations

from fractions import Fraction

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.scenario import Query
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.template_fill import Candidate

__all__ = ["Candidate", "hole_domains"]


def hole_domains(prog: CcaProgram, query: Query) -> dict[str, tuple[Fraction, ...]]:
    doms: dict[str, tuple[Fraction, ...]] = {}
    for name, decl in prog.holes.items():
        dom = query.holes.get(name, decl.domain)
        if dom is None:
            raise SpecError(decl.loc, f"hole '?{name}' has no domain",
                            "declare it in the template (?name = {...}) or in the query's [holes] table")
        doms[name] = tuple(dom)
    extra = set(query.holes) - set(prog.holes)
    if extra:
        raise SpecError(Loc(query.path), f"[holes] names holes the template does not have: {', '.join(sorted(extra))}")
    return doms
