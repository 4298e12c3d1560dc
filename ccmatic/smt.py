"""Solver sessions and the three-state result type.

One factory (:func:`make_solver`) sets timeout and seed; :class:`Session` wraps a
solver built once per query, with :meth:`Session.scope` pushing and always popping.
Constraints are kept in an :class:`Encoding` (tagged with the equation they encode)
so that every counterexample can be re-checked independently of Z3.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import z3


@dataclass
class Encoding:
    """A list of tagged constraints; the tag names the equation (e.g. 'A.2.3')."""

    constraints: list[tuple[str, z3.BoolRef]] = field(default_factory=list)

    def add(self, tag: str, *cs: z3.BoolRef | bool) -> None:
        for c in cs:
            if isinstance(c, bool):
                c = z3.BoolVal(c)
            self.constraints.append((tag, c))

    def extend(self, other: Encoding) -> None:
        self.constraints.extend(other.constraints)

    def __len__(self) -> int:
        return len(self.constraints)


def make_solver(timeout_s: float | None, seed: int, logic: str | None = None) -> z3.Solver:
    """The one place where solvers are created: timeout (ms), seed and logic are set
    here.  ``logic="QF_LRA"`` (linear real arithmetic with booleans) lets Z3 use its
    specialised solver, several times faster on CEGIS checks; encodings with integer
    variables (belief timeouts) use the general solver."""
    s = z3.SolverFor(logic) if logic else z3.Solver()
    # Z3's own Ctrl-C handler would swallow SIGINT during a check (the check just
    # returns unknown); ccmatic handles SIGINT itself and interrupts Z3 explicitly
    s.set("ctrl_c", False)
    if timeout_s is not None:
        s.set("timeout", max(1, int(timeout_s * 1000)))
    s.set("random_seed", seed)
    return s


def clear_interrupt() -> None:
    """Consume a pending ``interrupt()`` of Z3's main context: Z3 keeps it until the
    next check, and meanwhile rejects e.g. ``push`` ("push canceled")."""
    z3.Solver().check()


# -- three-state results ---------------------------------------------------------------

@dataclass(frozen=True)
class Proved:
    """unsat: no trace violates the property (bounded horizon)."""


@dataclass(frozen=True)
class Sat:
    """sat: a model (to be turned into a counterexample trace and re-checked)."""

    model: z3.ModelRef


@dataclass(frozen=True)
class Unknown:
    reason: str


CheckResult = Proved | Sat | Unknown


class Session:
    """A solver holding a base encoding; checks happen in pushed scopes."""

    def __init__(self, base: Encoding, timeout_s: float | None, seed: int, logic: str | None = None) -> None:
        self.solver = make_solver(timeout_s, seed, logic)
        for _tag, c in base.constraints:
            self.solver.add(c)

    @contextmanager
    def scope(self) -> Iterator[z3.Solver]:
        self.solver.push()
        try:
            yield self.solver
        finally:
            self.solver.pop()

    def check(self, extra: Encoding | None = None) -> CheckResult:
        with self.scope() as s:
            if extra is not None:
                for _tag, c in extra.constraints:
                    s.add(c)
            r = s.check()
            if r == z3.sat:
                return Sat(s.model())
            if r == z3.unsat:
                return Proved()
            return Unknown(s.reason_unknown() or "unknown")
