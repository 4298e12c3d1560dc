"""The objective library: the kinds a query's ``[[objective]]`` may name, each a
formula of the spec language with typed parameters (``objectives/*.toml``, loaded
by :mod:`ccmatic.io.objectives`, elaborated by :mod:`ccmatic.spec.objectives`).
Only ``kind = "expr"`` (a formula of the user's own) is not in the library."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ccmatic.core.errors import Loc
from ccmatic.core.source import Definition, Source

ParamKind = Literal["number", "bool", "choice"]
ParamValue = Fraction | bool | str


@dataclass(frozen=True)
class ParamSpec:
    """A parameter of an objective kind; ``default`` None means required."""

    name: str
    kind: ParamKind
    default: ParamValue | None
    choices: tuple[str, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class ObjectiveKind:
    name: str
    doc: str
    params: dict[str, ParamSpec]
    formula: Source
    loc: Loc
    defines: dict[str, Definition]  # the library's, and the kind's own


@dataclass(frozen=True)
class ObjectiveLibrary:
    """Kinds and the definitions their formulas share; earlier library folders win."""

    paths: tuple[str, ...]
    kinds: dict[str, ObjectiveKind]
    defines: dict[str, Definition]
