"""Tests for the one semantics of a CCA step (ccmatic.semantics.cca / evaluate) over
its three domains.

A CCA file is checked once (ccmatic.spec.cca: ``prog.code(R, D, T, holes)``) and the
same checked step runs over Z3 terms (the SMT encoding), exact rationals (replay)
and floats (the simulator).  On a concrete history the Z3 terms, simplified, must be
exactly the exact domain's numbers, and floats must agree up to rounding.  The
error tests pin the messages of the (single) checker and of step evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction as F
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.model import ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.quantities import OBSERVATIONS
from ccmatic.core.scenario import Objective, Query, Scenario
from ccmatic.core.source import Source
from ccmatic.engine.verify import verify
from ccmatic.semantics.cca import initial_values, run_step
from ccmatic.semantics.domain import EXACT, FLOAT
from ccmatic.semantics.z3domain import Z3, rat
from ccmatic.spec import ir
from ccmatic.spec.cca import CcaProgram, StepCode, load_cca

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

Value = F | bool
Fetch = Callable[[str, int], Any]

# Every construct of the language in one validated (linear) program: comprehensions
# (filters, nested, 3-argument range), chained comparisons, '=>', if-expressions on
# numbers and conditions, unit casts, unary +/-/not, if/elif/else leaving persistent
# names unassigned in some branches, reads before and after an assignment, docstring,
# pass, choose() on numbers and (in the initial value) on conditions.
CONSTRUCTS = '''\
# all constructs
flag: bool = choose(True, False)
acc: bytes
n: count = 0
"""a docstring statement"""
x = S - S[t - 2 * R - 3 // 2]
lo = min(c_lo * k for k in range(1, 3))
m2 = max(S[t - R - i - j] for i in range(2) for j in range(2) if i <= j)
hi = max(c_hi, c_lo, MSS / R, m2 / R)
tot = sum(S[t - R - i] - S[t - R - i - 1] for i in range(3) if i != 1)
up = all(A[t - j] >= A[t - j - 1] for j in range(1, 3)) or any(qdel_lo > d for d in range(0, T, 2))
mid = 0 < qdel_lo <= qdel_hi[t - R - D] < 2 * R + D
imp = (qdel_lo > 0 => c_hi > c_lo) and not timeout
b2 = (timeout if up else flag) != imp
y = abs(x) + seconds(3) * c_lo - 1.25 * MSS + tot - -x
if flag == up and imp or b2:
    rate = lo if mid else hi
    acc = acc + y
elif x > 0.5 * MSS:
    cwnd = 2 * cwnd
    z = -x
    pass
else:
    rate = +hi / 2
    flag = not flag
n = n + 1 if rate * R > cwnd else n
cwnd = cwnd + MSS / 2 if cwnd < acc else cwnd
w = cwnd
rate = choose(rate, w / R, 3 * rate + bytes(1) / R)
'''

# Persistent names assigned in only some branches of nested ifs, a temporary
# assigned before an if and overwritten in one branch, constant temporaries.
BRANCHES = '''\
s: seconds
k = 2
v = A
if timeout:
    if Ld > Ld[t - 1]:
        cwnd = MSS
    else:
        s = qdel_lo
        v = Ld
elif cwnd > k * MSS:
    rate = c_lo / k
    cwnd = cwnd - MSS
rate = rate + (v - A) / R
cwnd = max(cwnd, MSS)
s = s + R if s < T else s
'''


@cache
def _load(name: str, text: str | None = None) -> CcaProgram:
    return load_cca(TEMPLATES / f"{name}.cca" if text is None else f"{name}.cca", text)


def _programs(template: bool) -> list[str]:
    return [p.stem for p in sorted(TEMPLATES.glob("*.cca"))
            if not _load(p.stem).sim_only and _load(p.stem).is_template == template]


# Simulator-only files (cubic, reno) are left out of the Z3 cross-check: a
# non-integer power has no exact value (the exact domain rounds it through floats).
CONCRETE = _programs(False)
TEMPLATE_FILES = _programs(True)
EXTRA = {"constructs": CONSTRUCTS, "branches": BRANCHES}

# numbers that hit comparison boundaries (small integers) as well as general rationals
NUMBER = st.one_of(st.integers(-3, 12).map(F), st.fractions(-40, 40, max_denominator=12))
DYADIC = st.integers(-160, 160).map(lambda n: F(n, 8))  # exact in binary floating point
POS = st.fractions(F(1, 4), 20, max_denominator=6).filter(lambda x: x > 0)


def _is_bool(prog: CcaProgram, name: str) -> bool:
    if name in OBSERVATIONS:
        return OBSERVATIONS[name].unit is None
    return any(s.name == name and s.unit is None for s in prog.states)


class History:
    """A concrete history drawn lazily: each (name, lag) gets one value the first time
    it is read, so that every domain sees the same numbers."""

    def __init__(self, prog: CcaProgram, data: st.DataObject, numbers: st.SearchStrategy[F]) -> None:
        self.prog, self.data, self.numbers = prog, data, numbers
        self.values: dict[tuple[str, int], Value] = {}

    def __call__(self, name: str, lag: int) -> Value:
        assert lag >= 0, f"fetch({name!r}, {lag}) reads the future"
        key = (name, lag)
        if key not in self.values:
            label = f"{name}[t-{lag}]"
            if _is_bool(self.prog, name):
                self.values[key] = self.data.draw(st.booleans(), label=label)
            else:
                self.values[key] = self.data.draw(self.numbers, label=label)
        return self.values[key]


def z3_fetch(fetch: Fetch) -> Callable[[str, int], z3.ExprRef]:
    """The same history as Z3 numerals."""
    def f(name: str, lag: int) -> z3.ExprRef:
        v = fetch(name, lag)
        return z3.BoolVal(v) if isinstance(v, bool) else rat(F(v))
    return f


def float_fetch(fetch: Fetch) -> Callable[[str, int], float | bool]:
    def f(name: str, lag: int) -> float | bool:
        v = fetch(name, lag)
        return v if isinstance(v, bool) else float(v)
    return f


def picker(index: int, empty: Any) -> Callable[[list[Any], ir.Choose], Any]:
    """A deterministic chooser: option ``index`` (cyclically), ``empty`` for choose()."""
    return lambda opts, node: opts[index % len(opts)] if opts else empty


def _numeral(e: z3.ExprRef | bool) -> Value:
    if isinstance(e, bool):
        return e
    e = z3.simplify(e)
    if z3.is_true(e):
        return True
    if z3.is_false(e):
        return False
    assert z3.is_rational_value(e), f"not a numeral: {e}"
    assert isinstance(e, z3.RatNumRef)
    return F(e.as_fraction())


def z3_values(out: dict[str, z3.ExprRef]) -> dict[str, Value]:
    """Z3 outputs on concrete inputs, simplified to values."""
    return {k: _numeral(v) for k, v in out.items()}


def _assert_exact_types(out: dict[str, Any], like: dict[str, Value]) -> None:
    assert all(type(v) is (bool if isinstance(like[k], bool) else F) for k, v in out.items()), out


def _check_against_z3(prog: CcaProgram, data: st.DataObject, holes: dict[str, F] | None = None) -> None:
    R = data.draw(st.sampled_from([1, 2]), label="R")
    D = data.draw(st.sampled_from([1, 2]), label="D")
    T = data.draw(st.sampled_from([5, 10]), label="T")
    mss = data.draw(POS, label="mss")
    index = data.draw(st.integers(0, 6), label="choice")
    empty = data.draw(NUMBER, label="choose()")
    hist = History(prog, data, NUMBER)
    zfetch = z3_fetch(hist)
    if holes is None:
        code = prog.code(R, D, T)
        got = run_step(code, EXACT, hist, lambda p: mss, picker(index, empty))
        want = z3_values(run_step(code, Z3, zfetch, lambda p: rat(mss), picker(index, rat(empty))))
        assert got == want
        _assert_exact_types(got, want)
        return
    # the template with symbolic holes, each hole given its value when evaluated
    # (as in the CEGIS encoding): no per-candidate unit check
    sym = prog.code(R, D, T, "symbolic")
    got = run_step(sym, EXACT, hist, lambda p: mss, picker(index, empty), holes.__getitem__)
    want = z3_values(run_step(sym, Z3, zfetch, lambda p: rat(mss), picker(index, rat(empty)),
                              lambda h: rat(holes[h])))
    assert got == want
    _assert_exact_types(got, want)
    # the filled candidate (holes folded as constants), when it type-checks
    try:
        filled = prog.code(R, D, T, dict(holes))
    except SpecError as e:
        assert "unit" in e.message, str(e)
        return
    assert run_step(filled, EXACT, hist, lambda p: mss, picker(index, empty)) == got
    assert z3_values(run_step(filled, Z3, zfetch, lambda p: rat(mss), picker(index, rat(empty)))) == got


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", CONCRETE)
@SETTINGS
@given(data=st.data())
def test_exact_matches_z3(name: str, data: st.DataObject) -> None:
    _check_against_z3(_load(name), data)


@pytest.mark.parametrize("name", sorted(EXTRA))
@SETTINGS
@given(data=st.data())
def test_exact_matches_z3_on_every_construct(name: str, data: st.DataObject) -> None:
    _check_against_z3(_load(name, EXTRA[name]), data)


@pytest.mark.parametrize("name", TEMPLATE_FILES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_exact_matches_z3_on_filled_templates(name: str, data: st.DataObject) -> None:
    prog = _load(name)
    holes = {}
    for h, decl in prog.holes.items():
        assert decl.domain is not None
        # zero often, so that many candidates type-check (a zero coefficient has every unit)
        zero = [st.just(F(0))] if F(0) in decl.domain else []
        holes[h] = data.draw(st.one_of(*zero, st.sampled_from(decl.domain)), label=h)
    _check_against_z3(prog, data, holes)


def test_lists_cover_the_shipped_files() -> None:
    assert {"aimd", "bbr", "cc_qdel", "const_rate", "copa", "any_sender"} <= set(CONCRETE)
    assert len(CONCRETE) >= 10 and TEMPLATE_FILES


@pytest.mark.parametrize("name", [p.stem for p in sorted(TEMPLATES.glob("*.cca")) if not _load(p.stem).is_template]
                         + sorted(EXTRA))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_float_agrees_with_exact(name: str, data: st.DataObject) -> None:
    """On inputs exact in binary (so no comparison flips on rounding) the float domain
    gives the exact results up to rounding."""
    prog = _load(name, EXTRA.get(name))
    R = data.draw(st.sampled_from([1, 2]))
    mss = data.draw(st.integers(1, 8).map(F))
    index = data.draw(st.integers(0, 6))
    hist = History(prog, data, DYADIC)
    code = prog.code(R, 1, 10)
    try:
        exact = run_step(code, EXACT, hist, lambda p: mss, picker(index, F(3, 2)))
    except SpecError as e:  # e.g. cubic's cube root of a negative w_max: floats say the same
        with pytest.raises(SpecError) as e2:
            run_step(code, FLOAT, float_fetch(hist), lambda p: float(mss), picker(index, 1.5))
        assert str(e2.value) == str(e)
        return
    approx = run_step(code, FLOAT, float_fetch(hist), lambda p: float(mss), picker(index, 1.5))
    assert exact.keys() == approx.keys()
    for k, v in exact.items():
        a = approx[k]
        if isinstance(v, bool):
            assert a is v, k
        else:
            assert type(a) is float, k
            assert math.isclose(a, v, rel_tol=1e-9, abs_tol=1e-9), (k, a, v)


@pytest.mark.parametrize("name", [p.stem for p in sorted(TEMPLATES.glob("*.cca"))] + sorted(EXTRA))
@pytest.mark.parametrize("index", [0, 1, 3])
def test_initial_values_agree_across_domains(name: str, index: int) -> None:
    """Initial values (with choose()) are the same over Z3, exact and float."""
    prog = _load(name, EXTRA.get(name))
    code = prog.code(2, 2, 10)
    mss = F(3, 2)
    exact = initial_values(code, EXACT, lambda p: mss, picker(index, F(0)))
    assert set(exact) == {s.name for s in prog.states if s.init is not None}
    z = z3_values(initial_values(code, Z3, lambda p: rat(mss), picker(index, rat(F(0)))))
    assert exact == z
    _assert_exact_types(exact, z)
    fl = initial_values(code, FLOAT, lambda p: float(mss), picker(index, 0.0))
    assert fl.keys() == exact.keys()
    for k, v in exact.items():
        assert fl[k] is v if isinstance(v, bool) else math.isclose(fl[k], v), (k, fl[k], v)


def test_initial_values_read_the_models_D_and_T() -> None:
    prog = load_cca("init.cca", "a: seconds = D\nb: seconds = T + R\nrate = c_lo\n")
    assert initial_values(prog.code(1, 3, 7), EXACT, lambda p: F(1), picker(0, F(0))) == {"a": F(3), "b": F(8)}


def test_initial_values_bbr_return_the_chosen_phase() -> None:
    code = _load("bbr_free_start").code(1, 1, 10)
    seen: list[list[Any]] = []

    def pick(opts: list[Any], node: ir.Choose) -> Any:
        seen.append(opts)
        return opts[2]
    assert initial_values(code, EXACT, lambda p: F(1), pick) == {"phase": F(2)}
    assert seen == [[F(0), F(1), F(2), F(3)]]
    assert initial_values(code, FLOAT, lambda p: 1.0, lambda o, node: o[3]) == {"phase": 3.0}


def test_choose_sees_evaluated_options_in_source_order() -> None:
    code = _load("copa_nofresh").code(1, 1, 5)
    seen: list[list[Any]] = []

    def pick(opts: list[Any], node: ir.Choose) -> Any:
        seen.append(opts)
        return opts[1]
    hist = {("qdel_lo", 1): F(0), ("qdel_hi", 2): F(5), ("cwnd", 1): F(3)}
    out = run_step(code, EXACT, lambda n, lag: hist[(n, lag)], lambda p: F(2), pick)
    # inc_ok: qdel_lo == 0 and 3 * 0 <= 2 * (1 + 0); dec_ok: qdel_hi > T
    assert seen == [[F(5), F(2)]]
    assert out == {"rate": F(2), "cwnd": F(2)}


# -- simulator-only files -----------------------------------------------------------------

# Nonlinear, and (checked at load time) unit-correct: a non-integer power of plain
# numbers, a quotient of bytes converted to a rate.
SIM = """\
# simulator-only
peak: bytes = 2 * MSS
rise = A - A[t - 2]
peak = max(peak, rise ** 3 / MSS ** 2)
rate = c_lo * qdel_lo / R + (peak / bytes(1)) ** (1 / 2) + rate(MSS / (S - S[t - R - 1]))
"""


def _sim(tmp_path: Path, text: str) -> CcaProgram:
    p = tmp_path / "sim.cca"
    p.write_text(text)
    return load_cca(p)


def _fetcher(values: dict[tuple[str, int], Value]) -> Callable[[str, int], Value]:
    return lambda n, lag: values[(n, lag)]


def test_sim_only_nonlinear_arithmetic(tmp_path: Path) -> None:
    prog = _sim(tmp_path, SIM)
    assert prog.sim_only
    code = prog.code(1, 1, 10)
    first = picker(0, F(0))
    assert initial_values(code, EXACT, lambda p: F(2), first) == {"peak": F(4)}
    h: dict[tuple[str, int], Value] = {("A", 1): F(10), ("A", 2): F(4), ("peak", 1): F(4), ("c_lo", 1): F(5),
                                       ("qdel_lo", 1): F(3, 2), ("S", 1): F(7), ("S", 2): F(3)}
    # rise = 6; peak = max(4, 216 / 4) = 54 ... sqrt(54) is irrational: float fallback
    out = run_step(code, EXACT, _fetcher(h), lambda p: F(2), first)
    assert out["peak"] == F(54)
    assert out["rate"] == F(15, 2) + F(math.sqrt(54.0)) + F(1, 2)
    assert type(out["rate"]) is F
    h[("A", 2)] = F(8)  # rise = 2: peak stays 4, sqrt(4) = 2 exactly
    out = run_step(code, EXACT, _fetcher(h), lambda p: F(2), first)
    assert out == {"rate": F(15, 2) + 2 + F(1, 2), "peak": F(4)}
    outf = run_step(code, FLOAT, float_fetch(_fetcher(h)), lambda p: 2.0, picker(0, 0.0))
    assert outf == {"rate": 10.0, "peak": 4.0}
    # verify encodes CCA files as linear constraints: a simulator-only file is refused
    scenario = Scenario("test", "<test>", str(tmp_path / "sim.cca"), SIM, ModelConfig(), 4)
    query = Query(scenario, (Objective("expr", {}, Loc("<test>"), Source("<test>", "True"), "property"),))
    with pytest.raises(SpecError, match="simulator-only"):
        verify(query, RunOptions(timeout_s=60, seed=0))


def test_sim_only_run_time_errors(tmp_path: Path) -> None:
    prog = _sim(tmp_path, SIM)
    path = str(tmp_path / "sim.cca")
    code = prog.code(1, 1, 10)
    h: dict[tuple[str, int], Value] = {("A", 1): F(10), ("A", 2): F(4), ("peak", 1): F(4), ("c_lo", 1): F(5),
                                       ("qdel_lo", 1): F(3, 2), ("S", 1): F(3), ("S", 2): F(3)}
    col = SIM.splitlines()[4].index("MSS / (S") + 1
    for d, fetch, mss in ((EXACT, _fetcher(h), F(2)), (FLOAT, float_fetch(_fetcher(h)), 2.0)):
        with pytest.raises(SpecError, match="division by zero at step evaluation") as e:
            run_step(code, d, fetch, lambda p, mss=mss: mss, picker(0, 0))  # type: ignore[misc]
        assert str(e.value).startswith(f"{path}:5:{col}: error: division by zero at step evaluation"), str(e.value)
        assert "\n" not in str(e.value)
    neg = _sim(tmp_path, "# simulator-only\nrate = (c_lo / rate(1) - c_hi / rate(1)) ** 0.5\n").code(1, 1, 10)
    for d, one in ((EXACT, F(1)), (FLOAT, 1.0)):
        with pytest.raises(SpecError, match="negative number raised to a non-integer power") as e:
            run_step(neg, d, lambda n, lag, one=one: one if n == "c_lo" else 2 * one,  # type: ignore[misc]
                     lambda p, one=one: one, picker(0, 0))  # type: ignore[misc]
        assert str(e.value).startswith(f"{path}:2:")


@pytest.mark.parametrize(("body", "line", "message"), [
    ("rate = c_lo + bogus", 3, "unknown name 'bogus'"),
    ("rate = C / 2", 3, "the CCA reads 'C', which a sender cannot observe"),
    ("rate = S[t] / R", 3, "'S[t]' reads the current step, which the sender cannot see yet"),
    ("rate = S[t + 1] / R", 3, "'S[t+1]' reads the future"),
    ("S = MSS\nrate = c_lo", 3, "cannot assign to 'S'"),
    ("while timeout:\n    rate = c_lo", 3, "'while' loops are not allowed in a CCA file"),
])
def test_sim_only_static_errors(tmp_path: Path, body: str, line: int, message: str) -> None:
    """Simulator-only files are checked at load time, in every branch."""
    with pytest.raises(SpecError) as e:
        _sim(tmp_path, f"# simulator-only\nx = 0\n{body}\n")
    assert str(e.value).startswith(f"{tmp_path / 'sim.cca'}:{line}:")
    assert message in str(e.value)


# Broken programs and the checker's message for each; the same text marked
# simulator-only (nonlinear arithmetic allowed) gets the same message.
BROKEN = [
    ("rate = c_lo + foo",
     "1:15: error: unknown name 'foo' (hint: see 'ccmatic list' or the CCA file docs for names)"),
    ("rate = c_loo", "1:8: error: unknown name 'c_loo' (hint: did you mean 'c_lo'?)"),
    ("rate = C",
     ("1:8: error: the CCA reads 'C', which a sender cannot observe (hint: the link rate C is hidden from the "
      "sender; use the beliefs c_lo/c_hi (or c_lo_lambda))")),
    ("rate = S[t] / R",
     ("1:8: error: 'S[t]' reads the current step, which the sender cannot see yet (hint: the latest visible value "
      "is S[t - 1] (plain 'S'))")),
    ("rate = S[t + 1] / R",
     ("1:8: error: 'S[t+1]' reads the future, which the sender cannot see yet (hint: the latest visible value is "
      "S[t - 1] (plain 'S'))")),
    ("rate = S[5] / R",
     ("1:8: error: a CCA indexes 'S' relative to the current step, e.g. S[t - 1] (hint: absolute steps and flow "
      "indices are for queries, not CCA files)")),
    ("rate = R[t - 1]", "1:8: error: 'R' cannot be indexed"),
    ("rate = t", "1:8: error: 't' can only be used inside an index, e.g. S[t - 2]"),
    ("rate = cwnd / R",
     "1:8: error: 'cwnd' is read but never set by this CCA (hint: assign cwnd somewhere, or do not read it)"),
    ("A = 1\nrate = c_lo",
     "1:1: error: cannot assign to 'A' (hint: CCAs set rate, cwnd, state variables or temporaries)"),
    ("t = 1\nrate = c_lo",
     "1:1: error: cannot assign to 't' (hint: CCAs set rate, cwnd, state variables or temporaries)"),
    ("while True:\n    rate = c_lo",
     "1:1: error: 'while' loops are not allowed in a CCA file (hint: use assignments and if/elif/else)"),
    ("rate = c_lo\nrate += c_lo", "2:1: error: augmented assignment is not supported (hint: write 'x = x + ...')"),
    ("rate = c_lo\nc_lo",
     ("2:1: error: bare expressions are not allowed in a CCA file (hint: to set a value write 'name = ...' "
      "(one '='))")),
    ("rate = c_lo\nx: bytes = 1",
     "2:1: error: state variables must be declared at the top of the file, before any statement"),
    ("rate, cwnd = c_lo, MSS", "1:1: error: assign to one plain name at a time, e.g. rate = 2 * c_lo"),
    ("if timeout:\n    x = MSS\nrate = x / R",
     ("3:8: error: 'x' may be undefined here (assigned only in some branches) (hint: assign it before the if, or "
      "in every branch)")),
    ("rate = max()", "1:8: error: max() needs at least one argument"),
    ("rate = min(c_lo for i in range(0))", "1:8: error: the comprehension ranges over nothing"),
    ("rate = max(c_lo for i in [1, 2])", "1:26: error: comprehensions range over 'range(a, b)' only"),
    ("rate = max(S[i - 2] for i in range(1))",
     "1:14: error: step -2 is before the first step (0) (hint: start the loop later, or shift the index less)"),
    ("rate = max(c_lo for (i, j) in range(2))", "1:21: error: comprehension variable must be a plain name"),
    ("rate = c_lo if timeout else timeout",
     "1:8: error: both branches of an if-expression must be numbers, or both conditions"),
    ("rate = timeout", "1:8: error: 'rate' needs a number in bytes/second, found a condition"),
    ("rate = foo(c_lo)",
     ("1:8: error: unknown function 'foo' (hint: available: min, max, sum, all, any, abs, choose, bytes, seconds, "
      "rate, count)")),
    ("rate = c_lo / 0", "1:8: error: division by zero"),
    ("rate = c_lo / (2 - 2)", "1:8: error: division by zero"),
    ("rate = c_lo.real",
     ("1:8: error: 'Attribute' is not allowed in the spec language (hint: use arithmetic, comparisons, and/or/not, "
      "if-expressions, min/max/sum/all/any)")),
    ("rate = c_lo if 1 < timeout else c_hi", "1:16: error: cannot compare a condition with a number"),
    ("rate = c_lo if not c_lo else c_hi",
     "1:20: error: expected a condition (true/false), found a number (hint: compare it, e.g. 'x > 0')"),
    ("rate = min(c_lo, timeout)", "1:8: error: cannot take min of a boolean and a number"),
    ("rate = sum(c_lo, timeout)", "1:8: error: cannot add a boolean and a number"),
    ("rate = c_lo if all(c_lo, timeout) else c_hi", "1:20: error: all() needs conditions, found a number"),
    ("rate = c_lo if any(c_lo for i in range(2)) else c_hi", "1:19: error: any() needs conditions, found a number"),
    ("rate = choose(c_lo, timeout)", "1:8: error: choose() options must all be numbers or all be conditions"),
    ("rate = abs(c_lo, c_hi)", "1:8: error: abs() takes one argument"),
    ("rate = 'fast'", "1:8: error: literal 'fast' is not a number"),
    ("rate = c_lo[t - 1][0]", "1:8: error: only named trace quantities can be indexed, e.g. S[t - 1]"),
    ("rate = c_lo if c_lo in c_hi else c_hi", "1:16: error: unsupported comparison"),
    ("rate = -timeout", "1:9: error: expected a number, found a boolean condition"),
    ("rate = c_lo // 2",
     "1:8: error: operator 'FloorDiv' is not allowed (hint: use + - * / with one constant factor)"),
    ("rate = abs(min)",
     "1:12: error: unknown name 'min' (hint: see 'ccmatic list' or the CCA file docs for names)"),
    ("rate = max(c_lo, key=c_hi)", "1:8: error: max() takes no keyword arguments"),
    ("rate = c_lo\nif timeout:\n    rate = timeout",
     "3:12: error: 'rate' needs a number in bytes/second, found a condition"),
    ("rate = c_lo\nif timeout:\n    y = timeout\nelse:\n    y = 1\nrate = c_lo",
     "2:1: error: 'y' is a condition in one branch and a number in the other"),
    ("rate = c_lo\nif timeout:\n    rate = c_lo\nelse:\n    rate = c_hi\nrate = rate[t - 1]",
     "6:8: error: 'rate' cannot be indexed"),
    ("rate = S[t - R - (1 // 0)]", "1:19: error: division by zero"),
    ("flag: bool\nflag = c_lo\nrate = c_lo", "2:8: error: 'flag' is a boolean state variable; assign a condition"),
]


@pytest.mark.parametrize(("body", "message"), BROKEN, ids=[b for b, _ in BROKEN])
def test_checker_messages(body: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        load_cca("bad.cca", body + "\n")
    assert str(err.value) == f"bad.cca:{message}"
    with pytest.raises(SpecError) as sim_err:
        load_cca("bad.cca", body + "\n# simulator-only\n")  # a last line: same line numbers
    if body == "rate = abs(min)":  # such a file may read rtt_min, so it is offered as a close match
        assert str(sim_err.value) == "bad.cca:1:12: error: unknown name 'min' (hint: did you mean 'rtt_min'?)"
    else:
        assert str(sim_err.value) == str(err.value)


def test_holes() -> None:
    prog = _load("tpl_ccac_2expr")
    values = {h: d.domain[0] for h, d in prog.holes.items() if d.domain is not None}
    values.update(a3=F(0), a4=F(0))  # no seconds next to bytes/second: the candidate type-checks
    R, D, T = 1, 1, 5

    def fetch(name: str, lag: int) -> Value:
        return F(1)
    out = run_step(prog.code(R, D, T, values), EXACT, fetch, lambda p: F(1), picker(0, F(0)))
    assert set(out) == {"rate"}
    # a filled template needs every hole's value (checked when the step is built)
    with pytest.raises(SpecError, match=r"hole '\?a1' has no value"):
        prog.code(R, D, T, {})
    del values["b0"]
    values.update(a1=F(2), a2=F(0), a3=F(0), a4=F(0), a5=F(0))
    with pytest.raises(SpecError, match=r"hole '\?b0' has no value"):
        prog.code(R, D, T, values)
    # symbolic holes: each hole's value comes from the evaluation
    sym = prog.code(R, D, T, "symbolic")
    assert prog.code(R, D, T) is sym
    out = run_step(sym, EXACT, fetch, lambda p: F(1), picker(0, F(0)), {**values, "b0": F(1, 2)}.__getitem__)
    # 2 * c_lo > 0: rate = max(b0 * c_lo + k0 * MSS / R, MSS / R) = max(1/2 - 1, 1)
    assert out == {"rate": F(1)}


def test_initial_value_errors() -> None:
    with pytest.raises(SpecError, match=r"an initial value may only use constants, MSS, R, D, T and choose\(\)"):
        load_cca("bad.cca", "x: bytes = S\nrate = c_lo\n# simulator-only\n")
    with pytest.raises(SpecError) as err:
        load_cca("bad.cca", "x: bytes = timeout < 1\nrate = c_lo\n")
    with pytest.raises(SpecError) as sim_err:
        load_cca("bad.cca", "x: bytes = timeout < 1\nrate = c_lo\n# simulator-only\n")
    assert str(sim_err.value) == str(err.value)


def test_step_code_is_cached_per_program_and_parameters() -> None:
    """R changes which steps are read: a cached step must not leak across R."""
    prog = _load("cc_qdel")
    lags: list[tuple[str, int]] = []

    def fetch(name: str, lag: int) -> Value:
        lags.append((name, lag))
        return F(1)
    codes: dict[int, StepCode] = {}
    for R in (1, 3, 1):
        lags.clear()
        code = prog.code(R, 1, 5)
        assert codes.setdefault(R, code) is code
        run_step(code, EXACT, fetch, lambda p: F(1), picker(0, F(0)))
        assert {lag for _, lag in lags} == {R}
