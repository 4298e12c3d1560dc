"""How the simulator's cost grows with the number of flows and the link rate (issue 28).

    python benchmarks/sim_growth.py [--cca reno] [--duration S] [--flows 10,100,1000,10000]
                                    [--rates 100,1000,10000,40000] [--limit S] [--json F] [--plot F.png]

Two sweeps of ``ccmatic simulate CCA --flows N --C C --R 100 --buffer 1 --duration S
--json``, each point its own process: the flows at 10 Gbit/s, and the link rate at
1,000 flows.  For each point: the process's wall time (start to exit) and peak
resident memory (``wait4``'s ``ru_maxrss``), wall per simulated second, and the
microseconds per packet the bottleneck delivered (utilization × C × S / MSS).  A point
over ``--limit`` seconds of wall is stopped and shown as such (the sweep goes on).
Run it on an idle machine: the figures are one run per point.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ccmatic.io import figures

MSS = 1500.0
CCMATIC = [sys.executable, "-m", "ccmatic.cli.main"]


def one(cca: str, flows: int, mbps: float, duration: float, limit: float) -> dict[str, Any]:
    """One process: its wall, peak memory and what it simulated."""
    cmd = [*CCMATIC, "simulate", cca, "--flows", str(flows), "--C", f"{mbps:g}", "--R", "100", "--buffer", "1",
           "--duration", f"{duration:g}", "--json"]
    with tempfile.TemporaryFile("w+") as buf:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=buf, stderr=subprocess.DEVNULL, start_new_session=True)
        while True:  # wait4, not communicate: it gives the child's own peak memory
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > limit:
                os.killpg(p.pid, signal.SIGKILL)
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        buf.seek(0)
        out = buf.read()
    row: dict[str, Any] = {"cca": cca, "flows": flows, "C_mbps": mbps, "duration_s": duration, "wall_s": wall,
                           "command": " ".join(cmd[3:])}
    row["peak_mib"] = usage.ru_maxrss / 1024
    if p.returncode != 0 or not out:
        row["stopped"] = f"over {limit:g} s" if wall >= limit else f"failed (exit {p.returncode})"
        return row
    res = json.loads(out)
    util = float(res["metrics"]["utilization"])
    pkts = util * mbps * 1e6 / 8 * duration / MSS
    row |= {"utilization": util, "packets": pkts, "wall_per_sim_s": wall / duration,
            "us_per_packet": 1e6 * wall / pkts if pkts else None}
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| flows | C (Mbit/s) | wall (s) | wall / simulated s | µs per packet | peak memory (MiB) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if "stopped" in r:
            lines.append(f"| {r['flows']:,} | {r['C_mbps']:,.0f} | {r['stopped']} | – | – | – |")
            continue
        lines.append(f"| {r['flows']:,} | {r['C_mbps']:,.0f} | {r['wall_s']:.1f} | {r['wall_per_sim_s']:.2f} | "
                     f"{r['us_per_packet']:.2f} | {r.get('peak_mib', float('nan')):.0f} |")
    return "\n".join(lines)


def plot(flows: list[dict[str, Any]], rates: list[dict[str, Any]], path: Path) -> None:
    plt = figures.pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), constrained_layout=True)
    for col, (rows, key, label) in enumerate(((flows, "flows", "flows (at 10 Gbit/s)"),
                                               (rates, "C_mbps", "link rate, Mbit/s (1,000 flows)"))):
        done = [r for r in rows if "stopped" not in r]
        if not done:
            continue
        xs = [r[key] for r in done]
        for row, (field, ylabel) in enumerate((("wall_per_sim_s", "wall s per simulated s"),
                                               ("peak_mib", "peak memory (MiB)"))):
            ys = [r[field] for r in done]
            ax = axes[row][col]
            ax.plot(xs, ys, "o-")
            ax.set_xscale("log")
            ax.set_yscale("log")
            from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

            ax.xaxis.set_major_locator(FixedLocator(xs))  # the points measured
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            figures.readable_log_ticks(ax.yaxis, min(ys), max(ys))
            ax.set_xlabel(label)
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("ccmatic simulate: cost growth (one process per point)")
    figures.save(fig, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cca", default="reno")
    ap.add_argument("--duration", type=float, default=5.0, help="simulated seconds per point (default 5: the flows fill the link after about 2)")
    ap.add_argument("--flows", default="10,100,1000,10000")
    ap.add_argument("--rates", default="100,1000,10000,40000", help="Mbit/s")
    ap.add_argument("--limit", type=float, default=600.0, help="wall seconds per point (default 600)")
    ap.add_argument("--json", default=None, help="write every point here")
    ap.add_argument("--plot", default=None, help="PNG of both sweeps")
    ap.add_argument("--from-json", default=None, help="table and plot of an earlier run's --json, without running")
    args = ap.parse_args()
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        print("Flows at 10 Gbit/s:\n\n" + table(saved["flows"]) + "\n\nLink rate at 1,000 flows:\n\n" +
              table(saved["rates"]))
        if args.plot:
            plot(saved["flows"], saved["rates"], Path(args.plot))
        return 0
    rows_f, rows_c = [], []
    for n in (int(x) for x in args.flows.split(",")):
        rows_f.append(one(args.cca, n, 10000.0, args.duration, args.limit))
        print(f"flows {n}: {rows_f[-1].get('wall_s', 0):.1f} s", file=sys.stderr, flush=True)
    for c in (float(x) for x in args.rates.split(",")):
        rows_c.append(one(args.cca, 1000, c, args.duration, args.limit))
        print(f"C {c:g} Mbit/s: {rows_c[-1].get('wall_s', 0):.1f} s", file=sys.stderr, flush=True)
    print(f"{args.cca}, R = 100 ms, 1-BDP buffer, {args.duration:g} s simulated per point\n")
    print("Flows at 10 Gbit/s:\n\n" + table(rows_f) + "\n\nLink rate at 1,000 flows:\n\n" + table(rows_c))
    if args.json:
        Path(args.json).write_text(json.dumps({"flows": rows_f, "rates": rows_c}, indent=1) + "\n")
    if args.plot:
        plot(rows_f, rows_c, Path(args.plot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
