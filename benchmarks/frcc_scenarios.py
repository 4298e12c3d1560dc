"""The thesis' jitter scenarios for FRCC (§7.6, Figs. 7.18 and 7.19; Figs. 2.1, 2.2).

Run from the repository root (so that this checkout's ccmatic is imported):

    python -m benchmarks.frcc_scenarios [--scenario j1,j2] [--ccas frcc,cubic,copa,bbr1,reno]
        [--C 12,24,48,96] [--agg-ms 32,64,128] [--duration 180] [--warmup 90] [--seeds 1] [--jobs 2]

* ``j1``: three flows with RTprops 10, 20 and 30 ms on the ideal link, C swept.
* ``j2``: three flows at R = 32 ms; only flow 0's ACKs are aggregated
  (``--D 32,0,0`` on the ack_agg link, fixed aggregation as Pantheon's: a release
  exactly every D); C swept at 32 ms of aggregation (``j2``), then the aggregation
  swept at 48 Mbit/s (``j2agg``).

Buffers are infinite, but 3 BDPs (of the longest RTprop) for Reno and Cubic, as in
the thesis (§7.6).  Each cell is the max/min ratio of the flows' throughputs and
Jain's index, measured after ``--warmup`` seconds, the mean over the seeds.  The
thesis runs 5 minutes measured from minute 3; FRCC's main update needs tens of
seconds to converge at 96 Mbit/s (about 12% more cwnd per round).  The runs are
independent tasks in a process pool (``--jobs``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ccmatic.sim.fine import simulate
from ccmatic.sim.links import Link
from ccmatic.sim.metrics import metrics
from ccmatic.sim.records import Flow, SimConfig
from ccmatic.spec.cca import load_cca

ROOT = Path(__file__).resolve().parent.parent
MBPS = 1e6 / 8
LOSS_BASED = ("cubic", "reno")  # the CCAs that get a 3-BDP buffer
SCENARIOS = ("j1", "j2", "j2agg")


@dataclass(frozen=True)
class Run:
    scenario: str
    cca: str
    C_mbps: float
    agg_ms: float
    seed: int
    duration: float
    warmup: float


def config(run: Run) -> SimConfig:
    """The run's simulation: J1's RTprops 10/20/30 ms on the ideal link, or J2's
    three 32-ms flows with flow 0's ACKs aggregated (fixed, every agg_ms)."""
    prog = load_cca(ROOT / "templates" / f"{run.cca}.cca")
    C = run.C_mbps * MBPS
    Rs: tuple[float, ...]
    Ds: tuple[float | None, ...]
    if run.scenario == "j1":
        Rs, Ds = (0.010, 0.020, 0.030), (None, None, None)
    else:
        Rs, Ds = (0.032,) * 3, (run.agg_ms / 1000, 0.0, 0.0)
    buffer = 3 * C * max(Rs) if run.cca in LOSS_BASED else None
    link = Link("ideal" if run.scenario == "j1" else "ack_agg", C, max(d or 0.0 for d in Ds), buffer, agg="fixed")
    flows = tuple(Flow(prog, R, D=D) for R, D in zip(Rs, Ds, strict=True))
    return SimConfig(link, flows, run.duration, seed=run.seed)


def measure(run: Run) -> tuple[float, float]:
    """The run's max/min throughput ratio and Jain's index."""
    m = metrics(simulate(config(run)), run.warmup)
    tputs = [f.throughput for f in m.flows]
    return (max(tputs) / min(tputs) if min(tputs) > 0 else math.inf), m.jain


def runs(args: argparse.Namespace) -> list[Run]:
    out = []
    for sc in args.scenario:
        points = [(c, 32.0) for c in args.C] if sc != "j2agg" else [(48.0, a) for a in args.agg_ms]
        out += [Run(sc, cca, c, a, s, args.duration, args.warmup)
                for c, a in points for cca in args.ccas for s in range(args.seeds)]
    return out


def table(scenario: str, results: dict[Run, tuple[float, float]], ccas: list[str]) -> list[str]:
    """Rows of the sweep, a column 'ratio / Jain' per CCA (means over seeds)."""
    sweep = "agg (ms)" if scenario == "j2agg" else "C (Mbit/s)"
    lines = [f"| {sweep} | " + " | ".join(ccas) + " |", "|---" * (len(ccas) + 1) + "|"]
    keys = sorted({(r.C_mbps, r.agg_ms) for r in results if r.scenario == scenario})
    for c, a in keys:
        cells = []
        for cca in ccas:
            got = [v for r, v in results.items() if (r.scenario, r.cca, r.C_mbps, r.agg_ms) == (scenario, cca, c, a)]
            ratio = sum(g[0] for g in got) / len(got)
            jain = sum(g[1] for g in got) / len(got)
            cells.append(f"{ratio:.2f} / {jain:.3f}")
        lines.append(f"| {a if scenario == 'j2agg' else c:g} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="j1,j2,j2agg", type=lambda s: s.split(","))
    ap.add_argument("--ccas", default="frcc,cubic,copa,bbr1,reno", type=lambda s: s.split(","))
    ap.add_argument("--C", default="12,24,48,96", type=lambda s: [float(x) for x in s.split(",")])
    ap.add_argument("--agg-ms", default="32,64,128", type=lambda s: [float(x) for x in s.split(",")])
    ap.add_argument("--duration", type=float, default=180.0)
    ap.add_argument("--warmup", type=float, default=90.0)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if bad := [s for s in args.scenario if s not in SCENARIOS]:
        ap.error(f"unknown scenario {bad[0]!r}: use {', '.join(SCENARIOS)}")
    todo = runs(args)
    t0 = time.monotonic()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = dict(zip(todo, pool.map(measure, todo), strict=True))
    print(f"{len(todo)} runs of {args.duration:g} s (measured after {args.warmup:g} s), {args.seeds} seed(s), "
          f"{time.monotonic() - t0:.0f} s with {args.jobs} jobs; cells: max/min throughput / Jain's index")
    for sc in args.scenario:
        print(f"\n{sc}:")
        print("\n".join(table(sc, results, args.ccas)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
