"""The bottleneck's queue in a testbed run, rebuilt from the sender's ``tcp_info``
samples, beside an exported CCA's steps (docs/testbed.md, (e)).  The ``tbf`` sits right
after the sender (docs/testbed.md, "Topology"), so the segments a flow sent between two
samples arrive at it then, and a drop-tail queue served at C is Lindley's recursion
on them; its drops are checked against the ``tbf``'s own count.  Run as root, with the
flags of ``ccmatic testbed`` (one flow of an exported CCA file):

    python benchmarks/testbed_queue.py templates/cc_probe_slow.cca --model ack_agg --C 48 --R 40 \\
        --buffer 1 --duration 30 --warmup 15 --steps grid [--window 20,21]

Prints the rebuilt drops against the ``tbf``'s, then per second the CCA's largest
c_lo_lambda over C, the rebuilt drops and the steps that probed (rate above 1.5
c_lo_lambda); with ``--window A,B`` also each step whose boundary lies between A and
B seconds: how late the program ran it, its q_hi against the rebuilt queue at the
boundary and when the decision took effect, its rate, and the drops in the two
RTprops that follow."""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import itertools
import sys

from ccmatic.cli import testbed as cli_testbed
from ccmatic.cli.main import build_parser
from ccmatic.testbed.results import HEADERS, payload_rate
from ccmatic.testbed.run import TestbedRun, run
from ccmatic.testbed.tcpinfo import SAMPLE

COL = {name: i for i, name in enumerate(SAMPLE)}


@dataclasses.dataclass
class Queue:
    t: list[float]       # sample times, s from the run's start
    q: list[float]       # the rebuilt queue after each sample, frames
    drops: list[float]   # the rebuilt drops up to each sample, frames

    def at(self, series: list[float], x: float) -> float:
        i = bisect.bisect_right(self.t, x) - 1
        return series[max(0, min(i, len(series) - 1))]


def rebuild(samples: list[list[float]], C: float, buffer: int, mss: int) -> Queue:
    """Lindley's recursion on the segments sent between samples (frames of mss +
    HEADERS bytes on the wire), served at C wire bytes/s, dropped beyond ``buffer``."""
    frame = mss + HEADERS
    out = Queue([samples[0][COL["t_read"]]], [0.0], [0.0])
    q = drops = 0.0
    for prev, cur in itertools.pairwise(samples):
        dt = cur[COL["t_read"]] - prev[COL["t_read"]]
        q = max(0.0, q + (cur[COL["data_segs_out"]] - prev[COL["data_segs_out"]]) * frame - C * dt)
        if q > buffer:
            drops += (q - buffer) / frame
            q = float(buffer)
        out.t.append(cur[COL["t_read"]])
        out.q.append(q / frame)
        out.drops.append(drops)
    return out


def report(r: TestbedRun, C: float, buffer: int, mss: int, R: float, window: tuple[float, float] | None) -> None:
    qu = rebuild(r.samples[0], C, buffer, mss)
    print(f"rebuilt drops {qu.drops[-1]:.0f}, the tbf's {r.bottleneck.get('drops', 0)}")
    steps = next(iter(r.traces.values()))
    t0 = r.samples_t0
    per_step = payload_rate(C, mss) * R  # C's payload in bytes per step
    secs: dict[int, list[float]] = {}
    for row in steps:
        s = secs.setdefault(int(row["t_s"] - t0), [0.0, 0.0, 0.0])
        s[0] = max(s[0], row["c_lo_lambda"] / per_step)
        s[1] += 1
        s[2] += row["c_lo_lambda"] > 0 and row["rate"] > 1.5 * row["c_lo_lambda"]
    for sec, (cl, n, probes) in sorted(secs.items()):
        drops = qu.at(qu.drops, sec + 1) - qu.at(qu.drops, sec)
        print(f"{sec:4d} s  c_lo_lambda/C {cl:5.2f}  drops {drops:6.0f}  probes {probes:.0f}/{n:.0f}")
    if window is None:
        return
    print("boundary (s)  late (ms)  q_hi  queue at boundary / at decision  rate/C  drops in 2 R  (frames)")
    for row in steps:
        x, ran = row["at_s"] - t0, row["ran_s"] - t0
        if window[0] <= x <= window[1]:
            print(f"{x:8.3f}  {1000 * (ran - x):6.1f}  {row['q_hi'] / mss:6.1f}  {qu.at(qu.q, x):6.1f} / "
                  f"{qu.at(qu.q, ran):6.1f}  {row['rate'] / per_step:5.2f}  "
                  f"{qu.at(qu.drops, ran + 2 * R) - qu.at(qu.drops, ran):5.0f}")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], add_help=True)
    p.add_argument("--window", help="A,B: list the steps between A and B seconds")
    own, rest = p.parse_known_args(argv)
    args = build_parser(["testbed"]).parse_args(["testbed", *rest])
    cfg, _ = cli_testbed.config(args)
    if len(cfg.flows) != 1 or cfg.flows[0].cca.kernel:
        p.error("one flow of an exported CCA file")
    r = run(dataclasses.replace(cfg, trace=True), lambda line: print(line, file=sys.stderr))
    lo, _, hi = (own.window or "").partition(",")
    window = (float(lo), float(hi)) if own.window else None
    report(r, cfg.C, cfg.buffer, cfg.mss, cfg.flows[0].R, window)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
