"""Counterexamples name what they violate (semantics/explain.py): which objective or
lemma, the violated comparisons with both sides and the margin, the step.  Every
value an explanation reports is recomputed here from the trace by hand, not by the
explainer."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction as F
from typing import Any

from helpers import ROOT, load_file_query, run_cli

from ccmatic.core.errors import Loc
from ccmatic.core.options import RunOptions
from ccmatic.core.results import ConcreteTrace, Counterexample, Value
from ccmatic.core.scenario import Objective, Query
from ccmatic.core.source import Source
from ccmatic.engine.verify import VerifyReport, verify
from ccmatic.io.plot_marks import bound_of
from ccmatic.io.report import (
    objectives_lines,
    verify_json,
    verify_text,
    violation_lines,
)
from ccmatic.semantics.explain import MAX_SHOWN, ObjectiveCheck, Violation, explain
from ccmatic.spec.formula import QueryContext, QueryScope, condition

OPTS = RunOptions(timeout_s=120, seed=0)


def query(name: str) -> Query:
    return load_file_query(ROOT / "queries" / "verify" / f"{name}.toml")


def cex(q: Query) -> tuple[VerifyReport, ConcreteTrace]:
    rep = verify(q, OPTS)
    assert isinstance(rep.outcome, Counterexample), f"{q.name}: expected a counterexample, got {rep.verdict}"
    return rep, rep.outcome.trace


def at(tr: ConcreteTrace, name: str, t: int) -> F:
    v = tr.flows[0][name][t]
    assert isinstance(v, F)
    return v


def violated(rep: VerifyReport) -> list[ObjectiveCheck]:
    return [c for c in rep.objectives if c.holds is False]


def only_comparison(c: ObjectiveCheck) -> Violation:
    assert c.why is not None
    [v] = c.why.comparisons()
    assert v.cmp is not None
    return v


# -- counterexample queries: the right objective, values recomputed from the trace ----------

def test_const_rate_names_utilization_with_its_margin() -> None:
    """const_rate-ccac violates utilization (min 1/2): S[T-1] - S[0] against
    min C (T - 1 - D), margin lhs - rhs, at the last step; the text says so."""
    rep, tr = cex(query("const_rate-ccac"))
    [c] = violated(rep)
    assert (c.name, c.kind, c.params) == ("utilization", "utilization", {"min": F(1, 2)})
    v = only_comparison(c)
    assert v.cmp is not None
    T, C, D = tr.T, tr.params["C"], tr.params["D"]
    assert C is not None and D is not None
    lhs, rhs = at(tr, "S", T - 1) - at(tr, "S", 0), F(1, 2) * C * (T - 1 - D)
    assert (v.cmp.lhs_value, v.cmp.rhs_value, v.cmp.margin) == (lhs, rhs, lhs - rhs)
    assert v.cmp.margin < 0 and v.cmp.required == "ge" and v.step == T - 1
    assert v.cmp.lhs == f"S[{T - 1}] - S[0]"
    text = verify_text(rep)
    assert "violates: utilization (min = 0.5): S[T-1] - S[0] >= min * C * (T - 1 - D)" in text
    assert f"S[{T - 1}] - S[0] = " in text and "(required >=, margin " in text
    assert text.index("COUNTEREXAMPLE") < text.index("violates:") < text.index("parameters:")


def test_aimd_premature_loss_names_the_first_failing_step() -> None:
    """aimd-ccac-premature-loss: the failing t of its all(not (...)) are exactly those
    where the four forbidden facts hold together (recomputed here); the first one is
    shown first, its four comparisons with the trace's values."""
    rep, tr = cex(query("aimd-ccac-premature-loss"))
    [c] = violated(rep)
    assert c.name == "no premature loss" and c.kind == "expr" and c.why is not None
    T, C, R = tr.T, tr.params["C"], tr.params["R"]
    assert C is not None and R is not None
    r = int(R)

    def forbidden(t: int) -> bool:
        return (at(tr, "cwnd", t) <= 2 * C * R and at(tr, "L", t + 1) > at(tr, "L", t)
                and at(tr, "S", t + 1 - r) - at(tr, "S", t - r) >= C * R
                and at(tr, "Ld", t + 1) - at(tr, "Ld", t) >= C * R)

    bad = [t for t in range(1, T - 1) if forbidden(t)]
    assert bad
    why = c.why
    assert (why.kind, why.count, why.total, why.step) == ("all", len(bad), T - 2, bad[0] + 1)
    first = why.parts[0]
    t = bad[0]
    assert first.kind == "any" and first.total == 4 and first.text.startswith(f"not (cwnd[{t}] <= 2")
    cw = first.parts[0].cmp
    assert cw is not None and cw.lhs == f"cwnd[{t}]" and cw.required == "gt"
    assert (cw.lhs_value, cw.rhs_value, cw.margin) == (at(tr, "cwnd", t), 2 * C * R, at(tr, "cwnd", t) - 2 * C * R)
    loss = first.parts[1].cmp
    assert loss is not None and loss.required == "le"
    assert loss.margin == at(tr, "L", t) - at(tr, "L", t + 1) < 0


