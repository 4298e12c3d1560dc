"""Tests for the spec-language elaborator (ccmatic.spec.elaborate / source): each
expression is elaborated to the checked tree (ccmatic.spec.ir) under a tiny scope and
then given its meaning as a Z3 term by the one semantics (ccmatic.semantics.evaluate
over the Z3 domain)."""

from __future__ import annotations

import ast
from fractions import Fraction

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccmatic.core.errors import SpecError
from ccmatic.core.source import Source
from ccmatic.core.units import BYTES, COUNT, RATE, SECONDS, Unit
from ccmatic.semantics.evaluate import Context, value
from ccmatic.semantics.z3domain import Z3
from ccmatic.spec import ir
from ccmatic.spec.elaborate import BaseScope, Elaborator, Index, Typed
from ccmatic.spec.source import IMPLIES, parse, prepare

X, Y = z3.Reals("x y")
RR = z3.Real("r")
D = z3.Real("d")
A, B, C, P, Q = z3.Bools("a b c p q")
S = [z3.Real(f"S_{i}") for i in range(5)]

NAMES: dict[str, tuple[z3.ExprRef, Unit | None]] = {
    "x": (X, BYTES), "y": (Y, BYTES), "r": (RR, RATE), "d": (D, SECONDS),
    "a": (A, None), "b": (B, None), "c": (C, None), "p": (P, None), "q": (Q, None),
}
TERMS: dict[str, z3.ExprRef] = {n: t for n, (t, _) in NAMES.items()} | {f"S_{i}": s for i, s in enumerate(S)}


class TinyScope(BaseScope):
    """x, y: bytes; r: bytes/second; d: seconds; a, b, c, p, q: conditions;
    R = 1 second (a load-time constant); N = 3 (a static integer); S[i]: bytes.
    Every name is a parameter (ir.Param) that :func:`term` maps to its Z3 variable."""

    def name(self, ident: str, node: ast.AST) -> Typed:
        if ident == "R":
            return Typed.num(Fraction(1), SECONDS)
        if ident == "N":
            return Typed.num(Fraction(3))
        if ident in NAMES:
            _term, unit = NAMES[ident]
            return Typed(ir.Param(ident, self.source.node_loc(node)), unit is None, unit)
        raise self.err(node, f"unknown name '{ident}'")

    def index(self, ident: str, index: list[Index], node: ast.AST) -> Typed:
        if ident != "S" or len(index) != 1 or not isinstance(index[0], int) or not 0 <= index[0] < len(S):
            raise self.err(node, f"bad index {ident}{index}")
        return Typed(ir.Param(f"S_{index[0]}", self.source.node_loc(node)), False, BYTES)

    def choose(self, options: list[Typed], node: ast.AST) -> Typed:
        raise self.err(node, "choose() is not available here")

    def int_name(self, ident: str) -> int | None:
        return {"N": 3, "R": 1}.get(ident)


def term(v: Typed) -> z3.ExprRef:
    """The meaning of an elaborated expression as a Z3 term."""
    t = value(v.expr, Context(Z3, param=lambda n: TERMS[n]))
    return z3.BoolVal(t) if isinstance(t, bool) else t


def compile_src(src: Source) -> Typed:
    tree = parse(src, "eval")
    assert isinstance(tree, ast.Expression)
    return Elaborator(TinyScope(src)).expr(tree.body)


def comp(text: str) -> Typed:
    return compile_src(Source("<test>", text))


def comp_via_prepare(text: str) -> Typed:
    src = Source("<test>", text)
    return Elaborator(TinyScope(src)).expr(ast.parse(prepare(src), mode="eval").body)


