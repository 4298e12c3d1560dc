"""Measuring a CCA's contract from simulated fixed points (thesis §5.2.1, Table 5.1).

One fine-mode run per (C, N) on a dumbbell; over the run's second half, each flow
gives a point: its throughput, and three statistics — the median and mean of its
queueing delay (RTT sample − RTprop, ms) and its loss rate (bytes lost / sent).  A
run is unfair if its largest flow rate is more than 1.5× its smallest; when most runs
are, the CCA has no contract (Fig. 5.8's criterion), else the fair runs' points are
fitted (:mod:`ccmatic.sim.contract_math`) and the best statistic and fit by error in
log rate is the contract.  What it determines comes from
:mod:`ccmatic.sim.contract_theory`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from ccmatic.sim.contract_math import FAMILIES, Contract, Family, Fit, best, fit_all
from ccmatic.sim.contract_theory import (
    Fold,
    bandwidth_range,
    c11_growth_floor,
    c12_range_ceiling,
    c13_growth_floor,
    c14_range_ceiling,
    dumbbell,
    growth,
    jitter,
    parking_lot,
    robustness,
    unfairness,
)
from ccmatic.sim.fine import simulate
from ccmatic.sim.grid import STEADY_FROM
from ccmatic.sim.links import Link, LinkKind
from ccmatic.sim.metrics import metrics
from ccmatic.sim.records import Flow, SimConfig, SimResult
from ccmatic.spec.cca import load_cca

#: statistic -> (name in a contract, unit, how it accumulates over hops)
STATS: dict[str, tuple[str, str, Fold]] = {
    "p50_delay": ("p50 delay", "ms", "sum"),
    "avg_delay": ("avg delay", "ms", "sum"),
    "loss_rate": ("loss rate", "", "loss"),
}
UNFAIR_RATIO = 1.5
FLAT_SPREAD = 0.1
#: δs when none is given: per statistic, in its unit
DEFAULT_DS = {"p50_delay": 10.0, "avg_delay": 10.0, "loss_rate": 0.001}


@dataclass(frozen=True)
class ContractTask:
    cca_path: str
    cca_name: str
    cca_text: str  # the file's text, so that remote workers need no files
    model: LinkKind
    C_mbps: float
    R_ms: float
    buffer_bdp: float | None  # None: infinite
    flows: int
    duration: float
    seed: int


@dataclass(frozen=True)
class Question:
    """What to derive from a contract: δs (None: :data:`DEFAULT_DS`), the parking
    lot's hops, the flow count of growth, and the operating point's C (Mbit/s) with m
    of n flows jittered."""

    ds: float | None
    hops: int
    n: int
    at_C: float
    jitter_m: int
    jitter_n: int


def _flow_stats(res: SimResult, f: int, warm: float, rate: float, loss: float) -> dict[str, float | None]:
    import numpy as np

    rs = res.rtt_samples[f]
    t = np.frombuffer(rs.time, dtype=float)
    q = (np.frombuffer(rs.rtt, dtype=float)[t >= warm] - res.config.flows[f].R) * 1000
    have = len(q) > 0
    return {"rate_mbps": rate * 8 / 1e6, "p50_delay": float(np.median(q)) if have else None,
            "avg_delay": float(np.mean(q)) if have else None, "loss_rate": loss}


def run_contract_task(task: ContractTask) -> dict[str, Any]:
    """Worker: one dumbbell run, its per-flow points as a JSON-able row."""
    prog = load_cca(task.cca_path, task.cca_text)
    C, R = task.C_mbps * 1e6 / 8, task.R_ms / 1000
    D = 0.0 if task.model == "ideal" else R
    buf = None if task.buffer_bdp is None else task.buffer_bdp * C * R
    cfg = SimConfig(Link(task.model, C, D, buf), tuple(Flow(prog, R) for _ in range(task.flows)), task.duration,
                    seed=task.seed)
    t0 = time.perf_counter()
    res = simulate(cfg)
    warm = task.duration * STEADY_FROM
    m = metrics(res, warm)
    flows = [_flow_stats(res, i, warm, fm.throughput, fm.loss_rate) for i, fm in enumerate(m.flows)]
    rates = [fl["rate_mbps"] or 0.0 for fl in flows]
    ratio = max(rates) / min(rates) if min(rates) > 0 else math.inf
    return {"C_mbps": task.C_mbps, "flows": task.flows, "R_ms": task.R_ms, "buffer_bdp": task.buffer_bdp,
            "seed": task.seed, "duration_s": task.duration, "utilization": m.utilization,
            "ratio": ratio if math.isfinite(ratio) else None, "unfair": bool(ratio > UNFAIR_RATIO),
            "per_flow": flows, "wall_s": time.perf_counter() - t0}


def points(rows: list[dict[str, Any]], stat: str) -> tuple[list[float], list[float]]:
    """(statistic, rate) of every flow of these runs that has both, rate > 0."""
    ss, rr = [], []
    for row in rows:
        for fl in row["per_flow"]:
            if fl[stat] is not None and fl["rate_mbps"] > 0:
                ss.append(float(fl[stat]))
                rr.append(float(fl["rate_mbps"]))
    return ss, rr


def flat(s: list[float], r: list[float]) -> bool:
    """The statistic hardly moves while the rates vary: its spread in log is at most
    :data:`FLAT_SPREAD` of the rates' (an elasticity above 1/FLAT_SPREAD), so the
    same observation comes with different rates, which no contract describes."""
    if not s or max(s) <= 0:
        return True
    if min(s) <= 0 or min(r) <= 0:
        return False
    return math.log(max(s) / min(s)) <= FLAT_SPREAD * math.log(max(r) / min(r))


def fit_stats(rows: list[dict[str, Any]]) -> tuple[dict[str, dict[Family, Fit | None]], list[str]]:
    """Every family's fit per statistic, and the statistics left out as flat."""
    import numpy as np

    out: dict[str, dict[Family, Fit | None]] = {}
    flats = []
    for stat in STATS:
        s, r = points(rows, stat)
        out[stat] = fit_all(np.array(s), np.array(r))
        if flat(s, r):
            flats.append(stat)
    return out, flats