def test_bbr_lowutil_names_its_labelled_objective() -> None:
    """bbr-ccac-lowutil violates its expr objective 'utilization >= 10%':
    S[9] - S[0] against 0.1 C T."""
    rep, tr = cex(query("bbr-ccac-lowutil"))
    [c] = violated(rep)
    assert c.name == "utilization >= 10%" and c.formula == "S[T-1] - S[0] >= 0.1 * C * T"
    v = only_comparison(c)
    assert v.cmp is not None and tr.params["C"] is not None
    lhs, rhs = at(tr, "S", tr.T - 1) - at(tr, "S", 0), F(1, 10) * tr.params["C"] * tr.T
    assert (v.cmp.lhs_value, v.cmp.rhs_value, v.cmp.margin) == (lhs, rhs, lhs - rhs)
    assert "violates: utilization >= 10%: S[T-1] - S[0] >= 0.1 * C * T" in verify_text(rep)


def test_multi_objective_exactly_one_violated() -> None:
    """const_rate-ccac with two more objectives that every trace meets (no loss on
    an infinite buffer; S never falls): only utilization is violated, the others
    are reported as holding, in the text and in the JSON."""
    q = query("const_rate-ccac")
    extra = (Objective("loss_amount", {}, Loc("<test>")),
             Objective("expr", {}, Loc("<test>"), Source("<test>", "S[T-1] >= S[0]"), "S never falls"))
    rep, _tr = cex(replace(q, objectives=q.objectives + extra))
    assert [(c.name, c.holds) for c in rep.objectives] == [
        ("utilization", False), ("loss_amount", True), ("S never falls", True)]
    lines = objectives_lines(rep.objectives)
    assert lines[0].startswith("  violates: utilization")
    assert "  holds: loss_amount (max_bdp = 0, plus_mss = 0)" in lines and "  holds: S never falls" in lines
    js = verify_json(rep)["objectives"]
    assert [o["holds"] for o in js] == [False, True, True]
    assert "violation" in js[0] and all("violation" not in o for o in js[1:])


def test_proved_query_reports_every_objective_holding() -> None:
    """A proved query: every objective holds (true in the JSON), none explained."""
    q = query("const_rate-ccac")
    q = replace(q, objectives=(Objective("expr", {}, Loc("<test>"), Source("<test>", "S[T-1] >= S[0]")),))
    rep = verify(q, OPTS)
    assert rep.verdict == "proved"
    assert [o["holds"] for o in verify_json(rep)["objectives"]] == [True]
    assert rep.objectives[0].why is None


# -- the JSON field -------------------------------------------------------------------------

def _check_comparison(d: dict[str, Any]) -> None:
    assert set(d) >= {"kind", "text", "step", "lhs", "op", "rhs", "lhs_value", "rhs_value", "margin"}
    lhs, rhs, m = F(d["lhs_value"]), F(d["rhs_value"]), F(d["margin"])
    expect = {">=": lhs - rhs, ">": lhs - rhs, "<=": rhs - lhs, "<": rhs - lhs, "==": -abs(lhs - rhs),
              "!=": abs(lhs - rhs)}[d["op"]]
    assert m == expect and m <= 0
    assert isinstance(d["step"], int) and d["text"] == f"{d['lhs']} {d['op']} {d['rhs']}"


