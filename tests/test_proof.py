"""``ccmatic prove`` and ``ccmatic search`` (ccmatic/proof): lemmas, coverage,
stitching, progress, the transition graph, constant search, the result cache, and
bad input.

The proof files live in ``tests/data/proofs/`` and use cheap models and small
horizons (T = 3..6).  Most tests come in tight pairs: the same file proves with one
constant and fails with a slightly different one, so a checker that answered
"proved" (or "counterexample") for everything would not pass.  The thresholds are computed
by hand in the comments of ``const_rate-ideal.toml``: on the ideal link (C = 100,
R = 1, MSS <= C R / 5 = 20) const_rate sends exactly MSS per step, so

* ``rate_bound`` (rate <= k MSS / R) holds exactly for k >= 1;
* ``one_step`` (bq[0] <= 2 C R => bq[1] <= qb C R) holds exactly for qb >= 6/5
  (200 queued, 100 served, at most 20 sent: 120).

The CLI is called in-process (``ccmatic.cli.main``); ``--jobs 1`` unless a test is
about parallelism, so that no worker processes are spawned.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli as run
from helpers import solver_gives_up
from hypothesis import given, settings
from hypothesis import strategies as st

from ccmatic.engine.proof.graph import find_cycle, reaches
from ccmatic.engine.proof.search import next_probe, simplest_between

PROOFS = Path(__file__).parent / "data" / "proofs"
BAD = PROOFS / "bad"
MAIN = PROOFS / "const_rate-ideal.toml"

# file, then optional :line and :col, then ': error: ' and the message (as test_bad_input)
ERROR_LINE = re.compile(r"^(?P<file>.+?)(?::(?P<line>\d+)(?::(?P<col>\d+))?)?: error: (?P<msg>.+)$")




def prove(path: Path, *extra: object, jobs: int = 1) -> tuple[int, dict[str, Any]]:
    code, out, err = run("prove", path, "--json", "--jobs", jobs, *extra)
    assert out, f"no JSON output (exit {code}), stderr: {err!r}"
    return code, json.loads(out)


def search(path: Path, lemma: str, constant: str, *extra: object) -> tuple[int, dict[str, Any]]:
    code, out, err = run("search", path, "--json", "--lemma", lemma, "--constant", constant, *extra)
    assert out, f"no JSON output (exit {code}), stderr: {err!r}"
    return code, json.loads(out)


def lemma(d: dict[str, Any], name: str) -> dict[str, Any]:
    hits: list[dict[str, Any]] = [lem for lem in d["lemmas"] if lem["name"] == name]
    assert len(hits) == 1, f"lemma {name!r} in {[lem['name'] for lem in d['lemmas']]}"
    return hits[0]


def lemma_results(d: dict[str, Any]) -> dict[str, str]:
    return {lem["name"]: lem["verdict"] for lem in d["lemmas"]}


def check(d: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The one stitching/progress/guarantee entry whose description starts with prefix."""
    hits: list[dict[str, Any]] = [s for s in d["stitching"] if s["what"].startswith(prefix)]
    assert len(hits) == 1, f"{prefix!r} in {[s['what'] for s in d['stitching']]}"
    return hits[0]


def params(tr: dict[str, Any]) -> dict[str, Fraction]:
    return {k: Fraction(v) for k, v in tr["params"].items() if v is not None}


def agg(tr: dict[str, Any], name: str) -> list[Fraction]:
    return [Fraction(x) for x in tr["aggregate"][name]]


def flow(tr: dict[str, Any], name: str) -> list[Fraction]:
    return [Fraction(x) for x in tr["flows"][0][name]]


def without_times(d: Any) -> Any:
    """A report with its timings (and the job count) removed, for comparing runs."""
    if isinstance(d, dict):
        return {k: without_times(v) for k, v in d.items() if k not in ("time_s", "jobs")}
    if isinstance(d, list):
        return [without_times(x) for x in d]
    return d


# -- 1. a small correct proof ---------------------------------------------------------------

def test_small_proof_proved_json() -> None:
    """A correct small proof is proved: JSON with every part, its constants, and each lemma proved with a time."""
    code, d = prove(MAIN)
    assert code == 0
    assert d["verdict"] == "proved"
    assert {"verdict", "lemmas", "coverage", "graph", "stitching"} <= d.keys()
    assert d["T"] == 4 and d["constants"] == {"k": "1", "qb": "6/5", "w": "1"}
    assert [lem["name"] for lem in d["lemmas"]] == ["rate_bound", "one_step", "drains", "closed"]
    for lem in d["lemmas"]:
        assert {"name", "verdict", "time_s"} <= lem.keys()
        assert lem["verdict"] == "proved"
        assert isinstance(lem["time_s"], float) and lem["time_s"] >= 0
        assert "trace" not in lem and not lem.get("vacuous")
    assert d["coverage"]["verdict"] == "proved"
    whats = [s["what"] for s in d["stitching"]]
    assert any(w.startswith("stitching: High --[drains]--> Low") for w in whats)
    assert any(w.startswith("stitching: Low --[closed]--> Low") for w in whats)
    assert all(s["verdict"] == "proved" for s in d["stitching"]), d["stitching"]
    g = d["graph"]
    assert g["verdict"] == "proved" and g["problems"] == []
    assert {(e["from"], e["to"]) for e in g["edges"]} == {("High", "Low"), ("High", "High"), ("Low", "Low")}


def test_small_proof_text_output() -> None:
    """The text report lists each lemma as proved and ends PROVED; progress goes to stderr."""
    code, out, err = run("prove", MAIN, "--jobs", "1")
    assert code == 0
    assert out.strip().splitlines()[-1].startswith("PROVED")
    for name in ("rate_bound", "one_step", "drains", "closed"):
        line = next(x for x in out.splitlines() if x.strip().startswith(f"lemma {name} "))
        assert "proved" in line
    assert "COUNTEREXAMPLE" not in out and "counterexample" not in out
    assert "checking const_rate-ideal" in err  # progress goes to stderr, not stdout


def test_jobs_2_same_as_jobs_1() -> None:
    """Two workers give the same report as one (times aside), for a proved and a refuted proof."""
    code1, d1 = prove(MAIN, jobs=1)
    code2, d2 = prove(MAIN, jobs=2)
    assert (code1, code2) == (0, 0)
    assert d1["jobs"] == 1 and d2["jobs"] == 2
    assert without_times(d1) == without_times(d2)
    # and with a failing lemma: the same lemma fails, with a counterexample, either way
    code1, d1 = prove(MAIN, "--set", "qb=119/100", jobs=1)
    code2, d2 = prove(MAIN, "--set", "qb=119/100", jobs=2)
    assert (code1, code2) == (1, 1)
    assert lemma_results(d1) == lemma_results(d2) == {
        "rate_bound": "proved", "one_step": "counterexample", "drains": "proved", "closed": "proved"}
    assert "trace" in lemma(d2, "one_step")


