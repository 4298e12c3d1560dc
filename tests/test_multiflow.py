"""Many flows in the models: the FIFO split of the bottleneck's output, per-flow jitter
boxes (docs/multiflow.md), the fairness objectives, and the starvation pairs of
queries/multiflow/ (golden verdicts, and their traces checked on the numbers)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from ccmatic.core.model import Buffer, ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.results import ConcreteTrace, Counterexample
from ccmatic.engine.verify import verify
from tests.helpers import assert_golden, load_file_query, proved, refuted, run_cli

ROOT = Path(__file__).resolve().parent.parent
QUERIES = sorted((ROOT / "queries" / "multiflow").glob("*.toml"))
OPTS = RunOptions(timeout_s=1200, seed=0)
#: the pairs' slow sides (50 s to several minutes each; copa-jitter0 78 s and vegas-jitter2 64 s
#: on a 2-core machine on 2026-11-28): run with -m slow
SLOW = {"aimd_delay-jitter0", "aimd_delay-jitter1", "aimd_delay-parkinglot", "copa-jitter0", "copa-jitter1",
        "vegas-jitter1", "vegas-jitter2", "copa-rtprop", "aimd_delay-rtprop"}

CBR2 = ModelConfig(name="cbr_delay", family="cbr_delay", C=Fraction(100), D=1, N=2, buffer=Buffer("infinite"),
                   loss="droptail")
IDEAL2 = ModelConfig(name="ideal", family="ideal", C=Fraction(100), D=0, N=2, buffer=Buffer("infinite"),
                     loss="droptail")


_load = load_file_query


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW else p
                                  for p in QUERIES], ids=[p.stem for p in QUERIES])
def test_golden(path: Path) -> None:
    assert_golden(path, OPTS)


def test_every_pair_has_both_sides() -> None:
    expect = {p.stem: _load(p).expect for p in QUERIES}
    assert expect["aimd_delay-jitter0"] == "proved" and expect["aimd_delay-jitter1"] == "counterexample"
    assert expect["copa-jitter0"] == "proved" and expect["copa-jitter1"] == "counterexample"
    assert expect["vegas-jitter1"] == "proved" and expect["vegas-jitter2"] == "counterexample"
    assert expect["aimd_delay-rtprop"] == "proved" and expect["copa-rtprop"] == "counterexample"
    for cca, delta in (("aimd_delay", 2), ("copa", 1), ("vegas", 1)):
        assert expect[f"{cca}-delta{delta}"] == "proved" and expect[f"{cca}-delta{delta - 1}"] == "counterexample"


# -- the jitter boxes and the FIFO split -------------------------------------------------------

def test_jitter_box_delays_only_its_flow() -> None:
    """(M4) with jitter [1, 0]: flow 0's bytes are delivered at most one step after
    they leave the bottleneck (and may be late), flow 1's as they leave."""
    m = replace(CBR2, jitter=(1, 0))
    proved(m, 5, "all(S[0, t] >= O[0, t-1] for t in range(1, T))")
    refuted(m, 5, "all(S[0, t] >= O[0, t] for t in range(1, T))")
    proved(m, 5, "all(S[1, t] == O[1, t] for t in range(T))")


def test_jitter_boxes_on_ccac() -> None:
    """The same boxes on CCAC, where the bottleneck's output is min(T_A, A − L) (its
    tokens may run ahead of an empty queue): flow 1 has no box, flow 0's lags ≤ 1."""
    m = replace(CBR2, name="ccac", family="ccac", loss="ccac", jitter=(1, 0))
    proved(m, 5, "all(S[1, t] == O[1, t] and S[0, t] >= O[0, t-1] for t in range(1, T))")
    refuted(m, 5, "all(S[0, t] == O[0, t] for t in range(T))")
    proved(m, 5, "all(O[0, t] + O[1, t] <= tokens[t] for t in range(T))")


def test_outputs_add_up_to_the_service() -> None:
    """(M1): the flows' outputs add up to the bottleneck's; on the ideal link every
    flow's delivery is its output."""
    proved(IDEAL2, 5, "all(O[0, t] + O[1, t] == tokens[t] and S[0, t] == O[0, t] for t in range(T))")
    refuted(IDEAL2, 5, "all(O[0, t] == O[1, t] for t in range(T))")


