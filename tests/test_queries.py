"""Golden tests: every query in queries/verify/ and queries/ccac_model/ gives its declared result, and the
CCAC findings show the behaviour the paper describes, checked on the trace numbers."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from ccmatic.core.errors import Loc
from ccmatic.core.options import RunOptions
from ccmatic.core.results import ConcreteTrace, Counterexample
from ccmatic.core.scenario import Objective
from ccmatic.core.source import Source
from ccmatic.engine.verify import verify
from tests.helpers import assert_golden, load_file_query

ROOT = Path(__file__).resolve().parent.parent
QUERIES = sorted((ROOT / "queries" / "verify").glob("*.toml"))
OPTS = RunOptions(timeout_s=300, seed=0)


_load = load_file_query


def _run(name: str, **changes: object):  # type: ignore[no-untyped-def]
    q = _load(ROOT / "queries" / "verify" / f"{name}.toml")
    if changes:
        q = replace(q, **changes)  # type: ignore[arg-type]
    return verify(q, OPTS)


SLOW_QUERIES = {"cc_probe_drain-ccac-arbitrary", "cc_probe_fast-ccac-small"}  # 20-60 s each: run with -m slow


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW_QUERIES else p
                                  for p in QUERIES], ids=[p.stem for p in QUERIES])
def test_golden(path: Path) -> None:
    assert_golden(path, OPTS)


CCAC_MODEL = sorted((ROOT / "queries" / "ccac_model").glob("*.toml"))


@pytest.mark.parametrize("path", CCAC_MODEL, ids=[p.stem for p in CCAC_MODEL])
def test_ccac_model_golden(path: Path) -> None:
    """CCAC's model tests (test_model.py), one exists question a file: each gives the
    answer CCAC's assertion states (recorded in the file as expect)."""
    q = _load(path)
    assert q.question == "exists" and "CCAC test_model.py" in q.description
    assert_golden(path, OPTS)


def test_every_listed_cca_has_a_query() -> None:
    used = {_load(p).scenario.cca_path for p in QUERIES}
    names = {Path(p).stem for p in used}
    for cca in ["cc_qdel", "cc_probe_fast", "cc_probe_drain", "cc_probe_slow", "cc_probe_qdel",
                "aimd", "copa", "bbr", "const_rate"]:
        assert cca in names, f"no query in queries/verify uses {cca}"


def _trace(rep) -> ConcreteTrace:  # type: ignore[no-untyped-def]
    assert isinstance(rep.outcome, Counterexample), rep.verdict
    return rep.outcome.trace


def test_bbr_low_utilization_trace() -> None:
    """CCAC's bbr_low_util: simplified BBR can get < 10% of C·T on the composing model,
    from a start where it sends (CCAC's initial(): cwnd and rate positive)."""
    tr = _trace(_run("bbr-ccac-lowutil"))
    S, C, T = tr.aggregate["S"], tr.params["C"], tr.T
    assert C is not None
    assert S[-1] - S[0] < Fraction(1, 10) * C * T
    assert tr.aggregate["L"][0] == 0
    assert tr.flows[0]["cwnd"][0] > 0 and tr.flows[0]["rate"][0] > 0
    # periodic with K = 2R (CCAC's make_periodic): over the last K steps rate and cwnd
    # repeat the first K steps, and the bottleneck queue at the last step is step 0's
    fl = tr.flows[0]
    for k in range(2):
        assert fl["rate"][k] == fl["rate"][T - 2 + k]
        assert fl["cwnd"][k] == fl["cwnd"][T - 2 + k]
    assert tr.aggregate["bq"][0] == tr.aggregate["bq"][T - 1]


def _verdict(name: str, expr: str) -> str:
    """The verdict of queries/verify/NAME.toml with its objective replaced by ``expr``."""
    q = _load(ROOT / "queries" / "verify" / f"{name}.toml")
    obj = Objective("expr", {}, Loc("<test>"), Source("<test>", expr), "property")
    return verify(replace(q, objectives=(obj,)), OPTS).verdict