def test_T_override() -> None:
    """--T overrides the proof's horizon, also in the workers; T = 1 is refused."""
    code, d = prove(MAIN, "--T", "3")
    assert code == 0 and d["T"] == 3 and d["verdict"] == "proved"
    code, d = prove(MAIN, "--T", "3", "--set", "qb=119/100", jobs=2)  # the workers get T too
    assert code == 1 and len(lemma(d, "one_step")["trace"]["aggregate"]["bq"]) == 3
    expect_one_error_line(("prove", MAIN, "--T", "1"), "--T", None, None, ("T must be at least 2",))


def test_example_proof_needs_its_horizon() -> None:
    """proofs/cc_qdel-ccac.toml at T = 5 instead of 10: coverage, stitching and the
    graph do not depend on T and still hold (in pure logic); B.4.1 (consistent beliefs
    stay consistent) holds at any T; some lemma needs the longer window."""
    code, d = prove(Path("cc_qdel-ccac"), "--T", "5", jobs=2)
    assert code == 1 and d["verdict"] == "counterexample" and d["T"] == 5
    assert d["coverage"]["verdict"] == "proved"
    assert all(s["verdict"] == "proved" for s in d["stitching"]), d["stitching"]
    assert all(s["method"] == "logic" for s in d["stitching"] if s["what"].startswith("stitching")), d["stitching"]
    assert d["graph"]["verdict"] == "proved"
    assert lemma(d, "B.4.1")["verdict"] == "proved"
    failed = [lem for lem in d["lemmas"] if lem["verdict"] == "counterexample"]
    assert failed and all(len(lem["trace"]["aggregate"]["S"]) == 5 for lem in failed)


# -- 2. a wrong constant ----------------------------------------------------------------------

@pytest.mark.parametrize(("setting", "name", "want"), [
    ("qb=6/5", "one_step", "proved"),      # the hand-computed threshold
    ("qb=119/100", "one_step", "counterexample"),  # just below it
    ("k=1", "rate_bound", "proved"),
    ("k=99/100", "rate_bound", "counterexample"),
])
def test_constant_tight_pairs(setting: str, name: str, want: str) -> None:
    """Each hand-computed threshold proves its lemma and a constant just past it refutes that lemma alone."""
    code, d = prove(MAIN, "--set", setting)
    key, value = setting.split("=")
    assert d["constants"][key] == value
    assert lemma(d, name)["verdict"] == want
    others = {n: r for n, r in lemma_results(d).items() if n != name}
    assert set(others.values()) == {"proved"}, others
    assert d["verdict"] == want and code == (0 if want == "proved" else 1)


def test_wrong_constant_counterexample_json() -> None:
    """A refuted lemma's JSON trace meets the premise and breaks the conclusion in exact rationals."""
    code, d = prove(MAIN, "--set", "qb=119/100")
    assert code == 1 and d["verdict"] == "counterexample"
    lem = lemma(d, "one_step")
    assert lem["verdict"] == "counterexample"
    tr = lem["trace"]
    assert tr["T"] == 4 and tr["N"] == 1
    p = params(tr)
    C, R = p["C"], p["R"]
    bq = agg(tr, "bq")
    # the trace really meets the premise and breaks the conclusion, in exact rationals
    assert bq[0] <= 2 * C * R
    assert bq[1] > Fraction(119, 100) * C * R
    # ... and obeys what const_rate and the model say
    assert all(r == p["MSS"] / R for r in flow(tr, "rate")[1:])
    assert p["MSS"] <= C * R / 5
    assert all(isinstance(x, str) for x in tr["aggregate"]["bq"])
    for other in ("rate_bound", "drains", "closed"):
        assert "trace" not in lemma(d, other)


def test_wrong_constant_text_names_the_lemma() -> None:
    """The text report names the refuted lemma once, on its line, in the summary and on stderr."""
    code, out, err = run("prove", MAIN, "--jobs", "1", "--set", "qb=119/100")
    assert code == 1
    line = next(x for x in out.splitlines() if x.strip().startswith("lemma one_step "))
    assert "COUNTEREXAMPLE" in line
    assert "counterexample to lemma one_step" in out
    assert out.count("counterexample to lemma") == 1
    assert any(x.startswith("COUNTEREXAMPLE") for x in out.splitlines())
    assert "  one_step checked (" in err and "COUNTEREXAMPLE" not in err  # progress; the verdict only on stdout


# -- 3. the transition graph ------------------------------------------------------------------

def test_graph_control_is_proved() -> None:
    """A transition graph without problems is proved."""
    code, d = prove(PROOFS / "graph_ok.toml")
    assert code == 0 and d["verdict"] == "proved"
    assert d["graph"]["verdict"] == "proved" and d["graph"]["problems"] == []


@pytest.mark.parametrize(("name", "needles"), [
    ("graph_cycle", ("cycle",)),
    ("graph_steady_leaves", ("steady state 'Z'", "edges to other states")),
    ("graph_dead_end", ("'B'", "no edge out")),
])
def test_graph_problems(name: str, needles: tuple[str, ...]) -> None:
    """A cycle, a steady state with outgoing edges and a dead end each refute the graph, named in its problems."""
    code, d = prove(PROOFS / f"{name}.toml")
    assert code == 1 and d["verdict"] == "counterexample"
    g = d["graph"]
    assert g["verdict"] == "counterexample"
    assert any(all(n in prob for n in needles) for prob in g["problems"]), g["problems"]
    assert set(lemma_results(d).values()) == {"proved"}  # the lemmas are trivially true


def test_graph_search_finds_cycles_and_paths() -> None:
    """The graph's depth-first search: a three-state cycle behind an acyclic part is
    found (in order), a DAG has none; reachability follows edges one way only."""
    cyc = {"S": ["A"], "A": ["B"], "B": ["C"], "C": ["A"], "Z": []}
    found = find_cycle(cyc)
    assert found is not None and len(found) == 3 and set(found) == {"A", "B", "C"}
    assert all(found[(i + 1) % 3] in cyc[x] for i, x in enumerate(found))
    dag = {"A": ["B", "C"], "B": ["C"], "C": ["Z"], "Z": []}
    assert find_cycle(dag) is None
    assert reaches(dag, "A", "Z") and not reaches(dag, "Z", "A") and reaches(dag, "Z", "Z")


