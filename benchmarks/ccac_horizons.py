"""CCAC's example questions at longer horizons, through CCAC's own code and through
ccmatic, side by side (issue 26).

    python benchmarks/ccac_horizons.py --ccac DIR [--horizons 10,15,20,30] [--rows NAME,...]
        [--repeat N] [--once-from T] [--limit S] [--bytecode cached|none] [--json FILE] [--markdown FILE]

``--ccac DIR`` is a checkout of CCAC (github.com/venkatarun95/ccac, with its
``pyz3_utils`` filled in) that the user provides; nothing of it is copied here.  For
each row and horizon T, ``--repeat`` times, two processes run one after the other:

* **CCAC**: this script again (``--child``) in a fresh temporary folder, which imports
  CCAC from DIR and builds the question as ``example_queries.py`` does
  (``ModelConfig.default()``, its flags, ``make_solver``, its assertions,
  ``make_periodic``) with ``c.T = T``, then asks it with CCAC's ``run_query`` and a
  cache folder of its own, so no answer is ever read from a cache.  Left out of
  ``example_queries.py``: plotting a witness, and ``copa_low_util``'s debugging
  lines (an SMT-LIB dump, a first ``s.check()`` and its statistics), which would ask
  the question twice.
* **ccmatic**: ``ccmatic verify QUERY --T T --json`` for the query that states the
  same question (``queries/ccac/``).

Both run with the interpreter running this script, as Python runs by default: the
bytecode of every module imported (CCAC's, ccmatic's, Z3's, the standard library's)
compiled once and cached, here in a temporary folder of the run
(``PYTHONPYCACHEPREFIX``), filled by one untimed run of each side (the AIMD row at T
= 10) before the first timed one.  ``--bytecode none`` runs both without any bytecode
(``PYTHONDONTWRITEBYTECODE=1``): each process then compiles every module it imports,
about 0.07 s of ccmatic's start and much less of CCAC's, which imports less source.

Reported per row: CCAC's process wall, its ``run_query`` seconds, its solver check
seconds (Z3's ``check()`` inside ``run_query``'s worker, timed by a subclass of
``z3.Solver`` this script puts in place of the one ``run_query`` uses) and its
assertion count (``len(s.assertion_list)``); ccmatic's process wall, encode and solve
seconds and assertion count (the asserts of the deciding check); both verdicts (in
CCAC's words: sat = a witness, unsat = none), which must agree; and the speed-up
(CCAC's process wall over ccmatic's).  Walls are medians of ``--repeat`` runs.  A run
over ``--limit`` seconds is stopped (its whole process group) and reported as over the
limit; that side is then neither repeated nor run at larger T.

Two rows are ccmatic's only (see ``ROWS``): CCAC has no CCA of their names.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the CCAC child (this script) loads nothing of ccmatic
    from ccmatic.io.growth import Growth

ROOT = Path(__file__).resolve().parent.parent
#: what the CCAC child prints before its JSON line
RESULT = "CCAC-RESULT "
CHECK = "CCAC-CHECK-S "


@dataclass(frozen=True)
class Row:
    query: str  # ccmatic's query, relative to the repository
    ccac: bool  # whether CCAC asks it too (a function of CCAC_QUESTIONS)
    note: str = ""


ROWS = {
    "copa_low_util": Row("queries/ccac/copa_low_util.toml", True),
    "bbr_low_util": Row("queries/ccac/bbr_low_util.toml", True),
    "aimd_premature_loss": Row("queries/ccac/aimd_premature_loss.toml", True),
    "cc_qdel-ccac": Row("queries/verify/cc_qdel-ccac.toml", False,
                        "ccmatic only: cc_qdel (thesis) and the synthesis invariant need beliefs CCAC lacks"),
    "copa-jitter0": Row("queries/multiflow/copa-jitter0.toml", False,
                        "ccmatic only: CCAC's multi-flow model has no per-flow FIFO split or CBR-delay link"),
}


# -- the CCAC side (runs in the child process, with CCAC's folder on sys.path) ----------

def _ccac_question(name: str, T: int) -> tuple[Any, Any, Any]:
    """(c, s, v) of one of example_queries.py's questions, with c.T = T."""
    from config import ModelConfig
    from model import make_solver
    from utils import make_periodic
    from z3 import And, Not, Or

    c = ModelConfig.default()
    c.simplify = False
    if name == "copa_low_util":
        c.compose = False
        c.cca = "copa"
        c.calculate_qdel = True
        c.unsat_core = False
        c.T = T
        s, v = make_solver(c)
        s.add(v.L[0] == v.L[-1])
        s.add(v.S[-1] - v.S[0] < 0.1 * c.C * c.T)
        make_periodic(c, s, v, c.R + c.D)
    elif name == "bbr_low_util":
        c.compose = True
        c.cca = "bbr"
        c.T = T
        s, v = make_solver(c)
        s.add(v.L[0] == 0)
        s.add(v.S[-1] - v.S[0] < 0.1 * c.C * c.T)
        make_periodic(c, s, v, 2 * c.R)
    elif name == "aimd_premature_loss":
        c.cca = "aimd"
        c.buf_min = 2
        c.buf_max = 2
        c.T = T
        s, v = make_solver(c)
        s.add(v.L[0] == 0)
        s.add(v.alpha <= 0.1 * c.C * c.R)
        conds = [And(v.c_f[0][t] <= 2, v.Ld_f[0][t + 1] - v.Ld_f[0][t] >= 1,
                     v.S[t + 1 - c.R] - v.S[t - c.R] >= c.C + 1, v.A[t + 1] >= v.A[t] + 2, v.L[t + 1] > v.L[t])
                 for t in range(2, c.T - 1)]
        for t in range(c.T):
            s.add(Not(v.timeout_f[0][t]))
        s.add(Or(*conds))
    else:
        raise SystemExit(f"no CCAC question {name!r}")
    return c, s, v


