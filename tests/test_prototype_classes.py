"""benchmarks/prototype_classes.py (docs/performance.md, "what the counts mean"): it
reads a run log in the thesis prototype's printed shape and matches its solutions to a
``ccmatic synth --json`` run class by class.  The logs here are written for the test,
in that shape; the published logs stay outside the repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "prototype_classes.py"

LOG_2EXPR = """\
[06/06 15:01:42]  Iteration: 1 (0 solution, 0 counterexamples)
[06/06 15:01:42]  Candidate solution:\x20
\x1b[1mr_f = max alpha,
if (+ -1min_c + 1max_c + 2alpha > 0):
    + 1alpha + 1min_c
else:
    + -1alpha + 1/2min_c\x1b[0m
[06/06 15:01:43]  Iteration: 2 (0 solution, 1 counterexamples)
[06/06 15:01:43]  Candidate solution:\x20
r_f = max alpha,
if (+ 1min_qdel > 0):
    + -1alpha + 1min_c
else:
    + 1alpha + 1min_c
[06/06 15:01:43]  Proved solution:\x20
r_f = max alpha,
if (+ 1min_qdel > 0):
    + -1alpha + 1min_c
else:
    + 1alpha + 1min_c
[06/06 15:01:44]  Took 1.0 secs.
"""


def holes(a: tuple[str, ...], leaves: tuple[str, ...]) -> dict[str, str]:
    return dict(zip(("a1", "a2", "a3", "a4", "a5"), a)) | dict(zip(("b0", "k0", "b1", "k1"), leaves))


def run(tmp_path: Path, log: str, ours: list[dict[str, str]]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "log.txt").write_text(log)
    (tmp_path / "run.json").write_text(json.dumps({"status": "complete", "holes": ours}))
    return subprocess.run([sys.executable, str(SCRIPT), "--log", str(tmp_path / "log.txt"),
                           "--ours", str(tmp_path / "run.json")], check=False, capture_output=True, text=True, timeout=60)


def test_two_expression_classes_match_across_constant_terms(tmp_path: Path) -> None:
    # ccmatic's first solution differs from the prototype's only in the constant terms
    # (MSS/R in the leaves), so it is the same class; the second is another class.
    same = holes(("0", "0", "1", "0", "0"), ("1", "0", "1", "1"))
    other = holes(("-1", "1", "0", "0", "2"), ("1", "1", "1/2", "-1"))
    p = run(tmp_path, LOG_2EXPR, [same, other])
    assert p.returncode == 0, p.stderr
    assert "prototype: 2 candidates, 1 solutions; ccmatic: 2 solutions (complete)" in p.stdout
    assert ("1 of ccmatic's 2 classes are prototype solutions' classes; 0 were never proposed by the "
            "prototype; 0 of the prototype's 1 solution classes are not among ccmatic's") in p.stdout


def test_a_prototype_class_missing_from_ours_is_counted(tmp_path: Path) -> None:
    other = holes(("-1", "1", "0", "0", "2"), ("1", "1", "1/2", "-1"))
    p = run(tmp_path, LOG_2EXPR, [other])
    assert p.returncode == 0, p.stderr
    assert "0 of ccmatic's 1 classes" in p.stdout
    assert "1 of the prototype's 1 solution classes are not among ccmatic's" in p.stdout


def test_a_log_of_another_template_is_one_error_line(tmp_path: Path) -> None:
    bad = LOG_2EXPR.replace("else:\n    + 1alpha + 1min_c\n[06/06 15:01:44]", "[06/06 15:01:44]")
    p = run(tmp_path, bad, [])
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "error: neither the 2-expression nor the nested 4-expression template" in lines[0]


LOG_CBR = """\
[09/13 16:07:17]  Iteration: 1 (0 solution, 0 counterexamples)
[09/13 16:07:17]  Candidate solution:\x20
r_f = max alpha,
if (+ -1alpha + 1bq_belief > 0):
    + -1bq_belief
else:
    + 1alpha + 3min_c_lambda
[09/13 16:07:19]  Proved solution:\x20
r_f = max alpha,
if (+ -1alpha + 1bq_belief > 0):
    + -1bq_belief
else:
    + 1alpha + 3min_c_lambda
[09/13 16:07:20]  Took 3.0 secs.
"""


def cbr_holes(a6: str, a5: str, leaves: tuple[str, ...]) -> dict[str, str]:
    a = {"a1": "0", "a2": "0", "a3": "0", "a4": "0", "a5": a5, "a6": a6}
    return a | dict(zip(("b0", "q0", "k0", "b1", "q1", "k1"), leaves))


def test_cbr_classes_count_the_queue_bound_and_ignore_constants(tmp_path: Path) -> None:
    # the prototype's solution with -MSS/R added to its drain: the same class; with the
    # condition's q_hi coefficient doubled, or the drain without -q_hi/R, another class
    same = cbr_holes("1", "-1", ("0", "-1", "-1", "3", "0", "1"))
    doubled = cbr_holes("2", "-2", ("0", "-1", "0", "3", "0", "1"))
    no_q = cbr_holes("1", "-1", ("0", "0", "0", "3", "0", "1"))
    p = run(tmp_path, LOG_CBR, [same, doubled, no_q])
    assert p.returncode == 0, p.stderr
    assert "`[-1MSS/R+1q_hi/R] ? -1q_hi/R-1MSS/R : 3c_lo_lambda+1MSS/R` | yes | 1 |" in p.stdout
    assert ("1 of ccmatic's 3 classes are prototype solutions' classes; 2 were never proposed by the "
            "prototype; 0 of the prototype's 1 solution classes are not among ccmatic's") in p.stdout
