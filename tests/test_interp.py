"""Tests for the concrete CCA interpreter (ccmatic.lang.interp).

The reference is the Z3 compiler itself: each step is run on the same concrete
history by the interpreter and by ``cca._Executor`` (whose terms, with every input a
numeral, simplify to a single numeral), and the outputs must be equal exactly.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from fractions import Fraction as F
from functools import cache
from pathlib import Path

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccmatic.config import ModelConfig
from ccmatic.errors import SpecError
from ccmatic.lang.cca import (
    OBSERVATIONS,
    CcaProgram,
    _compile_init,
    _Executor,
    _StepScope,
    compile_into,
    load_cca,
)
from ccmatic.lang.expr import Val, rat
from ccmatic.lang.interp import Value, initial_state, run_step
from ccmatic.trace import Trace

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

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


CONCRETE = _programs(False)
TEMPLATE_FILES = _programs(True)
EXTRA = {"constructs": CONSTRUCTS, "branches": BRANCHES}

# numbers that hit comparison boundaries (small integers) as well as general rationals
NUMBER = st.one_of(st.integers(-3, 12).map(F), st.fractions(-40, 40, max_denominator=12))
DYADIC = st.integers(-160, 160).map(lambda n: F(n, 8))  # exact in binary floating point
POS = st.fractions(F(1, 4), 20, max_denominator=6).filter(lambda x: x > 0)


def _is_bool(prog: CcaProgram, name: str) -> bool:
    if name in OBSERVATIONS:
        return OBSERVATIONS[name][0] is None
    return any(s.name == name and s.unit is None for s in prog.states)


class History:
    """A concrete history drawn lazily: each (name, lag) gets one value the first time
    it is read, so that both evaluators see the same numbers."""

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


def _picker(index: int, empty: F) -> Callable[[list[Value]], Value]:
    return lambda opts: opts[index % len(opts)] if opts else empty


def z3_step(prog: CcaProgram, R: int, D: int, T: int, mss: F, fetch: Callable[[str, int], Value],
            index: int, empty: F, holes: dict[str, F] | None = None) -> dict[str, Value]:
    """The Z3 compiler's outputs for one step on concrete inputs, simplified to values."""

    def zfetch(name: str, lag: int) -> z3.ExprRef:
        v = fetch(name, lag)
        return z3.BoolVal(v) if isinstance(v, bool) else rat(F(v))

    def on_choose(opts: list[Val], node: ast.AST) -> Val:
        return opts[index % len(opts)] if opts else Val.num(empty)

    # hole values as hole terms (as for a symbolic candidate): units are not checked per
    # candidate here, since the interpreter does not check units
    hv = {h: Val(rat(v), False, None, None, True) for h, v in holes.items()} if holes is not None else None
    scope = _StepScope(prog, R, D, T, rat(mss), zfetch, on_choose, hv)
    _Executor(scope).run(prog.body)
    names = [n for n, on in (("rate", prog.sets_rate), ("cwnd", prog.sets_cwnd)) if on] + [s.name for s in prog.states]
    out: dict[str, Value] = {}
    for n in names:
        term = scope.env[n].term if n in scope.env else zfetch(n, 1)
        out[n] = _numeral(z3.simplify(term))
    return out


def _numeral(e: z3.ExprRef) -> Value:
    if z3.is_true(e):
        return True
    if z3.is_false(e):
        return False
    assert z3.is_rational_value(e), f"not a numeral: {e}"
    assert isinstance(e, z3.RatNumRef)
    return F(e.as_fraction())


def _check_against_z3(prog: CcaProgram, data: st.DataObject, holes: dict[str, F] | None = None) -> None:
    R = data.draw(st.sampled_from([1, 2]), label="R")
    D = data.draw(st.sampled_from([1, 2]), label="D")
    T = data.draw(st.sampled_from([5, 10]), label="T")
    mss = data.draw(POS, label="mss")
    index = data.draw(st.integers(0, 6), label="choice")
    empty = data.draw(NUMBER, label="choose()")
    hist = History(prog, data, NUMBER)
    got = run_step(prog, R=R, D=D, T=T, mss=mss, fetch=hist, choose=_picker(index, empty), holes=holes)
    want = z3_step(prog, R, D, T, mss, hist, index, empty, holes)
    assert got == want
    assert all(type(v) is (bool if isinstance(want[k], bool) else F) for k, v in got.items())


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", CONCRETE)
@SETTINGS
@given(data=st.data())
def test_matches_z3_compiler(name: str, data: st.DataObject) -> None:
    _check_against_z3(_load(name), data)


@pytest.mark.parametrize("name", sorted(EXTRA))
@SETTINGS
@given(data=st.data())
def test_matches_z3_on_every_construct(name: str, data: st.DataObject) -> None:
    _check_against_z3(_load(name, EXTRA[name]), data)


