"""The two checks of ``ccmatic verify`` timed apart, over seeds (issue 26).

    python benchmarks/deciding_check.py QUERY --T 10,15,20 [--seeds 0-4] [--timeout S]
                                        [--mode push|flat] [--vacuity]

Each (T, seed) runs in a fresh process (Z3's time depends on incidental state, so
one process per sample).  The problem is built as ``verify`` builds it
(``engine/verify.py:build_query``); ``--mode push`` (what ``solve`` does) adds the
base constraints to a ``SolverFor("QF_LRA")`` and checks the negated property in a
pushed scope, ``flat`` adds everything to a new one and checks once (Z3's
whole-formula preprocessing, no scope).  ``--vacuity`` also times the check of
``confirm_proved`` (the base alone, in a new scope after the pop) when the deciding
check is unsat.  Prints one JSON line per sample and a Markdown table of medians:
assertions (as in ``--dump-smt2``: the base and the negated property), the deciding
check's seconds and the vacuity check's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from typing import Any

import z3

from ccmatic.core.scenario import Query
from ccmatic.engine.session import Session, Unsat, answer, make_solver
from ccmatic.engine.verify import build_query, query_cca
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query


def load(path: str, T: int) -> Query:
    lib = Library.default(None)
    q = load_query(lib.require("queries", path), lib, load_objectives(lib))
    return q if T == q.T else replace(q, scenario=replace(q.scenario, T=T), expect=None, expect_solutions=None)


def sample(path: str, T: int, seed: int, timeout: float, mode: str, vacuity: bool) -> dict[str, Any]:
    """One sample, in this process."""
    q = load(path, T)
    prob, prop = build_query(q, query_cca(q))
    base = prob.base()
    neg = z3.Not(prop)
    out: dict[str, Any] = {"query": q.name, "T": T, "seed": seed, "mode": mode, "asserts": len(base) + 1}
    t0 = time.perf_counter()
    if mode == "push":
        sess = Session(base, timeout, seed)
        r = sess.check([("negated property", neg)])
    else:
        s = make_solver(timeout, seed)
        for _tag, c in base:
            s.add(c)
        s.add(neg)
        r = answer(s)
    out["deciding_s"] = round(time.perf_counter() - t0, 2)
    out["answer"] = type(r).__name__.lower()
    if vacuity and mode == "push" and isinstance(r, Unsat):
        t1 = time.perf_counter()
        v = sess.check()
        out["vacuity_s"] = round(time.perf_counter() - t1, 2)
        out["vacuity"] = type(v).__name__.lower()
    return out


def span(text: str) -> list[int]:
    if "-" in text:
        lo, hi = (int(x) for x in text.split("-", 1))
        return list(range(lo, hi + 1))
    return [int(x) for x in text.split(",")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("query")
    ap.add_argument("--T", default="10,15,20", help="horizons, e.g. 10,15,20 or 10-12")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--timeout", type=float, default=1800.0, help="limit of one check, seconds")
    ap.add_argument("--mode", choices=["push", "flat"], default="push")
    ap.add_argument("--vacuity", action="store_true")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a worker: one sample, JSON out
    a = ap.parse_args()
    if a.one:
        print(json.dumps(sample(a.query, int(a.T), int(a.seeds), a.timeout, a.mode, a.vacuity)))
        return 0
    rows: dict[int, list[dict[str, Any]]] = {}
    for T in span(a.T):
        for seed in span(a.seeds):
            cmd = [sys.executable, __file__, a.query, "--one", "--T", str(T), "--seeds", str(seed),
                   "--timeout", str(a.timeout), "--mode", a.mode] + (["--vacuity"] if a.vacuity else [])
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                return done.returncode
            d = json.loads(done.stdout)
            print(json.dumps(d), flush=True)
            rows.setdefault(T, []).append(d)
    print(f"\n| {a.query} ({a.mode}) | asserts | deciding check, median (seeds) | vacuity check, median |")
    print("|---|---|---|---|")
    for T, ds in rows.items():
        dec = [d["deciding_s"] for d in ds]
        vac = [d["vacuity_s"] for d in ds if "vacuity_s" in d]
        vac_text = f"{statistics.median(vac):.2f} s" if vac else "-"
        print(f"| T={T} | {ds[0]['asserts']:,} | {statistics.median(dec):.2f} s ({', '.join(f'{x:.2f}' for x in dec)}; "
              f"{ds[0]['answer']}) | {vac_text} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