def test_graph_cycle_is_the_only_failure() -> None:
    """graph_cycle differs from graph_ok by the edge B -> A: everything else proves."""
    code, d = prove(PROOFS / "graph_cycle.toml")
    assert code == 1
    assert d["coverage"]["verdict"] == "proved"
    assert all(s["verdict"] == "proved" for s in d["stitching"]), d["stitching"]
    probs = d["graph"]["problems"]
    assert len(probs) == 1 and "cycle" in probs[0]
    assert "A -> B -> A" in probs[0] or "B -> A -> B" in probs[0]
    assert ("B", "A") in {(e["from"], e["to"]) for e in d["graph"]["edges"]}


# -- 4. coverage --------------------------------------------------------------------------------

def test_coverage_missing_equality_fails() -> None:
    """States that miss the boundary c_lo = C leave a coverage gap: a counterexample exactly on it."""
    code, d = prove(PROOFS / "coverage_gap.toml")
    assert code == 1 and d["verdict"] == "counterexample"
    cov = d["coverage"]
    assert cov["verdict"] == "counterexample"
    assert "Above" in cov["what"] and "Below" in cov["what"]
    # the counterexample sits exactly on the hole: c_lo = C at the first step
    tr = cov["trace"]
    assert flow(tr, "c_lo")[0] == params(tr)["C"]


def test_coverage_closed_gap_is_proved() -> None:
    """With the gap closed the coverage check is proved, with no trace."""
    _code, d = prove(PROOFS / "coverage_gap.toml", "--set", "gap=1/100")
    assert d["coverage"]["verdict"] == "proved"
    assert "trace" not in d["coverage"]


# -- 5. stitching -------------------------------------------------------------------------------

def test_stitching_unjustified_transition_fails() -> None:
    """A transition its lemma does not justify fails stitching with a trace that leaves the target state; a justified one is proved."""
    code, d = prove(PROOFS / "stitch_weak.toml")
    assert code == 1 and d["verdict"] == "counterexample"
    assert set(lemma_results(d).values()) == {"proved"}
    bad = check(d, "stitching: High --[drains]--> Low")
    assert bad["verdict"] == "counterexample"
    assert check(d, "stitching: Low --[closed]--> Low")["verdict"] == "proved"
    # the counterexample starts in High and is not in Low at the last step
    tr = bad["trace"]
    p = params(tr)
    bq = agg(tr, "bq")
    assert bq[0] > p["C"] * p["R"] and bq[-1] > p["C"] * p["R"]
    assert d["coverage"]["verdict"] == "proved" and d["graph"]["verdict"] == "proved"


def test_stitching_control_with_loop_is_proved() -> None:
    """const_rate-ideal.toml is stitch_weak.toml plus High's self-loop with progress."""
    _code, d = prove(MAIN)
    assert check(d, "stitching: High --[drains]--> Low")["verdict"] == "proved"


# -- 6. progress --------------------------------------------------------------------------------

@pytest.mark.parametrize(("f", "want"), [("1", "counterexample"), ("101/100", "proved")])
def test_progress_factor_must_exceed_one(f: str, want: str) -> None:
    """A progress factor of exactly 1 is refuted (no progress); 101/100 is proved."""
    _code, d = prove(PROOFS / "progress_factor.toml", "--set", f"f={f}")
    entry = check(d, "progress: factor of 'shrink'")
    assert entry["verdict"] == want
    if want == "counterexample":
        assert d["verdict"] == "counterexample"


@pytest.mark.parametrize(("w", "want"), [("1", "proved"), ("101/100", "counterexample")])
def test_progress_case_must_apply(w: str, want: str) -> None:
    """drain's case applies when bq[0] > w C R; the state High is bq > C R, so w = 1
    covers it and w = 101/100 leaves C R < bq <= 1.01 C R without a case."""
    code, d = prove(MAIN, "--set", f"w={w}")
    entry = check(d, "progress: in High, a case of 'drain' applies")
    assert entry["verdict"] == want
    assert set(lemma_results(d).values()) == {"proved"}
    assert d["verdict"] == want and code == (0 if want == "proved" else 1)
    if want == "counterexample":
        tr = entry["trace"]
        p = params(tr)
        bq0 = agg(tr, "bq")[0]
        assert p["C"] * p["R"] < bq0 <= Fraction(101, 100) * p["C"] * p["R"]


# -- 7. search ----------------------------------------------------------------------------------

def test_search_bisection_finds_the_hand_computed_threshold() -> None:
    """Bisection brackets the hand-computed 6/5 within the tolerance, with exact rationals and verified monotonicity."""
    tol = Fraction(1, 100)
    code, d = search(MAIN, "one_step", "qb", "--tol", str(tol))
    assert code == 0
    assert (d["lemma"], d["constant"], d["easier"]) == ("one_step", "qb", "up")
    proved, refuted = Fraction(d["proved"]), Fraction(d["counterexample"])  # exact rational strings
    assert refuted < Fraction(6, 5) <= proved  # easier "up": proved is above refuted
    assert proved - refuted <= tol
    assert Fraction(d["width"]) == proved - refuted
    assert d["monotone"] == "verified" and d["unknown"] == []
    values = [Fraction(p["value"]) for p in d["probes"]]
    assert values[:2] == [Fraction(3), Fraction(0)]  # the easy end, then the hard end
    assert {p["verdict"] for p in d["probes"]} <= {"proved", "counterexample"}
    assert d["trace"] is not None
    cex = d["trace"]
    p = params(cex)
    bq = agg(cex, "bq")
    assert bq[0] <= 2 * p["C"] * p["R"] and bq[1] > refuted * p["C"] * p["R"]
    # the answer is a tight pair for prove
    code, dp = prove(MAIN, "--set", f"qb={d['proved']}")
    assert code == 0 and lemma(dp, "one_step")["verdict"] == "proved"
    code, dr = prove(MAIN, "--set", f"qb={d['counterexample']}")
    assert code == 1 and lemma(dr, "one_step")["verdict"] == "counterexample"


def test_search_rate_bound_brackets_one() -> None:
    """Bisection on rate_bound brackets the hand-computed threshold 1."""
    tol = Fraction(1, 20)
    code, d = search(MAIN, "rate_bound", "k", "--tol", str(tol))
    assert code == 0
    proved, refuted = Fraction(d["proved"]), Fraction(d["counterexample"])
    assert refuted < 1 <= proved and proved - refuted <= tol


def test_search_grid() -> None:
    """--grid checks exactly the given values and reports the tightest proved and nearest refuted one."""
    code, d = search(MAIN, "one_step", "qb", "--grid", "13/10,1,6/5,11/10")
    assert code == 0
    assert (d["proved"], d["counterexample"]) == ("6/5", "11/10")
    got = {Fraction(p["value"]): p["verdict"] for p in d["probes"]}
    assert got == {Fraction(13, 10): "proved", Fraction(6, 5): "proved",
                   Fraction(11, 10): "counterexample", Fraction(1): "counterexample"}
    assert d["monotone"] == "verified"


