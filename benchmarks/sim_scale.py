"""The simulator at scale (issue 15, item 6; Philip et al. 2021, "Revisiting TCP
congestion control throughput models & fairness properties at scale").

    python benchmarks/sim_scale.py cost [--duration S]
    python benchmarks/sim_scale.py run CCA[,CCA2] [--flows N] [--C MBPS] [--R MS] [--duration S]

``cost`` measures how the fine mode's wall time grows with the number of flows and with
the link rate (Reno, 1-BDP buffer, 100 ms): wall seconds per simulated second, and
microseconds per packet delivered and per flow-tick.

``run`` runs N flows on the ideal link (default: 1000 flows, 10 Gbit/s, 100 ms, 1-BDP
buffer, 60 s, metrics after 20 s) and reports what the paper reports: utilization,
Jain's index, each CCA's share, and, for Reno, the Mathis model's error per flow with
p taken as the packet loss rate and as the window-halving rate.  ``CCA1,CCA2`` runs
one CCA1 flow against N − 1 CCA2 flows (the paper's single BBR flow against
thousands of Reno or CUBIC flows).  Progress goes to stderr; wall and peak memory
are printed at the end.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

from ccmatic.sim import theory
from ccmatic.sim.fine import simulate
from ccmatic.sim.links import Link
from ccmatic.sim.metrics import metrics
from ccmatic.sim.records import Flow, SimConfig, SimResult
from ccmatic.spec.cca import CcaProgram, load_cca

ROOT = Path(__file__).resolve().parent.parent
MBPS = 1e6 / 8
MSS = 1500.0


def cca(name: str) -> CcaProgram:
    return load_cca(ROOT / "templates" / f"{name}.cca")


def config(progs: list[CcaProgram], C: float, R: float, duration: float, seed: int = 0) -> SimConfig:
    c, r = C * MBPS, R / 1000
    return SimConfig(Link("ideal", c, 0.0, c * r), tuple(Flow(p, r) for p in progs), duration, seed=seed)


def cost(duration: float) -> None:
    print(f"fine-mode cost, Reno, 1-BDP buffer, 100 ms, {duration:g} s simulated")
    print(f"  {'flows':>6} {'C Mbit/s':>9} {'wall s':>7} {'wall/sim s':>10} {'us/packet':>10} {'us/flow-tick':>12}")
    reno = cca("reno")
    for n, C in ((10, 1000), (100, 1000), (1000, 1000), (100, 100), (100, 10000)):
        t0 = time.perf_counter()
        res = simulate(config([reno] * n, C, 100, duration))
        wall = time.perf_counter() - t0
        pkts = float(res.delivered.sum()) / MSS
        ticks = res.queue.shape[0]
        print(f"  {n:>6} {C:>9} {wall:>7.1f} {wall / duration:>10.2f} {1e6 * wall / pkts:>10.2f} "
              f"{1e6 * wall / (ticks * n):>12.2f}", flush=True)


def halvings(cwnd: list[float], time_s: list[float], after: float) -> int:
    """Window reductions by at least a quarter, at steps after ``after``."""
    w, t = np.array(cwnd), np.array(time_s)
    cut = (w[1:] < 0.75 * w[:-1]) & (t[1:] >= after)
    return int(cut.sum())


def mathis_errors(res: SimResult, after: float) -> tuple[float, float]:
    """Median |measured / Mathis − 1| over Reno flows, with p the packet loss rate and
    with p the window-halving rate (halvings per packet sent)."""
    m = metrics(res, after)
    by_loss, by_halving = [], []
    i0 = int(after / res.dt)
    for f, (fl, fm) in enumerate(zip(res.flows, m.flows, strict=True)):
        if res.config.flows[f].cca.name != "reno" or fm.loss_rate <= 0:
            continue
        sent = float(res.sent[i0:, f].sum()) / MSS
        h = halvings(fl.cwnd, fl.time, after)
        by_loss.append(fm.throughput / theory.mathis_throughput(MSS, fm.rtt_mean, fm.loss_rate) - 1)
        if h:
            by_halving.append(fm.throughput / theory.mathis_throughput(MSS, fm.rtt_mean, h / sent) - 1)
    return _median_abs(by_loss), _median_abs(by_halving)


def _median_abs(xs: list[float]) -> float:
    return float(np.median(np.abs(xs))) if xs else float("nan")


def print_windows(res: SimResult, k: int) -> None:
    """Jain's index and the largest share in each of k equal windows of the run."""
    per = res.queue.shape[0] // k
    for w in range(k):
        thr = res.delivered[w * per:(w + 1) * per].sum(axis=0)
        jain = float(thr.sum() ** 2 / (len(thr) * (thr ** 2).sum())) if thr.any() else float("nan")
        t0 = w * per * res.dt
        print(f"  [{t0:g}, {t0 + per * res.dt:g}) s: Jain's index {jain:.3f}, largest share {thr.max() / thr.sum():.3f}")


def run(args: argparse.Namespace) -> None:
    names = args.cca.split(",")
    progs = [cca(names[0])] + [cca(names[-1])] * (args.flows - 1)
    cfg = config(progs, args.C, args.R, args.duration, args.seed)
    print(f"{args.flows} flows ({', '.join(names)}), {args.C:g} Mbit/s, {args.R:g} ms, 1-BDP buffer, "
          f"{args.duration:g} s", flush=True)
    t0 = time.perf_counter()
    res = simulate(cfg)
    wall = time.perf_counter() - t0
    after = args.warmup
    m = metrics(res, after)
    print(f"  utilization {m.utilization:.3f}   Jain's index {m.jain:.3f}   loss rate "
          f"{float(res.lost.sum() / res.sent.sum()):.4f}   queue mean {m.queue_mean_bdp:.2f} BDP")
    if len(names) > 1:
        print(f"  the single {names[0]} flow: share {m.flows[0].share:.3f}; the {args.flows - 1} {names[1]} "
              f"flows: {sum(f.share for f in m.flows[1:]):.3f} together")
    shares = np.array([f.share for f in m.flows])
    print(f"  per-flow share: min {shares.min():.2e}, median {np.median(shares):.2e}, max {shares.max():.2e}")
    if "reno" in names:
        e_loss, e_halve = mathis_errors(res, after)
        print(f"  Mathis model, median |error| over Reno flows: p = loss rate {e_loss:.1%}, "
              f"p = halving rate {e_halve:.1%}")
    if args.windows:
        print_windows(res, args.windows)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  wall {wall:.0f} s (simulation only), peak memory {peak:.0f} MiB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("cost")
    c.add_argument("--duration", type=float, default=5.0)
    r = sub.add_parser("run")
    r.add_argument("cca", help="a CCA name, or CCA1,CCA2 for one CCA1 flow against N-1 CCA2 flows")
    r.add_argument("--flows", type=int, default=1000)
    r.add_argument("--C", type=float, default=10000.0, help="Mbit/s")
    r.add_argument("--R", type=float, default=100.0, help="ms")
    r.add_argument("--duration", type=float, default=60.0)
    r.add_argument("--warmup", type=float, default=20.0)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--windows", type=int, default=0, help="also Jain's index over K equal windows of the run")
    args = ap.parse_args()
    if args.what == "cost":
        cost(args.duration)
    else:
        if args.flows < 1 or args.duration <= args.warmup:
            ap.error("need at least one flow and --duration above --warmup")
        run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