def test_bbr_lowutil_tight_pair() -> None:
    """Tight twin of bbr-ccac-lowutil (< 10% exists): the nearest bound that holds is
    'some utilization' (S advances over the period), and 1/1000 of C T already fails."""
    assert _verdict("bbr-ccac-lowutil", "S[T-1] - S[0] > 0") == "proved"
    assert _verdict("bbr-ccac-lowutil", "S[T-1] - S[0] >= 1/1000 * C * T") == "counterexample"


@pytest.mark.parametrize("name", ["copa-ccac-noncompose", "copa-ccac-noncompose-noloss"])
def test_copa_noncompose_tight_pair(name: str) -> None:
    """Copa, non-composing (the golden >= 10%): utilization >= 1/2 of C T is proved,
    the tightest bound (CCAC's too: unsat at 0.5, sat at 0.5001), and 1/2 + 1/1000
    is refuted; composing, the golden >= 10% is refuted."""
    assert _verdict(name, "S[T-1] - S[0] >= 1/2 * C * T") == "proved"
    assert _verdict(name, "S[T-1] - S[0] >= (1/2 + 1/1000) * C * T") == "counterexample"
    q = _load(ROOT / "queries" / "verify" / f"{name}.toml")
    composing = replace(q, scenario=replace(q.scenario, model=replace(q.model, compose=True)))
    assert verify(composing, OPTS).verdict == "counterexample"


def test_aimd_premature_loss_trace() -> None:
    """CCAC: with a 2 BDP buffer, AIMD loses packets right after a step with cwnd <= 2 BDP,
    when a >= 1 BDP burst of ACKs arrives together with a >= 1 BDP loss-detection burst."""
    tr = _trace(_run("aimd-ccac-premature-loss"))
    p, fl = tr.params, tr.flows[0]
    C, R, MSS, beta = p["C"], p["R"], p["MSS"], p["buffer"]
    assert C is not None and R is not None and MSS is not None
    bdp = C * R
    assert beta == 2 * bdp
    assert MSS <= bdp / 10
    assert fl["L"][0] == 0
    R_ = int(R)
    found = []
    for t in range(1, tr.T - 1):
        cw, L, S, Ld = fl["cwnd"], fl["L"], fl["S"], fl["Ld"]
        if (cw[t] <= 2 * bdp and L[t + 1] > L[t] and S[t + 1 - R_] - S[t - R_] >= bdp  # type: ignore[operator]
                and Ld[t + 1] - Ld[t] >= bdp):  # type: ignore[operator]
            found.append(t)
    assert found, "no step shows the premature-loss pattern"


def test_aimd_no_loss_without_the_bursts() -> None:
    """Tight companion: without a loss-detection burst (no loss before the trace and none
    detected in it), AIMD cannot lose right after a step with cwnd <= 2 BDP."""
    q = _load(ROOT / "queries" / "verify" / "aimd-ccac-premature-loss.toml")
    obj = Objective("expr", {}, Loc("<test>"),
                    Source("<test>", "all(not (cwnd[t] <= 2 * C * R and cwnd[t + 1] <= 2 * C * R "
                                     "and L[t + 1] > L[t]) for t in range(1, T - 1))"), "x")
    assert verify(replace(q, objectives=(obj,)), OPTS).verdict == "proved"


def test_cc_qdel_invariant_tight_in_utilization() -> None:
    """cc_qdel meets Eq. 4.1.3 with 50% utilization (golden); demanding more than 100%
    utilization in 'desired' must fail (the invariant is not vacuous)."""
    q = _load(ROOT / "queries" / "verify" / "cc_qdel-ccac.toml")
    assert verify(q, OPTS).verdict == "proved"
    strict = Objective("invariant", {"util": Fraction(5, 2), "inflight_bdp": Fraction(0), "inflight_mss": Fraction(0)},
                       Loc("<test>"), None, "strict")
    assert verify(replace(q, objectives=(strict,)), OPTS).verdict == "counterexample"


def test_const_rate_counterexample_is_low_utilization() -> None:
    tr = _trace(_run("const_rate-ccac"))
    S, C, D, T = tr.aggregate["S"], tr.params["C"], tr.params["D"], tr.T
    assert C is not None and D is not None
    assert S[-1] - S[0] < Fraction(1, 2) * C * (T - 1 - D)
    MSS = tr.params["MSS"]
    assert all(r == MSS for r in tr.flows[0]["rate"][1:])