@pytest.mark.parametrize("name", TEMPLATE_FILES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_matches_z3_on_filled_templates(name: str, data: st.DataObject) -> None:
    prog = _load(name)
    holes = {}
    for h, decl in prog.holes.items():
        assert decl.domain is not None
        holes[h] = data.draw(st.sampled_from(decl.domain), label=h)
    _check_against_z3(prog, data, holes)


def test_lists_cover_the_shipped_files() -> None:
    assert {"aimd", "bbr", "cc_qdel", "const_rate", "copa", "any_sender"} <= set(CONCRETE)
    assert len(CONCRETE) >= 10 and TEMPLATE_FILES


@pytest.mark.parametrize("name", [p.stem for p in sorted(TEMPLATES.glob("*.cca")) if not _load(p.stem).is_template]
                         + sorted(EXTRA))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_float_mode_agrees_with_exact(name: str, data: st.DataObject) -> None:
    """On inputs exact in binary (so no comparison flips on rounding) float mode gives
    the exact results up to rounding."""
    prog = _load(name, EXTRA.get(name))
    R = data.draw(st.sampled_from([1, 2]))
    mss = data.draw(st.integers(1, 8).map(F))
    index = data.draw(st.integers(0, 6))
    hist = History(prog, data, DYADIC)
    kw = {"R": R, "D": 1, "T": 10, "fetch": hist, "choose": _picker(index, F(3, 2))}
    try:
        exact = run_step(prog, mss=mss, exact=True, **kw)  # type: ignore[arg-type]
    except SpecError as e:  # e.g. cubic's cube root of a negative w_max: float mode says the same
        with pytest.raises(SpecError) as e2:
            run_step(prog, mss=float(mss), exact=False, **kw)  # type: ignore[arg-type]
        assert str(e2.value) == str(e)
        return
    approx = run_step(prog, mss=float(mss), exact=False, **kw)  # type: ignore[arg-type]
    assert exact.keys() == approx.keys()
    for k, v in exact.items():
        a = approx[k]
        if isinstance(v, bool):
            assert a is v, k
        else:
            assert type(a) is float, k
            assert math.isclose(a, v, rel_tol=1e-9, abs_tol=1e-9), (k, a, v)


def test_initial_state_matches_z3() -> None:
    """Initial values without choose() equal the Z3 compiler's (reno, cubic, ...)."""
    checked = 0
    for p in sorted(TEMPLATES.glob("*.cca")):
        prog = _load(p.stem)
        got = initial_state(prog, R=2, mss=F(3, 2), choose=lambda o: o[0])
        for s in prog.states:
            assert (s.name in got) == (s.init is not None)
            if s.init is None or any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "choose"
                                     for n in ast.walk(s.init)):
                continue
            v = _compile_init(prog, s, 2, rat(F(3, 2)), lambda c: None)
            assert got[s.name] == _numeral(z3.simplify(v.term)), (p.stem, s.name)
            checked += 1
    assert checked >= 3


def test_initial_state_bbr_returns_the_chosen_phase() -> None:
    prog = _load("bbr")
    seen: list[list[Value]] = []

    def pick(opts: list[Value]) -> Value:
        seen.append(opts)
        return opts[2]
    assert initial_state(prog, R=1, mss=F(1), choose=pick) == {"phase": F(2)}
    assert seen == [[F(0), F(1), F(2), F(3)]]
    assert initial_state(prog, R=1, mss=1.0, choose=lambda o: o[3], exact=False) == {"phase": 3.0}


def test_choose_sees_evaluated_options_in_source_order() -> None:
    prog = _load("copa")
    seen: list[list[Value]] = []

    def pick(opts: list[Value]) -> Value:
        seen.append(opts)
        return opts[1]
    hist = {("qdel_lo", 1): F(0), ("qdel_hi", 2): F(5), ("cwnd", 1): F(3)}
    out = run_step(prog, R=1, D=1, T=5, mss=F(2), fetch=lambda n, lag: hist[(n, lag)], choose=pick)
    # inc_ok: qdel_lo == 0 and 3 * 0 <= 2 * (1 + 0); dec_ok: qdel_hi > T
    assert seen == [[F(5), F(2)]]
    assert out == {"rate": F(2), "cwnd": F(2)}


# -- simulator-only files -----------------------------------------------------------------