def test_search_easy_end_refuted() -> None:
    """If the easy end of the range is refuted, search stops there: nothing proved, exit 1."""
    code, d = search(MAIN, "one_step", "qb", "--lo", "0", "--hi", "1")
    assert code == 1
    assert d["proved"] is None and d["counterexample"] == "1"
    assert [p["value"] for p in d["probes"]] == ["1"]


def test_search_cache(tmp_path: Path) -> None:
    """A second search with --cache answers every probe from the cache with the same results and trace."""
    cache = tmp_path / "cache"
    code1, d1 = search(MAIN, "one_step", "qb", "--cache", cache)
    code2, d2 = search(MAIN, "one_step", "qb", "--cache", cache)
    assert code1 == code2 == 0
    assert not any(p.get("cached") for p in d1["probes"])
    assert d2["probes"] and all(p.get("cached") is True for p in d2["probes"])
    assert [(p["value"], p["verdict"]) for p in d1["probes"]] == [(p["value"], p["verdict"]) for p in d2["probes"]]
    assert (d1["proved"], d1["counterexample"]) == (d2["proved"], d2["counterexample"])
    assert d2["trace"] == d1["trace"]
    # another question is not answered from the cache
    _code, d3 = search(MAIN, "rate_bound", "k", "--cache", cache)
    assert not any(p.get("cached") for p in d3["probes"])


def test_prove_cache(tmp_path: Path) -> None:
    """A second prove with --cache answers every lemma from the cache; a changed constant is checked again."""
    cache = tmp_path / "cache"
    _c, d1 = prove(MAIN, "--set", "qb=119/100", "--cache", cache)
    _c, d2 = prove(MAIN, "--set", "qb=119/100", "--cache", cache)
    assert not any(lem.get("cached") for lem in d1["lemmas"])
    assert all(lem.get("cached") is True for lem in d2["lemmas"])
    assert lemma_results(d1) == lemma_results(d2)
    assert lemma(d2, "one_step")["trace"] == lemma(d1, "one_step")["trace"]
    # a different constant is a different question
    _c, d3 = prove(MAIN, "--set", "qb=6/5", "--cache", cache)
    assert lemma(d3, "one_step")["verdict"] == "proved" and not lemma(d3, "one_step").get("cached")


# -- 8. bad input --------------------------------------------------------------------------------

def expect_one_error_line(argv: tuple[object, ...], file: object, line: int | None, col: int | None,
                          words: tuple[str, ...]) -> None:
    code, out, err = run(*argv)
    assert "Traceback" not in err + out
    assert code == 2, f"exit code {code}, stderr: {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), f"expected exactly one stderr line, got {lines!r}"
    m = ERROR_LINE.match(lines[0])
    assert m is not None, lines[0]
    assert m["file"] == str(file), lines[0]
    if line is None:
        assert m["line"] is None, lines[0]
    else:
        assert m["line"] is not None and int(m["line"]) == line, lines[0]
    if col is not None:
        assert m["col"] is not None and int(m["col"]) == col, lines[0]
    for w in words:
        assert w.lower() in m["msg"].lower(), lines[0]