def _time_ccac_checks() -> None:
    """Put a z3.Solver whose check() prints its seconds where run_query's worker
    (forked) takes its solver from."""
    import multiprocessing as mp

    import z3
    from pyz3_utils import cache

    class TimedSolver(z3.Solver):  # type: ignore[misc]
        def check(self, *assumptions: Any) -> Any:
            t0 = time.perf_counter()
            r = super().check(*assumptions)
            print(f"{CHECK}{time.perf_counter() - t0:.4f}", flush=True)
            return r

    mp.set_start_method("fork", force=True)
    cache.Solver = TimedSolver


def child(ccac: Path, name: str, T: int, limit: float) -> None:
    sys.path.insert(0, str(ccac))
    _time_ccac_checks()
    from pyz3_utils import run_query

    t0 = time.perf_counter()
    c, s, v = _ccac_question(name, T)
    build = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="ccac-cache-") as cache_dir:
        t1 = time.perf_counter()
        res = run_query(c, s, v, limit, dir=cache_dir)
        query = time.perf_counter() - t1
    print(RESULT + json.dumps({"verdict": str(res.satisfiable), "build_s": round(build, 4),
                               "query_s": round(query, 4), "assertions": len(s.assertion_list)}), flush=True)


# -- running one side once ---------------------------------------------------------------

def child_env(bytecode: Path | None) -> dict[str, str]:
    """Both sides' environment.  ``bytecode``: a folder of this run where Python caches
    the bytecode of every module it imports (``PYTHONPYCACHEPREFIX``), as Python does by
    default (an installed package comes with it, a checkout has it after its first run),
    without writing into CCAC's checkout or the repository; None: no bytecode at all
    (``PYTHONDONTWRITEBYTECODE=1``, every process compiles each module it imports)."""
    env = dict(os.environ)
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if bytecode is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return env


def _run(cmd: list[str], cwd: Path, limit: float, env: dict[str, str]) -> tuple[float, str | None, int]:
    """Process wall, stdout (None: over the limit, the process group killed), exit code."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, env=env)
    try:
        out, _err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return time.perf_counter() - t0, None, -1
    return time.perf_counter() - t0, out, p.returncode


def run_ccac(ccac: Path, name: str, T: int, limit: float, env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ccac-run-") as cwd:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--T", str(T),
               "--ccac", str(ccac), "--limit", str(limit)]
        wall, out, code = _run(cmd, Path(cwd), limit + 30, env)
    if out is None:
        return {"wall_s": round(wall, 3), "verdict": "over limit"}
    found = [ln[len(RESULT):] for ln in out.splitlines() if ln.startswith(RESULT)]
    if not found:
        return {"wall_s": round(wall, 3), "verdict": f"failed (exit {code})"}
    checks = [float(ln[len(CHECK):]) for ln in out.splitlines() if ln.startswith(CHECK)]
    r = json.loads(found[-1])
    if r["verdict"] == "unknown":
        r["verdict"] = "over limit"
    return {"wall_s": round(wall, 3), **r, "check_s": round(sum(checks), 4) if checks else None}


def run_ccmatic(query: str, T: int, limit: float, env: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "ccmatic.cli.main", "verify", str(ROOT / query), "--T", str(T), "--json",
           "--timeout", str(limit)]
    wall, out, code = _run(cmd, ROOT, limit + 30, env)
    if out is None:
        return {"wall_s": round(wall, 3), "verdict": "over limit"}
    try:
        r = json.loads(out)
    except json.JSONDecodeError:
        return {"wall_s": round(wall, 3), "verdict": f"failed (exit {code})"}
    verdict = r.get("answer", r["verdict"])
    if r["verdict"] == "unknown":
        verdict = "over limit" if "timeout" in r.get("reason", "") or "canceled" in r.get("reason", "") \
            else f"unknown ({r.get('reason', '')})"
    return {"wall_s": round(wall, 3), "verdict": verdict, "encode_s": r.get("encode_s"),
            "solve_s": r.get("solve_s"), "assertions": r.get("n_constraints")}


# -- rows, repeats, agreement ------------------------------------------------------------

#: CCAC's answers in ccmatic's words for an exists question
WORDS = {"sat": "witness", "unsat": "no_witness"}


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median wall (the lower one of an even count), with every wall."""
    walls = [r["wall_s"] for r in runs]
    pick = dict(runs[walls.index(statistics.median_low(walls))])
    return {**pick, "wall_all_s": walls}


