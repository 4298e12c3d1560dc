"""The B.6 grid (thesis Appendix B.6, Figs. B.3–B.4): one simulation per task, and
the check of proved steady-state bounds against the runs.

Every CCA runs on every grid point — C ∈ {24, 48, 96} Mbit/s, R ∈ {20, 40, 80} ms,
D = R, β ∈ {1/16 … 16} BDP — as independent tasks.  Where a CCA has a proof
(:class:`ProvedBounds`, with the constants read from the proof file by the
``evaluate`` command), each run whose network meets the proof's premise is checked
against the proved bounds, measured from the time the run enters the proof's steady
state (the bounds are steady-state guarantees); a run that does not get there in
time is reported as such.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from ccmatic.sim.fine import simulate, simulate_metrics
from ccmatic.sim.links import Link, LinkKind
from ccmatic.sim.metrics import metrics
from ccmatic.sim.records import Flow, SimConfig, SimResult
from ccmatic.spec.cca import load_cca

GRID_C = (24.0, 48.0, 96.0)                  # Mbit/s
GRID_R = (20.0, 40.0, 80.0)                  # ms
STEADY_FROM = 0.5  # metrics over the second half of each run (the steady state)
GRID_BUFFER = tuple(Fraction(2) ** k for k in range(-4, 5))  # 1/16 .. 16 BDP


@dataclass(frozen=True)
class ProvedBounds:
    """What a proof guarantees in its steady state, with its constants (read from the
    proof file): ``kind`` names the steady state's form — ``rate_beliefs``: c_lo ≥
    conv_lo·C, c_hi ≤ conv_hi·C and queue ≤ qbound·C·(R+D), then utilization ≥ util
    and queue ≤ inflight·C·(R+D); ``cbr_beliefs``: c_lo_lambda ≥ conv·C, then
    utilization ≥ util and RTT ≤ rtt·(R+D) + 1 packet.  The bounds apply to runs with
    at least ``min_buffer_bdp`` of buffer, on ``link`` (None: any)."""

    source: str
    state: str
    kind: Literal["rate_beliefs", "cbr_beliefs"]
    constants: dict[str, float]
    min_buffer_bdp: float | None = None
    link: str | None = None

    def names(self) -> tuple[str, ...]:
        c = self.constants
        if self.kind == "rate_beliefs":
            return (f"utilization >= {c['util']:.4g}", f"queue <= {c['inflight']:.4g} C (R + D)")
        return (f"utilization >= {c['util']:.4g}", f"RTT <= {c['rtt']:.4g} (R + D) + 1 packet")

    def applies(self, row: dict[str, Any]) -> bool:
        if self.link is not None and row["model"] != self.link:
            return False
        return self.min_buffer_bdp is None or float(Fraction(row["buffer_bdp"])) >= self.min_buffer_bdp

    def holds(self, row: dict[str, Any], m: dict[str, Any]) -> list[bool]:
        c = self.constants
        if self.kind == "rate_beliefs":
            return [m["utilization"] >= c["util"], m["queue_max_bdp"] <= 2 * c["inflight"]]  # D = R
        R = row["R_ms"] / 1000
        pkt = row["mss"] / (row["C_mbps"] * 1e6 / 8)
        rtt_ok = all(f["rtt_max"] is None or f["rtt_max"] <= c["rtt"] * (R + R) + pkt + 1e-9 for f in m["flows"])
        return [m["utilization"] >= c["util"], rtt_ok]

    def steady(self, res: SimResult) -> float | None:
        """The first time every flow is in the steady state, or None."""
        C, c = res.config.link.C, self.constants

        def ok(r: Any, f: int, k: int) -> bool:
            if self.kind == "cbr_beliefs":
                return bool(r.c_lo_lambda[k] >= c["conv"] * C)
            R = res.config.flows[f].R
            q = res.queue_at(r.time[k])
            return bool(r.c_lo[k] >= c["conv_lo"] * C and r.c_hi[k] <= c["conv_hi"] * C
                        and q <= c["qbound"] * C * (R + res.config.link.D))
        recs = res.flows
        for k in range(min(len(r.time) for r in recs)):
            if all(ok(r, f, k) for f, r in enumerate(recs)):
                return float(max(r.time[k] for r in recs))
        return None


@dataclass(frozen=True)
class Task:
    cca_path: str
    cca_name: str
    model: LinkKind
    C_mbps: float
    R_ms: float
    buffer_bdp: Fraction
    duration: float
    flows: int
    seed: int
    cca_text: str  # the file's text, so that remote workers need no files
    bounds: ProvedBounds | None = None


def run_task(task: Task) -> dict[str, Any]:
    """Worker: one simulation, its metrics as a JSON-able row."""
    prog = load_cca(task.cca_path, task.cca_text)
    C = task.C_mbps * 1e6 / 8
    R = task.R_ms / 1000
    cfg = SimConfig(Link(task.model, C, R, float(task.buffer_bdp) * C * R),
                    tuple(Flow(prog, R) for _ in range(task.flows)), task.duration, seed=task.seed)
    t0 = time.perf_counter()
    steady: dict[str, Any] | None = None
    if task.bounds is None:  # only the metrics: streamed (sim/tally.py)
        m = simulate_metrics(cfg, task.duration * STEADY_FROM)
    else:  # the steady state is found on the per-step records
        res = simulate(cfg)
        m = metrics(res, task.duration * STEADY_FROM)
        t_in = task.bounds.steady(res)
        # measured from the steady state on, if the run spends at least 10% of it there
        if t_in is not None and t_in <= 0.9 * task.duration:
            steady = {"from_s": t_in, "metrics": metrics(res, t_in).json()}
        else:
            steady = {"from_s": None, "metrics": None}
    return {"cca": task.cca_name, "model": task.model, "C_mbps": task.C_mbps, "R_ms": task.R_ms,
            "buffer_bdp": str(task.buffer_bdp), "flows": task.flows, "seed": task.seed, "duration_s": task.duration,
            "mss": cfg.mss, "wall_s": time.perf_counter() - t0, "metrics": m.json(), "steady": steady}


def check_bounds(rows: list[dict[str, Any]], bounds: dict[str, ProvedBounds]) -> list[dict[str, Any]]:
    """Every (row, bound) where a proved bound applies: does it hold in the steady
    state ("holds": true/false), or did the run not reach it ("holds": null)?"""
    out = []
    for r in rows:
        pb = bounds.get(r["cca"])
        if pb is None or not pb.applies(r):
            continue
        st = r.get("steady") or {}
        m = st.get("metrics")
        held = pb.holds(r, m) if m is not None else [None] * len(pb.names())
        for name, h in zip(pb.names(), held):
            out.append({"cca": r["cca"], "C_mbps": r["C_mbps"], "R_ms": r["R_ms"], "buffer_bdp": r["buffer_bdp"],
                        "bound": name, "source": pb.source, "steady_from_s": st.get("from_s"),
                        "holds": None if h is None else bool(h)})
    return out
