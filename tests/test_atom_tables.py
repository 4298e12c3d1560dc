"""One atom per truth table (ccmatic/encode/atom_tables.py): atoms that hold for the
same hole values become one, constant ones are decided, and nothing depends on
floating-point rounding."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction as F
from typing import Any

from ccmatic.encode.atom_tables import AtomTables

DOMAINS = {"a": (F(-2), F(-1), F(0), F(1), F(2)), "b": (F(-1), F(0), F(1)), "c": (F(0), F(1, 2), F(1))}


def atom(op: str, k: F, **cs: F) -> tuple[Any, ...]:
    return ("cmp", op, (tuple(sorted(cs.items())), k))


def holds(form: Any, vals: dict[str, F]) -> bool:
    if isinstance(form, bool):
        return form
    if form[0] == "not":
        return not holds(form[1], vals)
    (coeffs, k), op = form[2], form[1]
    x = sum((c * vals[h] for h, c in coeffs), k)
    return bool(x > 0 if op == "gt" else x >= 0)


def test_atoms_with_one_table_are_one_atom_and_constant_ones_decided() -> None:
    t = AtomTables(DOMAINS)
    first = atom("gt", F(0), a=F(1), b=F(1, 10))
    assert t.canonical(first) is first
    # a > -b/10 and a > -b/5 hold for the same (a, b) in these domains
    assert t.canonical(atom("gt", F(0), a=F(1), b=F(1, 5))) is first
    # a >= b holds where a > -b/10 does not (a = b = 0): another table, its own atom
    other = atom("ge", F(0), a=F(1), b=F(-1))
    assert t.canonical(other) is other
    # the complement of a > -b/10 is -a - b/10 >= 0
    assert t.canonical(atom("ge", F(0), a=F(-1), b=F(-1, 10))) == ("not", first)
    assert t.canonical(atom("gt", F(10), a=F(1), b=F(1))) is True
    assert t.canonical(atom("ge", F(10), a=F(-1), b=F(1))) is True
    assert t.canonical(atom("gt", F(-10), a=F(1), b=F(1))) is False


def test_a_value_zero_in_exact_arithmetic_is_decided_exactly() -> None:
    """a/10 + c/5 - 3/10 is 0 at a = 1, c = 1/2: in floats 0.1 + 0.1 - 0.3 is not."""
    t = AtomTables(DOMAINS)
    strict = atom("gt", F(-3, 10), a=F(1, 10), c=F(2, 5))
    weak = atom("ge", F(-3, 10), a=F(1, 10), c=F(2, 5))
    for form, expect in ((t.canonical(strict), False), (t.canonical(weak), True)):
        assert holds(form, {"a": F(1), "c": F(1, 2)}) is expect


def test_canonical_atoms_hold_exactly_where_the_originals_do() -> None:
    rng = random.Random(7)
    t = AtomTables(DOMAINS)
    grid = [dict(zip("abc", v)) for v in itertools.product(*DOMAINS.values())]
    merged = 0
    for _ in range(300):
        cs = {h: F(rng.randint(-6, 6), rng.randint(1, 4)) for h in rng.sample("abc", rng.randint(2, 3))}
        cs = {h: c for h, c in cs.items() if c} or {"a": F(1), "b": F(1)}
        if len(cs) < 2:
            continue
        a = atom(rng.choice(("gt", "ge")), F(rng.randint(-6, 6), rng.randint(1, 3)), **cs)
        c = t.canonical(a)
        merged += c is not a
        assert all(holds(c, v) == holds(a, v) for v in grid), (a, c)
    assert merged > 100  # most of them do merge: the test exercises the merging
