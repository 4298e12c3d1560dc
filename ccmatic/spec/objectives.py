"""A query's objectives as conditions: a library kind's formula with the query's
parameter values (numbers, conditions, or names of a choice), or the user's own
``expr``."""

from __future__ import annotations

from fractions import Fraction

from ccmatic.core.errors import SpecError
from ccmatic.core.objectives import ObjectiveKind, ObjectiveLibrary, ParamValue
from ccmatic.core.scenario import Objective
from ccmatic.spec import ir
from ccmatic.spec.formula import DefinitionScope, QueryContext, QueryScope, condition
from ccmatic.spec.typed import Typed


def param_values(kind: ObjectiveKind, obj: Objective) -> dict[str, ParamValue]:
    """The objective's parameters with the kind's defaults; a missing required one
    is an error."""
    out: dict[str, ParamValue] = {}
    for name, spec in kind.params.items():
        v = obj.params.get(name, spec.default)
        if v is None:
            raise SpecError(obj.loc, f"objective '{kind.name}' needs '{name}'", spec.doc or None)
        out[name] = v
    return out


def _typed(v: ParamValue) -> Typed:
    if isinstance(v, bool):
        return Typed.boolean(v)
    if isinstance(v, Fraction):
        return Typed.num(v)
    return Typed.text(v)


def objective_condition(obj: Objective, lib: ObjectiveLibrary | None, ctx: QueryContext) -> ir.Expr:
    """The condition an objective states, as a checked tree."""
    if obj.kind == "expr":
        if obj.source is None:
            raise SpecError(obj.loc, "objective 'expr' needs 'expr'", "write expr = \"<formula>\"")
        return condition(obj.source, QueryScope(obj.source, ctx))
    kind = lib.kinds.get(obj.kind) if lib is not None else None
    if kind is None or lib is None:
        raise SpecError(obj.loc, f"unknown objective kind '{obj.kind}'",
                        f"use expr or one of {', '.join(sorted(lib.kinds if lib else []))}")
    params = {k: _typed(v) for k, v in param_values(kind, obj).items()}
    return condition(kind.formula, DefinitionScope(kind.formula, ctx, params, kind.defines))
