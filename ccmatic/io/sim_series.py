"""Per-flow time series of a simulator run (``ccmatic simulate --series FILE``).

One row per flow and CCA step (one RTprop): the step's start time, the pacing rate
and cwnd the CCA set, the bytes sent, ACKed and lost so far, the latest RTT sample,
the bottleneck's queue at that time, and every state variable of the flow's CCA file
(BBR's BtlBw estimate, CUBIC's W_max, ...) in the file's own units: a step is one
RTprop, so ``seconds`` are steps and a ``rate`` is bytes per step.  (A testbed run's
flows have the kernel's state instead, in SI units:
:data:`ccmatic.testbed.results.KERNEL_STATE`.)  ``.csv`` writes one table (empty cells
where a flow has no such value); ``.json`` writes one object per flow, with ``null``
for values not yet defined (strict JSON).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ccmatic.core.files import atomic_write
from ccmatic.sim.records import SimResult

SERIES_SUFFIXES = (".csv", ".json")
COLUMNS = ("time_s", "rate_Bps", "cwnd_B", "sent_B", "acked_B", "lost_B", "rtt_s", "queue_B")


def flow_series(res: SimResult) -> list[dict[str, list[float | None]]]:
    """Each flow's columns (:data:`COLUMNS`, then ``state.NAME`` per state variable)."""
    out = []
    for rec in res.flows:
        queue = [res.queue_at(t) for t in rec.time]
        cols: dict[str, Sequence[float]] = {
            "time_s": rec.time, "rate_Bps": rec.rate, "cwnd_B": rec.cwnd, "sent_B": rec.A, "acked_B": rec.S,
            "lost_B": rec.L, "rtt_s": rec.rtt, "queue_B": queue,
            **{f"state.{name}": vs for name, vs in rec.state.items()},
        }
        out.append({k: [None if math.isnan(v) else float(v) for v in vs] for k, vs in cols.items()})
    return out


def write_series(res: SimResult, path: Path) -> None:
    """The series as ``path`` says: ``.csv`` or ``.json``."""
    series = flow_series(res)
    ccas = [fl.cca.name for fl in res.config.flows]
    if path.suffix.lower() == ".json":
        doc = {"flows": [{"flow": i, "cca": ccas[i], "R_s": fl.R, "series": s}
                         for i, (fl, s) in enumerate(zip(res.config.flows, series))]}
        atomic_write(path, json.dumps(doc, allow_nan=False) + "\n")
        return
    states = sorted({k for s in series for k in s if k.startswith("state.")})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["flow", "cca", *COLUMNS, *states])
    for i, s in enumerate(series):
        for k in range(len(s["time_s"])):
            w.writerow([i, ccas[i], *[_cell(s[c][k]) for c in COLUMNS],
                        *[_cell(s[c][k]) if c in s else "" for c in states]])
    atomic_write(path, buf.getvalue())


def _cell(v: Any) -> str:
    return "" if v is None else repr(v)