FIFO_SERVED = ("A[0,1] - L[0,1] + A[1,1] - L[1,1] <= tokens[3]",)


def test_fifo_serves_the_earlier_arrivals_first() -> None:
    """(M3): once the link has served everything that arrived by step 1, flow 0's
    part of it has been delivered.  Without the split (fifo = false) the network
    may serve flow 1's later bytes instead."""
    prop = "S[0, 3] >= A[0, 1] - L[0, 1]"
    proved(IDEAL2, 5, prop, assume=FIFO_SERVED)
    refuted(replace(IDEAL2, fifo=False), 5, prop, assume=FIFO_SERVED)


def test_dmax_is_the_networks_largest_jitter() -> None:
    proved(replace(CBR2, jitter=(2, 0)), 5, "Dmax == 2 and D == 1")
    refuted(replace(CBR2, jitter=(1, 0)), 5, "Dmax == 2")


# -- per-flow RTprop ----------------------------------------------------------------------------

def test_each_flow_is_acked_after_its_own_rtprop() -> None:
    """rtprop [1, 3]: flow 1 sends against S 3 steps back (CCAC's sending rule with
    its own R), flow 0 against S 1 step back."""
    m = replace(CBR2, D=0, rtprop=(1, 3))
    proved(m, 7, "all(A[1, t] >= S[1, t-3] + cwnd[1, t] for t in range(3, T))", cca="aimd_delay")
    refuted(m, 7, "all(A[1, t] >= S[1, t-1] + cwnd[1, t] for t in range(3, T))", cca="aimd_delay")
    proved(m, 7, "all(A[0, t] >= S[0, t-1] + cwnd[0, t] for t in range(3, T))", cca="aimd_delay")


def test_synthesis_refuses_per_flow_rtprop(tmp_path: Path) -> None:
    q = tmp_path / "q.toml"
    text = (ROOT / "queries" / "table4_1" / "G1-T4.toml").read_text()
    q.write_text(text + "\n[model_params]\nN = 2\nrtprop = [1, 2]\n" if "[model_params]" not in text else
                 text.replace("[model_params]", "[model_params]\nN = 2\nrtprop = [1, 2]"))
    code, _out, err = run_cli("synth", q)
    assert code == 2 and "per-flow rtprop is not supported" in err, err


# -- the parking lot --------------------------------------------------------------------------

PARKING = replace(CBR2, D=0, N=3, topology="parking_lot")


def test_parking_lot_bottlenecks_serve_their_own_flows() -> None:
    """Each bottleneck's split adds up to its own tokens (flow 0 reaches the second
    one through the first); together the flows may get more than one link's worth,
    but never more than two, and flows 0 and 1 never more than the first link."""
    proved(PARKING, 5, "all(O1[0, t] + O[1, t] == tokens[t] and O[0, t] + O[2, t] == tokens2[t] for t in range(T))")
    proved(PARKING, 5, "all(S[0, t] <= O1[0, t] for t in range(T))")
    refuted(PARKING, 5, "all(S[t] <= tokens[t] for t in range(T))")
    ccac = replace(PARKING, family="ccac", D=1)
    proved(ccac, 5, "all(S[t] <= tokens[t] + tokens2[t] and S[0, t] + S[1, t] <= tokens[t] for t in range(T))")
    refuted(ccac, 5, "all(S[0, t] + S[2, t] <= tokens[t] for t in range(T))")


def test_two_bottleneck_names_need_a_parking_lot(tmp_path: Path) -> None:
    bad = tmp_path / "q.toml"
    bad.write_text(BASE.read_text().replace('kind = "share_ratio"\nratio = "1/10"',
                                            'kind = "expr"\nexpr = "bq2[T-1] >= 0"'))
    code, _out, err = run_cli("verify", bad)
    assert code == 2 and "'bq2' exists only in a model with two bottlenecks" in err, err


# -- the starvation counterexample, on the numbers ---------------------------------------------

