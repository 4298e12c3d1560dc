"""Pruning clauses decided over the holes' finite domains (thesis Eq. B.1.4).

A counterexample prunes every candidate that makes the same choices on its trace:
the next candidate must differ from a recorded output at some step,
``Or(out_t(holes) != rec_t, ...)``.  With the trace's observations fixed, each output
is a linear form in the holes under the template's branches (``if``, ``max``), and
a disequality of real terms is the hardest thing to give an LRA solver: every one is
a case split, and a thousand clauses of them made the generator the bottleneck of
the big rows (G6: half of a 1500 s run).

:class:`HoleDomain` runs the template's step (the one semantics,
:func:`ccmatic.semantics.cca.run_step`) over *guarded linear forms*: a value is a
list of ``(guard, Σ c_h·h + k)`` leaves whose guards partition the hole space.  Every
hole ranges over a small finite domain and the generator asserts that it does, so a
comparison can be decided exactly (with rationals) for every value of its holes:

* an equality or disequality becomes the list of hole values that make it hold
  (``hole == value`` atoms, the domain constraints' own atoms);
* an inequality over one hole becomes the list of its values that satisfy it;
* an inequality over several holes stays a linear atom (convex, cheap for the
  solver, true for too many values to list), one per truth table over the holes'
  domains (:mod:`ccmatic.encode.atom_tables`): atoms that hold for the same hole
  values are one atom, and one that holds for all or none is decided.

The result is equivalent to the clause over Z3 terms wherever every hole is in its
domain, so the generator proposes exactly the same set of candidates.  A template
outside this shape (a product of two holes, a hole in a divisor, too many leaves)
raises :class:`NotLinear`, and its clause is built over Z3 terms as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import z3

from ccmatic.encode.atom_tables import AtomTables
from ccmatic.semantics.z3domain import rat

Coeffs = tuple[tuple[str, Fraction], ...]  # sorted by hole name, no zero coefficient
Lin = tuple[Coeffs, Fraction]  # Σ c_h·h + k
# a condition: a decided bool, ("is", hole, value), ("cmp", "gt" | "ge" | "eq", Lin) (lin > 0, ...),
# ("not", f), ("and", fs) or ("or", fs)
Form = bool | tuple[Any, ...]
Leaves = tuple[tuple[Form, Lin], ...]

MAX_LEAVES = 64  # leaves of one value before the clause is built over Z3 terms instead
MAX_TUPLES = 4096  # hole-value tuples enumerated for one equality
MAX_SOLUTIONS = 32  # solutions of one equality listed before it stays a linear atom
ZERO = Fraction(0)


class NotLinear(Exception):
    """A value outside guarded linear forms in the holes."""


class Arith:
    """A value: guarded linear forms in the holes."""

    __slots__ = ("leaves",)

    def __init__(self, leaves: Leaves) -> None:
        if len(leaves) > MAX_LEAVES:
            raise NotLinear
        self.leaves = leaves


def _const(x: Fraction) -> Arith:
    return Arith(((True, ((), x)),))


def _combine(a: Arith, b: Arith, f: Callable[[Lin, Lin], Lin]) -> Arith:
    out = []
    for ga, la in a.leaves:
        for gb, lb in b.leaves:
            g = gb if ga is True else ga if gb is True else and_([ga, gb])
            if g is not False:
                out.append((g, f(la, lb)))
    return Arith(tuple(out))


def _add(a: Lin, b: Lin) -> Lin:
    if not b[0]:
        return a[0], a[1] + b[1]
    c = dict(a[0])
    for h, x in b[0]:
        c[h] = c.get(h, ZERO) + x
    return tuple(sorted((h, x) for h, x in c.items() if x)), a[1] + b[1]


def _neg(a: Lin) -> Lin:
    return tuple((h, -x) for h, x in a[0]), -a[1]


def _scale(a: Lin, k: Fraction) -> Lin:
    if not k:
        return (), ZERO
    if k == 1:
        return a
    return tuple((h, x * k) for h, x in a[0]), a[1] * k


def _sub(a: Lin, b: Lin) -> Lin:
    return _add(a, _neg(b))


def _mul(a: Lin, b: Lin) -> Lin:
    if a[0] and b[0]:
        raise NotLinear  # a product of holes
    return _scale(b, a[1]) if not a[0] else _scale(a, b[1])


def _div(a: Lin, b: Lin) -> Lin:
    if b[0] or not b[1]:
        raise NotLinear  # a hole, or zero, in a divisor
    return _scale(a, 1 / b[1])


# -- conditions --------------------------------------------------------------------------
def not_(f: Form) -> Form:
    if isinstance(f, bool):
        return not f
    return f[1] if f[0] == "not" else ("not", f)


def _junction(kind: str, items: Sequence[Form]) -> Form:
    unit = kind == "and"  # the neutral element
    out: list[Form] = []
    for f in items:
        if f is unit:
            continue
        if f is (not unit):
            return not unit
        for g in (f[1] if f[0] == kind else (f,)):  # type: ignore[index]
            if g not in out:
                out.append(g)
    if not out:
        return unit
    return out[0] if len(out) == 1 else (kind, tuple(out))


def and_(items: Sequence[Form]) -> Form:
    return _junction("and", items)


def or_(items: Sequence[Form]) -> Form:
    return _junction("or", items)


class HoleDomain:
    """The semantics' domain (:class:`ccmatic.semantics.domain.Domain`) over guarded
    linear forms in the holes, with comparisons decided over the holes' domains."""

    name = "holes"

    def __init__(self, domains: dict[str, tuple[Fraction, ...]]) -> None:
        self.domains = domains
        self._term_cache: dict[tuple[str, Fraction], list[tuple[Fraction, Fraction]]] = {}
        self.tables = AtomTables(domains)

    def hole(self, h: str) -> Arith:
        return Arith(((True, (((h, Fraction(1)),), ZERO)),))

    def num(self, x: Fraction) -> Arith:
        return _const(x)

    def whole(self, k: int) -> Arith:
        return _const(Fraction(k))

    def boolean(self, b: bool) -> bool:
        return b

    def add(self, a: Arith, b: Arith) -> Arith:
        return _combine(a, b, _add)

    def sub(self, a: Arith, b: Arith) -> Arith:
        return _combine(a, b, _sub)

    def mul(self, a: Arith, b: Arith) -> Arith:
        return _combine(a, b, _mul)

    def div(self, a: Arith, b: Arith) -> Arith:
        return _combine(a, b, _div)

    def pow(self, a: Arith, b: Arith) -> Arith:
        raise NotLinear

    def neg(self, a: Arith) -> Arith:
        return Arith(tuple((g, _neg(lin)) for g, lin in a.leaves))

    def sum(self, items: list[Arith]) -> Arith:
        acc = _const(ZERO)
        for x in items:
            acc = self.add(acc, x)
        return acc

    def lt(self, a: Arith, b: Arith) -> Form:
        return self._cmp(b, a, self._positive, True)

    def le(self, a: Arith, b: Arith) -> Form:
        return self._cmp(b, a, self._positive, False)

    def gt(self, a: Arith, b: Arith) -> Form:
        return self._cmp(a, b, self._positive, True)

    def ge(self, a: Arith, b: Arith) -> Form:
        return self._cmp(a, b, self._positive, False)

    def eq(self, a: Arith | Form, b: Arith | Form) -> Form:
        if isinstance(a, Arith) and isinstance(b, Arith):
            return self._cmp(a, b, self._zero, True)
        if isinstance(a, Arith) or isinstance(b, Arith):
            raise NotLinear
        return or_([and_([a, b]), and_([not_(a), not_(b)])])

    def ne(self, a: Arith | Form, b: Arith | Form) -> Form:
        return not_(self.eq(a, b))

    def not_(self, a: Form) -> Form:
        return not_(a)

    def and_(self, items: list[Form]) -> Form:
        return and_(items)

    def or_(self, items: list[Form]) -> Form:
        return or_(items)

    def implies(self, a: Form, b: Form) -> Form:
        return or_([not_(a), b])

    def ite(self, c: Form, a: Any, b: Any) -> Any:
        if isinstance(c, bool):
            return a if c else b
        if not isinstance(a, Arith):
            return or_([and_([c, a]), and_([not_(c), b])])
        nc = not_(c)
        merged: dict[Lin, list[Form]] = {}
        for guard, leaves in ((c, a.leaves), (nc, b.leaves)):
            for g, lin in leaves:
                gg = and_([guard, g])
                if gg is not False:
                    merged.setdefault(lin, []).append(gg)
        return Arith(tuple((or_(gs), lin) for lin, gs in merged.items()))

    def decide(self, c: Form) -> bool | None:
        return c if isinstance(c, bool) else None

    # -- decided comparisons ----------------------------------------------------------------
    def _cmp(self, a: Arith, b: Arith, atom: Callable[[Lin, bool], Form], strict: bool) -> Form:
        """Over the leaves of a - b: some leaf's guard holds and so does its atom."""
        return or_([and_([g, atom(lin, strict)]) for g, lin in _combine(a, b, _sub).leaves])

    def _positive(self, lin: Lin, strict: bool) -> Form:
        """lin > 0 (``strict``) or lin >= 0."""
        coeffs, k = lin
        if not coeffs:
            return k > 0 if strict else k >= 0
        if len(coeffs) == 1:
            (h, c), = coeffs
            ok = [v for v in self.domains[h] if (c * v + k > 0 if strict else c * v + k >= 0)]
            return True if len(ok) == len(self.domains[h]) else or_([("is", h, v) for v in ok])
        s = abs(coeffs[0][1])
        return self.tables.canonical(("cmp", "gt" if strict else "ge", _scale(lin, 1 / s)))

    def _zero(self, lin: Lin, _strict: bool) -> Form:
        """lin == 0, as the list of hole values that make it so."""
        sols = self.solutions(lin)
        if sols is None:
            return ("cmp", "eq", _scale(lin, 1 / lin[0][0][1]))
        return or_([and_([("is", h, v) for h, v in s]) for s in sols])

    def solutions(self, lin: Lin) -> list[tuple[tuple[str, Fraction], ...]] | None:
        """Every assignment of lin's holes (from their domains) that makes it zero,
        exactly; None when there are too many tuples or solutions to list."""
        coeffs, k = lin
        if not coeffs:
            return [()] if k == 0 else []
        first, (last, c_last) = coeffs[:-1], coeffs[-1]
        size = 1
        for h, _c in first:
            size *= len(self.domains[h])
        if size > MAX_TUPLES:
            return None
        hits = {c_last * v: v for v in self.domains[last]}  # c_last·v -> v
        out = []
        for terms in itertools.product(*(self._terms(h, c) for h, c in first)):
            rest = -k
            for x, _v in terms:
                rest -= x
            v_last = hits.get(rest)
            if v_last is not None:
                out.append((*((h, v) for (h, _c), (_x, v) in zip(first, terms)), (last, v_last)))
                if len(out) > MAX_SOLUTIONS:
                    return None
        return out

    def _terms(self, h: str, c: Fraction) -> list[tuple[Fraction, Fraction]]:
        """(c·v, v) for every value v of hole h."""
        key = (h, c)
        hit = self._term_cache.get(key)
        if hit is None:
            hit = self._term_cache[key] = [(c * v, v) for v in self.domains[h]]
        return hit


