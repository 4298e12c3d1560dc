"""The testbed's delay line against the packet rate (docs/testbed.md): one Reno flow
per link rate, R = 20 ms, a 1-BDP buffer; per rate, the frames per second the line
forwarded (both directions), how late frames left (p99, share over 1 ms), frames
dropped by its sockets, conservation and order, utilization, and the largest RTT
against RTprop + beta/C.  Run as root:

    python benchmarks/testbed_delayline.py [--rates 10,25,50,100,150] [--duration 8] [--runs 3]

The rate guard (MAX_FRAMES_PER_S) is lifted here, so rates beyond it are measured."""

from __future__ import annotations

import argparse
import os
import statistics

from ccmatic.sim.metrics import metrics
from ccmatic.testbed import run as tb
from ccmatic.testbed.ccas import FlowCca
from ccmatic.testbed.selfcheck import check


def one(mbps: float, duration: float) -> dict[str, float]:
    C, R = mbps * 1e6 / 8, 0.020
    cfg = tb.TestbedConfig(C, round(C * R), (tb.TestbedFlow(FlowCca("reno", None), R),), duration)
    r = tb.run(cfg, lambda line: None)
    m = metrics(r.result, duration * 0.2)
    c = check(r)
    fps = (c.frames_in) / duration
    return {"fps": fps, "late_p99_ms": c.late_p99_s * 1000, "over_1ms": c.late_over_1ms / max(1, c.frames_out),
            "dropped": c.dropped, "ok": float(c.conserved and c.in_order), "util": m.utilization,
            "cpu": r.delay_line["cpu_s"] / duration, "reordered": c.reordered, "reord_seen": c.reord_seen,
            "held": c.held, "unread": c.kernel_rx_unread, "tx_extra": c.kernel_tx_extra,
            "rtt_max_ms": m.flows[0].rtt_max * 1000, "rtt_expected_ms": (R + cfg.buffer / C) * 1000}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="10,25,50,100,150")
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tb.MAX_FRAMES_PER_S = 10 ** 9
    print(f"pid {os.getpid()}; medians of {a.runs} runs, interleaved")
    res: dict[float, list[dict[str, float]]] = {float(x): [] for x in a.rates.split(",")}
    for _ in range(a.runs):
        for mbps, runs in res.items():
            runs.append(one(mbps, a.duration))
    print("| Mbit/s | frames/s | line's CPU | late p99 ms | frames > 1 ms late | socket drops | conserved, in order | "
          "utilization | max RTT ms (expected) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mbps, rs in res.items():
        def med(k: str, rs: list[dict[str, float]] = rs) -> float:
            return statistics.median(x[k] for x in rs)
        print(f"| {mbps:g} | {med('fps'):,.0f} | {med('cpu'):.0%} | {med('late_p99_ms'):.2f} | {med('over_1ms'):.2%} | "
              f"{max(x['dropped'] for x in rs):g} | {sum(x['ok'] for x in rs):g}/{len(rs)} | {med('util'):.1%} | "
              f"{med('rtt_max_ms'):.1f} ({rs[0]['rtt_expected_ms']:.1f}) |")
    for mbps, rs in res.items():
        bad = [{k: x[k] for k in ("reordered", "reord_seen", "held", "unread", "tx_extra")} for x in rs if not x["ok"]]
        if bad:
            print(f"{mbps:g} Mbit/s, failed checks: {bad}")


if __name__ == "__main__":
    main()