def test_json_objectives_schema() -> None:
    """verify --json: one entry per objective with name, kind, params (rational
    strings), formula and holds; a violated one has its step, its violated
    comparisons (exact values, margin = the side that should be larger minus the
    other, never positive) and the tree of how it fails."""
    code, out, _err = run_cli("verify", "aimd-ccac-premature-loss", "--json")
    assert code == 1
    d = json.loads(out)
    [o] = d["objectives"]
    assert set(o) == {"name", "kind", "params", "formula", "holds", "step", "comparisons", "violation"}
    assert (o["name"], o["kind"], o["params"], o["holds"]) == ("no premature loss", "expr", {}, False)
    assert o["comparisons"] and o["step"] == o["violation"]["step"]
    for c in o["comparisons"]:
        _check_comparison(c)

    def walk(n: dict[str, Any]) -> None:
        assert n["kind"] in ("compare", "fact", "all", "any", "implies")
        if n["kind"] in ("all", "any"):
            assert 0 < n["failing"] <= n["of"] and len(n["parts"]) <= min(n["failing"], MAX_SHOWN)
        for p in n.get("parts", []):
            walk(p)

    walk(o["violation"])
    code, out, _err = run_cli("verify", "const_rate-ccac", "--json")
    [u] = json.loads(out)["objectives"]
    assert u["params"] == {"min": "1/2"} and u["holds"] is False


# -- lemmas -----------------------------------------------------------------------------------

def test_prove_counterexample_names_the_lemma() -> None:
    """aimd-ccac's lemma 'stay' with wmax = 59/20 (refuted, proofs/aimd-ccac.toml): the
    counterexample names the lemma, and its conclusion cwnd[T-1] <= wmax C R + MSS
    is violated by the trace's values."""
    args = ("prove", "aimd-ccac", "--lemma", "stay", "--set", "wmax=59/20", "--jobs", "1")
    code, out, _err = run_cli(*args, "--json")
    assert code == 1
    [lem] = [x for x in json.loads(out)["lemmas"] if x["name"] == "stay"]
    assert lem["verdict"] == "counterexample"
    tr = lem["trace"]
    p = {k: F(v) for k, v in tr["params"].items() if v is not None}
    T = tr["T"]
    [c] = lem["comparisons"]
    _check_comparison(c)
    assert c["lhs"] == f"cwnd[{T - 1}]" and c["op"] == "<=" and c["step"] == T - 1
    assert F(c["lhs_value"]) == F(tr["flows"][0]["cwnd"][T - 1])
    assert F(c["rhs_value"]) == F(59, 20) * p["C"] * p["R"] + p["MSS"]
    code, out, _err = run_cli(*args)
    assert "violates lemma stay: Steady(1) => wok(-1)" in out and f"cwnd[{T - 1}] = " in out


def test_search_counterexample_explains_the_conclusion_at_its_value() -> None:
    """search's counterexample is explained with the constant at the counterexample's
    value (59/20), not the file's (3)."""
    code, out, _err = run_cli("search", "aimd-ccac", "--lemma", "stay", "--constant", "wmax",
                              "--grid", "59/20", "--jobs", "1", "--json")
    d = json.loads(out)
    assert code == 1 and d["counterexample"] == "59/20"
    [c] = d["comparisons"]
    _check_comparison(c)
    p = {k: F(v) for k, v in d["trace"]["params"].items() if v is not None}
    assert F(c["rhs_value"]) == F(59, 20) * p["C"] * p["R"] + p["MSS"]


# -- the explainer on a hand-made trace ---------------------------------------------------------

S = [F(0), F(2), F(1), F(1), F(5)]


def hand_trace() -> ConcreteTrace:
    flows: list[dict[str, list[Value]]] = [{"S": list(S), "A": [x + 1 for x in S], "L": [F(0)] * 5}]
    return ConcreteTrace(5, 1, {"C": F(1), "R": F(1), "D": F(1), "MSS": F(1, 10)}, {}, flows)


def why(text: str) -> Violation | None:
    q = query("const_rate-ccac")
    ctx = QueryContext(q.model, 5, True, False, {})
    src = Source("<test>", text)
    return explain(condition(src, QueryScope(src, ctx)), hand_trace())


