"""CCAC's CCAs as CCAC defines them (templates/aimd.cca, bbr.cca, copa.cca) against
the answers CCAC itself gives: its unit test test_cca_aimd.py and its example
questions (example_queries.py, shipped as queries/ccac/*.toml).  Each solver answer
comes in a tight pair: the bound CCAC answers, and a hair beyond it the other verdict."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from ccmatic.core.errors import Loc
from ccmatic.core.model import ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.scenario import Objective
from ccmatic.core.source import Source
from ccmatic.engine.verify import verify
from ccmatic.io.models import load_model
from tests.helpers import assert_golden, load_file_query, proved, refuted

ROOT = Path(__file__).resolve().parent.parent
CCAC_QUERIES = sorted((ROOT / "queries" / "ccac").glob("*.toml"))
OPTS = RunOptions(timeout_s=300, seed=0)

# CCAC's AIMD at step 0 (last_loss(0) = S(0) = 0) and its recovery mark A - L + dupacks
AIMD_PINS = ("recover[0] == 0 and run_S[0] == 0 and age[0] == 0",
             "all(marked[t] => recover[t] == A[t] - L[t] + 3 * MSS for t in range(1, T))",
             "cwnd[0] > 0")


def ccac_default() -> ModelConfig:
    """CCAC's ModelConfig.default() with AIMD's dupacks = 3 alpha."""
    return replace(load_model(ROOT / "models" / "ccac_default.toml"), dupacks=Fraction(3))


@pytest.mark.parametrize("path", CCAC_QUERIES, ids=[p.stem for p in CCAC_QUERIES])
def test_ccac_example_question(path: Path) -> None:
    """Each of CCAC's example questions gives CCAC's answer (its 'expect')."""
    assert_golden(path, OPTS)


def verdict_with(name: str, expr: str) -> str:
    """The verdict of queries/ccac/NAME.toml (an exists question) asked instead as the
    property ``expr`` of every trace."""
    q = load_file_query(ROOT / "queries" / "ccac" / f"{name}.toml")
    obj = Objective("expr", {}, Loc("<test>"), Source("<test>", expr), "property")
    return verify(replace(q, objectives=(obj,), exists=()), OPTS).verdict


def test_copa_noncomposing_utilization_bound_is_ccacs() -> None:
    """CCAC's copa_low_util (non-composing) is unsat below 50% and sat a hair above
    (CCAC, run side by side: unsat at 0.5, sat at 0.5001): ccmatic proves
    utilization >= 1/2 and finds a counterexample to >= 1/2 + 1/1000."""
    assert verdict_with("copa_low_util", "S[T-1] - S[0] >= 1/2 * C * T") == "proved"
    assert verdict_with("copa_low_util", "S[T-1] - S[0] >= (1/2 + 1/1000) * C * T") == "counterexample"


def test_copa_composing_utilization_is_arbitrarily_low() -> None:
    """CCAC's docstring: composing, Copa's throughput can be arbitrarily low.  Some
    utilization is proved (S advances), yet 1/1000 of C T is not."""
    assert verdict_with("copa_low_util_compose", "S[T-1] - S[0] > 0") == "proved"
    assert verdict_with("copa_low_util_compose", "S[T-1] - S[0] >= 1/1000 * C * T") == "counterexample"


PREMATURE = ("all(not (cwnd[t] <= {w} and Ld[t + 1] - Ld[t] >= 1 and S[t + 1 - R] - S[t - R] >= C * R + 1"
             " and A[t + 1] >= A[t] + 2 and L[t + 1] > L[t]) for t in range(2, T - 1))")


def test_aimd_premature_loss_needs_a_window_above_2_bdp_less_alpha() -> None:
    """CCAC's aimd_premature_loss asks for cwnd <= 2 (sat).  The loss needs a window
    above 2 - 1/10 (2 BDP less the largest alpha): with cwnd <= 19/10 there is none,
    with 19/10 + 1/1000 there is one (CCAC, run side by side: unsat at 1.9, sat at
    1.9001)."""
    assert verdict_with("aimd_premature_loss", PREMATURE.format(w="19/10")) == "proved"
    assert verdict_with("aimd_premature_loss", PREMATURE.format(w="19/10 + 1/1000")) == "counterexample"


def test_bbr_utilization_is_arbitrarily_low() -> None:
    """CCAC's bbr_low_util: simplified BBR's utilization can be made arbitrarily small
    (CCAC, run side by side: sat below 1/1000 of C T, unsat at 0).  Some utilization
    is proved, 1/1000 of C T is not."""
    assert verdict_with("bbr_low_util", "S[T-1] - S[0] > 0") == "proved"
    assert verdict_with("bbr_low_util", "S[T-1] - S[0] >= 1/1000 * C * T") == "counterexample"


def test_bbr_is_constrained_from_2r() -> None:
    """CCAC constrains BBR's cwnd from t = 2R, with one window of delivery rate:
    cwnd(2) = 2 (S(1) - S(0)).  The looser bbr_free_start.cca leaves it free."""
    prop = "cwnd[2] == 2 * (S[1] - S[0]) and rate[2] >= 0.8 * (S[1] - S[0]) / R"
    proved(ccac_default(), 6, prop, cca="bbr")
    refuted(ccac_default(), 6, prop, cca="bbr_free_start")


def test_aimd_can_incr_some_trace_increases() -> None:
    """CCAC's test_can_incr, first half (sat): some trace grows the window (without a
    loss or a timeout), so 'cwnd never grows' has a counterexample."""
    refuted(ccac_default(), 10, "all(cwnd[t] <= cwnd[t - 1] for t in range(1, T))",
            assume=AIMD_PINS, cca="aimd")


GROWS = ("all((S[t] - S[t - 1] >= cwnd[t] - {slack} and Ld[t + 1] == Ld[t] and not timeout[t + 1])"
         " => cwnd[t + 1] == cwnd[t] + MSS for t in range(1, T - 1))")


def test_aimd_can_incr_a_window_of_acks_always_increases() -> None:
    """CCAC's test_can_incr, second half (unsat): if S grows by at least cwnd in a
    step, the window grows by MSS at the next step (unless a loss or timeout)."""
    proved(ccac_default(), 10, GROWS.format(slack=0), assume=AIMD_PINS, cca="aimd")


def test_aimd_can_incr_a_hair_less_than_a_window_may_not() -> None:
    """Tight twin: S growing by cwnd less a hundredth of an MSS in one step (and no
    earlier ACKs in the window's run) need not grow the window."""
    refuted(ccac_default(), 10, GROWS.format(slack="MSS / 100"), assume=AIMD_PINS, cca="aimd")


RUN = ("cwnd[0] != cwnd[1] and cwnd[1] == cwnd[2] and cwnd[2] == cwnd[3] and S[3] - S[1] >= cwnd[3] - {slack}"
       " and Ld[4] == Ld[3] and not timeout[4]")


def test_aimd_counts_the_acks_since_the_window_changed() -> None:
    """CCAC's can_incr over a run: the window took its value at step 1 and kept it to
    step 3; a window of bytes ACKed since step 1 (S(3) - S(1)), even if no single
    step ACKed a window, grows it at step 4.  A hundredth of an MSS less need not."""
    grows = "cwnd[4] == cwnd[3] + MSS"
    proved(ccac_default(), 6, grows, assume=AIMD_PINS + (RUN.format(slack=0),), cca="aimd")
    refuted(ccac_default(), 6, grows, assume=AIMD_PINS + (RUN.format(slack="MSS / 100"),), cca="aimd")


def test_aimd_waits_for_a_window_of_acks() -> None:
    """CCAC's default (aimd_incr_irrespective = False): with fewer than a window of
    bytes ACKed in every step the window can stay put without a loss, where the
    looser aimd_incr_every_step.cca always grows."""
    prop = "all((Ld[t] == Ld[t - 1] and not timeout[t]) => cwnd[t] > cwnd[t - 1] for t in range(2, T))"
    refuted(ccac_default(), 6, prop, assume=AIMD_PINS, cca="aimd")
    proved(ccac_default(), 6, prop, assume=("cwnd[0] > 0",), cca="aimd_incr_every_step")


def test_aimd_halves_without_a_floor() -> None:
    """CCAC halves the window on a new loss with no floor at MSS: a window below
    2 MSS can halve below MSS (the looser file floors it)."""
    prop = "all(cwnd[t] >= MSS for t in range(2, T))"
    start = ("cwnd[0] >= MSS and cwnd[1] >= MSS", "all(not timeout[t] for t in range(T))")
    refuted(ccac_default(), 6, prop, assume=AIMD_PINS + start, cca="aimd")
    proved(ccac_default(), 6, prop, assume=start, cca="aimd_incr_every_step")


def test_query_files_load() -> None:
    """Every CCAC question is asked as CCAC asks it (exists) and declares CCAC's
    answer (sat: a witness, unsat: none)."""
    assert CCAC_QUERIES
    for p in CCAC_QUERIES:
        q = load_file_query(p)
        assert q.exists and q.expect in ("witness", "no_witness")
