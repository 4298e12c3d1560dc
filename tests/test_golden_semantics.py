"""Golden semantics: the one CCA step definition against HAND-COMPUTED traces.

The CCA step has one definition (ccmatic.semantics.evaluate / .cca) run over three
domains, so a mistake in it would be repeated in every domain and no cross-domain
comparison could catch it.  These tests compare each domain with expectations
worked out by hand from docs/language.md (tests/golden_cases.py):

1. EXACT: ``run_step`` over Fractions, step by step;
2. FLOAT: the same over floats (within 1e-9 relative);
3. the real SMT encoding (``encode_cca`` on a ``SymbolicTrace``), with every input
   series and warm-up value pinned: the outputs must be determined and equal the
   expectation.

Plus a query-level tight pair through ``verify``: on a D = 2 model the state
``x: seconds = D`` is 2 at step 0 (proved), not 1 (counterexample).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any as TAny

import pytest
import z3
from golden_cases import CASES, Any, Case, Pick, Value

from ccmatic.core.errors import Loc
from ccmatic.core.model import ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.quantities import OUTPUTS, QUANTITIES
from ccmatic.core.results import Counterexample
from ccmatic.core.scenario import Objective, Query, Scenario
from ccmatic.core.source import Source
from ccmatic.encode.cca import encode_cca
from ccmatic.encode.trace import SymbolicTrace
from ccmatic.engine.verify import verify
from ccmatic.semantics.cca import initial_values, run_step
from ccmatic.semantics.domain import EXACT, FLOAT
from ccmatic.semantics.z3domain import rat
from ccmatic.spec import ir
from ccmatic.spec.cca import CcaProgram, StepCode, load_cca

IDS = [c.name for c in CASES]


# -- helpers -----------------------------------------------------------------------------

def program(case: Case) -> CcaProgram:
    return load_cca(f"{case.name}.cca", case.text)


def step_code(case: Case, holes: TAny = None) -> StepCode:
    return program(case).code(case.R, case.D, case.T, case.holes if holes is None else holes)


def label_lines(text: str) -> dict[str, int]:
    """'# label' comments on choose() lines -> their (1-based) line numbers."""
    out: dict[str, int] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        m = re.search(r"#\s*(\w+)\s*$", line)
        if m and "choose(" in line:
            out[m.group(1)] = i
    return out


def exact(v: Value) -> Fraction | bool:
    return v if isinstance(v, bool) else Fraction(v)


def same(got: object, want: Value, domain: str) -> bool:
    """Exact equality (EXACT, Z3), or within 1e-9 relative (FLOAT); a condition
    must be a bool and a number must not be one."""
    if isinstance(want, bool):
        return isinstance(got, bool) and got == want
    if isinstance(got, bool):
        return False
    if domain == "float":
        return isinstance(got, float) and math.isclose(got, float(want), rel_tol=1e-9, abs_tol=1e-12)
    return isinstance(got, Fraction) and got == Fraction(want)


class Chooser:
    """choose() callbacks that take the case's picks in call order and check that
    each call is the choose() the case expects (by its labelled source line)."""

    def __init__(self, case: Case, picks: list[Pick], where: str, conv: Callable[[Fraction], TAny]) -> None:
        self.lines = label_lines(case.text)
        self.picks = list(picks)
        self.where = where
        self.conv = conv
        self.i = 0

    def __call__(self, options: list[TAny], node: ir.Choose) -> TAny:
        assert self.i < len(self.picks), (
            f"{self.where}: unexpected choose() call #{self.i + 1} at line {node.loc.line}")
        label, pick = self.picks[self.i]
        self.i += 1
        assert node.loc.line == self.lines[label], (
            f"{self.where}: choose() call #{self.i} is at line {node.loc.line}, expected '{label}' "
            f"(line {self.lines[label]})")
        if isinstance(pick, Any):
            assert not options, f"{self.where}: '{label}' has options; pick an index"
            return self.conv(pick.value)
        return options[pick]

    def done(self) -> None:
        assert self.i == len(self.picks), (
            f"{self.where}: {len(self.picks) - self.i} expected choose() call(s) never made")


def check_case_data(case: Case, code: StepCode) -> None:
    """The case itself is complete: inputs for every observation read, warm-up
    values for every persistent name, expectations for every output."""
    outputs = [n for n, _ in code.outputs]
    for name in code.lags:
        if name not in outputs:
            assert name in case.inputs, f"case gives no input series for '{name}'"
    for name, series in case.inputs.items():
        assert len(series) == case.T, f"input '{name}' has {len(series)} steps, T = {case.T}"
    assert sorted(case.warm) == sorted(outputs), f"warm-up values for {sorted(case.warm)}, outputs {outputs}"
    assert sorted(case.expected) == sorted(outputs), f"expectations for {sorted(case.expected)}, outputs {outputs}"
    for name in outputs:
        assert len(case.warm[name]) == case.warmup, f"warm-up of '{name}'"
        assert len(case.expected[name]) == case.T - case.warmup, f"expectations of '{name}'"
    for name, v in case.init.items():  # a declared initial value holds in the warm-up
        assert all(w == v and type(w) is type(v) for w in case.warm[name]), f"warm-up of '{name}' vs its initial value"


# -- warm-up and initial values --------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_warmup(case: Case) -> None:
    """The warm-up is the deepest read for the model's R, D (hand-computed)."""
    code = step_code(case)
    check_case_data(case, code)
    assert code.warmup == case.warmup, f"warm-up {code.warmup}, expected {case.warmup} (lags {code.lags})"