def valid(f: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.add(z3.Not(f))
    r = s.check()
    assert r in (z3.sat, z3.unsat)
    return r == z3.unsat


def same(v: Typed, expected: z3.ExprRef) -> bool:
    """The elaborated expression equals ``expected`` under every assignment."""
    return valid(term(v) == expected)


def spec_error(text: str) -> SpecError:
    with pytest.raises(SpecError) as exc:
        comp(text)
    return exc.value


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- units --------------------------------------------------------------------------

@pytest.mark.parametrize("text, unit", [
    ("r * R", BYTES), ("R * r", BYTES), ("x / R", RATE), ("x + y", BYTES), ("x - 2 * y", BYTES),
    ("d * 3", SECONDS), ("r * R - x", BYTES), ("x / R / R", Unit(1, -2)), ("2 / R", Unit(0, -1)),
    ("R / R", COUNT), ("R * R", Unit(0, 2)), ("bytes(3)", BYTES), ("seconds(2) + d", SECONDS),
    ("rate(1) * R", BYTES), ("abs(x - y)", BYTES), ("max(x, y, 0)", BYTES), ("min(r, 2)", RATE),
    ("x if a else y", BYTES), ("sum(S[i] for i in range(3))", BYTES),
])
def test_unit_algebra(text, unit):
    v = comp(text)
    assert not v.is_bool
    assert v.unit == unit


def test_rate_times_R_is_bytes_and_exact():
    v = comp("r * R")
    assert same(v, RR)
    v = comp("r * R + x")
    assert v.unit == BYTES and same(v, RR + X)


@pytest.mark.parametrize("text", [
    "x + d", "x - d", "r + x", "x < d", "r <= x", "r == x", "x != r", "d > r", "max(x, d)", "min(x, y, r)",
    "x if a else d", "sum(x + d * i for i in range(2))", "x + d * R", "abs(x) + d", "0 < x < d",
    "rate(x)",
])
def test_unit_mismatch_is_rejected(text):
    e = spec_error(text)
    assert "unit" in e.message or "bytes" in e.message


def test_unit_error_message_and_column():
    e = spec_error("r + x")
    assert "unit" in e.message
    assert "bytes/second" in e.message and "bytes" in e.message
    e = spec_error("a and x + d > 0")
    assert "unit" in e.message
    assert (e.loc.line, e.loc.col) == (1, 7)


def test_comparing_rate_with_bytes_raises():
    e = spec_error("r < x")
    assert "unit" in e.message and "compare" in e.message


# -- polymorphic literals -------------------------------------------------------------

def test_polymorphic_literals():
    v = comp("x > 0")
    assert v.is_bool and same(v, X > 0)
    v = comp("r / 2")
    assert v.unit == RATE and same(v, RR / 2)
    v = comp("0 < d")
    assert v.is_bool and same(v, D > 0)
    v = comp("x + 1.5")
    assert v.unit == BYTES and same(v, X + z3.Q(3, 2))
    v = comp("2 * r + 1")
    assert v.unit == RATE and same(v, 2 * RR + 1)
    v = comp("7")
    assert v.unit is None and v.const == 7


def test_bool_number_mixups_are_rejected():
    for text in ("x + a", "a < x", "x and a", "not x", "-a", "x if a else b", "all(x + i for i in range(2))",
                 "a + 1", "abs(a)"):
        with pytest.raises(SpecError):
            comp(text)
    with pytest.raises(SpecError, match="condition"):
        Elaborator(TinyScope(Source("<t>", "x + 1"))).boolean(ast.parse("x + 1", mode="eval").body)


def spec_error_or_none(text: str):
    try:
        comp(text)
    except SpecError as e:
        return e
    return None


def test_number_alone_is_fine():
    assert spec_error_or_none("x") is None
    assert spec_error_or_none("a") is None


# -- linearity ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["x * r", "r * x", "x * x", "(x + 1) * (y - 1)", "d * r", "max(x, 0) * r"])
def test_nonlinear_products_are_rejected(text):
    e = spec_error(text)
    assert "nonlinear" in e.message


@pytest.mark.parametrize("text", ["x / r", "x / d", "1 / d", "x / (y + 1)", "R / d"])
def test_division_by_non_constant_is_rejected(text):
    e = spec_error(text)
    assert "nonlinear" in e.message or "non-constant" in e.message


@pytest.mark.parametrize("text", ["x / 0", "x / (R - R)", "r / (2 - 2.0)"])
def test_division_by_zero_is_rejected(text):
    assert "zero" in spec_error(text).message


def test_constant_factors_are_linear():
    assert same(comp("x * R / R * 3"), 3 * X)
    assert same(comp("(2 * R) * r"), 2 * RR)
    assert same(comp("x * (1 + 2)"), 3 * X)
    assert same(comp("x / (R + R)"), X / 2)
    assert same(comp("x * 0"), z3.RealVal(0))
    # zero has every unit, so a zero coefficient drops its term's unit (this is what
    # lets a template candidate such as 0 * c_lo + 1 * qdel_lo type-check)
    assert comp("x * 0").unit is None
    assert comp("x * 0 + d").unit == SECONDS
    assert comp("x * 1").unit == BYTES
    assert same(comp("sum(i for i in range(4)) * x"), 6 * X)  # a constant sum is a constant
    assert same(comp("max(1, 2) * x + min(3, R) * r"), 2 * X + RR)


# -- exact constants -----------------------------------------------------------------------

def test_constant_folding_is_exact():
    v = comp("0.1 + 0.2 == 0.3")
    assert v.is_bool
    assert z3.is_true(z3.simplify(term(v)))
    assert comp("0.1 + 0.2").const == Fraction("0.3") == Fraction(3, 10)
    assert comp("0.1").const == Fraction("0.1")
    assert comp("1 / 3 * 3").const == 1
    assert z3.is_true(z3.simplify(term(comp("1 / 3 * 3 == 1"))))
    assert z3.is_false(z3.simplify(term(comp("0.1 + 0.2 != 0.3"))))
    assert comp("-0.25 * 4").const == -1
    assert comp("abs(-1.5)").const == Fraction(3, 2)
    assert comp("2.5e-1").const == Fraction(1, 4)


def test_decimal_literals_are_decimal_not_binary():
    # x * 0.1 is exactly x / 10, not x * 0.1000000000000000055...
    assert same(comp("x * 0.1"), X / 10)
    assert not same(comp("x * 0.1"), X * z3.RealVal(Fraction(0.1)))


def test_non_finite_literal_is_an_error():
    assert "finite" in spec_error("1e400 * x").message


# -- comprehensions --------------------------------------------------------------------------

def test_max_comprehension():
    v = comp("max(x + i for i in range(3))")
    assert v.unit == BYTES
    assert same(v, X + 2)
    s = z3.Solver()
    s.add(z3.Not(term(v) == X + 2))
    assert s.check() == z3.unsat


def test_min_max_sum_comprehensions():
    assert same(comp("min(x - i for i in range(1, 4))"), X - 3)
    assert same(comp("sum(x for i in range(3))"), 3 * X)
    assert same(comp("sum(S[i] for i in range(N))"), S[0] + S[1] + S[2])
    assert same(comp("sum(S[i] for i in range(0, 5, 2))"), S[0] + S[2] + S[4])
    assert same(comp("max(S[i] for i in range(2))"), z3.If(S[1] > S[0], S[1], S[0]))
    assert same(comp("sum(i * x for i in range(4))"), 6 * X)
    # nested, with a load-time filter
    assert same(comp("sum(S[i - j] for i in range(3) for j in range(i) if j > 0)"), S[1])
    assert same(comp("sum([x for i in range(2)])"), 2 * X)
    assert comp("sum(i for i in range(4))").const == 6


def test_min_max_semantics():
    v = comp("max(x, y)")
    assert valid(z3.And(term(v) >= X, term(v) >= Y, z3.Or(term(v) == X, term(v) == Y)))
    v = comp("min(x, y, 0)")
    assert valid(z3.And(term(v) <= X, term(v) <= Y, term(v) <= 0, z3.Or(term(v) == X, term(v) == Y, term(v) == 0)))
    assert comp("max(1, 2.5, -3)").const == Fraction(5, 2)


def test_all_any():
    assert same(comp("all(x > i for i in range(3))"), X > 2)
    assert same(comp("any(x > i for i in range(3))"), X > 0)
    assert same(comp("all(S[i] <= S[i + 1] for i in range(3))"), z3.And(S[0] <= S[1], S[1] <= S[2], S[2] <= S[3]))
    assert same(comp("any(a, b, x > 0)"), z3.Or(A, B, X > 0))
    assert same(comp("all(a, b)"), z3.And(A, B))


def test_comprehension_errors():
    assert "nothing" in spec_error("max(x + i for i in range(0))").message
    assert "number" in spec_error("all(x + i for i in range(2))").message
    with pytest.raises(SpecError):
        comp("sum(x for i in [1, 2])")
    with pytest.raises(SpecError):
        comp("sum(x for i in range(d))")
    with pytest.raises(SpecError, match="decidable"):
        comp("sum(x for i in range(3) if x > i)")
    for fn in ("min", "max", "sum", "all", "any"):
        assert "argument" in spec_error(f"{fn}()").message


def test_loop_variable_scoping():
    # an inner loop reusing a name does not leak its value to the outer element
    assert same(comp("sum(x * i + sum(y for i in range(2)) for i in range(3))"), 3 * X + 6 * Y)
    with pytest.raises(SpecError):
        comp("sum(x for i in range(2)) + i")


# -- if-expressions, abs ---------------------------------------------------------------------

def test_if_expressions():
    v = comp("x if a else 2 * x")
    assert v.unit == BYTES and same(v, z3.If(A, X, 2 * X))
    v = comp("x if x > y else 0")
    assert v.unit == BYTES and same(v, z3.If(X > Y, X, 0))
    v = comp("a if x > 0 else b")
    assert v.is_bool and same(v, z3.If(X > 0, A, B))
    assert same(comp("(x if a else y) + 1 if b else r * R"), z3.If(B, z3.If(A, X, Y) + 1, RR))
    with pytest.raises(SpecError, match="unit"):
        comp("x if a else d")
    with pytest.raises(SpecError):
        comp("x if a else b")
    with pytest.raises(SpecError, match="condition"):
        comp("x if x else y")


def test_abs():
    v = comp("abs(x - y)")
    assert v.unit == BYTES
    assert same(v, z3.If(X - Y >= 0, X - Y, Y - X))
    assert valid(term(v) >= 0)
    assert comp("abs(-3)").const == 3
    assert same(comp("abs(-x)"), z3.If(X >= 0, X, -X))


# -- the => operator ---------------------------------------------------------------------------

def test_implies_compiles_to_implies():
    v = comp("p => q")
    assert v.is_bool
    assert z3.is_implies(term(v))
    assert same(v, z3.Implies(P, Q))
    assert not same(v, z3.Implies(Q, P))
    v = comp_via_prepare("p=>q")
    assert z3.is_implies(term(v)) and same(v, z3.Implies(P, Q))


def test_implies_is_right_associative():
    right = z3.Implies(A, z3.Implies(B, C))
    left = z3.Implies(z3.Implies(A, B), C)
    assert not valid(right == left)  # the two readings really differ
    assert same(comp("a => b => c"), right)
    assert same(comp("a => (b => c)"), right)
    assert same(comp("(a => b) => c"), left)
    assert same(comp("a=>b=>c"), right)
    assert same(comp("a => b => c => p"), z3.Implies(A, z3.Implies(B, z3.Implies(C, P))))


def test_implies_binds_weaker_than_and_or_not_comparisons():
    assert not valid(z3.Implies(z3.And(A, B), C) == z3.And(A, z3.Implies(B, C)))
    assert same(comp("a and b => c"), z3.Implies(z3.And(A, B), C))
    assert same(comp("(a and b) => c"), z3.Implies(z3.And(A, B), C))
    assert same(comp("a => b or c"), z3.Implies(A, z3.Or(B, C)))
    assert same(comp("a or b => c and p"), z3.Implies(z3.Or(A, B), z3.And(C, P)))
    assert same(comp("not a => b"), z3.Implies(z3.Not(A), B))
    assert same(comp("x > 0 => x + 1 > 0"), z3.Implies(X > 0, X + 1 > 0))
    assert same(comp("x >= y => r * R <= x"), z3.Implies(X >= Y, RR <= X))
    assert same(comp("a and b => c or p => q"),
                z3.Implies(z3.And(A, B), z3.Implies(z3.Or(C, P), Q)))
    # an if-expression is a single operand on either side
    assert same(comp("a => b if c else p"), z3.Implies(A, z3.If(C, B, P)))
    assert same(comp("b if c else p => a"), z3.Implies(z3.If(C, B, P), A))


def test_implies_in_parentheses_and_calls():
    assert same(comp("(a => b) and c"), z3.And(z3.Implies(A, B), C))
    assert same(comp("c and (a => b)"), z3.And(C, z3.Implies(A, B)))
    assert same(comp("(a => b) == (not a or b)"), z3.BoolVal(True))
    assert same(comp("x if (a => b) else y"), z3.If(z3.Implies(A, B), X, Y))
    assert same(comp("any(a => b, c)"), z3.Or(z3.Implies(A, B), C))


def test_implies_in_comprehension():
    v = comp("all(p => x > i for i in range(2))")
    assert same(v, z3.And(z3.Implies(P, X > 0), z3.Implies(P, X > 1)))
    assert same(v, z3.Implies(P, X > 1))
    assert valid(term(comp("all(x > i => x > i - 1 for i in range(2))")))
    assert same(comp("all(S[i] > 0 => S[i + 1] > 0 for i in range(3))"),
                z3.And([z3.Implies(S[i] > 0, S[i + 1] > 0) for i in range(3)]))
    assert same(comp("any([a => b for i in range(2)])"), z3.Implies(A, B))


def test_implies_needs_both_sides():
    for text in ("=> a", "a =>", "(a => ) and b", "f(=> a)"):
        with pytest.raises(SpecError):
            comp(text)
    assert "both sides" in spec_error("(=> a)").message


# -- error locations -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, marker", [
    ("x + d > 0", "x + d"),
    ("p => x + d > 0", "x + d"),
    ("p=>x + d > 0", "x + d"),
    ("a => b => x + d > 0", "x + d"),
    ("a=>b=>c=>x + d > 0", "x + d"),
    ("(a => b) and x + d > 0", "x + d"),
    ("(p=>q) == (a=>b) and x + d > 0", "x + d"),
    ("a => (b => c) and zz", "zz"),
    ("(a => b) and zz", "zz"),
    ("a and zz=>q", "zz"),
    ("a and z=>q", "z=>"),
    ("all(a => zz for i in range(2))", "zz"),
    ("all(a => b for i in range(2)) and x * r > 0", "x * r"),
    ("all(p => x > i for i in range(2)) => q and zz", "zz"),
    ("a => b if x + d > 0 else c", "x + d"),
    ("b if c else a => x * r > 0", "x * r"),
    ("?h => a", "?h"),
    ("a => ?h", "?h"),
    ("(a => b) and ?hole", "?hole"),
    ("a => ?h and b", "?h"),
    ("x > 0 => x / d > 0", "x / d"),
])
def test_error_column_after_implies(text, marker):
    e = spec_error(text)
    assert e.loc is not None
    assert e.loc.line == 1
    assert e.loc.col == text.index(marker) + 1, (text, str(e))


