"""One atom per truth table: a pruning clause's linear atoms over several holes,
identified by the hole values that satisfy them (:mod:`ccmatic.encode.finite`).

A template's condition ``a1·c_lo + a2·c_hi + ... > 0`` is a linear atom over its
holes, and every counterexample gives it new coefficients (the trace's beliefs at
each step).  Over the holes' finite domains many of those atoms hold for exactly the
same hole values: the 957 counterexamples of a G7-arbitrary run gave 31,580 distinct
atoms but 6,732 distinct truth tables.  Since the generator asserts that every hole
is in its domain, two atoms with one table are the same constraint there, and an
atom whose table is all true (false) is true (false).  :class:`AtomTables` keeps the
first atom of each table and hands it out for every later one (its negation for the
complementary table), so the generator's solver sees a few thousand atoms, not tens
of thousands; it proposes exactly the same candidates.

The table is computed in floating point and decided exactly, with the atom's
rationals, wherever the float value is within 1e-9 of the terms' magnitude of zero
(far above the dot product's rounding error), so no entry depends on rounding.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

Holes = tuple[str, ...]
Key = tuple[Holes, bytes]

#: hole-value tuples of one atom above which it is left as it is
MAX_TABLE = 1 << 16
#: |value| within this share of the terms' magnitude is decided exactly
NEAR_ZERO = 1e-9


class AtomTables:
    """The canonical atom of each truth table over the holes' domains."""

    def __init__(self, domains: dict[str, tuple[Fraction, ...]]) -> None:
        self.domains = domains
        self._grids: dict[Holes, tuple[npt.NDArray[np.float64], list[tuple[Fraction, ...]]] | None] = {}
        self._seen: dict[Key, tuple[Any, ...]] = {}

    def canonical(self, atom: tuple[Any, ...]) -> tuple[Any, ...] | bool:
        """``("cmp", "gt" | "ge", (coeffs, k))`` as the first atom seen with its truth
        table, ``("not", that)`` for the complementary table, or a bool for a
        constant one; the atom itself if its holes have too many values."""
        (coeffs, k), op = atom[2], atom[1]
        holes = tuple(h for h, _c in coeffs)
        grid = self._grid(holes)
        if grid is None:
            return atom
        table = _table(grid, coeffs, k, op == "gt")
        if table.all():
            return True
        if not table.any():
            return False
        key = (holes, np.packbits(table).tobytes())
        hit = self._seen.get(key)
        if hit is not None:
            return hit
        flip = self._seen.get((holes, np.packbits(~table).tobytes()))
        if flip is not None:
            return ("not", flip)
        self._seen[key] = atom
        return atom

    def _grid(self, holes: Holes) -> tuple[npt.NDArray[np.float64], list[tuple[Fraction, ...]]] | None:
        if holes not in self._grids:
            size = 1
            for h in holes:
                size *= len(self.domains[h])
            if size > MAX_TABLE:
                self._grids[holes] = None
            else:
                exact = list(itertools.product(*(self.domains[h] for h in holes)))
                self._grids[holes] = (np.array(exact, dtype=np.float64), exact)
        return self._grids[holes]


def _table(grid: tuple[npt.NDArray[np.float64], list[tuple[Fraction, ...]]],
           coeffs: tuple[tuple[str, Fraction], ...], k: Fraction, strict: bool) -> npt.NDArray[np.bool_]:
    """Σ c·v + k > 0 (``strict``) or >= 0 for every tuple v of hole values."""
    values, exact = grid
    cs = np.array([float(c) for _h, c in coeffs])
    val = values @ cs + float(k)
    mag = np.abs(values) @ np.abs(cs) + abs(float(k))
    table: npt.NDArray[np.bool_] = val > 0 if strict else val >= 0
    for i in np.flatnonzero(np.abs(val) <= NEAR_ZERO * mag):
        x = sum((c * v for (_h, c), v in zip(coeffs, exact[i])), k)
        table[i] = x > 0 if strict else x >= 0
    return table