@pytest.mark.parametrize("domain", ["exact", "float"])
@pytest.mark.parametrize("case", [c for c in CASES if c.init], ids=[c.name for c in CASES if c.init])
def test_initial_values(case: Case, domain: str) -> None:
    code = step_code(case)
    d = EXACT if domain == "exact" else FLOAT
    conv: Callable[[Fraction], TAny] = (lambda x: x) if domain == "exact" else float
    chooser = Chooser(case, case.init_picks, "initial values", conv)

    def param(name: str) -> TAny:
        assert name == "MSS", f"unexpected parameter {name}"
        return conv(case.MSS)

    got = initial_values(code, d, param, chooser)
    chooser.done()
    assert sorted(got) == sorted(case.init)
    bad = {n: (got[n], case.init[n]) for n in case.init if not same(got[n], case.init[n], domain)}
    assert not bad, f"initial values (got, expected): {bad}"


# -- EXACT and FLOAT ---------------------------------------------------------------------------

def run_concrete(case: Case, code: StepCode, domain: str, hole: Callable[[str], TAny] | None = None
                 ) -> dict[str, list[TAny]]:
    d = EXACT if domain == "exact" else FLOAT
    conv: Callable[[Fraction], TAny] = (lambda x: x) if domain == "exact" else float

    def cv(v: Value) -> TAny:
        return v if isinstance(v, bool) else conv(Fraction(v))

    outputs = [n for n, _ in code.outputs]
    values: dict[str, list[TAny]] = {n: [cv(v) for v in case.warm[n]] for n in outputs}

    def param(name: str) -> TAny:
        assert name == "MSS", f"unexpected parameter {name}"
        return conv(case.MSS)

    for t in range(case.warmup, case.T):
        def fetch(name: str, lag: int, t: int = t) -> TAny:
            assert 0 <= lag <= t, f"step {t} reads {name} {lag} back"
            if name in values:
                assert lag >= 1, f"step {t} reads its own {name} at lag {lag}"
                return values[name][t - lag]
            return cv(case.inputs[name][t - lag])

        chooser = Chooser(case, case.picks.get(t, []), f"step {t}", conv)
        out = run_step(code, d, fetch, param, chooser, hole)
        chooser.done()
        for n in outputs:
            values[n].append(out[n])
    return {n: values[n][case.warmup:] for n in outputs}


def compare(case: Case, got: dict[str, list[TAny]], domain: str) -> None:
    bad = []
    for name, want in case.expected.items():
        for i, w in enumerate(want):
            g = got[name][i]
            if not same(g, w, domain):
                bad.append(f"{name}[{case.warmup + i}] = {g!r}, expected {exact(w)}")
    assert not bad, f"{case.name} ({domain}):\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("domain", ["exact", "float"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_concrete(case: Case, domain: str) -> None:
    code = step_code(case)
    check_case_data(case, code)
    compare(case, run_concrete(case, code, domain), domain)


TEMPLATES = [c for c in CASES if c.holes is not None]


