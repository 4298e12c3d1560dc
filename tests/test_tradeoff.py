"""Loss vs convergence tradeoff calculator (Theorem 4.2.1, Fig. 4.4): closed forms against
the iterated recurrence, the growth classes, safe parsing of f(C), and the CLI handler."""

from __future__ import annotations

import argparse
import io
import json
import math
from fractions import Fraction as Fr

import pytest
import sympy as sp
from helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ccmatic.cli.tradeoff import add_parser, cmd_tradeoff
from ccmatic.core.errors import SpecError
from ccmatic.engine.tradeoff import compute, growth_class
from ccmatic.spec.lossfn import parse_loss, rate_symbol, step_symbol


def ceil(q: Fr) -> int:
    return -((-q.numerator) // q.denominator)


def smallest_k_geometric(C0: Fr, r: Fr, C: Fr) -> int:
    """Independent of the module: min k with C0 * r**k >= C, exactly."""
    k, x = 0, C0
    while x < C:
        k, x = k + 1, x * r
    return k


# -- f(C) = C: F(k) = C0 (1 + 1/beta_s)**k, F^-1 = Theta(log(C/C0)) ------------------------

@pytest.mark.parametrize("C0,beta", [(Fr(1), Fr(1)), (Fr(3, 2), Fr(1, 2)), (Fr(1), Fr(3))])
def test_f_equals_C(C0: Fr, beta: Fr) -> None:
    t = compute(parse_loss("C"), C0, beta)
    k, C = step_symbol(), rate_symbol()
    assert t.F_closed is not None
    assert sp.simplify(t.F_closed - sp.Rational(C0) * (1 + 1 / sp.Rational(beta)) ** k) == 0
    assert t.growth == "log" and t.exact
    r = 1 + 1 / beta
    Cs = [C0, C0 * Fr(3, 2), C0 * r**3, C0 * r**3 + Fr(1, 10**6), 10 * C0, Fr(777, 7) * C0, 1000 * C0]
    for c in Cs:
        want = smallest_k_geometric(C0, r, c)
        assert t.F_inv(c) == want, c
        assert t.F_inv_closed is not None
        if c > C0:
            assert t.F_inv_closed.subs(C, sp.Rational(c)) == want, c
        x = math.log(c / C0) / math.log(r)
        if abs(x - round(x)) > 1e-9:  # away from the boundary, the float formula agrees
            assert want == max(0, math.ceil(x))
    per_doubling = math.log(2) / math.log(r)
    for c in (10 * C0, 100 * C0, 10**4 * C0):
        k1, k2 = t.F_inv(c), t.F_inv(2 * c)
        assert k1 is not None and k2 is not None
        assert abs((k2 - k1) - per_doubling) <= 1


# -- constant f: F^-1 = ceil((C - C0) beta_s / c) = Theta(C - C0) ------------------------------

@pytest.mark.parametrize("text,c,C0,beta", [("3", Fr(3), Fr(2), Fr(1, 2)), ("1/2", Fr(1, 2), Fr(1), Fr(5, 3)),
                                             ("0.25", Fr(1, 4), Fr(3, 7), Fr(1))])
def test_constant_f(text: str, c: Fr, C0: Fr, beta: Fr) -> None:
    t = compute(parse_loss(text), C0, beta)
    assert t.growth == "linear" and t.exact
    assert t.F_closed is not None and sp.simplify(t.F_closed - (sp.Rational(C0) + step_symbol() * c / beta)) == 0
    step = c / beta
    for C in [C0, C0 + step, C0 + 5 * step, C0 + 5 * step + Fr(1, 1000), C0 + Fr(1, 3), 10 * C0 + 1, 100 * C0 + 7]:
        want = max(0, ceil((C - C0) * beta / c))
        assert t.F_inv(C) == want, C
        assert t.F_inv_closed is not None
        if C > C0:
            assert t.F_inv_closed.subs(rate_symbol(), sp.Rational(C)) == want
    for d in (Fr(10), Fr(100), Fr(1000, 3)):
        k1, k2 = t.F_inv(C0 + d), t.F_inv(C0 + 2 * d)
        assert k1 is not None and k2 is not None and abs(k2 - 2 * k1) <= 1


# -- f = sqrt(C): no closed form, between the log and the linear curve -----------------------

def test_sqrt_between_log_and_linear() -> None:
    one, beta = Fr(1), Fr(1)
    t_sqrt = compute(parse_loss("sqrt(C)"), one, beta)
    t_log = compute(parse_loss("C"), one, beta)
    t_lin = compute(parse_loss("1"), one, beta)
    assert t_sqrt.growth == "other" and t_sqrt.F_closed is None and t_sqrt.F_inv_closed is None
    assert not t_sqrt.exact and all(p.k is not None for p in t_sqrt.points)
    for C in (Fr(10**3), Fr(10**4), Fr(10**5)):
        ks, kl, kn = t_sqrt.F_inv(C), t_log.F_inv(C), t_lin.F_inv(C)
        assert ks is not None and kl is not None and kn is not None
        assert kl < ks < kn, (C, kl, ks, kn)
        # F grows like (k / (2 beta_s))**2, so F^-1(C) ~ 2 beta_s sqrt(C)
        assert abs(ks / (2 * math.sqrt(C)) - 1) < 0.1
    # the float iteration is the recurrence itself
    x = 1.0
    for _ in range(200):
        x += math.sqrt(x) / 1.0
    assert t_sqrt.F(200) == pytest.approx(x, rel=1e-12)
    t = compute(parse_loss("sqrt(C) + 1/2"), Fr(3, 7), Fr(5, 3))
    x = 3 / 7
    for _ in range(50):
        x += (math.sqrt(x) + 0.5) / (5 / 3)
    assert t.F(50) == pytest.approx(x, rel=1e-12)


# -- F^-1 is tight: F(F^-1(C)) >= C > F(F^-1(C) - 1) -------------------------------------------

@pytest.mark.parametrize("text", ["C", "3", "sqrt(C)", "C**2/10 + 1", "log(C) + 1", "1/C", "2*C + 5", "C/(C + 1)"])
@pytest.mark.parametrize("beta", [Fr(1, 2), Fr(7, 3)])
def test_tight_pair(text: str, beta: Fr) -> None:
    C0 = Fr(3, 2)
    t = compute(parse_loss(text), C0, beta, C_max=Fr(1))
    Cs = [C0 / 2, C0, C0 + Fr(1, 10**9), Fr(5), Fr(100), Fr(1234, 7)]
    Cs += [Fr(t.F(j)) for j in (1, 2, 3)]  # exactly on a step (Fraction(float) when inexact)
    for C in Cs:
        k = t.F_inv(C)
        assert k is not None, (text, C)
        assert t.F(k) >= C
        assert (k == 0) == (C <= C0)
        if k > 0:
            assert t.F(k - 1) < C


@settings(max_examples=25, deadline=None)
@given(st.fractions(Fr(1, 2), Fr(3), max_denominator=12), st.fractions(0, Fr(3), max_denominator=12),
       st.fractions(Fr(1, 4), Fr(4), max_denominator=12), st.fractions(Fr(1, 4), Fr(4), max_denominator=12),
       st.fractions(Fr(1, 2), Fr(200), max_denominator=50))
def test_linear_iteration_matches_closed_form(a: Fr, b: Fr, C0: Fr, beta: Fr, C: Fr) -> None:
    f = sp.Rational(a) * rate_symbol() + sp.Rational(b)
    t = compute(f, C0, beta, C_max=C0)
    assert t.growth == "log" and t.F_closed is not None
    k = t.F_inv(C)
    assert k is not None
    Fk = t.F_closed.subs(step_symbol(), k)
    assert Fk == t.F(k) and Fk >= sp.Rational(C)
    if k > 0:
        assert t.F_closed.subs(step_symbol(), k - 1) < sp.Rational(C)


def test_growth_classes() -> None:
    C0, beta = Fr(1), Fr(1)
    assert growth_class(parse_loss("C"), C0, beta) == "log"
    assert growth_class(parse_loss("3*C + 2"), C0, beta) == "log"
    assert growth_class(parse_loss("5"), C0, beta) == "linear"
    assert growth_class(parse_loss("sqrt(C)"), C0, beta) == "other"
    assert growth_class(parse_loss("C**2"), C0, beta) == "other"
    assert growth_class(parse_loss("10 - C"), C0, beta) == "bounded"
    assert growth_class(parse_loss("C - 10"), C0, beta) == "bounded"  # f(C0) < 0: F never grows


# -- bad input and non-progress -------------------------------------------------------------------

@pytest.mark.parametrize("text,col,word", [
    ("__import__('os')", 1, "__import__"),
    ("C*D", 3, "'D'"),
    ("C +", 4, "syntax"),
    ("C ^ 2", 3, "^"),
    ("2*C + open('x').read()", 7, "attribute"),
    ("  C + foo(C)", 7, "foo"),
    ("log(C, 2)", 1, "one argument"),
    ("C/0", 3, "division by zero"),
    ("C**2000", 4, "exponent"),
    ("", 1, "empty"),
    ("True", 1, "bool"),
])
def test_parse_loss_rejects(text: str, col: int, word: str) -> None:
    with pytest.raises(SpecError) as ei:
        parse_loss(text)
    e = ei.value
    assert e.loc is not None and e.loc.file == "<--loss>" and e.loc.line == 1 and e.loc.col == col, e.render()
    assert word in e.message


def test_parse_loss_accepts() -> None:
    C = rate_symbol()
    assert parse_loss("C") == C
    assert parse_loss(" 0.5*C + 1/2 ") == C / 2 + sp.Rational(1, 2)
    assert parse_loss("-C**2 + sqrt(C) * log(C) / exp(C)") == -C**2 + sp.sqrt(C) * sp.log(C) / sp.exp(C)


def test_no_progress_reports_never() -> None:
    t = compute(parse_loss("-C"), Fr(1), Fr(1))
    assert t.F_inv(Fr(1)) == 0
    r = t.reach(Fr(2))
    assert r.k is None and r.reason is not None and "never reaches" in r.reason
    assert all(p.k is None for p in t.points[1:])
    # bounded: F(k) = 10 - 9/2**k -> 10, never reached
    t = compute(parse_loss("10 - C"), Fr(1), Fr(2))
    assert t.F_inv(Fr(99, 10)) is not None
    assert t.F_inv(Fr(10)) is None and t.F_inv(Fr(11)) is None
    # f = 0 at C0: F stays at C0
    r = compute(parse_loss("C - 1"), Fr(1), Fr(1)).reach(Fr(2))
    assert r.k is None and r.reason is not None and "<= 0" in r.reason
    # f undefined at C0: F never leaves C0, one error (not a row per C)
    with pytest.raises(SpecError, match=r"undefined at C0 = 1 \(sqrt\(C - 5\) takes a root of -4\)"):
        compute(parse_loss("sqrt(C - 5)"), Fr(1), Fr(1))


def test_iteration_cap_is_an_error() -> None:
    with pytest.raises(SpecError, match="iteration cap"):
        compute(parse_loss("1/C**2"), Fr(1), Fr(1), max_steps=1000)


# -- the CLI handler ------------------------------------------------------------------------------

def ns(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = {"loss": ["C"], "C0": "1", "beta_s": "1/2", "C": None, "plot": None, "json": False}
    base.update(kw)
    return argparse.Namespace(**base)


def test_cli_json() -> None:
    out = io.StringIO()
    assert cmd_tradeoff(ns(loss=["C", "1", "-C"], C="2, 0.5,10,100", json=True), out, io.StringIO()) == 0
    d = json.loads(out.getvalue())
    assert list(d) == ["curves"] and len(d["curves"]) == 3
    for cv in d["curves"]:
        for key in ("loss", "F", "F_inv", "growth", "points"):
            assert key in cv
    c_log, c_lin, c_neg = d["curves"]
    assert (c_log["loss"], c_log["growth"], c_lin["growth"]) == ("C", "log", "linear")
    assert isinstance(c_log["F"], str) and isinstance(c_log["F_inv"], str)
    assert [Fr(p["C"]) for p in c_log["points"]] == [Fr(2), Fr(1, 2), Fr(10), Fr(100)]
    assert [p["k"] for p in c_log["points"]] == [1, 0, 3, 5]  # F(k) = 3**k
    assert [p["k"] for p in c_lin["points"]] == [1, 0, 5, 50]  # F(k) = 1 + 2k
    assert [p["k"] for p in c_neg["points"]] == [None, 0, None, None] and c_neg["F_inv"] is None


def test_cli_default_grid() -> None:
    out = io.StringIO()
    assert cmd_tradeoff(ns(C0="3/2", json=True), out, io.StringIO()) == 0
    pts = json.loads(out.getvalue())["curves"][0]["points"]
    assert [Fr(p["C"]) / Fr(3, 2) for p in pts] == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]


def test_cli_text_and_bad_numbers() -> None:
    out = io.StringIO()
    assert cmd_tradeoff(ns(loss=["C", "sqrt(C)"]), out, io.StringIO()) == 0
    text = out.getvalue()
    assert "F^-1(C)" in text and "ceiling(log(C)/log(3))" in text and "growth     : other" in text
    for kw, flag in [({"C0": "0"}, "--C0"), ({"C0": "abc"}, "--C0"), ({"beta_s": "-1/2"}, "--beta-s"),
                     ({"beta_s": "1/0"}, "--beta-s"), ({"C": "1,x"}, "--C")]:
        with pytest.raises(SpecError) as ei:
            cmd_tradeoff(ns(**kw), io.StringIO(), io.StringIO())
        assert ei.value.loc is not None and ei.value.loc.file == flag
    with pytest.raises(SpecError) as ei:
        cmd_tradeoff(ns(loss=["C", "C*D"]), io.StringIO(), io.StringIO())
    assert ei.value.loc is not None and ei.value.loc.col == 3


def test_cli_plot_png(tmp_path: object) -> None:
    from pathlib import Path

    png = Path(str(tmp_path)) / "tradeoff.png"
    out = io.StringIO()
    assert cmd_tradeoff(ns(loss=["C", "1", "sqrt(C)"], plot=str(png)), out, io.StringIO()) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_add_parser_wiring() -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true")
    top = argparse.ArgumentParser(prog="ccmatic")
    sub = top.add_subparsers(dest="command", required=True)
    add_parser(sub, common, "loss vs convergence time")
    args = top.parse_args(["tradeoff", "--loss", "C", "--loss", "1", "--C0", "1/2", "--beta-s", "0.5",
                           "--C", "1,2", "--json"])
    assert args.handler is cmd_tradeoff and args.loss == ["C", "1"] and args.beta_s == "0.5"
    out = io.StringIO()
    assert args.handler(args, out, io.StringIO()) == 0
    assert [p["k"] for p in json.loads(out.getvalue())["curves"][0]["points"]] == [1, 2]  # F(k) = 3**k / 2


def test_loss_undefined_at_C0_is_one_line() -> None:
    """C/log(C) at C0 = 1 divides by log(1) = 0: one error line naming it, with a C0
    that works, exit 2 (not a row of float errors per C)."""
    code, out, err = run_cli("tradeoff", "--loss", "C/log(C)", "--C0", "1", "--beta-s", "1")
    assert (code, out) == (2, "")
    assert err == ("--C0: error: f(C) = C/log(C) is undefined at C0 = 1 (a division by zero: log(C) = log(1) = 0), "
                   "so F never leaves C0 (hint: give a C0 where f(C) is defined, e.g. --C0 2)\n")
    code, out, _ = run_cli("tradeoff", "--loss", "C/log(C)", "--C0", "2", "--beta-s", "1")
    assert code == 0 and "never" not in out
