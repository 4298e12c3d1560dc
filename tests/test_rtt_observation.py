"""The latest RTT sample, ``rtt``, as an observation of the models (docs/language.md,
"Delay signals"): in verification the adversary's choice within its delay bucket,
R + dt <= rtt < R + dt + 1 (ccmatic/semantics/qdel.py, rtt_in_bucket), re-checked
exactly and replayed; in simulation the measured value."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from ccmatic.core.errors import Loc
from ccmatic.core.model import ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.quantities import families_needed
from ccmatic.core.results import Counterexample
from ccmatic.core.scenario import Objective, Query, Scenario
from ccmatic.core.source import Source
from ccmatic.engine.verify import verify
from ccmatic.sim.fine import simulate
from ccmatic.sim.links import Link
from ccmatic.sim.metrics import metrics
from ccmatic.sim.records import Flow, SimConfig
from ccmatic.sim.replay import replay
from ccmatic.spec.cca import load_cca

ROOT = Path(__file__).resolve().parent.parent


def threshold_cca(op: str) -> str:
    """cwnd is one packet once the latest sample is at least (>=) or beyond (>) R + 1."""
    return f"if rtt {op} R + 1:\n    cwnd = MSS\nelse:\n    cwnd = 4 * MSS\n"


#: a sample in bucket 1 (delay in [1, 2) steps) is an RTT in [R + 1, R + 2)
IN_BUCKET_1 = "all(qdel_hi[t - 1] == 2 => cwnd[t] == MSS for t in range(1, T))"


def query(cca_text: str, prop: str, T: int = 5) -> Query:
    model = ModelConfig(name="ccac", family="ccac")
    scenario = Scenario("rtt", "<rtt>", "rtt_probe.cca", cca_text, model, T)
    return Query(scenario, (Objective("expr", {}, Loc("<rtt>"), Source("<rtt>", prop), "property"),))


def test_a_property_of_every_rtt_in_the_bucket_is_proved() -> None:
    """rtt >= R + 1 holds for every sample of bucket 1, so cwnd is one packet."""
    rep = verify(query(threshold_cca(">="), IN_BUCKET_1), RunOptions(timeout_s=120, seed=0))
    assert rep.verdict == "proved", rep.outcome


def test_a_property_that_needs_the_bucket_edge_gets_a_replayed_counterexample() -> None:
    """rtt > R + 1 fails only at the bucket's lower edge, rtt = R + 1 exactly: the
    counterexample (re-checked and replayed by verify) takes that value."""
    rep = verify(query(threshold_cca(">"), IN_BUCKET_1), RunOptions(timeout_s=120, seed=0))
    assert isinstance(rep.outcome, Counterexample), rep.outcome
    tr = rep.outcome.trace
    fl = tr.flows[0]
    edge = [t for t in range(1, tr.T) if fl["qdel_hi"][t - 1] == 2 and fl["cwnd"][t] != tr.params["MSS"]]
    assert edge, "no step violates the property"
    assert all(fl["rtt"][t - 1] == 2 for t in edge)  # R + 1 with R = 1


def test_the_replay_refuses_an_rtt_outside_its_bucket() -> None:
    """A counterexample whose rtt is moved out of its bucket fails the replay."""
    q = query(threshold_cca(">"), IN_BUCKET_1)
    rep = verify(q, RunOptions(timeout_s=120, seed=0))
    assert isinstance(rep.outcome, Counterexample), rep.outcome
    tr = rep.outcome.trace
    prog = load_cca("rtt_probe.cca", threshold_cca(">"))
    assert replay(prog, q.scenario.model, tr).ok
    t = next(t for t in range(tr.T) if tr.flows[0]["qdel_hi"][t] == 2)
    moved = [dict(tr.flows[0])]
    moved[0]["rtt"] = list(moved[0]["rtt"])
    moved[0]["rtt"][t] = Fraction(3)  # R + 2: the next bucket's
    bad = replay(prog, q.scenario.model, replace(tr, flows=moved))
    assert ("rtt (within its delay bucket)", t) in [(m.name, m.t) for m in bad.mismatches]



#: with no new ACK, the latest sample is the previous step's
STALE_KEPT = "all(S[t] == S[t - 1] => rtt[t] == rtt[t - 1] for t in range(1, T))"


def test_a_stale_sample_is_kept_in_the_models() -> None:
    """No new ACK, no new sample: rtt stays the previous step's (as the simulator and
    a real stack report it); the tight twin: a new ACK may bring another value."""
    opts = RunOptions(timeout_s=120, seed=0)
    assert verify(query(threshold_cca(">"), STALE_KEPT), opts).verdict == "proved"
    fresh = "all(S[t] != S[t - 1] => rtt[t] == rtt[t - 1] for t in range(1, T))"
    assert verify(query(threshold_cca(">"), fresh), opts).verdict == "counterexample"


def test_the_replay_refuses_a_stale_sample_that_moved() -> None:
    """A trace whose rtt changes at a step with no new ACK fails the replay (moved
    within its bucket, so only the staleness rule can catch it)."""
    q = query(threshold_cca(">"), IN_BUCKET_1, T=6)
    stale_step = Source("<rtt>", "S[3] == S[2] and qdel_hi[3] == 2")  # step 3 has no new ACK
    q = replace(q, scenario=replace(q.scenario, assumptions=(stale_step,)))
    rep = verify(q, RunOptions(timeout_s=120, seed=0))
    assert isinstance(rep.outcome, Counterexample), rep.outcome
    tr = rep.outcome.trace
    fl = tr.flows[0]
    prog = load_cca("rtt_probe.cca", threshold_cca(">"))
    assert replay(prog, q.scenario.model, tr).ok
    t = 3
    moved = [dict(fl)]
    moved[0]["rtt"] = list(fl["rtt"])
    hi = Fraction(fl["qdel_hi"][t])
    moved[0]["rtt"][t] = hi + Fraction(1, 2) if fl["rtt"][t] != hi + Fraction(1, 2) else hi + Fraction(1, 4)
    bad = replay(prog, q.scenario.model, replace(tr, flows=moved))
    assert ("rtt (kept without a new ACK)", t) in [(m.name, m.t) for m in bad.mismatches]

def test_rtt_is_built_only_when_read() -> None:
    """Reading rtt brings the delay buckets; reading only qdel does not build rtt."""
    assert families_needed({"rtt"}) == {"rtt", "qdel"}
    assert "rtt" not in families_needed({"qdel_lo", "c_lo"})


def floor_query(name: str, start: str, floor: str) -> Query:
    """From cwnd[0] >= start, cwnd stays >= floor over 6 steps (a CCA of templates/)."""
    path = ROOT / "templates" / f"{name}.cca"
    q = query(path.read_text(), f"all(cwnd[t] >= {floor} for t in range(T))", T=6)
    sc = replace(q.scenario, cca_path=str(path), assumptions=(Source("<rtt>", f"cwnd[0] >= {start}"),))
    return replace(q, scenario=sc)


@pytest.mark.parametrize(("name", "floor", "above"), [("vegas_rtt", "MSS", "2 * MSS"),
                                                      ("copa_rtt", "2 * MSS", "3 * MSS")])
def test_rtt_ccas_verify(name: str, floor: str, above: str) -> None:
    """templates/vegas_rtt.cca and copa_rtt.cca, which read rtt, are verifiable: from
    a window at its floor (one packet for Vegas, two for Copa) it never falls below
    it (proved), but may fall below one packet more (counterexample)."""
    rep = verify(floor_query(name, floor, floor), RunOptions(timeout_s=300, seed=0))
    assert rep.verdict == "proved", rep.outcome
    rep = verify(floor_query(name, floor, above), RunOptions(timeout_s=300, seed=0))
    assert isinstance(rep.outcome, Counterexample), rep.outcome


@pytest.mark.parametrize(("name", "lo", "hi"), [("vegas_rtt", 0.0405, 0.0425), ("copa_rtt", 0.0405, 0.0425),
                                                ("vegas", 0.070, 0.085)])
def test_rtt_ccas_simulate_with_a_queue_of_a_few_packets(name: str, lo: float, hi: float) -> None:
    """The same files simulated keep a queue of a few packets: one flow at 24 Mbit/s
    (0.5 ms a packet), RTprop 40 ms, measures a mean RTT within 40.5-42.5 ms (Vegas: 2
    to 4 packets; Copa, delta = 1/2: a queueing delay of 2 / rate = 1 ms); the bucketed
    templates/vegas.cca, which cannot see less than a step of delay, about 2 RTprops."""
    c = 24e6 / 8
    prog = load_cca(ROOT / "templates" / f"{name}.cca")
    res = simulate(SimConfig(Link("ideal", c, 0.0, 4 * c * 0.04), (Flow(prog, 0.04),), 20, seed=0))
    rtt = metrics(res, 10).flows[0].rtt_mean
    assert lo <= rtt <= hi, (name, rtt)
