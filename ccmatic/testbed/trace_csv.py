"""``testbed --trace-cca``: the exported CCAs' step traces (:mod:`ccmatic.export.trace`)
as one CSV, a row per step of a flow, in the flows' own units: times in seconds from
the flow's first step (``time_s`` when the step's counters were read, ``at_s`` the
time the step stands for, ``late_s`` how long after it the program ran the step),
bytes, steps (RTT and delay bounds), and rates in bytes per second (a belief or rate
in bytes per step over the flow's RTprop)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ccmatic.core.files import atomic_write
from ccmatic.testbed.run import TestbedConfig, TestbedRun

PER_STEP = ("c_lo", "c_hi", "c_lo_lambda", "rate")
COLUMNS = ("flow", "cca", "k", "time_s", "at_s", "late_s", "step_s", "A_B", "S_B", "Ld_B", "rtt_steps",
           "qdel_lo_steps", "qdel_hi_steps", "c_lo_Bps", "c_hi_Bps", "c_lo_lambda_Bps", "q_hi_B", "rate_Bps",
           "cwnd_pkts", "pacing_Bps")


def write_trace(r: TestbedRun, cfg: TestbedConfig, path: Path) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for i, steps in r.steps_by_flow(len(cfg.flows)).items():
        f = cfg.flows[i]
        t0 = steps[0]["t_s"]
        name = f.cca.name if f.cca.program is None else f.cca.program.name
        for row in steps:
            per_s = {k: row[k] / f.R for k in PER_STEP}
            w.writerow([i, name, int(row["k"]), f"{row['t_s'] - t0:.6f}", f"{row['at_s'] - t0:.6f}",
                        f"{row['ran_s'] - row['at_s']:.6f}", f"{row['step_s']:.6f}" if row["k"] > 1
                        else "", row["A"], row["S"], row["Ld"], f"{row['rtt']:.5f}", row["qdel_lo"], row["qdel_hi"],
                        f"{per_s['c_lo']:.1f}", f"{per_s['c_hi']:.1f}", f"{per_s['c_lo_lambda']:.1f}", row["q_hi"],
                        f"{per_s['rate']:.1f}", int(row["cwnd_pkts"]), int(row["pacing_bps"])])
    atomic_write(path, buf.getvalue())