def decided(side: dict[str, Any] | None) -> bool:
    return side is not None and side["verdict"] in ("witness", "no_witness", "proved", "counterexample")


def finish(row: dict[str, Any]) -> dict[str, Any]:
    """Agreement and speed-up of a measured row."""
    cc, cm = row.get("ccac"), row["ccmatic"]
    if cc is not None:
        cc["verdict"] = WORDS.get(cc["verdict"], cc["verdict"])
    if decided(cc) and decided(cm):
        assert cc is not None
        row["agree"] = cc["verdict"] == cm["verdict"]
        row["speedup"] = round(cc["wall_s"] / cm["wall_s"], 2) if cm["wall_s"] > 0 else None
    return row


def over(runs: list[dict[str, Any]]) -> bool:
    return any(r["verdict"] == "over limit" for r in runs)


def measure(args: argparse.Namespace, name: str, T: int, skip: set[tuple[str, str]]) -> dict[str, Any]:
    """One row: ``--repeat`` times (once from ``--once-from`` on) CCAC then ccmatic
    (interleaved), medians."""
    spec = ROWS[name]
    with_ccac = spec.ccac and (name, "ccac") not in skip
    with_ccmatic = (name, "ccmatic") not in skip
    repeat = 1 if args.once_from is not None and T >= args.once_from else args.repeat
    cc_runs: list[dict[str, Any]] = []
    cm_runs: list[dict[str, Any]] = []
    for _ in range(repeat):  # a run over the limit is not repeated
        if with_ccac and not over(cc_runs):
            cc_runs.append(run_ccac(args.ccac, name, T, args.limit, args.env))
        if with_ccmatic and not over(cm_runs):
            cm_runs.append(run_ccmatic(spec.query, T, args.limit, args.env))
    skipped = {"verdict": "not run (over the limit at a smaller T)"}
    row: dict[str, Any] = {"row": name, "query": spec.query, "T": T,
                           "ccac": (median_run(cc_runs) if cc_runs else skipped) if spec.ccac else None,
                           "ccmatic": median_run(cm_runs) if cm_runs else skipped}
    if spec.note:
        row["note"] = spec.note
    for side in ("ccac", "ccmatic"):
        if row[side] is not None and row[side]["verdict"] == "over limit":
            skip.add((name, side))
    return finish(row)


# -- output ------------------------------------------------------------------------------

COLUMNS = ["row", "T", "CCAC wall", "CCAC run_query", "CCAC check", "CCAC asserts", "CCAC verdict",
           "ccmatic wall", "encode", "solve", "asserts", "ccmatic verdict", "speed-up"]


def _s(x: Any) -> str:
    return "–" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)


def cells(row: dict[str, Any]) -> list[str]:
    cc, cm = row["ccac"] or {}, row["ccmatic"]
    speed = f"{row['speedup']:.1f}x" if row.get("speedup") else "–"
    return [row["row"], str(row["T"]), _s(cc.get("wall_s")), _s(cc.get("query_s")), _s(cc.get("check_s")),
            _s(cc.get("assertions")), cc.get("verdict", "(ccmatic only)"), _s(cm.get("wall_s")),
            _s(cm.get("encode_s")), _s(cm.get("solve_s")), _s(cm.get("assertions")), cm["verdict"], speed]


def text_line(row: dict[str, Any]) -> str:
    c = cells(row)
    ccac = f"CCAC {c[2]:>8s}s (run_query {c[3]}, check {c[4]}, {c[5]} asserts) {c[6]:11s}" if row["ccac"] else \
        f"{'CCAC: none (ccmatic only)':67s}"
    line = (f"{c[0]:20s} T={c[1]:>3s}  {ccac}"
            f"  ccmatic {c[7]:>7s}s (encode {c[8]}, solve {c[9]}, {c[10]} asserts) {c[11]:11s}  {c[12]}")
    if row.get("agree") is False:
        line += "\n  !!! VERDICTS DISAGREE: CCAC {} , ccmatic {} !!!".format(row["ccac"]["verdict"],
                                                                         row["ccmatic"]["verdict"])
    return line