def test_hand_all_lists_failing_items_earliest_first() -> None:
    """all(S[t] >= t): t = 2 and 3 fail (S = 0 2 1 1 5), margins -1 and -2, first at step 2."""
    w = why("all(S[t] >= t for t in range(T))")
    assert w is not None and (w.kind, w.count, w.total, w.step) == ("all", 2, 5, 2)
    assert [p.cmp.margin for p in w.parts if p.cmp is not None] == [-1, -2]
    assert [p.text for p in w.parts] == ["S[2] >= 2", "S[3] >= 3"]


def test_hand_any_shows_alternatives_and_counts_the_rest() -> None:
    """any(S[t] > 10): every one of the 5 fails; the latest step decides; the text
    shows the first few and counts the rest."""
    w = why("any(S[t] > 10 for t in range(T))")
    assert w is not None and (w.kind, w.count, w.total, w.step) == ("any", 5, 5, 4)
    assert len(w.parts) == MAX_SHOWN
    assert violation_lines(w, "")[-1] == f"  ... and {5 - MAX_SHOWN} more"


def test_hand_implies_not_and_nesting() -> None:
    """An implication shows its conclusion (margin 0 at equality); 'not (x <= y)' with
    x = y fails with x <= y holding; nested 'and's are one list; a holding formula
    has no explanation."""
    w = why("S[1] > 1 => S[2] > 1")
    assert w is not None and w.kind == "implies" and w.text == "S[1] > 1" and w.step == 2
    assert w.parts[0].cmp is not None and w.parts[0].cmp.margin == 0
    n = why("not (S[2] <= S[3])")
    assert n is not None and n.cmp is not None and (n.cmp.required, n.cmp.actual, n.cmp.margin) == ("gt", "<=", 0)
    flat = why("(S[2] >= 2 and S[3] >= 3) and S[4] >= 9")
    assert flat is not None and (flat.kind, flat.count, flat.total) == ("all", 3, 3)
    assert why("S[4] >= S[0] and S[1] > S[0]") is None


def test_plotted_bound_is_the_utilization_line() -> None:
    """The plot draws utilization's bound on S: S[T-1] must be >= S[0] + min C (T-1-D),
    measured from S[0]."""
    rep, tr = cex(query("const_rate-ccac"))
    v = only_comparison(violated(rep)[0])
    assert v.cmp is not None
    b = bound_of(tr, v.cmp)
    assert b is not None and b.read == ("S", 0, tr.T - 1) and b.op == ">=" and b.anchor == ("S", 0, 0)
    assert b.value == at(tr, "S", 0) + v.cmp.rhs_value


def test_render_keeps_the_meaning_of_the_tree() -> None:
    """The explanation's text parenthesizes by binding strength (a - (b - c), -(a + b),
    not (x and y)), shows a flow index only with several flows, and shortens long lists."""
    w = why("not (S[4] - (S[0] - 1) >= 6 and -(S[1] + S[2]) < 0)")
    assert w is not None and w.text == "not (S[4] - (S[0] - 1) >= 6 and -(S[1] + S[2]) < 0)"
    w = why("sum(S[t] for t in range(T)) >= 100")
    assert w is not None and w.cmp is not None and w.cmp.lhs == "sum(S[0], ... (5 items), S[4])"
    assert w.cmp.lhs_value == sum(S)


def test_an_internal_inconsistency_is_exit_4_not_an_answer(monkeypatch: Any) -> None:
    """If the explanation ever disagreed with the exact re-check (a bug), verify says
    so in one line with exit code 4, which no script reads as an answer (not 1, a
    counterexample)."""
    import ccmatic.engine.verify as engine_verify
    from ccmatic.core.errors import EngineError

    def broken(*_a: Any, **_k: Any) -> Any:
        raise EngineError("the counterexample violates no objective when evaluated exactly")

    monkeypatch.setattr(engine_verify, "objective_checks", broken)
    code, out, err = run_cli("verify", "const_rate-ccac")
    assert (code, out) == (4, "")
    assert err.splitlines()[-1] == ("internal error: the counterexample violates no objective when evaluated "
                                    "exactly (hint: this is a bug in ccmatic; --debug shows the traceback)")
