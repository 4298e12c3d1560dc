"""(f) of benchmarks/kernel_yardstick.py: the parking lot (thesis Fig. 6.1, §6.5) in
the kernel (``ccmatic testbed --topology parking-lot``), the simulator (``ccmatic
simulate --topology parking-lot``, the same finite buffer on every hop) and the
CCA's contract (``ccmatic contract``: thesis Eq. 6.1.5's operating point, fitted in
the simulator at the same R, buffer and C).

The figure is the parking lot's unfairness: the short flows' mean throughput over
the long flow's (flow 0, across every hop)."""

from __future__ import annotations

from statistics import mean
from typing import Any

from yardstick_figures import fig, table
from yardstick_runs import LOG, Opts, ccmatic, side_runs

#: the kernel's CCA and the simulator's file for it
CCAS = {"reno": "templates/reno.cca", "cubic": "templates/cubic.cca", "bbr": "templates/bbr1.cca"}
C_MBPS, R_MS, BUFFER = 24, 20, 1


def unfairness(d: dict[str, Any]) -> float:
    """Short flows' mean throughput over the long flow's."""
    t = [f["throughput"] for f in d["metrics"]["flows"]]
    return mean(t[1:]) / t[0] if t[0] > 0 else float("inf")


def contract_ratio(cca: str, hops: int) -> tuple[float | None, str]:
    """The contract's parking-lot ratio at C (None if it fits no contract), and its text."""
    d = ccmatic("contract", [cca, "--C", f"{C_MBPS},{2 * C_MBPS},{4 * C_MBPS}", "--R", str(R_MS), "--buffer",
                             str(BUFFER), "--hops", str(hops), "--at", str(C_MBPS), "--duration", "60"])
    con = None if d is None else d.get("contract")
    if not con:
        return None, "no contract"
    pl = con["determines"]["predictions"].get("parking_lot") or {}
    return pl.get("ratio"), con["text"]


def exp_f(o: Opts) -> dict[str, Any]:
    print(f"### (f) Parking lots: short flows' throughput over the long flow's ({C_MBPS} Mbit/s per hop, "
          f"{R_MS} ms, {BUFFER}-BDP buffer on every hop, {o.durations(60)}, metrics after 20%)\n")
    rows, out = [], []
    for hops in (2, 3):
        for cca, path in CCAS.items():
            def make(t: float, cca: str = cca, path: str = path, hops: int = hops) -> tuple[list[str], list[str]]:
                common = ["--topology", "parking-lot", "--hops", str(hops), "--C", str(C_MBPS), "--R", str(R_MS),
                          "--buffer", str(BUFFER), "--duration", f"{t:g}"]
                return [cca, *common], [path, *common]
            k, s = side_runs(o, 60, make)
            ratio, text = contract_ratio(path, hops) if o.want("sim") else (None, "not asked (--sides)")
            kr, sr = [unfairness(d) for d in k], [unfairness(d) for d in s]
            kl, sl = [float(d["metrics"]["loss_rate"]) for d in k], [float(d["metrics"]["loss_rate"]) for d in s]
            util = [float(h["utilization"]) for d in k for h in d["metrics"]["hops"]]
            out.append({"hops": hops, "cca": cca, "kernel": kr, "sim": sr, "contract": ratio, "contract_text": text,
                        "kernel_hop_util": util, "kernel_loss": kl, "sim_loss": sl})
            rows.append([str(hops), cca, fig(kr), fig(sr), "–" if ratio is None else f"{ratio:.2f}", fig(util),
                         fig(kl, ".2e"), fig(sl, ".2e")])
    table(["hops", "CCA", "kernel", "simulator", "contract", "kernel hop utilization", "loss kernel", "loss sim"],
          rows)
    print("contracts: " + "; ".join(f"{r['cca']} ({r['hops']} hops): {r['contract_text']}" for r in out) + "\n")
    return {"rows": out, "runs": len(LOG)}