def differs(d: HoleDomain, out: Arith | Form, rec: Fraction | bool) -> Form:
    """The output differs from its recorded value."""
    if isinstance(rec, bool):
        if isinstance(out, Arith):
            raise NotLinear
        return not_(out) if rec else out
    if not isinstance(out, Arith):
        raise NotLinear
    return d.ne(out, d.num(rec))


class FormBuilder:
    """Conditions as Z3 formulas over the hole variables; atoms are shared across
    clauses, and ``hole == value`` atoms are those of the domain constraints."""

    def __init__(self, hole_vars: dict[str, z3.ArithRef], domains: dict[str, tuple[Fraction, ...]]) -> None:
        self.vars = hole_vars
        self.is_value = {h: {v: hole_vars[h] == rat(v) for v in dom} for h, dom in domains.items()}
        self._atoms: dict[tuple[Any, ...], z3.BoolRef] = {}
        self._products: dict[tuple[str, Fraction], z3.ArithRef] = {}
        self._zero = rat(ZERO)
        self._ctx = z3.main_ctx()

    def build(self, f: Form) -> z3.BoolRef:
        if isinstance(f, bool):
            return z3.BoolVal(f)
        tag = f[0]
        if tag == "is":
            return self.is_value[f[1]][f[2]]
        if tag == "cmp":
            return self._atom(f)
        if tag == "not":
            inner = self.build(f[1])  # held while Z3 builds on it
            return self._bool(z3.Z3_mk_not(self._ctx.ref(), inner.as_ast()))
        kids = [self.build(g) for g in f[1]]  # held while Z3 builds on them
        mk = z3.Z3_mk_and if tag == "and" else z3.Z3_mk_or
        return self._bool(mk(self._ctx.ref(), len(kids), _asts(kids)))

    def _bool(self, ast: z3.Ast) -> z3.BoolRef:
        """A formula built through Z3's C API (z3py's And/Or coerce every argument)."""
        return z3.BoolRef(ast, self._ctx)

    def _atom(self, f: tuple[Any, ...]) -> z3.BoolRef:
        """``Σ c·h + k > 0`` (or ``>= 0``, ``== 0``) as one flat sum, built through the
        C API from cached products ``c·h``."""
        hit = self._atoms.get(f)
        if hit is None:
            (coeffs, k), op = f[2], f[1]
            ctx = self._ctx.ref()
            term = self._add([*[self._product(h, c) for h, c in coeffs], rat(k)])
            mk = z3.Z3_mk_gt if op == "gt" else z3.Z3_mk_ge if op == "ge" else z3.Z3_mk_eq
            hit = self._atoms[f] = self._bool(mk(ctx, term.as_ast(), self._zero.as_ast()))
        return hit

    def _add(self, parts: list[z3.ArithRef]) -> z3.ArithRef:
        return z3.ArithRef(z3.Z3_mk_add(self._ctx.ref(), len(parts), _asts(parts)), self._ctx)

    def _product(self, h: str, c: Fraction) -> z3.ArithRef:
        hit = self._products.get((h, c))
        if hit is None:
            hit = self._products[(h, c)] = rat(c) * self.vars[h]
        return hit


def _asts(terms: Sequence[z3.ExprRef]) -> Any:
    """The terms as a C array of ASTs (the caller keeps the terms alive)."""
    return (z3.Ast * len(terms))(*[t.as_ast() for t in terms])
