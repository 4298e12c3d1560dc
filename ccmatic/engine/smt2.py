"""One solver check as a standalone SMT-LIB 2 file, for other solvers.

:func:`write_smt2` writes ``(set-logic ...)``, the declarations of every constant
the assertions use, one ``(assert ...)`` per assertion, ``(check-sat)`` and
``(exit)``.  Z3, Yices 2 and cvc5 read the result; for ccmatic's checks ``unsat``
means proved and ``sat`` a counterexample.

Under ``QF_LRA`` the assertions are first checked to be in the logic
(:func:`qf_lra_violations`): only Bool and Real constants, the Boolean
connectives, comparisons, and linear arithmetic with rational constants.  A term
outside it (a pseudo-Boolean ``at-most``, an Int, a product of two variables) is a
bug in an encoding, and the file is not written.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import z3

from ccmatic.core.errors import EngineError, Loc, SpecError
from ccmatic.core.files import atomic_write

#: the operators a QF_LRA term may use (numerals and constants are checked apart)
_LRA_OPS = {
    z3.Z3_OP_TRUE, z3.Z3_OP_FALSE, z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_NOT, z3.Z3_OP_IMPLIES, z3.Z3_OP_XOR,
    z3.Z3_OP_ITE, z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT, z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT,
    z3.Z3_OP_ADD, z3.Z3_OP_SUB, z3.Z3_OP_UMINUS, z3.Z3_OP_MUL, z3.Z3_OP_DIV,
}
_SORTS = {z3.Z3_BOOL_SORT, z3.Z3_REAL_SORT}


def _numeral(e: z3.ExprRef) -> bool:
    """A rational constant: a numeral, or arithmetic over numerals only."""
    if z3.is_rational_value(e):
        return True
    if not z3.is_app(e) or e.decl().kind() not in (z3.Z3_OP_ADD, z3.Z3_OP_SUB, z3.Z3_OP_UMINUS,
                                                   z3.Z3_OP_MUL, z3.Z3_OP_DIV):
        return False
    return all(_numeral(c) for c in e.children())


def qf_lra_violations(assertions: Iterable[z3.ExprRef], limit: int = 5) -> list[str]:
    """Why the assertions are not QF_LRA (at most ``limit`` reasons; empty: they are)."""
    why: list[str] = []
    seen: set[int] = set()
    todo: list[z3.ExprRef] = list(assertions)
    while todo and len(why) < limit:
        e = todo.pop()
        key = e.get_id()
        if key in seen:
            continue
        seen.add(key)
        if e.sort().kind() not in _SORTS:
            why.append(f"sort {e.sort()} in {e}")
            continue
        if not z3.is_app(e):
            why.append(f"not quantifier-free: {e}")
            continue
        if z3.is_rational_value(e):
            continue
        k = e.decl().kind()
        if k == z3.Z3_OP_UNINTERPRETED:
            if e.num_args() > 0:
                why.append(f"function application {e.decl().name()}")
            continue
        if k not in _LRA_OPS:
            why.append(f"operator {e.decl().name()}")
            continue
        kids = e.children()
        if k == z3.Z3_OP_MUL and sum(1 for c in kids if not _numeral(c)) > 1:
            why.append(f"nonlinear product {e}")
            continue
        if k == z3.Z3_OP_DIV and not _numeral(kids[1]):
            why.append(f"division by a non-constant {e}")
            continue
        todo.extend(kids)
    return why


def smt2_text(assertions: list[z3.BoolRef], logic: str = "QF_LRA", comment: str = "") -> str:
    """The SMT-LIB 2 script of one satisfiability check of the conjunction of
    ``assertions`` (``comment``: lines written first, as ``;`` comments)."""
    s = z3.Solver()  # only a container: declarations and assertions, printed as given
    for a in assertions:
        s.add(a)
    head = [f"; {line}".rstrip() for line in comment.splitlines()]
    body = s.sexpr().rstrip("\n")
    return "\n".join([*head, "(set-info :smt-lib-version 2.6)", f"(set-logic {logic})",
                      *([body] if body else []), "(check-sat)", "(exit)", ""])


def write_smt2(path: str | Path, assertions: list[z3.BoolRef], logic: str = "QF_LRA", comment: str = "") -> Path:
    """Write :func:`smt2_text` to ``path`` (atomically; its folder must exist) and
    return the path.  Raises :class:`EngineError` if ``logic`` is QF_LRA and an
    assertion is not, and ``OSError`` if the file cannot be written."""
    if logic == "QF_LRA":
        why = qf_lra_violations(assertions)
        if why:
            raise EngineError(f"the check is not QF_LRA ({'; '.join(why)}): not written to {path}")
    p = Path(path)
    atomic_write(p, smt2_text(assertions, logic, comment))
    return p


def dump_check(path: Path, assertions: list[z3.BoolRef], comment: str) -> Path:
    """``--dump-smt2``: write one check; a file that cannot be written is bad input
    (the folder the user named), one line and exit code 2."""
    try:
        return write_smt2(path, assertions, comment=comment)
    except OSError as e:
        raise SpecError(Loc("--dump-smt2"), f"cannot write '{path}': {e.strerror or e}",
                        "give a folder you can write to") from None