# (file, line, col, words, raised while compiling formulas, i.e. after the loader)
BAD_FILES = [
    ("unknown_name", 12, 25, ("unknown name 'qbound'",), True),
    ("definition_cycle", 8, 25, ("definition cycle", "a -> b -> a"), True),
    ("state_without_step", 13, 15, ("state 'Low' takes a step argument",), True),
    ("unknown_lemma_in_by", 15, 1, ("unknown lemma 'missing'",), False),
    ("no_steady", 1, 1, ("no 'steady'",), False),
    ("constant_without_value", 7, 1, ("constant 'k' has no 'value'",), False),
    ("unit_mismatch", 15, 15, ("unit mismatch",), True),
]
@pytest.mark.parametrize("mode", ["--json", "text"])
@pytest.mark.parametrize(("name", "line", "col", "words", "late"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_proof_file(request: pytest.FixtureRequest, mode: str, name: str, line: int, col: int,
                        words: tuple[str, ...], late: bool) -> None:
    """Each malformed proof file gives one error line at its file:line:col, in text and JSON mode."""
    path = BAD / f"{name}.toml"
    argv: tuple[object, ...] = ("prove", path, "--jobs", "1", *(("--json",) if mode == "--json" else ()))
    expect_one_error_line(argv, path, line, col, words)


LOADER_ERRORS = [b for b in BAD_FILES if not b[4]]


@pytest.mark.parametrize(("name", "line", "col", "words", "late"), LOADER_ERRORS, ids=[b[0] for b in LOADER_ERRORS])
def test_bad_proof_file_search(name: str, line: int, col: int, words: tuple[str, ...], late: bool) -> None:
    """search reports the same one-line errors for malformed proof files."""
    path = BAD / f"{name}.toml"
    for mode in (("--json",), ()):
        expect_one_error_line(("search", path, *mode, "--lemma", "l", "--constant", "k"), path, line, col, words)


def test_set_unknown_constant() -> None:
    """--set of an unknown constant is one error line, exit 2, nothing on stdout."""
    code, out, err = run("prove", MAIN, "--jobs", "1", "--set", "nope=1")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1, lines
    m = ERROR_LINE.match(lines[0])
    assert m is not None and m["file"] in (str(MAIN), "--set"), lines[0]
    assert "no constant named 'nope'" in m["msg"]


@pytest.mark.parametrize("value", ["abc", "1/0", ""])
def test_set_bad_value(value: str) -> None:
    """--set with a value that is not a number is one error line."""
    expect_one_error_line(("prove", MAIN, "--jobs", "1", "--set", f"qb={value}"), "--set", None, None,
                          ("not a number",))


def test_search_unknown_constant() -> None:
    """search --constant of an unknown constant is one error line."""
    expect_one_error_line(("search", MAIN, "--lemma", "one_step", "--constant", "nope"), "--constant", None, None,
                          ("no constant named 'nope'",))


def test_search_unknown_lemma() -> None:
    """search --lemma of an unknown lemma is one error line, exit 2."""
    code, out, err = run("search", MAIN, "--lemma", "nope", "--constant", "qb")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "no lemma named 'nope'" in err


def test_good_twin_of_unit_mismatch_is_proved(tmp_path: Path) -> None:
    """Control for unit_mismatch: with the units right (u * MSS / R * (T - 1)) the same
    lemma loads and is proved, so the error above is about units and nothing else."""
    text = (BAD / "unit_mismatch.toml").read_text()
    assert "u * MSS * (T - 1)" in text
    good = tmp_path / "unit_ok.toml"
    good.write_text(text.replace("u * MSS * (T - 1)", "u * MSS / R * (T - 1)"))
    code, d = prove(good)
    assert code == 0 and d["verdict"] == "proved"


def test_unit_error_does_not_depend_on_the_constant_value() -> None:
    """A unit mismatch is reported even when the constant is set to 0."""
    path = BAD / "unit_mismatch.toml"
    expect_one_error_line(("prove", path, "--jobs", "1", "--json", "--set", "u=0"), path, 15, 15,
                          ("unit mismatch",))


# -- 9. unknown is never proved ----------------------------------------------------------------

def test_timeout_gives_unknown_not_proved(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lemmas whose checks do not finish within --timeout are unknown (with a reason),
    and so is the proof, exit 3; never proved.  (The limit is made deterministic by
    Z3's resource limit.)"""
    path = PROOFS / "timeout.toml"
    code, d = prove(path)  # control: both lemmas are true and provable
    assert code == 0 and d["verdict"] == "proved"
    solver_gives_up(monkeypatch)
    code, d = prove(path, "--timeout", "0.001")
    results = lemma_results(d)
    assert set(results.values()) <= {"proved", "unknown"}
    assert "unknown" in results.values(), results
    for lem in d["lemmas"]:
        if lem["verdict"] == "unknown":
            assert lem.get("reason"), lem
    assert d["verdict"] == "unknown" and code == 3
    code, out, _err = run("prove", path, "--jobs", "1", "--timeout", "0.001")
    assert code == 3 and "UNKNOWN" in out and "PROVED" not in out


def test_search_timeout_proves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search whose checks do not finish (deterministic: Z3's resource limit) proves
    and refutes nothing; the easy end counts as not proved."""
    solver_gives_up(monkeypatch)
    code, d = search(PROOFS / "timeout.toml", "c_lo_bounded", "k", "--timeout", "0.001")
    assert code == 3
    assert d["proved"] is None and d["counterexample"] is None
    assert d["unknown"] == ["2"]  # the easy end, counted as not proved


# -- vacuity, --lemma, and a known problem (xfail: fails once fixed; drop the marker then) ------

def test_vacuous_lemma_is_flagged() -> None:
    """A lemma whose premise no trace meets is proved but flagged vacuous, in JSON and text; an honest one is not."""
    code, d = prove(PROOFS / "vacuous.toml")
    assert code == 0
    assert lemma(d, "vacuous")["verdict"] == "proved" and lemma(d, "vacuous").get("vacuous") is True
    assert lemma(d, "honest")["verdict"] == "proved" and not lemma(d, "honest").get("vacuous")
    _code, out, _err = run("prove", PROOFS / "vacuous.toml", "--jobs", "1")
    line = next(x for x in out.splitlines() if x.strip().startswith("lemma vacuous "))
    assert "vacuous" in line.split("lemma vacuous", 1)[1]


def _together(tmp_path: Path, source: Path) -> Path:
    """``source`` with ``together = true`` (every lemma in one question first)."""
    text = source.read_text()
    assert "\ntogether" not in text
    out = tmp_path / source.name
    out.write_text(text.replace('\nsteady = ', '\ntogether = true\nsteady = ', 1))
    return out


def test_together_proves_every_lemma_by_one_question(tmp_path: Path) -> None:
    """together = true: all lemmas hold, so the one question proves them all (each
    marked together), with the same verdicts as one question per lemma."""
    code, d = prove(_together(tmp_path, MAIN))
    assert code == 0 and d["verdict"] == "proved"
    assert lemma_results(d) == {"rate_bound": "proved", "one_step": "proved", "drains": "proved", "closed": "proved"}
    assert all(lem.get("together") is True for lem in d["lemmas"])
    _code, plain = prove(MAIN)
    assert not any(lem.get("together") for lem in plain["lemmas"])


def test_together_falls_back_to_one_question_per_lemma(tmp_path: Path) -> None:
    """together = true with one false lemma (qb below 6/5): the one question has a
    model, so every lemma is asked alone; the false one gets its re-checked
    counterexample, the others are proved, and none is marked together."""
    code, d = prove(_together(tmp_path, MAIN), "--set", "qb=119/100")
    assert code == 1
    assert lemma_results(d) == {"rate_bound": "proved", "one_step": "counterexample", "drains": "proved",
                                "closed": "proved"}
    assert "trace" in lemma(d, "one_step") and not any(lem.get("together") for lem in d["lemmas"])


def test_together_still_flags_a_vacuous_premise(tmp_path: Path) -> None:
    """Proved together, each premise is still checked for a trace: the vacuous lemma
    is flagged, the honest one is not."""
    code, d = prove(_together(tmp_path, PROOFS / "vacuous.toml"))
    assert code == 0
    assert lemma(d, "vacuous").get("vacuous") is True and lemma(d, "vacuous").get("together") is True
    assert not lemma(d, "honest").get("vacuous") and lemma(d, "honest").get("together") is True


def test_prove_single_lemma() -> None:
    """--lemma checks one lemma; the others are not checked, so they are unknown and
    the proof as a whole is not reported proved (exit 3), while a failure of the
    checked lemma is still a failure (exit 1)."""
    code, d = prove(MAIN, "--lemma", "one_step")
    assert lemma_results(d) == {"rate_bound": "unknown", "one_step": "proved", "drains": "unknown",
                                "closed": "unknown"}
    assert all("not checked" in lem["reason"] for lem in d["lemmas"] if lem["verdict"] == "unknown")
    assert d["verdict"] == "unknown" and code == 3
    assert d["coverage"]["verdict"] == "proved" and d["graph"]["verdict"] == "proved"
    code, d = prove(MAIN, "--lemma", "one_step", "--set", "qb=119/100")
    assert lemma(d, "one_step")["verdict"] == "counterexample" and "trace" in lemma(d, "one_step")
    assert d["verdict"] == "counterexample" and code == 1
    code, out, err = run("prove", MAIN, "--lemma", "nope")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "no lemma named 'nope'" in err


def test_unbounded_progress_is_not_a_proof() -> None:
    """A progress measure must stay within its declared bound in its state; A[t] <= 10 C R
    does not hold in 'Busy' (anything goes there), so the proof is refused."""
    code, d = prove(PROOFS / "unbounded_progress.toml")
    assert d["verdict"] != "proved" and code != 0
    bad = [s for s in d["stitching"] if "within its bound" in s["what"]]
    assert bad and all(s["verdict"] == "counterexample" for s in bad)


# -- 10. simplest_between / next_probe ----------------------------------------------------------

@pytest.mark.parametrize(("lo", "hi", "want"), [
    # [0.667, 0.75]: no integer, no half; 2/3 (denominator 3) is the closed interval's lo end
    (Fraction(2, 3), Fraction(3, 4), Fraction(2, 3)),
    (Fraction(3, 4), Fraction(2, 3), Fraction(2, 3)),   # order does not matter
    (Fraction(7, 10), Fraction(3, 4), Fraction(3, 4)),  # 5/7 = 0.714 (den 7) is inside, 3/4 (den 4) wins
    (Fraction(1, 3), Fraction(2, 3), Fraction(1, 2)),
    (Fraction(3, 5), Fraction(5, 8), Fraction(3, 5)),   # 0.6..0.625: dens 2,3,4 miss it, 3/5
    (Fraction(31, 100), Fraction(32, 100), Fraction(5, 16)),  # 0.3125; no den <= 15 fits
    (Fraction(5, 2), Fraction(7, 2), Fraction(3)),
    (Fraction(-7, 4), Fraction(-5, 4), Fraction(-3, 2)),
    (Fraction(-1, 3), Fraction(1, 3), Fraction(0)),
    (Fraction(4), Fraction(4), Fraction(4)),
    (Fraction(22, 7), Fraction(22, 7), Fraction(22, 7)),
])
def test_simplest_between_examples(lo: Fraction, hi: Fraction, want: Fraction) -> None:
    """simplest_between picks the fraction with the smallest denominator in the interval (examples)."""
    assert simplest_between(lo, hi) == want


def _smallest_denominator_in(lo: Fraction, hi: Fraction, below: int) -> int | None:
    """The smallest q < below with some p/q in [lo, hi], by brute force."""
    for q in range(1, below):
        if math.ceil(lo * q) <= math.floor(hi * q):
            return q
    return None


fractions = st.fractions(min_value=-50, max_value=50, max_denominator=400)


@settings(max_examples=300, deadline=None)
@given(fractions, fractions)
def test_simplest_between_is_simplest(a: Fraction, b: Fraction) -> None:
    """simplest_between lies in the interval, is symmetric, and no smaller denominator fits (property)."""
    lo, hi = min(a, b), max(a, b)
    x = simplest_between(a, b)
    assert lo <= x <= hi
    assert x == simplest_between(b, a)
    q = _smallest_denominator_in(lo, hi, x.denominator)
    assert q is None, f"{x} in [{lo}, {hi}], but a fraction with denominator {q} is too"


@settings(max_examples=300, deadline=None)
@given(fractions, fractions)
def test_next_probe_near_the_middle(easy: Fraction, hard: Fraction) -> None:
    """next_probe lies within 1/8 of the bracket's middle and shrinks it to at most 5/8 (property)."""
    m = next_probe(easy, hard)
    a, b = min(easy, hard), max(easy, hard)
    q = (b - a) / 8
    assert (a + b) / 2 - q <= m <= (a + b) / 2 + q
    assert m == next_probe(hard, easy)
    if a < b:
        # strictly inside, and either outcome shrinks the bracket to at most 5/8
        assert a < m < b
        assert max(m - a, b - m) <= 5 * (b - a) / 8
    else:
        assert m == a


def test_next_probe_examples() -> None:
    """next_probe on hand-worked brackets."""
    assert next_probe(Fraction(0), Fraction(1)) == Fraction(1, 2)
    assert next_probe(Fraction(1), Fraction(0)) == Fraction(1, 2)
    assert next_probe(Fraction(3), Fraction(0)) == Fraction(3, 2)      # [9/8, 15/8]
    assert next_probe(Fraction(1, 2), Fraction(1)) == Fraction(3, 4)  # [11/16, 13/16]
    assert next_probe(Fraction(6, 5), Fraction(0)) == Fraction(1, 2)  # [9/20, 3/4]


# -- the shipped proofs (golden: each file's expected result) ----------------------------------

SHIPPED = sorted((Path(__file__).resolve().parent.parent / "proofs").glob("*.toml"))
SLOW_PROOFS = {"cc_qdel-ccac"}  # about a minute on 2 cores: run with -m slow


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW_PROOFS else p
                                  for p in SHIPPED], ids=[p.stem for p in SHIPPED])
def test_shipped_proof_gives_its_expected_result(path: Path) -> None:
    """Every proof in proofs/ gives its declared verdict, with coverage, graph and stitching proved (or a re-checked counterexample)."""
    code, d = prove(path, jobs=2)
    assert "expect" in d, f"{path.name} declares no expected result"
    assert d["verdict"] == d["expect"], [(lem["name"], lem["verdict"]) for lem in d["lemmas"]]
    assert code == {"proved": 0, "counterexample": 1}[d["expect"]]
    if d["expect"] == "proved":
        assert d["coverage"]["verdict"] == "proved" and d["graph"]["verdict"] == "proved"
        assert all(s["verdict"] == "proved" for s in d["stitching"])
    else:  # a refuted proof shows an exactly re-checked counterexample for a lemma
        assert any(lem["verdict"] == "counterexample" and lem.get("trace") for lem in d["lemmas"])


@pytest.mark.slow
def test_cc_qdel_utilization_tight_pair() -> None:
    """B.4.7 at T = 10: the steady state keeps 5/6 utilization, not 21/25 (the bracket
    `ccmatic search` finds); a wrong constant fails with a counterexample."""
    cc = Path(__file__).resolve().parent.parent / "proofs" / "cc_qdel-ccac.toml"
    code, d = prove(cc, "--lemma", "B.4.7", "--set", "util=5/6", jobs=1)
    assert lemma(d, "B.4.7")["verdict"] == "proved"
    code, d = prove(cc, "--lemma", "B.4.7", "--set", "util=21/25", jobs=1)
    assert code == 1 and lemma(d, "B.4.7")["verdict"] == "counterexample"
    tr = lemma(d, "B.4.7")["trace"]
    S = [Fraction(x) for x in tr["aggregate"]["S"]]
    C, D = Fraction(tr["params"]["C"]), Fraction(tr["params"]["D"])
    q = [Fraction(x) for x in tr["aggregate"]["queue"]]
    inflight_ok = all(x <= Fraction(9, 2) * C * (1 + D) for x in q)
    assert S[-1] - S[0] < Fraction(21, 25) * C * (len(S) - 1 - D) or not inflight_ok


def test_progress_cases_must_share_their_measures() -> None:
    """Periods may alternate between the cases of a progress term, so a case that
    improves one quantity while another case's quantity degrades would not add up:
    rejected as bad input, pointing at the offending case."""
    path = BAD / "progress_cases_differ.toml"
    code, out, err = run("prove", path, "--jobs", "1")
    assert code == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "measure different quantities" in lines[0]
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: error:", lines[0])


def test_cca_state_variables_keep_their_units(tmp_path: Path) -> None:
    """'recover' is declared in bytes in aimd_incr_every_step.cca: comparing it with A type-checks (it
    used to read as dimensionless), and the invariant is checked to hold again."""
    code, d = prove(PROOFS / "aimd_state_units.toml")
    assert code == 0 and d["verdict"] == "proved"
    assert lemma(d, "[initial] holds again")["verdict"] == "proved"
    bad = PROOFS / "aimd_state_units.toml"
    text = bad.read_text().replace('invariant = "recover[t] <= A[t]"', 'invariant = "recover[t] <= R"')
    tmp = tmp_path / "units.toml"
    tmp.write_text(text)
    code, _out, err = run("prove", tmp, "--jobs", "1")
    assert code == 2 and "unit mismatch" in err


def test_a_shifted_t_before_step_zero_is_an_error() -> None:
    """``S[t - 1]`` at t = 0 is step -1: an error pointing at the index, not a read
    of the last step (negative steps count from the end only as literals)."""
    path = BAD / "state_before_step_zero.toml"
    code, out, err = run("prove", path, "--jobs", "1")
    assert code == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "before the first step" in lines[0], lines
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: error:", lines[0])


def test_a_loop_variable_before_step_zero_is_an_error(tmp_path: Path) -> None:
    """The same for a loop variable in a formula: ``range(T)`` with ``S[k - 1]``."""
    text = MAIN.read_text().replace(
        'conclusion = "rate[-1] <= k * MSS / R"',
        'conclusion = "all(S[j] - S[j - 1] >= 0 for j in range(T))"')
    path = tmp_path / "loop.toml"
    path.write_text(text)
    code, out, err = run("prove", path, "--jobs", "1")
    assert code == 2 and not out and "before the first step" in err
    path.write_text(text.replace("range(T)", "range(1, T)"))
    code, d = prove(path)
    assert code == 0 and lemma(d, "rate_bound")["verdict"] == "proved"


SHIPPED_DIR = Path(__file__).resolve().parent.parent / "proofs"


@pytest.mark.parametrize(("constant", "holds", "fails"), [("wmax", "3", "59/20")])
def test_aimd_window_bound_is_ccacs_exactly(constant: str, holds: str, fails: str) -> None:
    """AIMD's band cwnd <= C (R + D) + beta + MSS = 3 C R + MSS is closed ('stay'),
    and 59/20 C R + MSS is not: a counterexample, re-checked, ends above it."""
    path = SHIPPED_DIR / "aimd-ccac.toml"
    _code, d = prove(path, "--lemma", "stay", "--set", f"{constant}={holds}")
    assert lemma(d, "stay")["verdict"] == "proved"   # exit 3: the other lemmas were not checked
    code, d = prove(path, "--lemma", "stay", "--set", f"{constant}={fails}")
    assert code == 1 and lemma(d, "stay")["verdict"] == "counterexample"
    tr = lemma(d, "stay")["trace"]
    cwnd = [Fraction(x) for x in tr["flows"][0]["cwnd"]]
    C, mss = Fraction(tr["params"]["C"]), Fraction(tr["params"]["MSS"])
    assert cwnd[-1] > Fraction(59, 20) * C + mss   # R = 1 step


@pytest.mark.parametrize(("constant", "holds", "fails"),
                         [("wall", "18/5", "32/9"), ("lossr", "13/5", "23/9"), ("lossavg", "39/20", "23/12")])
def test_aimd_steady_bounds_tight_pairs(constant: str, holds: str, fails: str) -> None:
    """CCAC's AIMD in its band: cwnd, the loss in a step and the loss over the period
    are bounded by the proof's constants ('bounded' proved), and a hair below each
    the lemma has a counterexample."""
    path = SHIPPED_DIR / "aimd-ccac.toml"
    _code, d = prove(path, "--lemma", "bounded", "--set", f"{constant}={holds}")
    assert lemma(d, "bounded")["verdict"] == "proved"
    code, d = prove(path, "--lemma", "bounded", "--set", f"{constant}={fails}")
    assert code == 1 and lemma(d, "bounded")["verdict"] == "counterexample"


def test_copa_steady_queue_bound_tight_pair() -> None:
    """CCAC's Copa's steady state keeps the queue <= 23/5 C R at every step; 41/9 is
    refuted."""
    path = SHIPPED_DIR / "copa-ccac.toml"
    _code, d = prove(path, "--lemma", "bounded", "--set", "qall=23/5")
    assert lemma(d, "bounded")["verdict"] == "proved"
    code, d = prove(path, "--lemma", "bounded", "--set", "qall=41/9")
    assert code == 1 and lemma(d, "bounded")["verdict"] == "counterexample"


def test_copa_window_band_is_ccacs_4_bdp() -> None:
    """CCAC's Copa: a window above 4 C R + MSS shrinks ('shrink' proved), and above
    47/12 C R + MSS it need not."""
    path = SHIPPED_DIR / "copa-ccac.toml"
    _code, d = prove(path, "--lemma", "shrink")
    assert lemma(d, "shrink")["verdict"] == "proved"
    code, d = prove(path, "--lemma", "shrink", "--set", "hi=47/12")
    assert code == 1 and lemma(d, "shrink")["verdict"] == "counterexample"


@pytest.mark.slow
def test_copa_queue_band_is_ccacs_4_bdp() -> None:
    """CCAC's Copa: the queue band 4 C R + 2 MSS is kept ('stay' proved), and
    39/10 C R + 2 MSS is not."""
    path = SHIPPED_DIR / "copa-ccac.toml"
    _code, d = prove(path, "--lemma", "stay")
    assert lemma(d, "stay")["verdict"] == "proved"
    code, d = prove(path, "--lemma", "stay", "--set", "qmax=39/10")
    assert code == 1 and lemma(d, "stay")["verdict"] == "counterexample"


def test_cc_probe_slow_steady_state_tight_pairs() -> None:
    """proofs/cc_probe_slow-cbrdelay.toml's steady state: its RTT bound 8/5 (R + D) + 1
    packet is tight (159/100 is refuted), and utilization holds up to 15/53 of C
    (17/60, 1/3180 more, is refuted; the file claims 5/18)."""
    path = SHIPPED_DIR / "cc_probe_slow-cbrdelay.toml"
    for name, holds, fails in [("rtt", "8/5", "159/100"), ("util", "15/53", "17/60")]:
        _code, d = prove(path, "--lemma", "steady", "--set", f"{name}={holds}")
        assert lemma(d, "steady")["verdict"] == "proved", name
        code, d = prove(path, "--lemma", "steady", "--set", f"{name}={fails}")
        assert code == 1 and lemma(d, "steady")["verdict"] == "counterexample", name


def _with_drain_measures(tmp_path: Path, measures: str, order: str | None) -> Path:
    """MAIN with the 'drain' progress term measuring ``measures`` (TOML list)."""
    text = MAIN.read_text().replace('measures = ["bq[t] >= C * R"]', f"measures = {measures}"
                                    + (f'\norder = "{order}"' if order else ""))
    path = tmp_path / f"lex-{order}.toml"
    path.write_text(text)
    return path


def test_lexicographic_progress_ranks_the_measures(tmp_path: Path) -> None:
    """S (cumulative, 0 at the first step) grows every period, so as a second
    measure "S >= 0" (improving downwards) always degrades:
    * order "any": none may degrade, so 'drains' fails;
    * lexicographic, bq first: bq improves and S, ranked after it, may do anything;
    * lexicographic, S first: S never improves and degrades, so 'drains' fails."""
    two = '["bq[t] >= C * R", "S[t] >= 0"]'
    code, d = prove(_with_drain_measures(tmp_path, two, None))
    assert code == 1 and lemma(d, "drains")["verdict"] == "counterexample"
    code, d = prove(_with_drain_measures(tmp_path, two, "lexicographic"))
    assert code == 0 and d["verdict"] == "proved"
    code, d = prove(_with_drain_measures(tmp_path, '["S[t] >= 0", "bq[t] >= C * R"]', "lexicographic"))
    assert code == 1 and lemma(d, "drains")["verdict"] == "counterexample"


def test_progress_order_must_be_known_and_shared(tmp_path: Path) -> None:
    """An unknown progress order, or progress cases ranking their measures differently, is one error line."""
    code, _out, err = run("prove", _with_drain_measures(tmp_path, '["bq[t] >= C * R"]', "lexical"), "--jobs", "1")
    assert code == 2 and "unknown order 'lexical'" in err and len(err.strip().splitlines()) == 1
    text = MAIN.read_text().replace(
        'step = "C * R / 2"',
        'step = "C * R / 2"\norder = "lexicographic"\n\n[[progress]]\nname = "drain"\n'
        'when = "bq[0] <= w * C * R"\nmeasures = ["bq[t] >= C * R"]\nstep = "C * R / 4"')
    path = tmp_path / "mixed.toml"
    path.write_text(text)
    code, _out, err = run("prove", path, "--jobs", "1")
    assert code == 2 and "rank their measures differently" in err, err


def test_search_refuses_a_constant_the_invariant_reads() -> None:
    """Every lemma assumes the invariant with the file's constant values, so a search
    over a constant the invariant reads (here through a definition) would mix two
    values of it: one clear error line, exit 2.  A constant it does not read works."""
    path = SHIPPED_DIR / "aimd-ccac.toml"
    code, out, err = run("search", path, "--lemma", "stay", "--constant", "umax", "--tol", "1/4")
    assert code == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "read by the proof's invariant" in lines[0], lines
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: error:", lines[0])
    code, d = search(path, "stay", "wmax", "--lo", "2", "--hi", "4", "--tol", "1/4")
    assert code == 0 and Fraction(d["proved"]) == 3 and Fraction(d["counterexample"]) >= Fraction(11, 4)


def test_the_initial_check_can_be_named_with_lemma(tmp_path: Path) -> None:
    """``--lemma "[initial] holds again"`` checks just the chaining of the invariant:
    AIMD's holds with umax = 2 and fails with 39/20; a proof without [initial] or
    invariant says so in one line (exit 2)."""
    path = SHIPPED_DIR / "aimd-ccac.toml"
    name = "[initial] holds again"
    _code, d = prove(path, "--lemma", name)
    assert lemma(d, name)["verdict"] == "proved"
    assert lemma(d, "stay")["verdict"] == "unknown"   # not checked
    code, d = prove(path, "--lemma", name, "--set", "umax=39/20")
    assert code == 1 and lemma(d, name)["verdict"] == "counterexample"
    code, out, err = run("prove", MAIN, "--lemma", name, "--jobs", "1")
    assert code == 2 and not out and len(err.strip().splitlines()) == 1 and "no [initial]" in err


# -- Lemma B.4.2 under belief timeouts (proofs/experimental/cc_qdel-ccac-timeouts.toml) ----------

B42 = Path(__file__).resolve().parent.parent / "proofs" / "experimental" / "cc_qdel-ccac-timeouts.toml"


def _b42(lemma_name: str, *overrides: tuple[str, str]) -> dict[str, Any]:
    from ccmatic.core.options import RunOptions
    from ccmatic.engine.proof.prove import LemmaTask, run_lemma_task
    from ccmatic.io.library import Library
    from ccmatic.io.proofs import load_proof
    proof = load_proof(B42, Library.default()).with_values({k: Fraction(v) for k, v in overrides})
    return run_lemma_task(LemmaTask(proof, lemma_name, RunOptions(None, 0), None))


@pytest.mark.slow
def test_b42_far_recovers_but_the_near_band_refutes_the_thesis_lemma() -> None:
    """The pair behind the B.4.2 finding (docs/proofs.md).  c_lo > 2 C: the beliefs move
    1.1x towards C (proved).  C < c_lo <= 2 C: refuted even with the objectives weakened
    to 50% utilization and a 100 C (R + D) queue; the counterexample violates the
    thesis' own conclusion (83%, 4.4 C (R + D), 1.1x), so it refutes Lemma B.4.2 as
    stated: c_lo stays above C, neither belief moves 1.1x, and the initial queue (which
    beta >= 3 C (R + D) does not bound) exceeds the inflight objective."""
    far = _b42("B.4.2-far")
    assert far["verdict"] == "proved" and not far["vacuous"]
    near = _b42("B.4.2-near", ("util", "1/2"), ("inflight", "100"))
    assert near["verdict"] == "counterexample" and near["trace"]
    tr = near["trace"]
    p = {k: Fraction(v) for k, v in tr["params"].items() if v is not None}
    C, R, D = p["C"], p["R"], p["D"]
    lo = [Fraction(x) for x in tr["flows"][0]["c_lo"]]
    hi = [Fraction(x) for x in tr["flows"][0]["c_hi"]]
    q = [Fraction(x) for x in tr["aggregate"]["queue"]]
    assert C < lo[0] <= 2 * C and hi[0] >= C                 # the premise: Near
    assert lo[-1] > C                                         # still inconsistent
    moved = lo[-1] * Fraction(11, 10) < lo[0] or hi[-1] * Fraction(11, 10) < hi[0]
    assert not moved                                          # no 1.1x move towards C
    assert max(q) > Fraction(44, 10) * C * (R + D)            # the thesis' inflight objective fails