def choose(fits: dict[str, dict[Family, Fit | None]]) -> tuple[str, Fit] | None:
    """The statistic and fit of least error."""
    picks = [(stat, f) for stat, fs in fits.items() if (f := best(fs)) is not None]
    return min(picks, key=lambda x: x[1].mse, default=None)


def determine(con: Contract, stat: str, s_min: float, s_max: float, q: Question) -> dict[str, Any]:
    """Table 6.2's metrics over [S_min, S_max], App. C's bounds and operating points."""
    how = STATS[stat][2]
    ds = DEFAULT_DS[stat] if q.ds is None else q.ds
    c_min, c_max = con.f(s_max), con.f(s_min)
    eps = robustness(con, ds, s_min, s_max)
    grow = growth(con, q.n, c_min, c_max)
    rng = bandwidth_range(con, s_min, s_max)
    C = q.at_C
    return {
        "s_min": s_min, "s_max": s_max, "c_min_mbps": c_min, "c_max_mbps": c_max, "delta_s": ds,
        "hops": q.hops, "n": q.n,
        "robustness": eps, "unfairness": unfairness(con, q.hops, how, c_min, c_max), "growth": grow,
        "range": rng,
        "bounds": {
            "C.1.1_growth_at_least": c11_growth_floor(eps, ds, s_min, q.n),
            "C.1.2_range_at_most": c12_range_ceiling(eps, ds, s_min, s_max),
            # C.1.3 and C.1.4 are derived for statistics that add up along a path
            # (delay); a loss rate folds as 1 − Π(1 − s), and they need not hold
            "C.1.3_growth_at_least": c13_growth_floor(con, q.n, how, c_min, c_max) if how == "sum" else None,
            "C.1.4_range_at_most": c14_range_ceiling(con, how, s_min, s_max) if how == "sum" else None,
        },
        "predictions": {
            "C_mbps": C,
            "dumbbell": {"n": q.jitter_n, "s": dumbbell(con, C, q.jitter_n)},
            "jitter": {"m": q.jitter_m, "n": q.jitter_n, "delta_s": ds,
                       **(jitter(con, C, q.jitter_n, q.jitter_m, ds) or {})},
            "parking_lot": {"hops": q.hops, **(parking_lot(con, C, q.hops, how) or {})},
        },
    }


def analyze(rows: list[dict[str, Any]], q: Question) -> dict[str, Any]:
    """The contract of these runs, or why there is none."""
    unfair = sum(1 for r in rows if r["unfair"])
    has_contract = unfair * 2 <= len(rows)
    used = [r for r in rows if not r["unfair"]] if has_contract else rows
    fits, flats = fit_stats(used)
    pick = choose({k: v for k, v in fits.items() if k not in flats}) if has_contract else None
    out: dict[str, Any] = {
        "n_runs": len(rows), "unfair_runs": unfair, "fitted_runs": len(used),
        "fits": {stat: {fam: None if (f := fs.get(fam)) is None else
                        {**f.contract.json(), "mse_log": f.mse, "points": f.points} for fam in FAMILIES}
                 for stat, fs in fits.items()},
        "flat_statistics": flats, "contract": None,
    }
    if pick is None:
        out["no_contract"] = (
            f"{unfair} of {len(rows)} runs are unfair (max/min rate > {UNFAIR_RATIO:g})" if not has_contract
            else "no statistic gives a decreasing fit" + (
                f"; {', '.join(STATS[x][0] for x in flats)} hardly move while the rates vary"
                f" {min(points(used, flats[0])[1]):.3g}..{max(points(used, flats[0])[1]):.3g} Mbit/s: the same"
                " observation gives different rates" if flats else ""))
        return out
    stat, fit = pick
    s, _ = points(used, stat)
    out["contract"] = {"statistic": stat, "text": f"rate = {fit.contract.text(STATS[stat][0])}",
                       **fit.contract.json(), "mse_log": fit.mse, "points": fit.points,
                       "determines": determine(fit.contract, stat, min(s), max(s), q)}
    return out


def contract_of(d: dict[str, Any]) -> Contract:
    """The :class:`Contract` of a fit's JSON."""
    return Contract(d["family"], d["a"], d["p"], d["c"], d["b"])