@pytest.mark.parametrize("case", TEMPLATES, ids=[c.name for c in TEMPLATES])
def test_template_symbolic_holes_exact(case: Case) -> None:
    """The same template with its holes left symbolic and supplied by a callback."""
    assert case.holes is not None
    holes = case.holes
    code = step_code(case, "symbolic")
    assert code.warmup == case.warmup
    compare(case, run_concrete(case, code, "exact", hole=lambda n: holes[n]), "exact")


# -- the SMT encoding --------------------------------------------------------------------------

def z3_value(v: Value) -> z3.ExprRef:
    return z3.BoolVal(v) if isinstance(v, bool) else rat(Fraction(v))


def from_model(m: z3.ModelRef, var: z3.ExprRef) -> Fraction | bool:
    v = m.eval(var, model_completion=True)
    if z3.is_bool(v):
        return z3.is_true(v)
    assert z3.is_rational_value(v), f"{var} = {v} is not a rational"
    return Fraction(v.as_fraction())


def has_choose(e: ir.Expr) -> bool:
    return any(isinstance(n, ir.Choose) for n in ir.walk(e))


def run_z3(case: Case, code: StepCode, hole: Callable[[str], z3.ExprRef] | None = None) -> None:
    prog = program(case)
    model = ModelConfig(R=case.R, D=case.D, N=1)
    tr = SymbolicTrace(model, case.T, prog.sets_rate, prog.sets_cwnd, {s.name: s.unit for s in prog.states})
    for name in case.inputs:  # network-derived observations: free variables, pinned below
        q = QUANTITIES[name]
        if q.family != "trace":
            mk = z3.Bool if q.unit is None else z3.Real
            tr.derived[name] = [[mk(f"golden_{name}_0,{t}") for t in range(case.T)]]
            tr.built.add(q.family)
    enc = encode_cca(code, tr, 0, "golden", hole=hole)
    calls = enc.choices

    s = z3.Solver()
    s.add(*[c for _tag, c in enc.constraints.items])
    s.add(tr.MSS == rat(case.MSS))
    for name, series in case.inputs.items():
        col = tr.series(name, 0)
        s.add(*[col[t] == z3_value(v) for t, v in enumerate(series)])

    # warm-up: pin rate/cwnd, states without an initial value and states whose
    # initial value is a choose() (the chosen one); a state with a determined initial
    # value is left to the encoding and checked instead
    checked: list[tuple[str, int, z3.ExprRef, Value]] = []
    for name, _ in code.outputs:
        col = tr.series(name, 0)
        determined = name in code.init and not has_choose(code.init[name])
        for t in range(case.warmup):
            if determined:
                checked.append((name, t, col[t], case.warm[name][t]))
            else:
                s.add(col[t] == z3_value(case.warm[name][t]))
        for i, want in enumerate(case.expected[name]):
            t = case.warmup + i
            checked.append((name, t, col[t], want))

    # choose(): pin the calls the concrete run makes (by their labelled line); the
    # others (branches not taken, operands not reached) stay free
    lines = label_lines(case.text)
    for t in range(case.warmup, case.T):
        by_line = {lines[label]: pick for label, pick in case.picks.get(t, [])}
        mine = [(node, opts, v) for tag, node, opts, v in calls if tag == f"choose_0_{t}"]
        assert len({node.loc.line for node, _, _ in mine}) == len(mine), "two choose() calls on one line"
        for node, opts, v in mine:
            if node.loc.line in by_line:
                pick = by_line.pop(node.loc.line)
                s.add(v == (rat(pick.value) if isinstance(pick, Any) else opts[pick]))
        assert not by_line, f"step {t}: the encoding made no choose() call at lines {sorted(by_line)}"

    r = s.check()
    assert r == z3.sat, f"{case.name}: the encoding with the golden inputs is {r}"
    m = s.model()
    bad = [f"{n}[{t}] = {from_model(m, var)}, expected {exact(w)}" for n, t, var, w in checked
           if from_model(m, var) != exact(w) or isinstance(from_model(m, var), bool) != isinstance(w, bool)]
    assert not bad, f"{case.name} (z3):\n  " + "\n  ".join(bad)
    # determined: no model has any checked value different from the expectation
    s.add(z3.Or(*[var != z3_value(w) for _n, _t, var, w in checked]))
    r = s.check()
    if r == z3.sat:
        m = s.model()
        free = [f"{n}[{t}] can be {from_model(m, var)}" for n, t, var, w in checked if from_model(m, var) != exact(w)]
        pytest.fail(f"{case.name} (z3): outputs not determined by the inputs: {free}")
    assert r == z3.unsat


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_z3_encoding(case: Case) -> None:
    code = step_code(case)
    check_case_data(case, code)
    run_z3(case, code)


