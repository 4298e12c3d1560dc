"""How benchmarks/kernel_yardstick.py runs ccmatic (docs/testbed.md, "The kernel as
yardstick"): its options, every run in a subprocess (``ccmatic testbed|simulate ...
--json``) with its command, wall time and figures kept in :data:`LOG`, and after
each kernel run a check that it left nothing of its own behind."""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from statistics import mean
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CCMATIC = str(Path(sys.executable).parent / "ccmatic")
SIDES = ("kernel", "sim", "ns3")
LOG: list[dict[str, Any]] = []  # every run: its command, wall time and figures


class Opts(argparse.Namespace):
    only: str
    seeds: int
    sim_seeds: int
    duration: float | None
    kernel_duration: float | None
    sides: str
    json: str | None
    e_ccas: str
    buffers: str
    first_seed: int
    quickack: bool

    def want(self, side: str) -> bool:
        return side in self.sides.split(",")

    def dur(self, default: float) -> float:
        return default if self.duration is None else self.duration

    def kdur(self, default: float) -> float:
        return self.dur(default) if self.kernel_duration is None else self.kernel_duration

    def durations(self, default: float) -> str:
        T, K = self.dur(default), self.kdur(default)
        return f"{T:g} s" if T == K else f"kernel {K:g} s, simulator {T:g} s"


def leftovers(pid: int) -> list[str]:
    """What the testbed run of process ``pid`` left (its names carry its pid; other
    runs on the machine, alive or not, are theirs to clean)."""
    mine = re.compile(rf"ccmtb{pid}(?!\d)")
    out = []
    for cmd in (["ip", "netns"], ["ip", "-br", "link"], ["bpftool", "struct_ops", "show"]):
        if shutil.which(cmd[0]) is None:
            continue
        p = subprocess.run(cmd, capture_output=True, text=True, check=False)
        out += [f"{' '.join(cmd)}: {line}" for line in p.stdout.splitlines() if mine.search(line)]
    return out


