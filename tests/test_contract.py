"""``ccmatic contract`` (thesis §5.2.1, Table 6.1/6.2, App. C): the closed forms of
what a contract determines, the fits on synthetic points, the worked Copa example of
docs/design/multiflow-plan.md §4.4, input errors, and one measured contract."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ccmatic.sim.contract_math import Contract, best, fit_linear, fit_power, fit_shifted
from ccmatic.sim.contract_theory import (
    bandwidth_range,
    c11_growth_floor,
    c12_range_ceiling,
    c13_growth_floor,
    c14_range_ceiling,
    dumbbell,
    growth,
    jitter,
    parking_lot,
    robustness,
    unfairness,
)
from tests.helpers import run_cli

S_MIN, S_MAX, DS = 2.0, 50.0, 3.0


def _range(con: Contract) -> tuple[float, float]:
    return con.f(S_MAX), con.f(S_MIN)


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0])
def test_power_law_metrics_are_table_6_2(p: float) -> None:
    con = Contract("power", 7.0, p)
    lo, hi = _range(con)
    assert robustness(con, DS, S_MIN, S_MAX) == pytest.approx((1 + DS / S_MIN) ** p, rel=1e-12)
    for k in (2, 3, 5):
        assert unfairness(con, k, "sum", lo, hi) == pytest.approx(k ** p, rel=1e-9)
    for n in (2, 8):
        assert growth(con, n, lo, hi) == pytest.approx(n ** (1 / p), rel=1e-12)
    assert bandwidth_range(con, S_MIN, S_MAX) == pytest.approx((S_MAX / S_MIN) ** p, rel=1e-12)


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0])
def test_power_law_app_c_bounds(p: float) -> None:
    con = Contract("power", 1.0, p)
    lo, hi = _range(con)
    assert c13_growth_floor(con, 5, "sum", lo, hi) == pytest.approx(4 ** (1 / p), rel=1e-9)
    assert c14_range_ceiling(con, "sum", S_MIN, S_MAX) == pytest.approx((S_MAX / S_MIN) ** p, rel=1e-9)
    eps = robustness(con, DS, S_MIN, S_MAX)
    for n in (2, 3, 8, 100):
        assert c11_growth_floor(eps, DS, S_MIN, n) <= growth(con, n, lo, hi) + 1e-9
    assert c12_range_ceiling(eps, DS, S_MIN, S_MAX) >= bandwidth_range(con, S_MIN, S_MAX)


def test_c11_needs_the_floor() -> None:
    """p = 1, δs/S_min = 10: ε_r = 11.  Unfloored, Eq. C.1.4 at n = 2 would claim 3.9
    > growth(2) = 2; with the floor it is 1.  At n = ε_r (k = 1) it is tight
    (Bernoulli), at n = ε_r² it holds."""
    con = Contract("power", 1.0, 1.0)
    eps = robustness(con, 10.0, 1.0, 100.0)
    assert eps == pytest.approx(11.0)
    assert 1 + math.log(2) / math.log(eps) * 10 > 2
    assert c11_growth_floor(eps, 10.0, 1.0, 2) == 1.0
    assert c11_growth_floor(eps, 10.0, 1.0, 11) == pytest.approx(11.0) == growth(con, 11, 1, 100)
    assert c11_growth_floor(eps, 10.0, 1.0, 121) == pytest.approx(21.0)
    assert growth(con, 121, 1, 100) == pytest.approx(121.0)


def test_parking_lot_shares_table_6_1() -> None:
    prop = parking_lot(Contract("power", 1.0, 1.0), 1.0, 2, "sum")
    assert prop is not None
    assert prop["rate_long"] == pytest.approx(1 / 3, abs=1e-12)
    assert prop["rate_short"] == pytest.approx(2 / 3, abs=1e-12)
    mpd = parking_lot(Contract("power", 1.0, 0.5), 1.0, 2, "sum")
    assert mpd is not None
    assert mpd["rate_long"] == pytest.approx(math.sqrt(2) - 1, abs=1e-12)
    assert mpd["rate_short"] == pytest.approx(2 - math.sqrt(2), abs=1e-12)


def test_worked_copa_example() -> None:
    """f(s) = 1/(δ·s) pkt/s, δ = 0.5, C = 100 Mbit/s of 1500-byte packets."""
    con = Contract("power", 1 / 0.5, 1.0)
    C = 100e6 / 8 / 1500
    assert dumbbell(con, C, 3) == pytest.approx(0.72e-3, rel=1e-9)
    j = jitter(con, C, 3, 1, 0.032)
    assert j is not None
    assert j["s"] == pytest.approx(0.484e-3, rel=2e-3)
    assert j["ratio"] == pytest.approx(67, abs=0.5)
    assert j["rate_clean"] == pytest.approx(4136, rel=1e-3)
    pl = parking_lot(con, C, 2, "sum")
    assert pl is not None
    assert pl["s_short"] == pytest.approx(0.36e-3, rel=1e-9)
    assert pl["ratio"] == pytest.approx(2.0, rel=1e-9)


def test_loss_fold_is_survival() -> None:
    con = Contract("power", 1.0, 0.5)
    pl = parking_lot(con, 50.0, 2, "loss")
    assert pl is not None
    assert pl["s_long"] == pytest.approx(1 - (1 - pl["s_short"]) ** 2)
    assert pl["rate_short"] + pl["rate_long"] == pytest.approx(50.0)


def test_fits_recover_synthetic_contracts() -> None:
    s = np.linspace(6.0, 40.0, 12)
    for p in (0.5, 1.0, 2.0):
        f = fit_power(s, 3.0 * s ** -p)
        assert f is not None and abs(f.contract.p - p) < 1e-6 and f.mse < 1e-20
        assert best({"power": f, "shifted": fit_shifted(s, 3.0 * s ** -p), "linear": fit_linear(s, 3.0 * s ** -p)}) \
            is f
    sh = fit_shifted(s, 3.0 * (s - 5.0) ** -0.7)
    assert sh is not None
    assert sh.contract.c == pytest.approx(5.0, abs=1e-4)
    assert sh.contract.p == pytest.approx(0.7, abs=1e-4)
    lin = fit_linear(s, 100 - 2 * s)
    assert lin is not None and lin.contract.a == pytest.approx(100) and lin.contract.b == pytest.approx(2)
    assert fit_power(np.array([1.0, 1.0]), np.array([2.0, 3.0])) is None
    assert fit_shifted(s[:2], s[:2]) is None


@pytest.mark.parametrize(("argv", "words"), [
    (("nosuchcca",), ("CCA file not found", "hint")),
    (("reno", "--flows", "2,x"), ("--flows", "finite number")),
    (("reno", "--flows", "2.5"), ("whole flow counts",)),
    (("reno", "--C", "24", "--flows", "2"), ("at least 2 runs", "hint")),
    (("reno", "--C", "24,-1"), ("--C", "positive")),
    (("reno", "--jitter", "3/2"), ("--jitter",)),
    (("reno", "--growth-n", "1"), ("--growth-n",)),
])
def test_bad_input_is_one_line_exit_2(argv: tuple[str, ...], words: tuple[str, ...]) -> None:
    code, out, err = run_cli("contract", *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "error:" in err
    for w in words:
        assert w in err


def test_measured_reno_contract_on_a_short_grid(tmp_path: object) -> None:
    """Reno on a 1-BDP buffer, 4 runs of 20 s: a contract is found, and the loss rate's
    power law is Mathis-like (exponent ≈ 1/2; loose bounds).  Which statistic fits best
    on 8 points is not asserted: with losses detected one RTprop after they happen the
    average delay fits better here (mean log error 0.008 against 0.022)."""
    code, out, err = run_cli("contract", "reno", "--C", "24,48", "--flows", "2,4", "--buffer", "1",
                             "--duration", "20", "--jobs", "1", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert len(d["runs"]) == d["n_runs"] == 4 and d["unfair_runs"] <= 2
    c = d["contract"]
    assert c is not None and c["statistic"] in ("loss_rate", "avg_delay", "p50_delay")
    assert 0.25 < d["fits"]["loss_rate"]["power"]["p"] < 1.0
    assert c["determines"]["robustness"] > 1


@pytest.mark.parametrize("con", [Contract("shifted", 0.55, 0.39, 1.6e-4), Contract("shifted", 3.0, 0.9, -2e-4),
                                 Contract("linear", 30.0, b=9000.0), Contract("power", 2.0, 0.65)])
def test_app_c_bounds_hold_for_any_decreasing_contract(con: Contract) -> None:
    """C.1.1–C.1.4 bound every decreasing contract (with the floor and ceiling of
    whole δs steps), on a loss-rate-like range."""
    s_min, s_max, ds = 2.2e-4, 2.5e-3, 1e-3
    lo, hi = con.f(s_max), con.f(s_min)
    eps = robustness(con, ds, s_min, s_max)
    rng = bandwidth_range(con, s_min, s_max)
    for n in (2, 4, 8):
        assert growth(con, n, lo, hi) >= c11_growth_floor(eps, ds, s_min, n) - 1e-9
        assert growth(con, n, lo, hi) >= c13_growth_floor(con, n, "sum", lo, hi) * (1 - 1e-6)
    assert rng <= c12_range_ceiling(eps, ds, s_min, s_max) * (1 + 1e-9)
    assert rng <= c14_range_ceiling(con, "sum", s_min, s_max) * (1 + 1e-9)