def test_error_column_with_offsets_and_lines():
    # text embedded at line 5, column 10 of a file
    src = Source("f.toml", "a => b => x + d > 0", line0=5, col0=10)
    with pytest.raises(SpecError) as exc:
        compile_src(src)
    assert (exc.value.loc.file, exc.value.loc.line, exc.value.loc.col) == ("f.toml", 5, 10 + 10)
    # multi-line: later lines are 1-based from their own start
    text = "(a =>\n  b) and (p\n    => x + d > 0)"
    src = Source("f.toml", text, line0=3, col0=7)
    with pytest.raises(SpecError) as exc:
        compile_src(src)
    assert (exc.value.loc.line, exc.value.loc.col) == (5, text.split("\n")[2].index("x + d") + 1)


def test_syntax_error_column():
    e = spec_error("(a => b) and and c")
    assert "syntax" in e.message
    assert e.loc.col == "(a => b) and and c".index("and c") + 1


# -- hypothesis: random implication/and/or formulas ------------------------------------------------

ATOMS = {"a": A, "b": B, "c": C, "p": P, "q": Q}


@st.composite
def formula(draw, depth=3):
    """A random formula as (text, z3 term, precedence); text uses minimal parentheses
    (plus random extra ones), with => weakest and right-associative."""
    # precedence: 0 '=>', 1 'or', 2 'and', 3 'not', 4 atom
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        name = draw(st.sampled_from(sorted(ATOMS)))
        return name, ATOMS[name], 4
    kind = draw(st.sampled_from(["imp", "imp", "and", "or", "not"]))

    def wrap(part, need_parens):
        text, _term, _prec = part
        if need_parens or draw(st.integers(0, 5)) == 0:
            return f"({text})"
        return text

    if kind == "not":
        sub = draw(formula(depth - 1))
        return "not " + wrap(sub, sub[2] < 3), z3.Not(sub[1]), 3
    left, right = draw(formula(depth - 1)), draw(formula(depth - 1))
    if kind == "imp":
        sp1, sp2 = draw(st.sampled_from(["", " ", "  "])), draw(st.sampled_from(["", " "]))
        text = wrap(left, left[2] == 0) + f"{sp1}=>{sp2}" + wrap(right, False)
        return text, z3.Implies(left[1], right[1]), 0
    prec = 1 if kind == "or" else 2
    text = wrap(left, left[2] < prec) + f" {kind} " + wrap(right, right[2] <= prec)
    term = z3.Or(left[1], right[1]) if kind == "or" else z3.And(left[1], right[1])
    return text, term, prec


