"""ccmatic's fine-mode simulator against ns-3 on the same dumbbell (issue 15, item 5).

    pip install -e '.[ns3]'
    python benchmarks/ns3_compare.py --cca cubic --flows 2 --buffer 4
    python benchmarks/ns3_compare.py --grid default --json results.json

Each scenario runs in ccmatic's simulator (an ideal link: FIFO at C, drop-tail buffer
of ``buffer · C · min R`` bytes, templates/reno.cca, cubic.cca or bbr1.cca per flow)
and in ns-3 (benchmarks/ns3_dumbbell.py: the same dumbbell with ns-3's TcpNewReno,
TcpCubic and TcpBbr, and every setting it chooses), and prints one row with both
simulators' figures over [warmup, duration], ccmatic's first:

* util: bytes delivered over what the link could serve (%);
* Jain: Jain's index of the per-flow throughputs;
* loss: packets lost over packets sent (%);
* queue: the mean bottleneck queue, in BDPs (C · min R);
* ns3 RTOs: ns-3's retransmission timeouts in the window, all flows (ccmatic has none);
* shares: each flow's throughput over C.

With ``--seeds K`` each scenario runs with K seeds and the row shows the means (Jain:
the mean of each run's index; --json keeps every run).  Grids (``--grid``): ``quick``
(3 cases, 30 s, one seed: about 20 s with ns-3's import) and ``default`` (25 cases,
120 s runs, 30 s warm-up, 3 seeds: about 15 minutes on one core).  Without ``--grid``,
one scenario from --cca/--flows/--buffer/--C/--R.  Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ns3_dumbbell import NS3_RECOVERY, NS3_TCP, Outcome, Scenario, import_ns, run_ns3

ROOT = Path(__file__).resolve().parent.parent
CCA_FILES = {"newreno": "reno", "cubic": "cubic", "bbr": "bbr1"}  # templates/<name>.cca
CCAS = tuple(NS3_TCP)


def _default_grid(duration: float, warmup: float) -> list[Scenario]:
    """N = 1, 2, 4, 8 flows on 1 BDP; 2 flows on 1/4, 4 and 10 BDP; 2 flows of 20 and
    80 ms on 1 BDP (of 20 ms); for each CCA; and BBR against CUBIC on 2 BDP."""
    out: list[Scenario] = []
    for cca in CCAS:
        out += [Scenario((cca,) * n, (40.0,) * n) for n in (1, 2, 4, 8)]
        out += [Scenario((cca,) * 2, (40.0,) * 2, buffer_bdp=b) for b in (0.25, 4.0, 10.0)]
        out.append(Scenario((cca,) * 2, (20.0, 80.0)))
    out.append(Scenario(("bbr", "cubic"), (40.0, 40.0), buffer_bdp=2.0))
    return [replace(sc, duration=duration, warmup=warmup) for sc in out]


def _quick_grid(duration: float, warmup: float) -> list[Scenario]:
    cases = [Scenario(("newreno",), (40.0,)), Scenario(("cubic",) * 2, (40.0,) * 2),
             Scenario(("bbr",), (40.0,))]
    return [replace(sc, duration=duration, warmup=warmup) for sc in cases]


# name: (builder, default duration, default warm-up, default seeds)
GRIDS = {"default": (_default_grid, 120.0, 30.0, 3), "quick": (_quick_grid, 30.0, 10.0, 1)}


def grid(name: str, duration: float | None = None, warmup: float | None = None) -> list[Scenario]:
    build, d, w, _ = GRIDS[name]
    return build(d if duration is None else duration, w if warmup is None else warmup)


def mean(outs: list[Outcome]) -> Outcome:
    """The mean of one scenario's runs (one per seed), figure by figure (Jain: the mean
    of each run's index); details: each run's figures."""
    def avg(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    return Outcome(avg([o.utilization for o in outs]), [avg(list(x)) for x in zip(*(o.shares for o in outs), strict=True)],
                   avg([o.jain for o in outs]), avg([o.loss_rate for o in outs]),
                   avg([o.queue_mean_bdp for o in outs]), sum(o.wall_s for o in outs),
                   {"runs": [asdict(o) for o in outs], "rto_total": avg([o.details.get("rto_total", 0) for o in outs])})


def run_ccmatic(sc: Scenario) -> Outcome:
    """``sc`` in ccmatic's fine mode: an ideal link (no jitter) with the drop-tail
    buffer, one templates/*.cca flow per CCA, the same warm-up."""
    from ccmatic.sim.fine import simulate
    from ccmatic.sim.links import Link
    from ccmatic.sim.metrics import metrics
    from ccmatic.sim.records import Flow, SimConfig
    from ccmatic.spec.cca import load_cca

    t0 = time.monotonic()
    progs = {c: load_cca(ROOT / "templates" / f"{CCA_FILES[c]}.cca") for c in set(sc.ccas)}
    flows = tuple(Flow(progs[c], r / 1000) for c, r in zip(sc.ccas, sc.R_ms, strict=True))
    cfg = SimConfig(Link("ideal", sc.C, 0.0, sc.buffer_bytes), flows, sc.duration, seed=sc.seed)
    m = metrics(simulate(cfg), sc.warmup)
    return Outcome(m.utilization, [f.share for f in m.flows], m.jain, m.loss_rate, m.queue_mean_bdp,
                   time.monotonic() - t0, m.json())


def run_case(sc: Scenario, with_ns3: bool = True) -> tuple[Outcome, Outcome | None]:
    """Both simulators on one scenario (ns-3's only if ``with_ns3``)."""
    def note(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    return run_ccmatic(sc), (run_ns3(sc, note) if with_ns3 else None)


def _pair(a: float, b: float | None, fmt: str) -> str:
    return f"{a:{fmt}} / " + ("-" if b is None else f"{b:{fmt}}")


NAME_W = 36
HEADER = (f"{'scenario':<{NAME_W}} {'util % ccm / ns3':>16} {'Jain ccm / ns3':>15} {'loss % ccm / ns3':>17} "
          f"{'queue BDP ccm / ns3':>20} {'ns3 RTOs':>8}   shares ccm | ns3")


def format_row(sc: Scenario, ccm: Outcome, ns3: Outcome | None) -> str:
    def shares(o: Outcome | None) -> str:
        return "-" if o is None else " ".join(f"{s:.2f}" for s in o.shares)

    return (f"{sc.name:<{NAME_W}} {_pair(100 * ccm.utilization, None if ns3 is None else 100 * ns3.utilization, '6.1f'):>16} "
            f"{_pair(ccm.jain, None if ns3 is None else ns3.jain, '.3f'):>15} "
            f"{_pair(100 * ccm.loss_rate, None if ns3 is None else 100 * ns3.loss_rate, '6.2f'):>17} "
            f"{_pair(ccm.queue_mean_bdp, None if ns3 is None else ns3.queue_mean_bdp, '7.2f'):>20} "
            f"{'-' if ns3 is None else format(ns3.details.get('rto_total', 0), '.0f'):>8}   "
            f"{shares(ccm)} | {shares(ns3)}")


def record(sc: Scenario, seeds: list[int], ccm: Outcome, ns3: Outcome | None) -> dict[str, Any]:
    """One scenario's JSON record (with several seeds, the figures are their means and
    ``details.runs`` holds each run's)."""
    return {"name": sc.name, "scenario": asdict(sc), "seeds": seeds, "ccmatic": asdict(ccm),
            "ns3": None if ns3 is None else asdict(ns3)}


def _per_flow(text: str, n: int | None, what: str, conv: type[float | str]) -> list[Any]:
    vals = [conv(x) for x in text.split(",") if x.strip()]
    if n is not None and len(vals) not in (1, n):
        raise SystemExit(f"--{what}: give one value or {n} (one per flow), got {len(vals)}")
    return vals


def scenario_from(args: argparse.Namespace) -> Scenario:
    ccas = _per_flow(args.cca, None, "cca", str)
    rs = _per_flow(args.R, None, "R", float)
    n = args.flows or max(len(ccas), len(rs))
    ccas, rs = _per_flow(args.cca, n, "cca", str), _per_flow(args.R, n, "R", float)
    return Scenario(tuple(ccas * n if len(ccas) == 1 else ccas), tuple(rs * n if len(rs) == 1 else rs),
                    C_mbps=args.C, buffer_bdp=args.buffer,
                    duration=30.0 if args.duration is None else args.duration,
                    warmup=10.0 if args.warmup is None else args.warmup, seed=args.seed, recovery=args.recovery)


def _run_all(cases: list[Scenario], jobs: int, with_ns3: bool) -> Iterator[tuple[Outcome, Outcome | None]]:
    if jobs <= 1:
        if with_ns3:
            t = time.monotonic()
            print("importing ns-3 (10-100 s) ...", file=sys.stderr, flush=True)
            import_ns()
            print(f"ns-3 imported in {time.monotonic() - t:.0f} s", file=sys.stderr, flush=True)
        yield from (run_case(sc, with_ns3) for sc in cases)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:  # each worker imports ns-3 once
        yield from pool.map(run_case, cases, [with_ns3] * len(cases))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    head, _, rest = (__doc__ or "").partition("\n\n")
    ap = argparse.ArgumentParser(description=head, epilog=rest,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cca", default="newreno",
                    help=f"{'|'.join(CCAS)}, or one per flow comma-separated (bbr,cubic); default newreno")
    ap.add_argument("--flows", type=int, default=None, help="number of flows (default: 1, or as many as --cca/--R give)")
    ap.add_argument("--buffer", type=float, default=1.0, help="drop-tail buffer in BDPs of C x min R (default 1)")
    ap.add_argument("--C", type=float, default=24.0, help="bottleneck rate, Mbit/s (default 24)")
    ap.add_argument("--R", default="40", help="RTprop in ms: one value, or one per flow comma-separated (20,80)")
    ap.add_argument("--duration", type=float, default=None, help="seconds (default 30, or the grid's)")
    ap.add_argument("--warmup", type=float, default=None, help="seconds left out of the metrics (default 10, or the grid's)")
    ap.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    ap.add_argument("--seeds", type=int, default=None,
                    help="runs per scenario, seeds --seed, --seed + 1, ...; rows show their means (default 1, or the grid's)")
    ap.add_argument("--recovery", choices=sorted(NS3_RECOVERY), default="classic",
                    help="ns-3's loss recovery: classic (cwnd = ssthresh at once, as ccmatic; default) or prr")
    ap.add_argument("--grid", choices=sorted(GRIDS), default=None,
                    help="a predefined grid instead of one scenario: quick (3 cases), default (25 cases)")
    ap.add_argument("--json", type=Path, default=None, help="write every run's raw results to FILE")
    ap.add_argument("--jobs", type=int, default=1, help="runs in parallel processes (default 1; each imports ns-3, about 0.7 GB)")
    ap.add_argument("--no-ns3", action="store_true", help="run only ccmatic's side (no ns-3 import)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cases = grid(args.grid, args.duration, args.warmup) if args.grid else [scenario_from(args)]
        cases = [replace(sc, recovery=args.recovery) for sc in cases]
    except ValueError as e:
        print(f"ns3_compare: {e}", file=sys.stderr)
        return 2
    k = args.seeds or (GRIDS[args.grid][3] if args.grid else 1)
    seeds = list(range(args.seed, args.seed + k))
    runs = [replace(sc, seed=s) for sc in cases for s in seeds]
    print(f"# C={cases[0].C_mbps:g} Mbit/s, {cases[0].duration:g} s runs, metrics after {cases[0].warmup:g} s, "
          f"{f'seed {seeds[0]}' if k == 1 else f'seeds {seeds[0]}..{seeds[-1]} (means)'}, ns-3 recovery {args.recovery}; each column: ccmatic / ns-3",
          flush=True)
    print(HEADER, flush=True)
    rows: list[dict[str, Any]] = []
    done: list[tuple[Outcome, Outcome | None]] = []
    t0 = time.monotonic()
    for i, (sc, (ccm, ns3)) in enumerate(zip(runs, _run_all(runs, args.jobs, not args.no_ns3), strict=True)):
        wall = f"ccmatic {ccm.wall_s:.1f} s" + ("" if ns3 is None else f", ns-3 {ns3.wall_s:.1f} s")
        print(f"[{i + 1}/{len(runs)}] {sc.name} seed {sc.seed}: {wall}; {time.monotonic() - t0:.0f} s so far",
              file=sys.stderr, flush=True)
        done.append((ccm, ns3))
        if len(done) < k:
            continue
        c, n = [o for o, _ in done], [o for _, o in done if o is not None]
        ccm_m, ns3_m = (c[0], n[0] if n else None) if k == 1 else (mean(c), mean(n) if n else None)
        done = []
        print(format_row(sc, ccm_m, ns3_m), flush=True)
        rows.append(record(replace(sc, seed=seeds[0]), seeds, ccm_m, ns3_m))
        if args.json is not None:  # rewritten after each scenario, so a long run keeps what it has
            args.json.write_text(json.dumps({"cases": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
