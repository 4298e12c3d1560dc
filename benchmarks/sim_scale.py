"""The simulator at scale (issue 15, item 6; Philip et al. 2021, "Revisiting TCP
congestion control throughput models & fairness properties at scale").

    python benchmarks/sim_scale.py cost [--duration S]
    python benchmarks/sim_scale.py run CCA[,CCA2] [--flows N] [--C MBPS] [--R MS] [--buffer BDP]
                                       [--duration S] [--windows K] [--mathis]
    python benchmarks/sim_scale.py mathis RUN.json RUN.csv [--cca reno]

``cost`` measures how the fine mode's wall time grows with the number of flows and with
the link rate (Reno, 1-BDP buffer, 100 ms): wall seconds per simulated second, and
microseconds per packet delivered and per flow-tick.

``run`` runs N flows on the ideal link (default: 1000 flows, 10 Gbit/s, 100 ms, 1-BDP
buffer, 60 s, metrics after 20 s) and reports what the paper reports: utilization,
Jain's index, each CCA's share, and, for Reno, the Mathis model's error per flow with
p taken as the packet loss rate and as the window-halving rate.  ``CCA1,CCA2`` runs
one CCA1 flow against N − 1 CCA2 flows (the paper's single BBR flow against
thousands of Reno or CUBIC flows).  Progress goes to stderr; wall and peak memory
are printed at the end.  ``--mathis`` adds the Mathis model's error every way the
paper's figure could have been computed (``mathis_table``); with bbr1 flows, ``run``
also says when they left Startup and with what estimate.

``mathis`` computes the same table from the ``--json`` and ``--series`` outputs of
``ccmatic simulate`` or ``ccmatic testbed`` (the kernel's Reno flows: its cwnd is
sampled once per RTprop, and a reduction spread over several samples counts once).
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import sys
import time
from dataclasses import dataclass
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


def config(progs: list[CcaProgram], C: float, R: float, duration: float, seed: int = 0,
           buffer: float = 1.0) -> SimConfig:
    c, r = C * MBPS, R / 1000
    return SimConfig(Link("ideal", c, 0.0, buffer * c * r), tuple(Flow(p, r) for p in progs), duration, seed=seed)


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
    """Window reductions by at least a quarter, ending at steps after ``after``.  A
    reduction is a run of steps over which cwnd never rises (the kernel's recovery
    lowers it over a round trip, PRR, where a CCA file halves it in one step); it
    counts once, when cwnd first falls below 3/4 of where the run began."""
    w, t = np.array(cwnd, dtype=float), np.array(time_s, dtype=float)
    n, start, counted = 0, 0, False
    for i in range(1, len(w)):
        if not w[i] <= w[i - 1]:  # a rise (or a missing value) ends the run
            start, counted = i, False
        elif not counted and w[i] < 0.75 * w[start]:
            counted = True
            n += int(t[i] >= after)
    return n


@dataclass(frozen=True)
class RenoFlow:
    """What the Mathis model needs of one flow, over the measured window."""

    throughput: float   # bytes/s
    rtt_mean: float     # s
    rtprop: float       # s
    sent: float         # packets (retransmissions included)
    lost: float         # packets
    halvings: int
    episodes: int       # loss episodes (sim/metrics: losses at least an RTprop apart)


def mathis_table(flows: list[RenoFlow], mss: float) -> list[tuple[str, str, float, float, float]]:
    """The Mathis model's error over the flows, each way the paper's figure could have
    been computed: p the packet loss rate, the window-halving rate or the loss-episode
    rate (each per packet sent); RTT the mean measured one or the RTprop.  Per variant:
    the median of |measured / predicted - 1|, its signed median, and the median of
    |predicted - measured| / measured.  Flows without a loss or a halving are left out
    of the variants that would divide by zero."""
    rows = []
    for pname in ("loss rate", "halving rate", "episode rate"):
        for rname in ("mean RTT", "RTprop"):
            e = []
            for f in flows:
                p = {"loss rate": f.lost, "halving rate": f.halvings, "episode rate": f.episodes}[pname] / f.sent
                if p <= 0:
                    continue
                rtt = f.rtt_mean if rname == "mean RTT" else f.rtprop
                e.append(f.throughput / theory.mathis_throughput(mss, rtt, p) - 1)
            x = np.array(e)
            rows.append((pname, rname, _median_abs(e), float(np.median(x)) if e else float("nan"),
                         float(np.median(np.abs(1 / (x + 1) - 1))) if e else float("nan")))
    return rows


def reno_flows(res: SimResult, after: float, ccas: tuple[str, ...] = ("reno",)) -> list[RenoFlow]:
    """The flows of a simulation that run one of ``ccas`` (Reno's by default: the
    Mathis model is Reno's; the paper also holds CUBIC to it), measured after ``after``."""
    m = metrics(res, after)
    i0 = int(after / res.dt)
    out = []
    for f, (fl, fm) in enumerate(zip(res.flows, m.flows, strict=True)):
        if res.config.flows[f].cca.name not in ccas:
            continue
        out.append(RenoFlow(fm.throughput, fm.rtt_mean, res.config.flows[f].R,
                            float(res.sent[i0:, f].sum()) / MSS, float(res.lost[i0:, f].sum()) / MSS,
                            halvings(fl.cwnd, fl.time, after), fm.loss_events))
    return out


def mathis_errors(res: SimResult, after: float) -> tuple[float, float]:
    """Median |measured / Mathis − 1| over Reno flows, with p the packet loss rate and
    with p the window-halving rate (halvings per packet sent), RTT the mean measured."""
    table = {(p, r): e for p, r, e, _s, _m in mathis_table(reno_flows(res, after), MSS)}
    return table[("loss rate", "mean RTT")], table[("halving rate", "mean RTT")]


def series_reno_flows(run_json: Path, series_csv: Path, cca: str) -> tuple[list[RenoFlow], float]:
    """The flows named ``cca`` of a ``ccmatic simulate`` or ``ccmatic testbed`` run, from
    its ``--json`` and ``--series`` outputs (the same computation for both), and the MSS."""
    doc = json.loads(run_json.read_text())
    cfg, fms = doc["config"], doc["metrics"]["flows"]
    mss, after = float(cfg["mss"]), float(cfg["warmup_s"])
    rows: dict[int, list[dict[str, str]]] = {}
    with series_csv.open() as fh:
        for row in csv.DictReader(fh):
            rows.setdefault(int(row["flow"]), []).append(row)
    out = []
    for f, (fc, fm) in enumerate(zip(cfg["flows"], fms, strict=True)):
        if fc["cca"] != cca or f not in rows:
            continue
        rs = rows[f]
        t = [float(r["time_s"]) for r in rs]
        first = next(r for r in rs if float(r["time_s"]) >= after)

        def gained(col: str, rs: list[dict[str, str]] = rs, first: dict[str, str] = first) -> float:
            return (float(rs[-1][col]) - float(first[col])) / mss

        cwnd = [float(r["cwnd_B"]) if r["cwnd_B"] else float("nan") for r in rs]
        out.append(RenoFlow(fm["throughput"], fm["rtt_mean"], fc["R_s"], gained("sent_B"), gained("lost_B"),
                            halvings(cwnd, t, after), fm["loss_events"]))
    return out, mss


def print_mathis(flows: list[RenoFlow], mss: float) -> None:
    lost_per_halving = [f.lost / f.halvings for f in flows if f.halvings]
    print(f"  {len(flows)} flows; median per flow: {np.median([f.halvings for f in flows]):.0f} halvings, "
          f"{np.median(lost_per_halving):.2f} packets lost per halving, mean RTT "
          f"{np.median([f.rtt_mean / f.rtprop for f in flows]):.2f} RTprop")
    print(f"  {'p':>13} {'RTT':>9} {'|meas/pred-1|':>14} {'signed':>8} {'|pred-meas|/meas':>17}")
    for pname, rname, e, s, m in mathis_table(flows, mss):
        print(f"  {pname:>13} {rname:>9} {e:>14.1%} {s:>+8.1%} {m:>17.1%}")
    for pname, attr in (("loss rate", "lost"), ("halving rate", "halvings")):
        errs = [abs(f.throughput / theory.mathis_throughput(mss, f.rtt_mean, getattr(f, attr) / f.sent) - 1)
                for f in flows if getattr(f, attr) > 0]
        if errs:
            q = np.percentile(errs, [10, 25, 50, 75, 90])
            print(f"  |error| with p = {pname}, mean RTT: 10/25/50/75/90th percentiles "
                  + " / ".join(f"{x:.1%}" for x in q))


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


def print_startup(res: SimResult) -> None:
    """For bbr1 flows: when each left Startup and its bandwidth estimate (share of C)
    then, against its share of the run's throughput."""
    c, idx, exit_t, exit_bw = res.config.link.C, [], [], []
    for f, fl in enumerate(res.flows):
        if res.config.flows[f].cca.name != "bbr1":
            continue
        mode, t = np.array(fl.state["mode"]), np.array(fl.time)
        k = int(np.argmax(mode != 0)) if (mode != 0).any() else len(mode) - 1
        idx.append(f)
        exit_t.append(float(t[k]))
        exit_bw.append(fl.state["btl_bw"][k] / res.config.flows[f].R / c)
    if not idx:
        return
    total = res.delivered.sum(axis=0)
    thr = total[idx]
    last = int(np.argmax(exit_t))
    print(f"  bbr1 Startup exit: median {np.median(exit_t):.1f} s, last {exit_t[last]:.1f} s (flow {idx[last]}); "
          f"estimate at exit (share of C): median {np.median(exit_bw):.3f}, max {max(exit_bw):.3f}, "
          f"sum {sum(exit_bw):.2f}")
    top = int(np.argmax(thr))
    print(f"  the bbr1 flow with the largest throughput (flow {idx[top]}, {thr[top] / total.sum():.3f} of all) left "
          f"Startup at {exit_t[top]:.1f} s with estimate {exit_bw[top]:.3f}")


def run(args: argparse.Namespace) -> None:
    names = args.cca.split(",")
    progs = [cca(names[0])] + [cca(names[-1])] * (args.flows - 1)
    cfg = config(progs, args.C, args.R, args.duration, args.seed, args.buffer)
    print(f"{args.flows} flows ({', '.join(names)}), {args.C:g} Mbit/s, {args.R:g} ms, {args.buffer:g}-BDP buffer, "
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
        if args.mathis:
            print_mathis(reno_flows(res, after), MSS)
    if "cubic" in names and args.mathis:
        print("  CUBIC flows held to the Mathis model:")
        print_mathis(reno_flows(res, after, ("cubic",)), MSS)
    if "bbr1" in names:
        print_startup(res)
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
    r.add_argument("--buffer", type=float, default=1.0, help="BDPs")
    r.add_argument("--mathis", action="store_true", help="the Mathis model's error every way (mathis_table)")
    m = sub.add_parser("mathis", help="the Mathis table of a simulate or testbed run's --json and --series")
    m.add_argument("json", type=Path)
    m.add_argument("series", type=Path)
    m.add_argument("--cca", default="reno", help="the flows' CCA as the run's JSON names it")
    args = ap.parse_args()
    if args.what == "cost":
        cost(args.duration)
    elif args.what == "mathis":
        flows, mss = series_reno_flows(args.json, args.series, args.cca)
        print(f"{args.json}: Mathis et al.'s model over the {args.cca} flows (MSS {mss:g} B)")
        print_mathis(flows, mss)
    else:
        if args.flows < 1 or args.duration <= args.warmup:
            ap.error("need at least one flow and --duration above --warmup")
        run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