@pytest.mark.parametrize("case", TEMPLATES, ids=[c.name for c in TEMPLATES])
def test_template_symbolic_holes_z3(case: Case) -> None:
    """The template's symbolic-hole code, encoded with the holes as given terms."""
    assert case.holes is not None
    holes = case.holes
    code = step_code(case, "symbolic")
    run_z3(case, code, hole=lambda n: rat(holes[n]))


# -- coverage of the language ------------------------------------------------------------------

CONSTRUCTS = {
    "state declaration with initial value": r"^\w+: \w+ = ",
    "state declaration without initial value": r"^\w+: \w+\s*$",
    "bool state": r"^\w+: bool",
    "count state": r"^\w+: count",
    "if": r"^\s*if ", "elif": r"^\s*elif ", "else": r"^\s*else:",
    "nested if": r"^\s{4,}if ",
    "if-expression": r" if .* else ",
    "and": r" and ", "or": r" or ", "not": r"\bnot ",
    "=>": r"=>",
    "comparison chain": r"<=? \w+ <=? ",
    "min over arguments": r"min\((?!.* for )", "max over arguments": r"max\((?!.* for )",
    "sum over arguments": r"sum\((?!.* for )", "all over arguments": r"all\(\w+, ",
    "min comprehension": r"min\(.* for ", "max comprehension": r"max\(.* for ",
    "sum comprehension": r"sum\(.* for ", "all comprehension": r"all\(.* for ",
    "any comprehension": r"any\(.* for ",
    "comprehension filter": r" for .* in range\(.*\) if ",
    "abs": r"abs\(", "bytes()": r"bytes\(", "seconds()": r"seconds\(", "rate()": r"rate\(\d",
    "count()": r"count\(",
    "exact literal 0.1": r"0\.1\b",
    "X[t - k]": r"\w+\[t - ",
    "choose with options": r"choose\(\w", "choose()": r"choose\(\)",
    "hole": r"\?\w+ \*",
    "R": r"\bR\b", "D": r"\bD\b", "T": r"\bT\b", "MSS": r"\bMSS\b",
}


def test_coverage() -> None:
    """Every construct, every observation, both R = D = 1 and R = D = 2, state
    initial values reading MSS, R, D and T, templates and choose()."""
    texts = "\n".join(c.text for c in CASES)
    missing = [k for k, pat in CONSTRUCTS.items() if not re.search(pat, texts, re.MULTILINE)]
    assert not missing, f"constructs not covered: {missing}"
    observed = {name for c in CASES for name in c.inputs}
    observations = {n for n, q in QUANTITIES.items() if q.lag is not None and n not in OUTPUTS}
    assert observations <= observed, f"observations not covered: {observations - observed}"
    models = {(c.R, c.D) for c in CASES}
    assert {(1, 1), (2, 2)} <= models
    inits = " ".join(decl for c in CASES if c.init for decl in c.text.splitlines() if re.match(r"^\w+: \w+ = ", decl))
    for p in ("MSS", "R", "D", "T"):
        assert re.search(rf"\b{p}\b", inits), f"no initial value reads {p}"
    assert any(c.holes for c in CASES) and any(c.picks for c in CASES)


# -- the query level: x: seconds = D on a D = 2 model ------------------------------------------

X_IS_D = """\
x: seconds = D
cwnd = 2 * MSS
"""


def x_query(prop: str) -> Query:
    model = ModelConfig(name="ccac", family="ccac", D=2)
    scenario = Scenario("golden", "<golden>", "golden_x.cca", X_IS_D, model, 4)
    return Query(scenario, (Objective("expr", {}, Loc("<golden>"), Source("<golden>", prop), "property"),))


def test_query_state_initial_value_reads_D() -> None:
    rep = verify(x_query("x[0] == 2"), RunOptions(timeout_s=60, seed=0))
    assert rep.verdict == "proved", rep.outcome
    rep = verify(x_query("x[0] == 1"), RunOptions(timeout_s=60, seed=0))
    assert isinstance(rep.outcome, Counterexample), rep.outcome

