"""The simulator against the published models (docs/simulation.md, "Results").

    python benchmarks/sim_models.py [--only mathis,bbr_deep,bbr_shallow,bbr_cubic] [--seeds N]

prints, for each check, the simulator's figure next to the model's:

* ``mathis``: one Reno flow on a 1-BDP buffer; measured throughput over Mathis et al.'s
  1.22·MSS/(RTT·√p), p = lost/sent packets and RTT the mean sample, both after the
  warm-up (20% of the run).
* ``bbr_deep``: N BBRv1 flows on a 4-BDP buffer; RTT/RTprop against Theorem 1 of the
  BBR fluid model (2 for N ≥ 2), Jain's index.
* ``bbr_shallow``: N BBRv1 flows on a 1/4-BDP buffer; loss rate and mean bandwidth
  estimate against Theorem 3 ((N − 1)/5N and 5C/(4N + 1)).
* ``bbr_cubic``: one BBRv1 and one CUBIC flow; BBR's share against Mishra et al.
  2022 (Eqs. 18–20), over buffers of 1.5 to 10 BDP.

Each figure is one simulation per seed (mean over seeds), run in this process.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ccmatic.sim import theory
from ccmatic.sim.fine import simulate
from ccmatic.sim.links import Link
from ccmatic.sim.metrics import Metrics, metrics
from ccmatic.sim.records import Flow, SimConfig, SimResult
from ccmatic.spec.cca import CcaProgram, load_cca

ROOT = Path(__file__).resolve().parent.parent
MBPS = 1e6 / 8
MSS = 1500.0


def cca(name: str) -> CcaProgram:
    return load_cca(ROOT / "templates" / f"{name}.cca")


def run(progs: list[CcaProgram], C: float, R: float, buffer_bdp: float, duration: float,
        seed: int) -> tuple[SimResult, Metrics]:
    """One run on the ideal link; metrics after 20% of it."""
    c, r = C * MBPS, R / 1000
    res = simulate(SimConfig(Link("ideal", c, 0.0, buffer_bdp * c * r), tuple(Flow(p, r) for p in progs),
                             duration, seed=seed))
    return res, metrics(res, 0.2 * duration)


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def mathis(seeds: int) -> None:
    print("Reno vs Mathis et al.: measured / model throughput (1 flow, 1-BDP buffer)")
    print(f"  {'C Mbit/s':>8} {'R ms':>5} {'s':>4} {'ratio':>7}")
    reno = cca("reno")
    for C, R, dur in ((24, 20, 200), (24, 80, 200), (96, 20, 200), (96, 80, 600)):
        ratios = []
        for seed in range(seeds):
            fl = run([reno], C, R, 1, dur, seed)[1].flows[0]
            model = theory.mathis_throughput(MSS, fl.rtt_mean, fl.loss_rate)
            ratios.append(fl.throughput / model)
        print(f"  {C:>8} {R:>5} {dur:>4} {mean(ratios):>7.3f}")


def bbr_deep(seeds: int) -> None:
    print("BBRv1 on a 4-BDP buffer (48 Mbit/s, 40 ms, 60 s) vs the fluid model's Theorem 1")
    print(f"  {'N':>3} {'RTT/RTprop':>10} {'model':>6} {'queue BDP':>9} {'Jain':>6}")
    bbr = cca("bbr1")
    for n in (1, 2, 4, 8):
        ms = [run([bbr] * n, 48, 40, 4, 60, seed + 1)[1] for seed in range(seeds)]
        rtt = mean([mean([f.rtt_ratio for f in m.flows]) for m in ms])
        model = "-" if n == 1 else f"{theory.bbr_deep_buffer_rtt_ratio():.2f}"
        print(f"  {n:>3} {rtt:>10.2f} {model:>6} {mean([m.queue_mean_bdp for m in ms]):>9.2f} "
              f"{mean([m.jain for m in ms]):>6.3f}")


def bbr_shallow(seeds: int) -> None:
    print("BBRv1 on a 1/4-BDP buffer (48 Mbit/s, 40 ms, 60 s) vs the fluid model's Theorem 3")
    print(f"  {'N':>3} {'loss':>7} {'model':>7} {'BtlBw/C':>8} {'model':>7} {'Jain':>6}")
    bbr = cca("bbr1")
    for n in (1, 2, 4, 8):
        loss, est, jain = [], [], []
        for seed in range(seeds):
            res, m = run([bbr] * n, 48, 40, 0.25, 60, seed + 1)
            loss.append(float(res.lost.sum() / res.sent.sum()))
            est.append(mean([_steady_mean(fl.time, fl.state["btl_bw"], 12) / 0.04 / (48 * MBPS)
                             for fl in res.flows]))
            jain.append(m.jain)
        print(f"  {n:>3} {mean(loss):>7.3f} {theory.bbr_shallow_buffer_loss(n):>7.3f} {mean(est):>8.3f} "
              f"{theory.bbr_shallow_buffer_estimate(n):>7.3f} {mean(jain):>6.3f}")


def _steady_mean(t: list[float], xs: list[float], after: float) -> float:
    ta, xa = np.array(t), np.array(xs)
    return float(xa[ta >= after].mean())


def bbr_cubic(seeds: int) -> None:
    print("One BBRv1 vs one CUBIC flow (48 Mbit/s, 40 ms, 120 s): BBR's share vs Mishra et al. 2022")
    print(f"  {'buffer BDP':>10} {'BBR share':>9} {'model':>6} {'utilization':>11}")
    progs = [cca("cubic"), cca("bbr1")]
    for b in (1.5, 2, 3, 4, 5, 10):
        ms = [run(progs, 48, 40, b, 120, seed)[1] for seed in range(seeds)]
        share = mean([m.flows[1].share for m in ms])
        print(f"  {b:>10} {share:>9.3f} {theory.bbr_vs_cubic_share(b):>6.3f} "
              f"{mean([m.utilization for m in ms]):>11.3f}")


CHECKS: dict[str, Callable[[int], None]] = {
    "mathis": mathis, "bbr_deep": bbr_deep, "bbr_shallow": bbr_shallow, "bbr_cubic": bbr_cubic}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(CHECKS), help="comma-separated checks (default: all)")
    ap.add_argument("--seeds", type=int, default=2, help="runs per figure (default 2)")
    args = ap.parse_args()
    names = args.only.split(",")
    bad = [n for n in names if n not in CHECKS]
    if bad or args.seeds < 1:
        ap.error(f"unknown check {bad[0]!r}" if bad else "--seeds must be at least 1")
    for name in names:
        t0 = time.perf_counter()
        CHECKS[name](args.seeds)
        print(f"  ({name}: {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