def ccmatic(kind: str, argv: list[str], series: Path | None = None) -> dict[str, Any] | None:
    """``ccmatic testbed|simulate ARGV --json [--series FILE]``: its JSON (None, and a
    line, on failure); with a series, each BBR flow's mean estimates under ``"bbr"``."""
    cmd = [CCMATIC, kind, *argv, "--json", *(["--series", str(series)] if series else [])]
    shown = "ccmatic " + " ".join([kind, *argv])
    print(f"  $ {shown}", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    stdout, stderr = child.communicate()
    p = subprocess.CompletedProcess(cmd, child.returncode, stdout, stderr)
    wall = time.monotonic() - t0
    entry: dict[str, Any] = {"command": shown, "wall_s": round(wall, 1), "rc": p.returncode}
    if kind == "testbed":
        left = leftovers(child.pid)
        entry["leftovers"] = left
        if left:
            print(f"  LEFT BEHIND: {left}", file=sys.stderr)
    LOG.append(entry)
    if p.returncode != 0:
        entry["error"] = (p.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"  failed ({p.returncode}): {entry['error']}", file=sys.stderr)
        return None
    data: dict[str, Any] = json.loads(p.stdout)
    entry["metrics"] = data.get("metrics")
    if kind == "testbed":
        entry["bottleneck"] = data["bottleneck"]
        entry["delay_line"] = data["delay_line"]
    if series is not None:
        data["bbr"] = entry["bbr"] = bbr_estimates(data, series, kind)
    return data


def bbr_estimates(data: dict[str, Any], series: Path, kind: str) -> dict[str, list[float]]:
    """Each flow's mean BBR bandwidth estimate (over the payload rate C) and RTprop
    estimate (s) after the warm-up, and the share of that time it held one pacing
    rate (:func:`held_fraction`).  The estimates are Linux's, read with TCP_CC_INFO,
    in the kernel (``bbr_bw()``: the long-term rate while BBR uses it); in the
    simulator templates/bbr1.cca's state (bytes per step, steps), its ``lt_bw`` in the
    long-term mode as Linux reports, else ``btl_bw``."""
    cfg = data["config"]
    C = cfg["C_payload_bytes_per_s" if kind == "testbed" else "C_bytes_per_s"]
    bw_col, rt_col = ("linux_btl_bw_Bps", "linux_rtprop_s") if kind == "testbed" else ("btl_bw", "rtprop")
    per: dict[str, tuple[list[float], list[float]]] = {}
    rates: dict[str, list[tuple[float, float, bool]]] = {}
    for r in csv.DictReader(series.open()):
        if float(r["time_s"]) >= cfg["warmup_s"] and r.get(f"state.{bw_col}"):
            step = 1.0 if kind == "testbed" else cfg["flows"][int(r["flow"])]["R_s"]
            bw, rt = per.setdefault(r["flow"], ([], []))
            long_term = kind != "testbed" and float(r.get("state.lt_use") or 0) > 0
            bw.append(float(r["state.lt_bw" if long_term else f"state.{bw_col}"]) / step / C)
            rt.append(float(r[f"state.{rt_col}"]) * step)
            gain_one = float(r.get("state.linux_pacing_gain") or 1) == 1
            rates.setdefault(r["flow"], []).append((float(r["time_s"]), float(r.get("rate_Bps") or 0), gain_one))
    return {"btl_bw_over_C": [mean(v[0]) for _, v in sorted(per.items())],
            "rtprop_s": [mean(v[1]) for _, v in sorted(per.items())],
            "held": [held_fraction(v) for _, v in sorted(rates.items())]}


#: how long one pacing rate must last to count as held: longer than ProbeBW's gain
#: cycle (8 phases of an RTprop, 0.32 s at 40 ms) and than ProbeRTT (0.2 s and its drain)
HELD_S = 1.0


def held_fraction(rows: list[tuple[float, float, bool]]) -> float:
    """The share of a flow's time (rows of time, pacing rate, gain 1) spent in
    stretches of at least :data:`HELD_S` at one unchanging rate with gain 1: BBRv1's
    long-term ("policer") mode, which TCP_CC_INFO does not report, seen from outside
    (docs/testbed.md (b)); the same rule on the simulator's series."""
    if len(rows) < 2:
        return 0.0
    held, start = 0.0, 0
    for i in range(1, len(rows) + 1):
        if i < len(rows) and rows[i][1] == rows[start][1] and rows[i][2] and rows[start][2]:
            continue
        if rows[i - 1][0] - rows[start][0] >= HELD_S:
            held += rows[i - 1][0] - rows[start][0]
        start = i
    return held / (rows[-1][0] - rows[0][0])


def runs(kind: str, argv: list[str], n: int, first: int = 0, series: Path | None = None) -> list[dict[str, Any]]:
    out = [ccmatic(kind, [*argv, "--seed", str(s)], series and series / f"{kind}-{s}.csv")
           for s in range(first, first + n)]
    return [d for d in out if d is not None]


def tbf_drop_rate(d: dict[str, Any]) -> float:
    b = d["bottleneck"]
    drops, sent = int(b.get("drops", 0)), int(b.get("packets", 0))
    return drops / max(1, sent + drops)


Make = Callable[[float], tuple[list[str], list[str]]]

#: a second simulator column of (c) and (f): an unpaced sender's packets in pairs, as
#: Linux's ACK-clocked ones leave after each delayed ACK (docs/testbed.md (c))
BURST = ["--burst", "2"]


def sim_runs(o: Opts, default: float, make: Make, extra: list[str] | None = None,
             series: Path | None = None) -> list[dict[str, Any]]:
    """The simulator's runs (``make(duration)[1]``, then ``extra``), if asked for."""
    return runs("simulate", make(o.dur(default))[1] + (extra or []), o.sim_seeds, 0, series) if o.want("sim") else []


def side_runs(o: Opts, default: float, make: Make,
              series: Path | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The kernel's runs (``make(kernel duration)[0]``), then the simulator's (``[1]``)."""
    k = (runs("testbed", make(o.kdur(default))[0] + ["--quickack"] * o.quickack, o.seeds, o.first_seed, series)
         if o.want("kernel") else [])
    return k, sim_runs(o, default, make, series=series)
