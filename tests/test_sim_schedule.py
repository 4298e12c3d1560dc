"""Link-rate schedules in the fine mode (ccmatic/sim/links.py: RateSchedule): the
bottleneck rate C changes at given times on every link kind, as in App. B.6's
convergence runs (the rate doubled or halved every 20 s).

The schedule itself (rate at a time, the integral of C(t)), the bottleneck serving a
queue across rate changes (delivery times computed by hand), whole runs (throughput
before and after a doubling, utilization against the integral of C(t)), and
``ccmatic simulate --rate-schedule``."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli as run

from ccmatic.sim.bottleneck import Bottleneck
from ccmatic.sim.fine import simulate
from ccmatic.sim.links import LINK_KINDS, Link, LinkKind, RateSchedule
from ccmatic.sim.metrics import metrics
from ccmatic.sim.records import Flow, SimConfig, SimResult
from ccmatic.spec.cca import CcaProgram, load_cca

ROOT = Path(__file__).resolve().parent.parent
MBPS = 1e6 / 8
R = 0.04
MSS = 1500.0
# rates and times chosen so that every value below is exact in binary floating point
SCHED = RateSchedule(((0.0, 100.0), (2.0, 300.0), (5.0, 50.0)))


# -- the schedule ------------------------------------------------------------------------

def test_rate_at_a_time() -> None:
    assert [SCHED.rate(t) for t in (0.0, 1.0, 1.999, 2.0, 4.5, 5.0, 100.0)] == [100, 100, 100, 300, 300, 50, 50]
    assert SCHED.rate(-1.0) == 100.0  # before 0: the first rate
    assert SCHED.next_change(0.0) == 2.0 and SCHED.next_change(2.0) == 5.0 and SCHED.next_change(5.0) == math.inf
    assert SCHED.prev_change(1.0) == 0.0 and SCHED.prev_change(2.0) == 2.0 and SCHED.prev_change(7.0) == 5.0


def test_served_is_the_integral_across_change_points() -> None:
    assert SCHED.served(0.0, 2.0) == 200.0
    assert SCHED.served(1.0, 3.0) == 100.0 + 300.0
    assert SCHED.served(1.5, 6.0) == 0.5 * 100 + 3 * 300 + 1 * 50  # three segments: 1000
    assert SCHED.served(2.0, 5.0) == 900.0  # exactly one segment, both ends on change points
    assert SCHED.served(5.0, 9.0) == 200.0  # the last rate holds forever
    assert SCHED.served(3.0, 3.0) == 0.0
    assert SCHED.served(6.0, 1.5) == -1000.0
    # additive over any split
    assert SCHED.served(0.0, 4.0) + SCHED.served(4.0, 8.0) == SCHED.served(0.0, 8.0)


def test_a_constant_schedule_is_c_times_time() -> None:
    one = RateSchedule(((0.0, 6e6),))
    assert one.rate(123.0) == 6e6 and one.next_change(0.0) == math.inf
    assert one.served(1.0, 3.5) == 6e6 * 2.5


@pytest.mark.parametrize("points", [
    (),
    ((1.0, 100.0),),                    # does not start at 0
    ((0.0, 100.0), (2.0, 0.0)),         # rate 0
    ((0.0, 100.0), (2.0, -5.0)),        # negative rate
    ((0.0, 100.0), (2.0, math.inf)),    # infinite rate
    ((0.0, 100.0), (2.0, 50.0), (2.0, 70.0)),  # times not strictly increasing
    ((0.0, 100.0), (3.0, 50.0), (2.0, 70.0)),
])
def test_bad_schedules_are_refused(points: tuple[tuple[float, float], ...]) -> None:
    with pytest.raises(ValueError):
        RateSchedule(points)


def test_link_rate_and_capacity() -> None:
    const = Link("ideal", 100.0, 0.0, None)
    assert const.schedule is None and const.rate(7.0) == 100.0 and const.capacity(1.0, 3.0) == 200.0
    sched = Link("ideal", 100.0, 0.0, None, SCHED)
    assert sched.C == 100.0  # the rate at t = 0
    assert sched.rate(3.0) == 300.0 and sched.capacity(1.5, 6.0) == 1000.0
    with pytest.raises(ValueError, match="starts at"):
        Link("ideal", 120.0, 0.0, None, SCHED)  # C must be the schedule's rate at t = 0


# -- the bottleneck ----------------------------------------------------------------------

def _bottleneck(sched: RateSchedule | None, out: list[tuple[int, float]], buffer: float = math.inf) -> Bottleneck:
    C = sched.rate(0.0) if sched is not None else MSS
    return Bottleneck(C, buffer, MSS, lambda f, at, arrived: out.append((f, at)), schedule=sched)


# one packet per second, two from t = 2.5 s, half a packet per second from t = 4 s
PKT = RateSchedule(((0.0, MSS), (2.5, 2 * MSS), (4.0, MSS / 2)))


def test_a_queue_is_served_at_the_rate_in_force() -> None:
    """Seven packets queued at t = 0.  By hand: 1 and 2 leave at 1 s and 2 s; packet 3
    has half its bytes served by 2.5 s and the other half at 2 packets/s: 2.75 s; 4 and
    5 take 0.5 s each: 3.25, 3.75; packet 6 is half served by 4 s, its other half takes
    1 s at half a packet per second: 5 s; packet 7 takes 2 s: 7 s."""
    out: list[tuple[int, float]] = []
    bn = _bottleneck(PKT, out)
    for f in range(7):
        assert bn.arrive(f, 0.0)
    bn.serve_until(2.5)
    assert out == [(0, 1.0), (1, 2.0)]
    assert bn.qbytes == 4 * MSS + MSS / 2  # packet 3 is half served at the change
    bn.serve_until(20.0)
    assert out == [(0, 1.0), (1, 2.0), (2, 2.75), (3, 3.25), (4, 3.75), (5, 5.0), (6, 7.0)]
    assert bn.qbytes == 0.0 and not bn.fifo


def test_serving_in_small_steps_gives_the_same_times() -> None:
    """The change points do not depend on when the queue is looked at: serving up to
    every tick of 0.1 s delivers at the same instants (up to rounding)."""
    out: list[tuple[int, float]] = []
    bn = _bottleneck(PKT, out)
    for f in range(7):
        bn.arrive(f, 0.0)
    for k in range(1, 201):
        bn.serve_until(k * 0.1)
    assert [f for f, _ in out] == list(range(7))
    assert [at for _, at in out] == pytest.approx([1.0, 2.0, 2.75, 3.25, 3.75, 5.0, 7.0], abs=1e-9)


def test_an_idle_link_picks_up_the_rate_of_the_moment() -> None:
    """Packets arriving at an empty queue are served at the rate then in force, even
    after change points that passed while the queue was empty."""
    out: list[tuple[int, float]] = []
    bn = _bottleneck(PKT, out)
    for f, t in enumerate((0.5, 3.0, 10.0)):
        bn.arrive(f, t)
    bn.serve_until(20.0)
    assert out == [(0, 1.5), (1, 3.5), (2, 12.0)]


def test_admission_sees_the_queue_served_at_the_scheduled_rate() -> None:
    """A 2-packet buffer, a packet every 0.25 s from t = 2.5 s (2 packets/s): at the
    doubled rate the queue keeps up with half of them (at the old rate it would hold
    more and drop more)."""
    out: list[tuple[int, float]] = []
    bn = _bottleneck(RateSchedule(((0.0, MSS), (2.5, 2 * MSS))), out, buffer=2 * MSS)
    got = [bn.arrive(0, 2.5 + k * 0.25) for k in range(4)]
    # 2.5: in (q 1); 2.75: q 0.5 -> in (q 1.5); 3.0: q 1 -> in (q 2); 3.25: q 1.5 -> dropped
    assert got == [True, True, True, False]
    bn.serve_until(10.0)
    assert [at for _, at in out] == [3.0, 3.5, 4.0]


# -- whole runs --------------------------------------------------------------------------

def constant(tmp_path: Path, packets_per_R: int) -> CcaProgram:
    """A CCA that paces ``packets_per_R`` packets per RTprop, whatever happens."""
    p = tmp_path / f"const{packets_per_R}.cca"
    p.write_text(f"# constant rate\nrate = {packets_per_R} * MSS / R\n")
    return load_cca(p)


def run_link(cca: CcaProgram, kind: LinkKind, C: float, buffer: float | None, sched: RateSchedule | None,
             duration: float, seed: int = 0) -> SimResult:
    D = 0.0 if kind == "ideal" else R
    return simulate(SimConfig(Link(kind, C, D, buffer, sched), (Flow(cca, R),), duration, seed=seed))


def mbps(res: SimResult, a: float, b: float) -> float:
    """Throughput delivered by the bottleneck in [a, b), Mbit/s."""
    i, j = round(a / res.dt), round(b / res.dt)
    return float(res.delivered[i:j].sum()) / (b - a) / MBPS


def test_reno_follows_a_doubling_of_the_rate() -> None:
    """Reno on a 1-BDP buffer (of the 48 Mbit/s rate at t = 0), the rate doubled at
    10 s: it fills 48 Mbit/s before and nearly 96 after (96.8% in [12, 20) s; if the
    schedule were ignored it would stay at 48)."""
    reno = load_cca(ROOT / "templates" / "reno.cca")
    C = 48 * MBPS
    res = run_link(reno, "ideal", C, C * R, RateSchedule(((0.0, C), (10.0, 2 * C))), 20)
    before, after = mbps(res, 2, 10), mbps(res, 12, 20)
    assert 47.5 <= before <= 48.0 + 1e-6, before
    assert 0.95 * 96 <= after <= 96.0 + 1e-6, after


@pytest.mark.parametrize("kind", LINK_KINDS)
def test_a_backlogged_link_delivers_the_integral_of_its_rate(tmp_path: Path, kind: LinkKind) -> None:
    """A sender paced above every rate of the schedule keeps the queue backlogged on
    every link kind: the bottleneck delivers C(t) in every window, 48 then 96 then 24
    Mbit/s, and utilization (delivered / the integral of C(t)) is about 1 (measured
    against C(0) · time it would be 1.5)."""
    C = 48 * MBPS
    sched = RateSchedule(((0.0, C), (4.0, 2 * C), (8.0, C / 2)))
    res = run_link(constant(tmp_path, 480), kind, C, C * R, sched, 12)  # 480 packets per 40 ms = 144 Mbit/s
    assert mbps(res, 1, 4) == pytest.approx(48, abs=0.05)
    assert mbps(res, 4.5, 8) == pytest.approx(96, abs=0.05)
    assert mbps(res, 8.5, 12) == pytest.approx(24, abs=0.05)
    m = metrics(res, 2)
    assert 0.99 <= m.utilization <= 1.0 + 1e-6
    assert m.flows[0].share == pytest.approx(m.utilization)
    # queue in BDPs uses the BDP at t = 0; its delay is over the rate of the moment
    assert m.queue_mean_bdp == pytest.approx(m.queue_mean_bytes / (C * R))
    assert m.queue_mean_delay < m.queue_mean_bytes / (C / 2)


def test_a_one_point_schedule_is_the_constant_link(tmp_path: Path) -> None:
    """A schedule with no change serves byte for byte as the constant link."""
    reno = load_cca(ROOT / "templates" / "reno.cca")
    C = 24 * MBPS
    a = run_link(reno, "cbr_delay", C, C * R, None, 4, seed=3)
    b = run_link(reno, "cbr_delay", C, C * R, RateSchedule(((0.0, C),)), 4, seed=3)
    assert np.array_equal(a.delivered, b.delivered) and np.array_equal(a.queue, b.queue)
    assert np.array_equal(a.lost, b.lost)


# -- ccmatic simulate --rate-schedule ------------------------------------------------------

LINE = re.compile(r"^--rate-schedule: error: .+$")


def test_cli_list_schedule_runs_and_is_reported() -> None:
    code, out, err = run("simulate", "reno", "--duration", "4", "--rate-schedule", "1:96,3:24")
    assert code == 0 and err == ""
    header = out.splitlines()[0]
    assert "C=48 Mbit/s (rate schedule 1:96,3:24: 96 Mbit/s at 1 s, 24 at 3 s)" in header, header


def test_cli_double_halve_json() -> None:
    code, out, err = run("simulate", "reno", "--duration", "5", "--rate-schedule", "double-halve:2", "--json")
    assert code == 0, err
    cfg = json.loads(out)["config"]
    C = 48 * MBPS
    assert cfg["rate_schedule"] == {"spec": "double-halve:2", "points": [
        {"time_s": 0.0, "C_bytes_per_s": C}, {"time_s": 2.0, "C_bytes_per_s": 2 * C},
        {"time_s": 4.0, "C_bytes_per_s": C}]}
    assert cfg["C_bytes_per_s"] == C


def test_cli_without_schedule_has_null_in_json() -> None:
    code, out, _ = run("simulate", "reno", "--duration", "1", "--json")
    assert code == 0 and json.loads(out)["config"]["rate_schedule"] is None


def test_cli_plot_with_schedule(tmp_path: Path) -> None:
    p = tmp_path / "run.png"
    code, _, err = run("simulate", "reno", "--duration", "2", "--rate-schedule", "1:96", "--plot", p)
    assert code == 0, err
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("spec", "words"), [
    ("abc", ("expected T:C",)),
    ("x:96", ("expected T:C",)),
    ("2", ("expected T:C",)),
    ("", ("expected",)),
    ("2:fast", ("rate", "positive")),
    ("2:0", ("rate", "positive")),
    ("2:-48", ("rate", "positive")),
    ("2:1e400", ("rate",)),
    ("0:96", ("after 0 s",)),
    ("-1:96", ("after 0 s",)),
    ("3:96,2:48", ("increase strictly",)),
    ("2:96,2:48", ("increase strictly",)),
    ("5:96", ("not before the end",)),
    ("9:96", ("not before the end",)),
    ("double-halve:0", ("positive period",)),
    ("double-halve:x", ("positive period",)),
    ("double-halve:5", ("no change before the end",)),
    ("double-halve:1e-7", ("over the limit",)),
])
def test_cli_bad_schedules(spec: str, words: tuple[str, ...]) -> None:
    # '--rate-schedule=SPEC': argparse would read a SPEC starting with '-' as an option
    code, out, err = run("simulate", "reno", "--duration", "5", f"--rate-schedule={spec}")
    assert "Traceback" not in err and "Traceback" not in out
    assert code == 2, f"exit code {code}, stderr: {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n") and LINE.match(lines[0]), lines
    for w in words:
        assert w.lower() in lines[0].lower(), lines[0]
