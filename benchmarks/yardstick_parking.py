"""(f) of benchmarks/kernel_yardstick.py: the parking lot (thesis Fig. 6.1, §6.5) in
the kernel (``ccmatic testbed --topology parking-lot``), the simulator (``ccmatic
simulate --topology parking-lot``, the same finite buffer on every hop) and the
CCA's contract (``ccmatic contract``: thesis Eq. 6.1.5's operating point, fitted in
the simulator at the same R, buffer and C).

The figure is the parking lot's unfairness: the short flows' mean throughput over
the long flow's (flow 0, across every hop)."""

from __future__ import annotations

from functools import cache
from statistics import mean
from typing import Any

from yardstick_figures import fig, table
from yardstick_runs import BURST, LOG, Opts, ccmatic, side_runs, sim_runs

from ccmatic.sim.contract import STATS
from ccmatic.sim.contract_math import Contract
from ccmatic.sim.contract_theory import parking_lot

#: the kernel's CCA and the simulator's file for it
CCAS = {"reno": "templates/reno.cca", "cubic": "templates/cubic.cca", "bbr": "templates/bbr1.cca"}
C_MBPS, R_MS, BUFFER = 24, 20, 1


def unfairness(d: dict[str, Any]) -> float:
    """Short flows' mean throughput over the long flow's."""
    t = [f["throughput"] for f in d["metrics"]["flows"]]
    return mean(t[1:]) / t[0] if t[0] > 0 else float("inf")


@cache
def fitted(cca: str) -> dict[str, Any] | None:
    """The CCA's contract, fitted once (``ccmatic contract --json``'s ``contract``; None
    if it fits none): the fit does not depend on the hop count, only its prediction."""
    d = ccmatic("contract", [cca, "--C", f"{C_MBPS},{2 * C_MBPS},{4 * C_MBPS}", "--R", str(R_MS), "--buffer",
                             str(BUFFER), "--at", str(C_MBPS), "--duration", "60"])
    return None if d is None else d.get("contract") or None


def contract_ratio(cca: str, hops: int) -> tuple[float | None, str]:
    """The contract's parking-lot ratio at C on ``hops`` hops (None if it fits no
    contract), and its text: Eqs. 6.1.2–6.1.4 on the fitted contract."""
    con = fitted(cca)
    if con is None:
        return None, "no contract"
    f = Contract(con["family"], con["a"], con["p"], con["c"], con["b"])
    pl = parking_lot(f, C_MBPS, hops, STATS[con["statistic"]][2])
    return (None if pl is None else pl["ratio"]), con["text"]


def _row(o: Opts, cca: str, path: str, hops: int, link: tuple[int, int, float],
         contract: tuple[float | None, str] | None, burst: bool) -> tuple[dict[str, Any], list[str]]:
    """One row: kernel and simulator runs of ``cca`` (the simulator's ``path``) on a
    ``hops``-hop parking lot of ``link`` = (C Mbit/s, R ms, buffer BDP); ``contract``
    the predicted ratio (None: fit the CCA's contract with ``ccmatic contract``); with
    ``burst`` (an unpaced CCA) the simulator's runs again with ``--burst 2``."""
    C, R, B = link

    def make(t: float) -> tuple[list[str], list[str]]:
        common = ["--topology", "parking-lot", "--hops", str(hops), "--C", str(C), "--R", str(R), "--buffer", f"{B:g}",
                  "--duration", f"{t:g}"]
        return [cca, *common], [path, *common]
    k, s = side_runs(o, 60, make)
    sb = sim_runs(o, 60, make, BURST) if burst else []
    if contract is None:
        contract = contract_ratio(path, hops) if o.want("sim") else (None, "not asked (--sides)")
    ratio, text = contract
    kr, sr, br = [unfairness(d) for d in k], [unfairness(d) for d in s], [unfairness(d) for d in sb]
    kl, sl = [float(d["metrics"]["loss_rate"]) for d in k], [float(d["metrics"]["loss_rate"]) for d in s]
    util = [float(h["utilization"]) for d in k for h in d["metrics"]["hops"]]
    bl = [float(d["metrics"]["loss_rate"]) for d in sb]
    r = {"hops": hops, "cca": cca, "link": link, "kernel": kr, "sim": sr, "sim_burst": br, "contract": ratio,
         "contract_text": text, "kernel_hop_util": util, "kernel_loss": kl, "sim_loss": sl, "sim_burst_loss": bl}
    return r, [str(hops), cca, fig(kr), fig(sr), fig(br), "–" if ratio is None else f"{ratio:.2f}", fig(util),
               fig(kl, ".2e"), fig(sl, ".2e"), fig(bl, ".2e")]


HEAD = ["hops", "CCA", "kernel", "simulator", "simulator, bursts of 2", "contract", "kernel hop utilization",
        "loss kernel", "loss sim", "loss sim, bursts of 2"]
#: the thesis' canonical contract CCA (§6.4–6.5, Fig. 6.6), exported for the kernel, on a
#: deep buffer (it keeps a queue, loses nothing): rate = C_max·S_min/s with s the
#: queueing delay, which the long flow sums over k hops, so it gets 1/k of a short flow
LIN, LIN_LINK = "templates/contract_lin.cca", (48, 10, 8.0)


def exp_f(o: Opts) -> dict[str, Any]:
    print(f"### (f) Parking lots: short flows' throughput over the long flow's ({C_MBPS} Mbit/s per hop, "
          f"{R_MS} ms, {BUFFER}-BDP buffer on every hop, {o.durations(60)}, metrics after 20%)\n")
    out, rows = [], []
    for hops in (2, 3):
        for cca, path in CCAS.items():
            r, row = _row(o, cca, path, hops, (C_MBPS, R_MS, BUFFER), None, cca != "bbr")
            out.append(r)
            rows.append(row)
    table(HEAD, rows)
    print("contracts: " + "; ".join(f"{r['cca']} ({r['hops']} hops): {r['contract_text']}" for r in out) + "\n")
    C, R, B = LIN_LINK
    print(f"The thesis' canonical contract CCA, {LIN} exported ({C} Mbit/s per hop, {R} ms, {B:g}-BDP buffers; "
          "its contract rate = C_max·S_min/s predicts unfairness k on k hops, Fig. 6.6):\n")
    lin = [_row(o, LIN, LIN, hops, LIN_LINK, (float(hops), "1/s: k"), False) for hops in (2, 3)]
    table(HEAD, [row for _, row in lin])
    return {"rows": out + [r for r, _ in lin], "runs": len(LOG)}
