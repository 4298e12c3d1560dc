"""The fine mode's compiled core (issue 28): packets are rows of arrays, a queue past
its limit stops the run with one line, every packet is accounted for, and a signal
stops a long run."""

from __future__ import annotations

import math
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli as run

from ccmatic.sim import jit
from ccmatic.sim.fine import QueueLimit, simulate
from ccmatic.sim.links import Link
from ccmatic.sim.records import Flow, SimConfig, SimResult
from ccmatic.spec.cca import CcaProgram, load_cca

ROOT = Path(__file__).resolve().parent.parent
MSS = 1500.0
R = 0.04


def constant(tmp_path: Path, packets_per_R: int) -> Path:
    p = tmp_path / f"const{packets_per_R}.cca"
    p.write_text(f"# constant rate\nrate = {packets_per_R} * MSS / R\n")
    return p


def overloaded(prog: CcaProgram, duration: float, limit: int = 10**9) -> SimResult:
    """A constant-rate sender on an infinite buffer served at 5 packets per R."""
    C = 5 * MSS / R
    return simulate(SimConfig(Link("ideal", C, 0.0, None), (Flow(prog, R),), duration, max_queue_packets=limit))


def test_queue_limit_stops_the_run_with_one_line(tmp_path: Path) -> None:
    """Past --max-queue the run stops: exit 2, one error line naming the flow and the
    queue, and the metrics up to then (the run passed its warm-up)."""
    cca = constant(tmp_path, 10)
    code, out, err = run("simulate", cca, "--C", "1.5", "--R", "40", "--buffer", "inf", "--duration", "60",
                         "--warmup", "1", "--max-queue", "2000")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "error: " in err and "flow 0's" in err and "2,001 packets" in err and "--max-queue" in err
    assert "utilization" in out and "stopped at " in out
    # before the warm-up (12 s; 500 packets queued after 4 s): the error line only
    code, out, err = run("simulate", cca, "--C", "1.5", "--R", "40", "--buffer", "inf", "--duration", "60",
                         "--max-queue", "500")
    assert (code, out, len(err.splitlines())) == (2, "", 1)
    code, _, err = run("simulate", cca, "--max-queue", "0")
    assert code == 2 and "--max-queue" in err and len(err.splitlines()) == 1


def test_queue_limit_keeps_the_run_so_far(tmp_path: Path) -> None:
    prog = load_cca(constant(tmp_path, 10))
    with pytest.raises(QueueLimit) as e:
        overloaded(prog, 60, limit=500)
    res = e.value.result
    # 5 packets per R more than the link serves: 500 queued after about 100 RTprops
    assert 3.5 < len(res.queue) * res.dt < 4.5 and res.queue[-1] >= 500 * MSS


def test_a_standing_queue_is_no_python_objects(tmp_path: Path) -> None:
    """An infinite buffer overloaded 20 times holds 475,000 packets after 200 s; the
    Python heap grows by far fewer blocks than that (about 11 per CCA step, none per
    packet)."""
    prog = load_cca(constant(tmp_path, 100))
    overloaded(prog, 1)  # compiled and warm
    before = sys.getallocatedblocks()
    res = overloaded(prog, 200)
    grown = sys.getallocatedblocks() - before
    queued = res.queue[-1] / MSS
    assert queued > 470_000
    assert grown < queued / 5, (grown, queued)


@pytest.mark.parametrize("link", [
    Link("ideal", 48e6 / 8, 0.0, 48e6 / 8 * R),
    Link("cbr_delay", 48e6 / 8, R, 48e6 / 8 * R / 4),
    Link("ack_agg", 48e6 / 8, R, None),
    Link("ack_agg", 48e6 / 8, R, 48e6 / 8 * R, agg="fixed"),
])
def test_every_packet_is_accounted_for(link: Link) -> None:
    """Sent = lost + delivered + still queued, for every link; the queue never exceeds
    the buffer; each flow's RTT samples are its ACKed packets, in time order."""
    progs = [load_cca(ROOT / "templates" / f"{n}.cca") for n in ("reno", "cubic", "bbr1")]
    res = simulate(SimConfig(link, tuple(Flow(p, R * (1 + i)) for i, p in enumerate(progs)), 10, seed=4))
    in_queue = math.ceil(res.queue[-1] / MSS - 1e-6) * MSS
    assert res.sent.sum() == res.lost.sum() + res.delivered.sum() + in_queue
    assert res.queue_peak.max() <= (link.buffer or math.inf) + 1e-6
    for f, fl in enumerate(res.flows):
        t = np.asarray(res.rtt_samples[f].time)
        assert len(t) * MSS >= fl.S[-1]  # S at the last step, and the ACKs since
        assert len(t) * MSS <= res.delivered[:, f].sum() and np.all(np.diff(t) >= 0)


def test_parking_lot_conserves_flow_0() -> None:
    """On a 3-hop parking lot flow 0 is counted once (at its last hop) in delivered,
    and each hop serves no more than C."""
    prog = load_cca(ROOT / "templates" / "contract_lin.cca")
    C = 100e6 / 8
    res = simulate(SimConfig(Link("ideal", C, 0.0, None), tuple(Flow(prog, 0.01) for _ in range(4)), 5,
                             topology="parking_lot", hops=3))
    rec = res.hop_record
    assert rec is not None and rec.served.shape[1] == 3
    assert res.lost.sum() == 0 and res.sent.sum() >= res.delivered.sum()
    assert np.all(rec.served_long[:, 1:].sum(axis=0) <= rec.served_long[:, :-1].sum(axis=0))
    assert rec.served.sum(axis=0).max() <= C * len(res.queue) * res.dt + MSS


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_a_long_simulation(sig: int) -> None:
    """A signal while the compiled loop runs (100 flows at 10 Gbit/s): exit 3,
    "interrupted", no traceback (how fast: benchmarks/signal_latency.py)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import signal_latency as latency  # benchmarks/ is no package

    case = latency.CASES["simulate"]
    r = latency.run_and_signal(list(case.argv), sig, case.ready, case.settle_s)
    assert r.code == 3 and "interrupted" in r.err and "Traceback" not in r.err


def test_the_cache_is_keyed_by_every_compiled_module() -> None:
    """numba keys a cached function by its own file only, so the cache folder is named
    by a hash of every module with compiled functions (sim/jit.py): each must be listed."""
    sim = ROOT / "ccmatic" / "sim"
    compiled = {p.stem for p in sim.glob("*.py") if "from ccmatic.sim.jit import njit" in p.read_text()}
    assert compiled and compiled <= set(jit.COMPILED)
    assert Path(jit.cache_dir()).name.startswith("numba-")