def _starved(tr: ConcreteTrace) -> bool:
    got = [tr.flows[f]["S"][-1] - tr.flows[f]["S"][1] for f in range(tr.N)]
    return any(10 * got[f] <= got[g] for f in range(tr.N) for g in range(tr.N) if f != g)


def test_aimd_starvation_trace_obeys_the_split() -> None:
    """The AIMD counterexample with 2 steps of jitter (at T = 10, a few seconds): one
    flow gets at most 1/10 of the other, and the trace is FIFO with flow 0 late by at
    most 2 steps."""
    q = _load(ROOT / "queries" / "multiflow" / "aimd_delay-jitter1.toml")
    model = replace(q.model, jitter=(2, 0))
    q = replace(q, scenario=replace(q.scenario, T=10, model=model), expect=None)
    rep = verify(q, OPTS)
    assert isinstance(rep.outcome, Counterexample), rep.verdict
    tr = rep.outcome.trace
    assert _starved(tr)
    O = [tr.flows[f]["O"] for f in range(2)]
    S = [tr.flows[f]["S"] for f in range(2)]
    arrived = [[a - lost for a, lost in zip(tr.flows[f]["A"], tr.flows[f]["L"], strict=True)] for f in range(2)]
    for t in range(tr.T):
        out = O[0][t] + O[1][t]
        assert out == tr.aggregate["tokens"][t]                     # M1 on the CBR link
        assert S[1][t] == O[1][t] and S[0][t] <= O[0][t]            # M4, flow 1 has no jitter
        if t >= 2:
            assert S[0][t] >= O[0][t - 2]
        for k in range(t + 1):                                      # M3
            if arrived[0][k] + arrived[1][k] <= out:
                assert O[0][t] >= arrived[0][k] and O[1][t] >= arrived[1][k]


# -- bad input ----------------------------------------------------------------------------------

BASE = ROOT / "queries" / "multiflow" / "copa-jitter0.toml"


@pytest.mark.parametrize(("old", "new", "message"), [
    ("jitter = [0, 0]", "jitter = [0, 0, 1]", "jitter lists 3 flows but N = 2"),
    ("jitter = [0, 0]", "jitter = [0, -1]", "'jitter' must be at least 0"),
    ("jitter = [0, 0]", "jitter = 1", "jitter must be a list"),
    ("jitter = [0, 0]", "jitter = [0, 11]", "not shorter than the horizon"),
    ('model = "cbr_delay"', 'model = "ideal"\n', "the ideal link has no jitter"),
    ("jitter = [0, 0]", 'topology = "parking_lot"', "a parking lot has 3 flows, got N = 2"),
    ("jitter = [0, 0]", "rtprop = [1]", "rtprop lists 1 flow but N = 2"),
    ("jitter = [0, 0]", "rtprop = [1, 0]", "'rtprop' must be at least 1"),
    ("jitter = [0, 0]", "rtprop = [1, 12]", "not shorter than the horizon"),
    ("N = 2", 'N = 3\ntopology = "parking_lot"\njitter = [0, 0, 0]\nbuffer = {finite = 2}',
     "a parking lot's buffers are infinite"),
])
def test_bad_per_flow_keys_are_one_line(tmp_path: Path, old: str, new: str, message: str) -> None:
    text = BASE.read_text()
    if "finite" in new:
        text = text.replace('buffer = "infinite"\n', "").replace("jitter = [0, 0]\n", "")
    if "ideal" in new:
        text = text.replace("jitter = [0, 0]", "jitter = [1, 0]")
    assert old in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(old, new))
    code, out, err = run_cli("verify", bad)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{bad}:") and message in lines[0], err


def test_a_cca_cannot_read_the_networks_jitter(tmp_path: Path) -> None:
    cca = tmp_path / "peek.cca"
    cca.write_text("cwnd = MSS * Dmax\n")
    q = tmp_path / "q.toml"
    q.write_text(BASE.read_text().replace('cca = "copa_nofresh"', f'cca = "{cca}"'))
    code, _out, err = run_cli("verify", q)
    assert code == 2 and "peek.cca:1:" in err and "Dmax" in err, err
