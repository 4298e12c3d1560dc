"""The compiled CCA step (semantics/pycode.py) against the interpreter over FLOAT:
the same outputs, the same error lines and the same draws, on every CCA file."""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest

from ccmatic.core.errors import SpecError
from ccmatic.semantics.cca import run_step
from ccmatic.semantics.domain import FLOAT
from ccmatic.semantics.pycode import CompiledStep, PyDomain, compile_step
from ccmatic.spec import ir
from ccmatic.spec.cca import load_cca
from ccmatic.spec.step import StepCode

ROOT = Path(__file__).resolve().parent.parent
CCAS = sorted(p.name for p in (ROOT / "templates").glob("*.cca") if not load_cca(p).is_template)
Value = float | bool


def _code(name: str) -> StepCode:
    return load_cca(ROOT / "templates" / name).code(1, 1, 10)


def _chooser(seed: float, log: list[Value]) -> Callable[[list[Value], ir.Choose], Value]:
    rng = random.Random(seed)

    def choose(opts: list[Value], node: ir.Choose) -> Value:
        if not opts:
            raise SpecError(node.loc, "choose() with no options")
        v = opts[rng.randrange(len(opts))]
        log.append(v)
        return v
    return choose


def _outcome(run: Callable[[], dict[str, Value]]) -> tuple[dict[str, Value] | None, str | None]:
    try:
        return run(), None
    except SpecError as e:
        return None, str(e)


def _differential(name: str, samples: int = 150) -> set[bool]:
    """Run both on random observations; the outcomes seen (True: outputs, False: an
    error line)."""
    code = _code(name)
    step = compile_step(code)
    assert step is not None, f"{name} is not compiled"
    rng = random.Random(name)
    return {_one_sample(code, step, rng) for _ in range(samples)}


def _one_sample(code: StepCode, step: CompiledStep, rng: random.Random) -> bool:
    bools = {n for n, is_bool in code.outputs if is_bool} | {"timeout"}
    param = {"MSS": 1500.0, "SECOND": 10.0}.__getitem__
    vals: dict[tuple[str, int], Value] = {}

    def fetch(n: str, lag: int) -> Value:
        if (n, lag) not in vals:
            vals[n, lag] = rng.random() < 0.5 if n in bools else rng.choice(
                [0.0, 1.0, 1500.0, rng.uniform(-5, 5), rng.uniform(0, 1e6), float(rng.randint(0, 20))])
        return vals[n, lag]
    seed = rng.random()
    log_i: list[Value] = []
    log_c: list[Value] = []
    want = _outcome(lambda: run_step(code, FLOAT, fetch, param, _chooser(seed, log_i)))
    got = _outcome(lambda: step(fetch, param, _chooser(seed, log_c)))
    assert got == want
    if want[1] is None:
        assert log_c == log_i  # the same draws: the simulator's random stream is kept
    return want[1] is None


@pytest.mark.parametrize("name", CCAS)
def test_compiled_step_is_the_interpreted_one(name: str) -> None:
    assert _differential(name)


def test_a_division_by_zero_on_the_path_taken_is_the_interpreters_error() -> None:
    # contract_lin divides by a difference the random observations make zero
    assert _differential("contract_lin.cca", 300) == {True, False}


def test_constants_fold_as_floats_do_and_a_guarded_division_never_fails() -> None:
    d = PyDomain()
    third = d.div(d.num(Fraction(1)), d.num(Fraction(3)))
    assert third.const == 1 / 3 and not d.lines
    assert d.div(d.num(Fraction(1)), d.num(Fraction(0))).const is None  # NaN at run time, not an error now
    assert d.risky
