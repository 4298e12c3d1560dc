"""The kernel as yardstick (issue 27, deliverable 3; docs/testbed.md, "The kernel as
yardstick"): real Linux TCP (``ccmatic testbed``) beside the simulator (``ccmatic
simulate``), ns-3 and the published models.

    sudo .venv/bin/python benchmarks/kernel_yardstick.py [--only a,b,c,d,e,f] [--seeds N]
        [--sim-seeds N] [--duration S] [--sides kernel,sim,ns3] [--quickack] [--json FILE]

Experiments (defaults in brackets; --duration overrides every run's length):

* ``a``: one BBRv1 against one CUBIC flow, 50 Mbit/s, 40 ms, buffers 1.5/2/3/5/10 BDP
  [120 s]: BBR's share in the kernel, the simulator (templates/bbr1.cca against
  templates/cubic.cca, as benchmarks/sim_models.py's bbr_cubic), ns-3
  (benchmarks/ns3_dumbbell.py; needs ``pip install -e '.[ns3]'``) and Mishra et al.'s
  model (``theory.bbr_vs_cubic_share``);
* ``b``: N = 2, 4, 8 BBRv1 flows on a 1/4-BDP buffer, 50 Mbit/s, 40 ms [60 s]: utilization,
  loss rate against the fluid model's (N − 1)/5N, Jain's index; each flow's BBR bandwidth
  estimate (``--series``: the kernel's own via TCP_CC_INFO; bbr1.cca's) against 5/(4N + 1);
* ``c``: one Reno flow on a 1-BDP buffer [60 s]: throughput over Mathis et al.'s
  1.22·MSS/(RTT·√p), p = the loss rate (retransmitted / sent bytes), RTT the mean
  (``--quickack``: the kernel's receiver ACKs every segment, as the simulator's);
* ``d``: BBRv1 on a 1/4-BDP buffer with ACK aggregation (D = R = 40 ms), C = 12 to
  96 Mbit/s [60 s]: loss per RTprop against the BDP, and the log-log slope (1: O(BDP),
  as the thesis' Fig. B.4; 0.5: √BDP);
* ``e``: exported templates/cc_qdel.cca and templates/cc_probe_slow.cca with ACK
  aggregation (D = R) on a few of B.6's configurations [60 s, metrics over the second
  half, as ``ccmatic evaluate``]: utilization, RTT and loss per RTprop against their
  proofs' bounds (proofs/*.toml) and at most 2 packets lost per RTprop;
* ``f``: Reno, CUBIC and BBRv1 on 2- and 3-hop parking lots, 24 Mbit/s, 20 ms, a 1-BDP
  buffer on every hop [60 s]: the short flows' throughput over the long flow's in the
  kernel, the simulator and the CCA's contract (thesis Eq. 6.1.5, fitted by ``ccmatic
  contract`` in the simulator); and the thesis' canonical contract CCA
  (templates/contract_lin.cca, exported) on 48 Mbit/s, 10 ms, 8-BDP hops against its
  prediction, unfairness k on k hops (benchmarks/yardstick_parking.py).

Every kernel run is ``ccmatic testbed ... --json`` and every simulator run ``ccmatic simulate
... --json`` in a subprocess, one at a time (kernel runs are real time: run nothing else on
the machine); after each kernel run, ``ip netns``, ``ip -br link`` and ``bpftool struct_ops
show`` must name nothing ``ccmtb*``.  Tables go to stdout as markdown, progress and the
exact commands to stderr; --json keeps every run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import mean
from typing import Any

from yardstick_figures import fig, held, slope, table
from yardstick_parking import exp_f
from yardstick_runs import BURST, LOG, ROOT, SIDES, Opts, bbr_estimates, side_runs, sim_runs, tbf_drop_rate

__all__ = ["bbr_estimates", "fig", "slope"]  # the tests' helpers

# ---------------------------------------------------------------- (a) BBR vs CUBIC

def exp_a(o: Opts) -> dict[str, Any]:
    from ccmatic.sim import theory

    T = o.dur(120)
    print(f"### (a) BBRv1 vs CUBIC: BBR's share of C (50 Mbit/s, 40 ms, {o.durations(120)}, metrics after 20%)\n")
    ns3_note = ns3_available() if o.want("ns3") else "not asked (--sides)"
    rows, out = [], []
    for b in [float(x) for x in o.buffers.split(",")]:
        def make(t: float, b: float = b) -> tuple[list[str], list[str]]:
            common = ["--flows", "2", "--C", "50", "--R", "40", "--buffer", f"{b:g}", "--duration", f"{t:g}"]
            return ["bbr", "--with", "cubic", *common], ["templates/bbr1.cca", "--with", "templates/cubic.cca", *common]
        k, s = side_runs(o, 120, make)
        ks = [d["metrics"]["flows"][0]["share"] for d in k]
        ss = [d["metrics"]["flows"][0]["share"] for d in s]
        ku = [d["metrics"]["utilization"] for d in k]
        n3 = ns3_shares(b, T, o.sim_seeds) if ns3_note is None else []
        model = theory.bbr_vs_cubic_share(b)
        rows.append([f"{b:g}", fig(ks), fig(ss), fig(n3) if ns3_note is None else "–", f"{model:.2f}", fig(ku)])
        out.append({"buffer_bdp": b, "kernel": ks, "sim": ss, "ns3": n3, "model": model, "kernel_util": ku})
    table(["buffer (BDP)", "kernel", "simulator", "ns-3", "Mishra et al.", "kernel utilization"], rows)
    if ns3_note is not None:
        print(f"ns-3: {ns3_note}\n")
    return {"rows": out, "ns3": ns3_note}


def ns3_available() -> str | None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import ns  # noqa: F401
        import ns3_dumbbell  # noqa: F401
    except ImportError as e:
        return f"not installed ({e}; pip install -e '.[ns3]')"
    return None


def ns3_shares(b: float, T: float, seeds: int) -> list[float]:
    from ns3_dumbbell import Scenario, run_ns3

    out = []
    for seed in range(seeds):
        t0 = time.monotonic()
        sc = Scenario(("bbr", "cubic"), (40.0, 40.0), C_mbps=50.0, buffer_bdp=b, duration=T, warmup=0.2 * T, seed=seed)
        r = run_ns3(sc)
        print(f"  ns-3 bbr vs cubic, {b:g} BDP, seed {seed}: {r.shares[0]:.3f} ({time.monotonic() - t0:.0f} s)",
              file=sys.stderr, flush=True)
        LOG.append({"command": f"ns-3 Scenario(('bbr','cubic'), buffer_bdp={b}, duration={T}, seed={seed})",
                    "shares": r.shares, "utilization": r.utilization, "wall_s": round(time.monotonic() - t0, 1)})
        out.append(r.shares[0])
    return out


# ---------------------------------------------------------------- (b) N BBR flows, shallow buffer

def exp_b(o: Opts) -> dict[str, Any]:
    from ccmatic.sim import theory

    print(f"### (b) N BBRv1 flows on a 1/4-BDP buffer (50 Mbit/s, 40 ms, {o.durations(60)}) vs the BBR fluid model\n")
    rows, out = [], []
    for n in (2, 4, 8):
        def make(t: float, n: int = n) -> tuple[list[str], list[str]]:
            common = ["--flows", str(n), "--C", "50", "--R", "40", "--buffer", "0.25", "--duration", f"{t:g}"]
            return ["bbr", *common], ["templates/bbr1.cca", *common]
        with tempfile.TemporaryDirectory() as tmp:
            k, s = side_runs(o, 60, make, Path(tmp))
        r: dict[str, Any] = {"N": n, "kernel_util": [d["metrics"]["utilization"] for d in k],
             "sim_util": [d["metrics"]["utilization"] for d in s],
             "kernel_loss": [d["metrics"]["loss_rate"] for d in k], "kernel_tbf_drops": [tbf_drop_rate(d) for d in k],
             "sim_loss": [d["metrics"]["loss_rate"] for d in s], "model_loss": theory.bbr_shallow_buffer_loss(n),
             "kernel_jain": [d["metrics"]["jain"] for d in k], "sim_jain": [d["metrics"]["jain"] for d in s],
             "model_estimate": theory.bbr_shallow_buffer_estimate(n),
             "kernel_estimate": [x for d in k for x in d["bbr"]["btl_bw_over_C"]],
             "sim_estimate": [x for d in s for x in d["bbr"]["btl_bw_over_C"]],
             "kernel_held": [x for d in k for x in d["bbr"]["held"]],
             "sim_held": [x for d in s for x in d["bbr"]["held"]]}
        out.append(r)
        rows.append([str(n), fig(r["kernel_util"]), fig(r["sim_util"]), fig(r["kernel_loss"], ".3f"),
                     fig(r["kernel_tbf_drops"], ".3f"), fig(r["sim_loss"], ".3f"), f"{r['model_loss']:.3f}",
                     fig(r["kernel_jain"], ".3f"), fig(r["sim_jain"], ".3f"), fig(r["kernel_estimate"], ".3f"),
                     fig(r["sim_estimate"], ".3f"), f"{r['model_estimate']:.3f}",
                     held(r["kernel_held"]), held(r["sim_held"])])
    table(["N", "util kernel", "util sim", "loss kernel (retrans)", "loss kernel (tbf drops)", "loss sim",
           "model (N−1)/5N", "Jain kernel", "Jain sim", "estimate kernel", "estimate sim", "model estimate 5/(4N+1)",
           "held kernel", "held sim"], rows)
    return {"rows": out}


# ---------------------------------------------------------------- (c) Reno vs Mathis

def exp_c(o: Opts) -> dict[str, Any]:
    from ccmatic.sim import theory

    print(f"### (c) One Reno flow on a 1-BDP buffer ({o.durations(60)}): throughput / Mathis et al. "
          "(p = loss rate)\n")
    rows, out = [], []
    for C, R in ((24, 20), (24, 80), (96, 20)):
        def make(t: float, C: int = C, R: int = R) -> tuple[list[str], list[str]]:
            common = ["--C", str(C), "--R", str(R), "--buffer", "1", "--duration", f"{t:g}"]
            return ["reno", *common], ["templates/reno.cca", *common]
        k, s = side_runs(o, 60, make)
        sb = sim_runs(o, 60, make, BURST)

        def ratio(d: dict[str, Any]) -> float:
            f, mss = d["metrics"]["flows"][0], d["config"]["mss"]
            p = f["loss_rate"]
            return float("nan") if not p else float(f["throughput"] / theory.mathis_throughput(mss, f["rtt_mean"], p))
        r: dict[str, Any] = {"C": C, "R": R, "kernel": [ratio(d) for d in k], "sim": [ratio(d) for d in s],
             "sim_burst": [ratio(d) for d in sb],
             "kernel_p": [d["metrics"]["flows"][0]["loss_rate"] for d in k],
             "sim_p": [d["metrics"]["flows"][0]["loss_rate"] for d in s],
             "sim_burst_p": [d["metrics"]["flows"][0]["loss_rate"] for d in sb],
             "kernel_util": [d["metrics"]["utilization"] for d in k], "sim_util": [d["metrics"]["utilization"] for d in s]}
        out.append(r)
        rows.append([str(C), str(R), fig(r["kernel"]), fig(r["sim"]), fig(r["sim_burst"]), fig(r["kernel_p"], ".2e"),
                     fig(r["sim_p"], ".2e"), fig(r["sim_burst_p"], ".2e"), fig(r["kernel_util"]), fig(r["sim_util"])])
    table(["C Mbit/s", "R ms", "kernel / Mathis", "sim / Mathis", "sim, bursts of 2 / Mathis", "p kernel", "p sim",
           "p sim, bursts of 2", "util kernel", "util sim"], rows)
    return {"rows": out}


# ---------------------------------------------------------------- (d) BBR loss vs BDP, ACK aggregation

#: (d)'s second simulator column: each batch's ACKs 3 µs apart (the testbed's delay line
#: sends a frame in about 2.7 µs, docs/testbed.md (d)) and ticks of R/200, fine enough
#: for the sender to act between the ACKs of one batch, as the kernel does
TRAIN = ["--ack-train", "3", "--ticks", "200"]


def exp_d(o: Opts) -> dict[str, Any]:
    T = o.kdur(60)
    print(f"### (d) BBRv1 loss per RTprop vs BDP: 1/4-BDP buffer, ACK aggregation D = R = 40 ms "
          f"({o.durations(60)})\n")
    rows: list[list[str]] = []
    out: list[dict[str, Any]] = []
    for C in (12, 24, 48, 96):
        def make(t: float, C: int = C) -> tuple[list[str], list[str]]:
            common = ["--model", "ack_agg", "--D", "40", "--C", str(C), "--R", "40", "--buffer", "0.25",
                      "--duration", f"{t:g}"]
            return ["bbr", *common], ["templates/bbr1.cca", *common]
        k, s = side_runs(o, 60, make)
        st = sim_runs(o, 60, make, TRAIN)
        bdp = C * 1e6 / 8 * 0.04 / 1514
        kl = [d["metrics"]["loss_per_R_mean"] for d in k]
        kt = [d["bottleneck"].get("drops", 0) / (T / 0.04) for d in k]
        sl = [d["metrics"]["loss_per_R_mean"] for d in s]
        tl = [d["metrics"]["loss_per_R_mean"] for d in st]
        out.append({"C": C, "bdp_pkts": bdp, "kernel": kl, "kernel_tbf": kt, "sim": sl, "sim_train": tl,
                    "kernel_util": [d["metrics"]["utilization"] for d in k],
                    "sim_util": [d["metrics"]["utilization"] for d in s],
                    "sim_train_util": [d["metrics"]["utilization"] for d in st]})
        rows.append([str(C), f"{bdp:.0f}", fig(kl, ".1f"), fig(kt, ".1f"), fig(sl, ".1f"), fig(tl, ".1f"),
                     *(f"{mean(x) / bdp:.3f}" if x else "–" for x in (kl, sl, tl)),
                     fig(out[-1]["kernel_util"]), fig(out[-1]["sim_util"]), fig(out[-1]["sim_train_util"])])
    table(["C Mbit/s", "BDP pkts", "loss/R kernel (retrans)", "loss/R kernel (tbf drops)", "loss/R sim",
           "loss/R sim, ACK trains", "kernel / BDP", "sim / BDP", "sim, trains / BDP", "util kernel", "util sim",
           "util sim, trains"], rows)
    fits: dict[str, float | None] = {}
    for key in ("kernel", "kernel_tbf", "sim", "sim_train"):
        xs = [r["bdp_pkts"] for r in out if r[key]]
        fits[key] = slope(xs, [mean(r[key]) for r in out if r[key]])
    print("log-log slope of loss/R against BDP: " + ", ".join(
        f"{k} {'–' if v is None else f'{v:.2f}'}" for k, v in fits.items()) + "\n")
    return {"rows": out, "slopes": fits}


# ---------------------------------------------------------------- (e) exported proved CCAs

def bounds(cca: str) -> dict[str, float]:
    from ccmatic.cli.evaluate import proved_bounds
    from ccmatic.io.library import Library

    pb = proved_bounds(Library.default(None), cca)
    return {} if pb is None else dict(pb.constants)


#: B.6 configurations (C Mbit/s, R ms, buffer BDP) per CCA: cc_qdel's proof needs
#: β ≥ 3·C·(R + D) = 6 BDP; cc_probe_slow's is on CBR-delay, any buffer
E_CONFIGS = {"cc_qdel": ((24, 40, 8), (48, 20, 16), (48, 40, 8)),
             "cc_probe_slow": ((24, 40, 4), (48, 20, 4), (48, 40, 1))}


def exp_e(o: Opts) -> dict[str, Any]:
    print(f"### (e) Exported CCAs with ACK aggregation (D = R), {o.durations(60)}, metrics over the second half\n")
    rows, out = [], []
    for cca, configs in E_CONFIGS.items():
        if cca not in o.e_ccas.split(","):
            continue
        c = bounds(cca)
        for C, R, b in configs:
            def make(t: float, cca: str = cca, C: int = C, R: int = R, b: float = b) -> tuple[list[str], list[str]]:
                common = [f"templates/{cca}.cca", "--model", "ack_agg", "--C", str(C), "--R", str(R), "--D", str(R),
                          "--buffer", f"{b:g}", "--duration", f"{t:g}", "--warmup", f"{t / 2:g}"]
                return common, common
            k, s = side_runs(o, 60, make)
            rtt_bound = (c["rtt"] * 2 * R / 1000 + 1514 * 8 / (C * 1e6)) if "rtt" in c else None
            row: dict[str, Any] = {"cca": cca, "C": C, "R": R, "buffer": b, "bounds": c, "rtt_bound_s": rtt_bound}
            for side, ds in (("kernel", k), ("sim", s)):
                row[side] = {"util": [d["metrics"]["utilization"] for d in ds],
                             "rtt_max_R": [max(f["rtt_max"] for f in d["metrics"]["flows"]) / (R / 1000) for d in ds],
                             "queue_max_bdp": [d["metrics"]["queue_max_bdp"] for d in ds],
                             "loss_max": [d["metrics"]["loss_per_R_max"] for d in ds]}
            out.append(row)
            ub = f"≥ {c['util']:.2f}" if "util" in c else "–"
            qb = (f"RTT ≤ {rtt_bound / (R / 1000):.2f} R" if rtt_bound else
                  f"queue ≤ {2 * c['inflight']:.2f} BDP" if "inflight" in c else "–")
            kq = "rtt_max_R" if rtt_bound else "queue_max_bdp"
            rows.append([cca, f"{C}/{R}/{b:g}", ub, fig(row["kernel"]["util"]), fig(row["sim"]["util"]), qb,
                         fig(row["kernel"][kq]), fig(row["sim"][kq]),
                         fig(row["kernel"]["loss_max"], ".0f"), fig(row["sim"]["loss_max"], ".0f")])
    table(["CCA", "C/R/buffer", "util bound", "util kernel", "util sim", "delay bound", "kernel", "sim",
           "max loss/R kernel (≤ 2)", "max loss/R sim (≤ 2)"], rows)
    return {"rows": out}


EXPERIMENTS: dict[str, Callable[[Opts], dict[str, Any]]] = {"a": exp_a, "b": exp_b, "c": exp_c, "d": exp_d, "e": exp_e,
                                                             "f": exp_f}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(EXPERIMENTS), help="comma-separated experiments (default: a,b,c,d,e,f)")
    ap.add_argument("--seeds", type=int, default=3, help="kernel runs per figure (default 3)")
    ap.add_argument("--sim-seeds", type=int, default=3, help="simulator (and ns-3) runs per figure (default 3)")
    ap.add_argument("--duration", type=float, default=None, help="seconds per run (default: per experiment)")
    ap.add_argument("--kernel-duration", type=float, default=None,
                    help="seconds per kernel run (default: --duration), to fit kernel time")
    ap.add_argument("--buffers", default="1.5,2,3,5,10", help="(a)'s buffers in BDPs (default 1.5,2,3,5,10)")
    ap.add_argument("--first-seed", type=int, default=0, help="the kernel runs' first --seed (default 0)")
    ap.add_argument("--e-ccas", default=",".join(E_CONFIGS), help="(e)'s CCAs (default: cc_qdel,cc_probe_slow)")
    ap.add_argument("--sides", default=",".join(SIDES), help="which of kernel,sim,ns3 to run (default all)")
    ap.add_argument("--quickack", action="store_true", help="kernel receivers ACK every segment (testbed --quickack)")
    ap.add_argument("--json", metavar="FILE", default=None, help="write every run's figures and commands")
    o = ap.parse_args(namespace=Opts())
    names = o.only.split(",")
    bad = [n for n in names if n not in EXPERIMENTS] + [s for s in o.sides.split(",") if s not in SIDES]
    if bad or o.seeds < 1 or o.sim_seeds < 1:
        ap.error(f"unknown experiment or side {bad[0]!r}" if bad else "--seeds and --sim-seeds must be at least 1")
    results: dict[str, Any] = {}
    for name in names:
        t0 = time.monotonic()
        results[name] = EXPERIMENTS[name](o)
        results[name]["wall_s"] = round(time.monotonic() - t0)
        print(f"  ({name}: {time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
    if o.json:
        Path(o.json).write_text(json.dumps({"argv": sys.argv, "results": results, "runs": LOG}, indent=1) + "\n")
    return 1 if any(e.get("leftovers") for e in LOG) else 0


if __name__ == "__main__":
    sys.exit(main())