SIM = """\
# simulator-only
peak: bytes = 2 * MSS
rise = A - A[t - 2]
peak = max(peak, rise ** 3 / MSS ** 2)
rate = c_lo * qdel_lo / R + peak ** (1 / 2) + MSS / (S - S[t - R - 1])
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
    assert initial_state(prog, R=1, mss=F(2), choose=lambda o: o[0]) == {"peak": F(4)}
    h: dict[tuple[str, int], Value] = {("A", 1): F(10), ("A", 2): F(4), ("peak", 1): F(4), ("c_lo", 1): F(5),
                                       ("qdel_lo", 1): F(3, 2), ("S", 1): F(7), ("S", 2): F(3)}
    # rise = 6; peak = max(4, 216 / 4) = 54 ... sqrt(54) is irrational: float fallback
    out = run_step(prog, R=1, D=1, T=10, mss=F(2), fetch=_fetcher(h), choose=lambda o: o[0])
    assert out["peak"] == F(54)
    assert out["rate"] == F(15, 2) + F(math.sqrt(54.0)) + F(1, 2)
    assert type(out["rate"]) is F
    h[("A", 2)] = F(8)  # rise = 2: peak stays 4, sqrt(4) = 2 exactly
    out = run_step(prog, R=1, D=1, T=10, mss=F(2), fetch=_fetcher(h), choose=lambda o: o[0])
    assert out == {"rate": F(15, 2) + 2 + F(1, 2), "peak": F(4)}
    outf = run_step(prog, R=1, D=1, T=10, mss=2.0, fetch=_fetcher(h), choose=lambda o: o[0], exact=False)
    assert outf == {"rate": 10.0, "peak": 4.0}
    # verify compiles CCA files to linear constraints: a simulator-only file is refused
    tr = Trace(ModelConfig(), 4)
    with pytest.raises(SpecError, match="simulator-only"):
        compile_into(prog, tr, 0)


def test_sim_only_run_time_errors(tmp_path: Path) -> None:
    prog = _sim(tmp_path, SIM)
    path = str(tmp_path / "sim.cca")
    h: dict[tuple[str, int], Value] = {("A", 1): F(10), ("A", 2): F(4), ("peak", 1): F(4), ("c_lo", 1): F(5),
                                       ("qdel_lo", 1): F(3, 2), ("S", 1): F(3), ("S", 2): F(3)}
    for exact in (True, False):
        with pytest.raises(SpecError, match="division by zero at step evaluation") as e:
            run_step(prog, R=1, D=1, T=10, mss=F(2), fetch=_fetcher(h), choose=lambda o: o[0], exact=exact)
        assert str(e.value).startswith(f"{path}:5:")
    neg = _sim(tmp_path, "# simulator-only\nrate = (c_lo - c_hi) ** 0.5\n")
    for exact in (True, False):
        with pytest.raises(SpecError, match="negative number raised to a non-integer power"):
            run_step(neg, R=1, D=1, T=10, mss=F(1), fetch=lambda n, lag: F(1) if n == "c_lo" else F(2),
                     choose=lambda o: o[0], exact=exact)


@pytest.mark.parametrize(("body", "line", "message"), [
    ("rate = c_lo + bogus", 3, "unknown name 'bogus'"),
    ("rate = C / 2", 3, "the CCA reads 'C', which a sender cannot observe"),
    ("rate = S[t] / R", 3, "'S[t]' reads the current step, which the sender cannot see yet"),
    ("rate = S[t + 1] / R", 3, "'S[t+1]' reads the future"),
    ("S = MSS\nrate = c_lo", 3, "cannot assign to 'S'"),
    ("while timeout:\n    rate = c_lo", 3, "'while' loops are not allowed in a CCA file"),
])
def test_sim_only_static_errors(tmp_path: Path, body: str, line: int, message: str) -> None:
    """Files that skip load-time validation are checked when first run, in every
    branch (the step below takes none of them)."""
    prog = _sim(tmp_path, f"# simulator-only\nx = 0\n{body}\n")
    with pytest.raises(SpecError) as e:
        run_step(prog, R=1, D=1, T=10, mss=F(1), fetch=lambda n, lag: False if n == "timeout" else F(1),
                 choose=lambda o: o[0])
    assert str(e.value).startswith(f"{tmp_path / 'sim.cca'}:{line}:")
    assert message in str(e.value)


# Broken programs: the loader's validation (the Z3 path) and the interpreter (the same
# text marked simulator-only, which skips validation) must report the same error.
BROKEN = [
    "rate = c_lo + foo",
    "rate = c_loo",
    "rate = C",
    "rate = S[t] / R",
    "rate = S[t + 1] / R",
    "rate = S[5] / R",
    "rate = R[t - 1]",
    "rate = t",
    "rate = cwnd / R",
    "A = 1\nrate = c_lo",
    "t = 1\nrate = c_lo",
    "while True:\n    rate = c_lo",
    "rate = c_lo\nrate += c_lo",
    "rate = c_lo\nc_lo",
    "rate = c_lo\nx: bytes = 1",
    "rate, cwnd = c_lo, MSS",
    "if timeout:\n    x = MSS\nrate = x / R",
    "rate = max()",
    "rate = min(c_lo for i in range(0))",
    "rate = max(c_lo for i in [1, 2])",
    "rate = max(S[i - 2] for i in range(1))",
    "rate = max(c_lo for (i, j) in range(2))",
    "rate = c_lo if timeout else timeout",
    "rate = timeout",
    "rate = foo(c_lo)",
    "rate = c_lo / 0",
    "rate = c_lo / (2 - 2)",
    "rate = c_lo.real",
    "rate = c_lo if 1 < timeout else c_hi",
    "rate = c_lo if not c_lo else c_hi",
    "rate = min(c_lo, timeout)",
    "rate = sum(c_lo, timeout)",
    "rate = c_lo if all(c_lo, timeout) else c_hi",
    "rate = c_lo if any(c_lo for i in range(2)) else c_hi",
    "rate = choose(c_lo, timeout)",
    "rate = abs(c_lo, c_hi)",
    "rate = 'fast'",
    "rate = c_lo[t - 1][0]",
    "rate = c_lo if c_lo in c_hi else c_hi",
    "rate = -timeout",
    "rate = c_lo // 2",
    "rate = abs(min)",
    "rate = max(c_lo, key=c_hi)",
    "rate = c_lo\nif timeout:\n    rate = timeout",
    "rate = c_lo\nif timeout:\n    y = timeout\nelse:\n    y = 1\nrate = c_lo",
    "rate = c_lo\nif timeout:\n    rate = c_lo\nelse:\n    rate = c_hi\nrate = rate[t - 1]",
    "rate = S[t - R - (1 // 0)]",
    "flag: bool\nflag = c_lo\nrate = c_lo",
]


@pytest.mark.parametrize("body", BROKEN)
def test_errors_match_the_z3_path(body: str) -> None:
    with pytest.raises(SpecError) as z3_err:
        load_cca("bad.cca", body + "\n")
    prog = load_cca("bad.cca", body + "\n# simulator-only\n")  # a last line: same line numbers
    with pytest.raises(SpecError) as interp_err:
        run_step(prog, R=1, D=1, T=10, mss=F(1), fetch=lambda n, lag: F(0), choose=lambda o: o[0])
    assert str(interp_err.value) == str(z3_err.value)


def test_holes() -> None:
    prog = _load("tpl_ccac_2expr")
    values = {h: d.domain[0] for h, d in prog.holes.items() if d.domain is not None}
    def fetch(name: str, lag: int) -> Value:
        return F(1)
    out = run_step(prog, R=1, D=1, T=5, mss=F(1), fetch=fetch, choose=lambda o: o[0], holes=values)
    assert set(out) == {"rate"}
    with pytest.raises(SpecError, match=r"hole '\?a1' has no value here"):
        run_step(prog, R=1, D=1, T=5, mss=F(1), fetch=fetch, choose=lambda o: o[0])
    del values["b0"]
    values.update(a1=F(2), a2=F(0), a3=F(0), a4=F(0), a5=F(0))  # the condition holds: the branch reads ?b0
    with pytest.raises(SpecError, match=r"hole '\?b0' has no value"):
        run_step(prog, R=1, D=1, T=5, mss=F(1), fetch=fetch, choose=lambda o: o[0], holes=values)


def test_initial_value_errors() -> None:
    bad = load_cca("bad.cca", "x: bytes = S\nrate = c_lo\n# simulator-only\n")
    with pytest.raises(SpecError, match="an initial value may only use constants, MSS, R, D and choose"):
        initial_state(bad, R=1, mss=F(1), choose=lambda o: o[0])
    with pytest.raises(SpecError) as z3_err:
        load_cca("bad.cca", "x: bytes = timeout < 1\nrate = c_lo\n")
    bad = load_cca("bad.cca", "x: bytes = timeout < 1\nrate = c_lo\n# simulator-only\n")
    with pytest.raises(SpecError) as e:
        initial_state(bad, R=1, mss=F(1), choose=lambda o: o[0])
    assert str(e.value) == str(z3_err.value)


def test_compiled_code_is_cached_per_program_and_parameters() -> None:
    """R changes which steps are read: a cached compilation must not leak across R."""
    prog = _load("cc_qdel")
    lags: list[tuple[str, int]] = []

    def fetch(name: str, lag: int) -> Value:
        lags.append((name, lag))
        return F(1)
    for R in (1, 3, 1):
        lags.clear()
        run_step(prog, R=R, D=1, T=5, mss=F(1), fetch=fetch, choose=lambda o: o[0])
        assert {lag for _, lag in lags} == {R}