@SETTINGS
@given(formula(4))
def test_random_formulas_compile_to_their_meaning(f):
    text, term, _ = f
    v = comp(text)
    assert v.is_bool
    assert same(v, term), text


@SETTINGS
@given(formula(4), st.integers(0, 10 ** 6))
def test_random_formula_columns(f, seed):
    """Every name in the parsed tree maps back to where the user wrote it; an unknown
    name placed at a random atom is reported at its own column."""
    text = f[0]
    src = Source("<t>", text)
    tree = parse(src, "eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id != IMPLIES:
            loc = src.node_loc(node)
            assert loc.line == 1
            assert text[loc.col - 1:].startswith(node.id), (text, node.id, loc)
    # replace one atom occurrence by an unknown name
    spots = [i for i, ch in enumerate(text) if ch in ATOMS and (i == 0 or not text[i - 1].isalnum())
             and (i + 1 == len(text) or not text[i + 1].isalnum())]
    at = spots[seed % len(spots)]
    bad = text[:at] + "zz" + text[at + 1:]
    e = spec_error(bad)
    assert "zz" in e.message
    assert e.loc.col == at + 1, (bad, str(e))


# -- hypothesis: linear arithmetic --------------------------------------------------------------

def render(f: Fraction) -> str:
    if f.denominator == 1:
        return str(f.numerator)
    return f"({f.numerator} / {f.denominator})"


small_fracs = st.builds(Fraction, st.integers(-50, 50), st.integers(1, 12))
decimals = st.integers(-999, 999).map(lambda n: Fraction(n, 100))


@SETTINGS
@given(st.one_of(small_fracs, decimals), st.one_of(small_fracs, decimals), st.booleans())
def test_distributivity(a, b, as_decimal):
    def lit(f: Fraction) -> str:
        if as_decimal and (f * 100).denominator == 1:
            return repr(float(f)) if f >= 0 else f"({float(f)!r})"
        return render(f)
    v = comp(f"{lit(a)} * x + {lit(b)} * x")
    w = comp(f"({lit(a)} + {lit(b)}) * x")
    # a zero coefficient makes its term unit-polymorphic (zero has every unit)
    assert v.unit == (BYTES if (a, b) != (0, 0) else None)
    assert w.unit == (BYTES if a + b != 0 else None)
    s = z3.Solver()
    s.add(term(v) != term(w))
    assert s.check() == z3.unsat
    s = z3.Solver()
    s.add(term(v) != (z3.RealVal(a + b) * X))
    assert s.check() == z3.unsat
    # and it is not trivially true: a different coefficient is distinguishable
    s = z3.Solver()
    s.add(term(v) != z3.RealVal(a + b + Fraction(1, 1000)) * X)
    assert s.check() == z3.sat


@SETTINGS
@given(small_fracs, small_fracs.filter(lambda f: f != 0), small_fracs)
def test_linear_rearrangement(a, k, c):
    # (a*x + c*R*r) / k == a/k * x + c/k * (r*R)
    v = comp(f"({render(a)} * x + {render(c)} * R * r) / {render(k)}")
    assert v.unit == (BYTES if (a, c) != (0, 0) else None)
    assert same(v, (z3.RealVal(a) * X + z3.RealVal(c) * RR) / z3.RealVal(k))
