"""Fig. 6.6-style validation of contracts against the packet-level simulator (thesis
§6.5, App. C.2).

Run from the repository root (so that this checkout's ccmatic is imported):

    python -m benchmarks.contract_validation [--ccas sqrt,lin,sq] [--duration 30] [--warmup 10]
        [--seeds 1] [--jobs 2]

The CCAs are ``templates/contract_{sqrt,lin,sq}.cca``: rate = C_max·(S_min/s)^p with
p = 1/2, 1, 2, S_min = 0.1·R and C_max = 100 Mbit/s, run at C = C_max = 100 Mbit/s,
R = 10 ms, infinite buffers, on the ideal link.  Three panels, each measured after
``--warmup`` seconds and compared with the contract's prediction
(:mod:`ccmatic.sim.contract_theory`):

* robustness: 2 flows on a dumbbell, flow 1 with a persistent extra delay δs on its
  ACK path that its CCA is not told about; the throughput ratio flow 0 / flow 1 against
  f(s)/f(s + δs) with f(s) + f(s + δs) = C;
* unfairness: a parking lot of k hops; a short flow's mean throughput over the long
  flow's against f(s)/f(k·s) with f(s) + f(k·s) = C (k^p);
* growth: n flows on a dumbbell; the mean queueing delay (queue / C) over the delay of
  one flow alone against f⁻¹(C/n)/f⁻¹(C) (n^{1/p}).

The runs are independent tasks in a process pool (``--jobs``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ccmatic.sim import contract_theory as theory
from ccmatic.sim.contract_math import Contract
from ccmatic.sim.fine import simulate
from ccmatic.sim.links import Link
from ccmatic.sim.metrics import Metrics, metrics
from ccmatic.sim.records import Flow, SimConfig
from ccmatic.spec.cca import load_cca

ROOT = Path(__file__).resolve().parent.parent
MBPS = 1e6 / 8
C = 100 * MBPS          # the link rate, = C_max of the templates
R = 0.010
S_MIN = 0.1 * R         # the templates' S_min
P = {"sqrt": 0.5, "lin": 1.0, "sq": 2.0}
EXTRA_MS = (1.0, 3.0)   # panel (a): δs
HOPS = (2, 3)           # panel (b): k
FLOWS = (1, 2, 4, 8)    # panel (c): n (n = 1 is the reference)


@dataclass(frozen=True)
class Run:
    cca: str
    panel: str          # "robustness", "unfairness" or "growth"
    x: float            # δs (ms), k or n
    seed: int
    duration: float
    warmup: float


def contract(cca: str) -> Contract:
    """The template's contract: f(s) = C_max·(S_min/s)^p (bytes/s, s in seconds)."""
    p = P[cca]
    return Contract("power", a=C * S_MIN ** p, p=p)


def config(run: Run) -> SimConfig:
    prog = load_cca(ROOT / "templates" / f"contract_{run.cca}.cca")
    link = Link("ideal", C, 0.0, None)
    if run.panel == "robustness":
        flows = (Flow(prog, R), Flow(prog, R, extra=run.x / 1000))
        return SimConfig(link, flows, run.duration, seed=run.seed)
    if run.panel == "unfairness":
        k = int(run.x)
        return SimConfig(link, tuple(Flow(prog, R) for _ in range(k + 1)), run.duration, seed=run.seed,
                         topology="parking_lot", hops=k)
    return SimConfig(link, tuple(Flow(prog, R) for _ in range(int(run.x))), run.duration, seed=run.seed)


def statistic(run: Run, m: Metrics) -> float:
    """The panel's measured value: a throughput ratio, or the queueing delay (s)."""
    tput = [f.throughput for f in m.flows]
    if run.panel == "robustness":
        return tput[0] / tput[1] if tput[1] > 0 else math.inf
    if run.panel == "unfairness":
        short = sum(tput[1:]) / (len(tput) - 1)
        return short / tput[0] if tput[0] > 0 else math.inf
    return m.queue_mean_delay


def measure(run: Run) -> float:
    return statistic(run, metrics(simulate(config(run)), run.warmup))


def predicted(cca: str, panel: str, x: float) -> float:
    con = contract(cca)
    if panel == "robustness":
        pt = theory.jitter(con, C, 2, 1, x / 1000)
        return math.nan if pt is None else pt["ratio"]
    if panel == "unfairness":
        pl = theory.parking_lot(con, C, x, "sum")
        return math.nan if pl is None else pl["ratio"]
    s_n, s_1 = theory.dumbbell(con, C, int(x)), theory.dumbbell(con, C, 1)
    return math.nan if s_n is None or s_1 is None else s_n / s_1


def runs(args: argparse.Namespace) -> list[Run]:
    grid = [("robustness", x) for x in EXTRA_MS] + [("unfairness", float(k)) for k in HOPS] + \
        [("growth", float(n)) for n in FLOWS]
    return [Run(cca, panel, x, s, args.duration, args.warmup)
            for cca in args.ccas for panel, x in grid for s in range(args.seeds)]


def _mean(results: dict[Run, float], cca: str, panel: str, x: float) -> float:
    got = [v for r, v in results.items() if (r.cca, r.panel, r.x) == (cca, panel, x)]
    return sum(got) / len(got)


def table(results: dict[Run, float], ccas: list[str]) -> list[str]:
    """One row per panel point: measured / predicted per CCA, and log-distance."""
    lines = ["| panel | point | " + " | ".join(f"{c} (p = {P[c]:g}): measured / predicted" for c in ccas) + " |",
             "|---" * (len(ccas) + 2) + "|"]
    for panel, xs, label in (("robustness", EXTRA_MS, "δs = {:g} ms"), ("unfairness", HOPS, "k = {:g} hops"),
                             ("growth", FLOWS[1:], "n = {:g} flows")):
        for x in xs:
            cells = []
            for cca in ccas:
                got = _mean(results, cca, panel, float(x))
                if panel == "growth":
                    got /= _mean(results, cca, panel, 1.0)
                want = predicted(cca, panel, float(x))
                err = abs(math.log(got / want)) if got > 0 and math.isfinite(got) else math.inf
                cells.append(f"{got:.2f} / {want:.2f} ({'+' if got >= want else '−'}{err:.2f})")
            lines.append(f"| {panel} | {label.format(x)} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ccas", default="sqrt,lin,sq", type=lambda s: s.split(","))
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if bad := [c for c in args.ccas if c not in P]:
        ap.error(f"unknown contract CCA {bad[0]!r}: use {', '.join(P)}")
    todo = runs(args)
    t0 = time.monotonic()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = dict(zip(todo, pool.map(measure, todo), strict=True))
    print(f"{len(todo)} runs of {args.duration:g} s (measured after {args.warmup:g} s), {args.seeds} seed(s), "
          f"{time.monotonic() - t0:.0f} s with {args.jobs} jobs; C = C_max = 100 Mbit/s, R = 10 ms, "
          f"S_min = 1 ms")
    print("cells: measured / predicted (|log(measured/predicted)|, signed); robustness and unfairness are "
          "throughput ratios, growth the queueing delay over one flow's")
    print("\n".join(table(results, args.ccas)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
