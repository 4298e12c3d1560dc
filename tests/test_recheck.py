"""Property tests for the exact re-checker (ccmatic.engine.recheck).

Random linear real arithmetic formulas are solved by Z3; the exact evaluator must
agree with Z3's own model evaluation on the formula and on every subterm.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccmatic.engine import exact_ops
from ccmatic.engine.recheck import Evaluator, FormulaCache, RecheckError, recheck
from ccmatic.engine.recheck_compiled import compile_check

X, Y, Z = z3.Reals("x y z")
P, Q, R = z3.Bools("p q r")
REALS = [X, Y, Z]
BOOLS = [P, Q, R]

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

fractions_ = st.builds(Fraction, st.integers(-20, 20), st.integers(1, 7))
nonzero_fractions = fractions_.filter(lambda f: f != 0)


def rv(f: Fraction) -> z3.ArithRef:
    return z3.RealVal(f) if f.denominator != 1 else z3.RealVal(f.numerator)


@st.composite
def num_term(draw, depth: int = 3) -> z3.ArithRef:
    if depth <= 0:
        return draw(st.one_of(st.sampled_from(REALS), fractions_.map(rv)))
    d = depth - 1
    kind = draw(st.sampled_from(
        ["leaf", "leaf", "add", "sub", "lmul", "rmul", "div", "neg", "ite", "sum", "pyconst"]))
    if kind == "leaf":
        return draw(num_term(0))
    if kind == "add":
        return draw(num_term(d)) + draw(num_term(d))
    if kind == "sub":
        return draw(num_term(d)) - draw(num_term(d))
    if kind == "lmul":
        return rv(draw(fractions_)) * draw(num_term(d))
    if kind == "rmul":
        return draw(num_term(d)) * rv(draw(fractions_))
    if kind == "div":
        return draw(num_term(d)) / rv(draw(nonzero_fractions))
    if kind == "neg":
        return -draw(num_term(d))
    if kind == "ite":
        return z3.If(draw(bool_term(d)), draw(num_term(d)), draw(num_term(d)))
    if kind == "sum":
        return z3.Sum([draw(num_term(d)) for _ in range(draw(st.integers(1, 4)))])
    # python int constants mixed in (z3 coerces them)
    return draw(num_term(d)) + draw(st.integers(-5, 5))


@st.composite
def bool_term(draw, depth: int = 3) -> z3.BoolRef:
    if depth <= 0:
        return draw(st.one_of(st.sampled_from(BOOLS), st.sampled_from([z3.BoolVal(True), z3.BoolVal(False)])))
    d = depth - 1
    kind = draw(st.sampled_from(
        ["leaf", "cmp", "cmp", "cmp", "and", "or", "not", "implies", "atmost", "atleast", "xor", "beq", "ite"]))
    if kind == "leaf":
        return draw(bool_term(0))
    if kind == "cmp":
        a, b = draw(num_term(d)), draw(num_term(d))
        op = draw(st.sampled_from(["<", "<=", "==", "!=", ">", ">="]))
        return {"<": a < b, "<=": a <= b, "==": a == b, "!=": a != b, ">": a > b, ">=": a >= b}[op]
    if kind in ("and", "or"):
        parts = [draw(bool_term(d)) for _ in range(draw(st.integers(1, 3)))]
        return z3.And(*parts) if kind == "and" else z3.Or(*parts)
    if kind == "not":
        return z3.Not(draw(bool_term(d)))
    if kind == "implies":
        return z3.Implies(draw(bool_term(d)), draw(bool_term(d)))
    if kind in ("atmost", "atleast"):
        parts = [draw(bool_term(d)) for _ in range(draw(st.integers(1, 4)))]
        k = draw(st.integers(0, len(parts)))
        return z3.AtMost(*parts, k) if kind == "atmost" else z3.AtLeast(*parts, k)
    if kind == "xor":
        return z3.Xor(draw(bool_term(d)), draw(bool_term(d)))
    if kind == "beq":
        return draw(bool_term(d)) == draw(bool_term(d))
    return z3.If(draw(bool_term(d)), draw(bool_term(d)), draw(bool_term(d)))


def z3_fraction(v: z3.ExprRef) -> Fraction:
    assert z3.is_rational_value(v) or z3.is_int_value(v), v
    if z3.is_int_value(v):
        return Fraction(v.as_long())
    return Fraction(v.numerator_as_long(), v.denominator_as_long())


def subterms(e: z3.ExprRef):
    seen = set()
    stack = [e]
    while stack:
        t = stack.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        yield t
        stack.extend(t.children())


def check_agrees(model: z3.ModelRef, f: z3.BoolRef) -> None:
    """The exact evaluator agrees with Z3 on f and on all of its subterms."""
    ev = Evaluator(model)
    for t in subterms(f):
        zv = model.eval(t, model_completion=True)
        if z3.is_bool(t):
            assert z3.is_true(zv) or z3.is_false(zv), zv
            assert ev.boolean(t) is z3.is_true(zv), t
            # a fresh evaluator (empty memo) must agree too
            assert Evaluator(model).boolean(t) is z3.is_true(zv), t
        else:
            assert ev.num(t) == z3_fraction(zv), t
            assert Evaluator(model).num(t) == z3_fraction(zv), t


@SETTINGS
@given(bool_term(4))
def test_model_of_formula_satisfies_it_exactly(f):
    s = z3.Solver()
    s.add(f)
    res = s.check()
    if res == z3.sat:
        m = s.model()
        assert Evaluator(m).boolean(f) is True
        recheck(m, [("f", f)])  # must not raise
    else:
        assert res == z3.unsat
        # then its negation is valid, hence satisfiable, and every model falsifies f
        s2 = z3.Solver()
        s2.add(z3.Not(f))
        assert s2.check() == z3.sat
        m = s2.model()
        assert Evaluator(m).boolean(f) is False
        with pytest.raises(RecheckError):
            recheck(m, [("f", f)])
    check_agrees(m, f)


@SETTINGS
@given(bool_term(3), st.lists(fractions_, min_size=3, max_size=3), st.lists(st.booleans(), min_size=3, max_size=3))
def test_evaluator_matches_z3_at_arbitrary_points(f, reals, bools):
    """Pin every variable to a random value; the evaluator must agree with Z3 everywhere."""
    s = z3.Solver()
    for v, a in zip(REALS, reals):
        s.add(v == rv(a))
    for v, b in zip(BOOLS, bools):
        s.add(v == b)
    assert s.check() == z3.sat
    m = s.model()
    check_agrees(m, f)
    ev = Evaluator(m)
    for v, a in zip(REALS, reals):
        assert ev.num(v) == a
    for v, b in zip(BOOLS, bools):
        assert ev.boolean(v) is b


@SETTINGS
@given(num_term(4), st.lists(fractions_, min_size=3, max_size=3))
def test_numeric_terms_match_z3(t, reals):
    s = z3.Solver()
    for v, a in zip(REALS, reals):
        s.add(v == rv(a))
    assert s.check() == z3.sat
    m = s.model()
    expected = z3_fraction(m.eval(t, model_completion=True))
    assert Evaluator(m).num(t) == expected
    # the value is exact: compare with z3's own simplification after substitution
    subst = z3.substitute(t, *[(v, rv(a)) for v, a in zip(REALS, reals)],
                          *[(b, m.eval(b, model_completion=True)) for b in BOOLS])
    assert z3_fraction(z3.simplify(subst)) == expected


def _model(*cs: z3.BoolRef) -> z3.ModelRef:
    s = z3.Solver()
    s.add(*cs)
    assert s.check() == z3.sat
    return s.model()


def test_atmost_atleast_exhaustive():
    for vals in itertools.product([False, True], repeat=3):
        m = _model(*[b == v for b, v in zip(BOOLS, vals)])
        ev = Evaluator(m)
        n = sum(vals)
        for k in range(4):
            assert ev.boolean(z3.AtMost(P, Q, R, k)) is (n <= k)
            assert ev.boolean(z3.AtLeast(P, Q, R, k)) is (n >= k)
        assert ev.boolean(z3.Xor(P, Q)) is (vals[0] != vals[1])
        assert ev.boolean(z3.Distinct(P, Q)) is (vals[0] != vals[1])


def test_exact_rational_arithmetic():
    m = _model(X == z3.RealVal(Fraction(1, 10)), Y == z3.RealVal(Fraction(2, 10)))
    ev = Evaluator(m)
    assert ev.num(X + Y) == Fraction(3, 10)
    assert ev.boolean(X + Y == z3.RealVal(Fraction(3, 10))) is True
    assert ev.num(X / 3) == Fraction(1, 30)
    assert ev.num(-X * 7 - Y) == Fraction(-9, 10)
    assert ev.num(z3.Sum([X, Y, X])) == Fraction(4, 10)
    assert ev.boolean(z3.Distinct(X, Y, X + Y)) is True
    assert ev.boolean(z3.Distinct(X + X, Y)) is False


def test_memo_survives_temporaries():
    """One evaluator reused on many short-lived terms (Z3 recycles AST ids)."""
    m = _model(X == 5, Y == 7)
    ev = Evaluator(m)
    for k in range(300):
        t = X * k + Y if k % 2 else Y * k - X + k
        expected = 5 * k + 7 if k % 2 else 7 * k - 5 + k
        assert ev.num(t) == expected, k
        assert ev.boolean(t > expected - 1) is True
        del t


def test_unsupported_operator_raises():
    i = z3.Int("i")
    m = _model(i == 7)
    with pytest.raises(RecheckError, match="cannot evaluate"):
        Evaluator(m).num(i % 3)


def test_type_errors_raise():
    m = _model(X == 1, P)
    with pytest.raises(RecheckError, match="expected a number"):
        Evaluator(m).num(P)
    with pytest.raises(RecheckError, match="expected a boolean"):
        Evaluator(m).boolean(X + 1)


def test_recheck_names_violated_constraint():
    m = _model(X == 3, Y == 1)
    # all hold: returns the evaluator, whose values are reusable
    ev = recheck(m, [("pos", X > 0), ("order", Y < X)])
    assert ev.num(X) == 3
    # a constraint the model violates (it was never given to the solver)
    with pytest.raises(RecheckError, match=r"\[my-tag\]") as exc:
        recheck(m, [("ok", X > 0), ("my-tag", X + Y < 4), ("later", X < 0)])
    assert "my-tag" in str(exc.value)
    assert "later" not in str(exc.value)  # the first violated constraint is reported


@SETTINGS
@given(bool_term(3))
def test_recheck_rejects_models_of_the_negation(f):
    s = z3.Solver()
    s.add(z3.Not(f))
    if s.check() != z3.sat:
        # f is valid: every model satisfies it, e.g. an arbitrary one
        m = _model(X == 1, Y == -2, Z == Fraction(1, 3), P, z3.Not(Q))
        assert recheck(m, [("the-formula", f)]).boolean(f) is True
        return
    m = s.model()
    with pytest.raises(RecheckError) as exc:
        recheck(m, [("true", z3.BoolVal(True)), ("the-formula", f)])
    assert "the-formula" in str(exc.value)


# -- the compiled re-check (ccmatic.engine.recheck_compiled) --------------------------------
def _compiled(*cs: tuple[str, z3.BoolRef]):
    c = compile_check(FormulaCache(), list(cs))
    assert c is not None
    return c


@SETTINGS
@given(bool_term(4), st.lists(fractions_, min_size=3, max_size=3), st.lists(st.booleans(), min_size=3, max_size=3))
def test_compiled_check_agrees_with_z3_and_the_interpreter(f, reals, bools):
    """At a random point, the compiled check accepts f exactly when Z3 says f holds, and
    rejects it, naming it, exactly when it does not."""
    m = _model(*[v == rv(a) for v, a in zip(REALS, reals)], *[v == b for v, b in zip(BOOLS, bools)])
    holds = z3.is_true(m.eval(f, model_completion=True))
    assert Evaluator(m).boolean(f) is holds
    check = compile_check(FormulaCache(), [("other", z3.BoolVal(True)), ("the-formula", f)])
    if check is None:  # a division by a term that is not a non-zero numeral
        return
    if holds:
        ev = check.recheck(m)
        for v, a in zip(REALS, reals):
            if ev.vars.get(v.decl().name()) is not None:  # read from the model
                assert ev.vars[v.decl().name()] == a
    else:
        with pytest.raises(RecheckError, match="the-formula"):
            check.recheck(m)


def test_compiled_check_reuses_one_program_over_many_models():
    check = _compiled(("sum", X + Y <= 15), ("pos", X > 0), ("q", z3.Implies(P, Y == 2 * X)))
    for x in range(1, 6):
        m = _model(X == x, Y == 2 * x, P)
        ev = check.recheck(m)
        assert ev.num(X + Y) == 3 * x  # the evaluator knows the values read
    with pytest.raises(RecheckError, match=r"\[sum\]"):
        check.recheck(_model(X == 6, Y == 12, P))
    with pytest.raises(RecheckError, match=r"\[q\]"):
        check.recheck(_model(X == 1, Y == 3, P))


def test_compiled_check_binds_variables():
    """Bound variables (a candidate's holes) take their bound values, not the model's."""
    check = _compiled(("c", Y == 3 * X))
    m = _model(X == 1, Y == 6)
    with pytest.raises(RecheckError):
        check.recheck(m)  # the model's own values: 6 != 3
    assert check.recheck(m, {"x": Fraction(2)}).num(Y) == 6


def test_compiled_check_completes_missing_variables():
    """A variable the model leaves out (any value will do) is completed, as the
    interpreter does: x + 0*z == x holds whatever z is."""
    m = _model(X == 4)
    check = _compiled(("c", X + 0 * Z == 4), ("d", z3.Or(P, z3.Not(P))))
    check.recheck(m)


def test_compiled_check_long_sums_and_products():
    xs = [z3.Real(f"x{i}") for i in range(40)]
    m = _model(*[x == i for i, x in enumerate(xs)])
    total = sum(range(40))
    check = _compiled(("sum", z3.Sum(xs) == total), ("prod", z3.Product(*[rv(Fraction(1, 2))] * 20, xs[3]) == rv(Fraction(3, 2 ** 20))))
    check.recheck(m)
    with pytest.raises(RecheckError, match="sum"):
        _compiled(("sum", z3.Sum(xs) == total + 1)).recheck(m)


def test_divisions_that_could_raise_are_left_to_the_interpreter():
    """Every subterm of a compiled check is computed, so a division by a variable (zero
    in the branch not taken) is not compiled; the interpreter handles it."""
    c = z3.If(X == 0, rv(Fraction(0)), Y / X) == 0
    assert compile_check(FormulaCache(), [("c", c)]) is None
    assert compile_check(FormulaCache(), [("c", X / 0 == 1)]) is None
    m = _model(X == 0, Y == 1)
    recheck(m, [("c", c)])  # the interpreter takes only the branch chosen
    assert compile_check(FormulaCache(), [("c", X / 4 == 0)]) is not None


def _one_of_each_operator() -> dict[int, tuple[z3.BoolRef, z3.ExprRef]]:
    """Per row of the operator table, a condition and its subterm with that row's operator."""
    i = z3.Int("i")
    at_root = {
        exact_ops.AND: z3.And(P, X > 0, Y < 0), exact_ops.OR: z3.Or(Q, X < 0, Y < 0),
        exact_ops.NOT: z3.Not(Q), exact_ops.IMPLIES: z3.Implies(P, X == 2), exact_ops.XOR: z3.Xor(P, Q),
        exact_ops.EQ: X == 2, exact_ops.DISTINCT: z3.Distinct(X, Y, Z),
        exact_ops.LE: X <= 2, exact_ops.LT: Y < X, exact_ops.GE: X >= Y, exact_ops.GT: X > Z,
        exact_ops.ATMOST: z3.AtMost(P, Q, X > 0, 2), exact_ops.ATLEAST: z3.AtLeast(P, Q, X > 0, 3),
    }
    compared = {  # a term compared with a number
        exact_ops.ITE: (z3.If(P, X, Y), 2), exact_ops.ADD: (X + Y + Z, Fraction(4, 3)),
        exact_ops.SUB: (X - Y - Z, Fraction(8, 3)), exact_ops.NEG: (-X, -2), exact_ops.MUL: (X * 3 * Z, 2),
        exact_ops.DIV: (X / 4, Fraction(1, 2)), exact_ops.TOREAL: (z3.ToReal(i), 7),
        exact_ops.TOINT: (z3.ToInt(Z + 5), 6),
    }
    out: dict[int, tuple[z3.BoolRef, z3.ExprRef]] = {tag: (f, f) for tag, f in at_root.items()}
    out |= {tag: (t == v, t) for tag, (t, v) in compared.items()}
    return out


def test_every_operator_row_means_the_same_in_both_rechecks():
    """Each operator of the one table (exact_ops.OPS) is reached from its Z3 kind and
    gives, interpreted and compiled, the truth value Z3 gives at one point (true for
    some rows, false for others: TOINT's 5 + 1/3 floors to 5, not 6)."""
    cases = _one_of_each_operator()
    assert set(cases) == set(exact_ops.OPS)
    m = _model(X == 2, Y == -1, Z == Fraction(1, 3), P, z3.Not(Q), z3.Int("i") == 7)
    verdicts = set()
    for tag, (f, term) in cases.items():
        assert exact_ops.TAGS[term.decl().kind()] == tag
        holds = z3.is_true(m.eval(f, model_completion=True))
        verdicts.add(holds)
        assert Evaluator(m).boolean(f) is holds, tag
        check = _compiled(("f", f))
        if holds:
            check.recheck(m)
        else:
            with pytest.raises(RecheckError):
                check.recheck(m)
    assert verdicts == {True, False}