def markdown(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    once = f" --once-from {args.once_from}" if args.once_from is not None else ""
    cmd = (f"`python benchmarks/ccac_horizons.py --ccac CCAC --horizons {args.horizons} --repeat {args.repeat}"
           f"{once} --limit {args.limit:g}`")
    runs = f"{args.repeat} run(s)" + (f" (one from T = {args.once_from})" if once else "")
    head = [f"{cmd}: seconds, walls the median of {runs}, CCAC and ccmatic one after the other per row.",
            "",
            "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    body = ["| " + " | ".join(cells(r)) + " |" for r in rows]
    notes = sorted({f"- {r['row']}: {r['note']}" for r in rows if r.get("note")})
    return "\n".join([*head, *body, "", *notes]) + "\n"


def fits(rows: list[dict[str, Any]]) -> list[tuple[str, str, Growth]]:
    """Per row and side, how the process wall grows with T, over the horizons answered."""
    from ccmatic.io.growth import fit_growth

    out = []
    for name in dict.fromkeys(r["row"] for r in rows):
        for side in ("ccac", "ccmatic"):
            pts = [(int(r["T"]), float(r[side]["wall_s"])) for r in rows
                   if r["row"] == name and decided(r[side])]
            g = fit_growth(name, pts)
            if g is not None:
                out.append((name, side, g))
    return out


def fit_line(side: str, g: Growth) -> str:
    return f"fit {'CCAC' if side == 'ccac' else side} {g.text()}"


def measure_all(args: argparse.Namespace, names: list[str], horizons: list[int]) -> list[dict[str, Any]]:
    rows, skip = [], set()  # type: ignore[var-annotated]
    for name in names:
        for T in horizons:
            row = measure(args, name, T, skip)
            print(text_line(row), flush=True)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--ccac", type=Path, required=True, metavar="DIR", help="a checkout of CCAC (venkatarun95/ccac)")
    ap.add_argument("--horizons", default="10,15,20,30", help="horizons T, e.g. 10,15,20,30")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"rows to run (default all: {','.join(ROWS)})")
    ap.add_argument("--repeat", type=int, default=1, metavar="N", help="runs per row and side (median)")
    ap.add_argument("--once-from", type=int, default=None, metavar="T",
                    help="run horizons from T on only once (the long rows)")
    ap.add_argument("--limit", type=float, default=1800, metavar="S", help="seconds per run (default 1800)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table as markdown")
    ap.add_argument("--bytecode", choices=("cached", "none"), default="cached",
                    help="cached (default): both sides' modules compiled once, as after an install; "
                         "none: every process compiles what it imports (PYTHONDONTWRITEBYTECODE=1)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--T", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.ccac.resolve(), args.child, args.T, args.limit)
        return 0
    if not (args.ccac / "example_queries.py").is_file():
        ap.error(f"--ccac {args.ccac}: no example_queries.py there (a checkout of venkatarun95/ccac?)")
    args.ccac = args.ccac.resolve()
    names = args.rows.split(",")
    if unknown := [n for n in names if n not in ROWS]:
        ap.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    horizons = sorted(int(x) for x in args.horizons.split(","))
    with tempfile.TemporaryDirectory(prefix="ccac-horizons-bytecode-") as cache:
        args.env = child_env(Path(cache) if args.bytecode == "cached" else None)
        if args.bytecode == "cached":  # one untimed run of each side fills the cache
            run_ccac(args.ccac, "aimd_premature_loss", 10, args.limit, args.env)
            run_ccmatic(ROWS["aimd_premature_loss"].query, 10, args.limit, args.env)
        rows = measure_all(args, names, horizons)
    growth = fits(rows)
    for side, g in ((side, g) for _name, side, g in growth):
        print(fit_line(side, g), flush=True)
    if any(r.get("agree") is False for r in rows):
        print("!!! CCAC and ccmatic DISAGREE on some rows (above) !!!", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "repeat": args.repeat, "limit_s": args.limit,
                                               "horizons": horizons,
                                               "fits": [{"side": side, **g.json()} for _n, side, g in growth]},
                                              indent=2) + "\n")
    if args.markdown:
        fit_text = "".join(f"- {fit_line(side, g)}\n" for _n, side, g in growth)
        Path(args.markdown).write_text(markdown(rows, args) + ("\n" + fit_text if fit_text else ""))
    return 1 if any(r.get("agree") is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
