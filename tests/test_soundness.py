"""The soundness machinery of ``ccmatic.engine.verify``.

* a contradictory setup is reported as unknown ("vacuous"), never as proved;
* a solver timeout is unknown, never proved;
* a solver model that violates the encoding is caught by the exact re-check;
* multi-flow aggregates are the sums of the flows;
* every counterexample trace is exact (rational strings) and, checked here with our
  own arithmetic, satisfies the model's basic laws and violates the property.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import replace
from fractions import Fraction as F
from itertools import pairwise
from pathlib import Path
from typing import Any

import helpers
import pytest

import ccmatic.engine.verify as verify_mod
from ccmatic.core.errors import Loc
from ccmatic.core.model import BeliefTimeouts, Buffer, ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.results import Counterexample, Proved, Unknown, trace_to_json
from ccmatic.core.scenario import Initial, Objective, Query
from ccmatic.core.source import Source
from ccmatic.encode.trace import Tagged
from ccmatic.engine.recheck import RecheckError
from ccmatic.engine.session import LOGIC, Session, SolverUnknown
from ccmatic.engine.verify import VerifyReport, build_query, query_cca, solve, verify
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query
from ccmatic.io.report import verify_json

ROOT = Path(__file__).resolve().parent.parent
NO_PREMISES = Initial()
OPTS = RunOptions(timeout_s=60, seed=0)

CCAC = ModelConfig(name="ccac", family="ccac", compose=True, C=F(100), R=1, D=1, mss_max_bdp=F(1, 5))
NONCOMPOSE = replace(CCAC, name="ccac_noncompose", compose=False)
CBR = ModelConfig(name="cbr_delay", family="cbr_delay", C=F(100), R=1, D=1, mss_max_bdp=F(1, 5))
IDEAL = ModelConfig(name="ideal", family="ideal", C=F(100), R=1, D=0, mss_max_bdp=F(1, 5))

SERVICE = "S[T-1] - S[0] <= C * (T - 1 + D)"


def query(model: ModelConfig, T: int, prop: str, assume: tuple[str, ...] = (), cca: str = "any_sender",
          initial: Initial = NO_PREMISES) -> Query:
    return helpers.query(model, T, prop, assume=assume, cca=cca, initial=initial)


def load(path: Path) -> Query:
    lib = Library.default()
    return load_query(path, lib, load_objectives(lib))


def run(model: ModelConfig, T: int, prop: str, **kw: Any) -> VerifyReport:
    return verify(query(model, T, prop, **kw), OPTS)


# -- (a) vacuous proofs ---------------------------------------------------------------------

@pytest.mark.parametrize("assume", [
    ("MSS < 0",),                                   # MSS > 0 is built in
    ("S[1] >= 1", "S[1] <= 0"),                      # assumptions contradict each other
    ("A[2] - A[1] > 2 * C * R", "rate[2] <= C"),     # contradicts the sending rule
])
def test_contradictory_assumptions_are_not_proofs(assume: tuple[str, ...]) -> None:
    """Assumptions that admit no trace make a true and a false property alike unknown ('vacuous'), never proved."""
    for prop in (SERVICE, "S[T-1] < 0"):  # a true and a false property: neither may be "proved"
        rep = run(CCAC, 5, prop, assume=assume)
        assert isinstance(rep.outcome, Unknown), rep.verdict
        assert "vacuous" in rep.outcome.reason
        assert verify_json(rep)["verdict"] == "unknown"


def test_model_contradiction_is_not_a_proof() -> None:
    """The premises are consistent on their own but not with the model: an initial
    queue of C·(T+D) does not fit into a 1-BDP buffer."""
    big = ("A[0] - L[0] >= S[0] + C * (T + D)",)
    assert run(CCAC, 5, SERVICE, assume=big).verdict == "proved"
    rep = run(replace(CCAC, buffer=Buffer("finite", F(1))), 5, SERVICE, assume=big)
    assert isinstance(rep.outcome, Unknown) and "vacuous" in rep.outcome.reason


def test_cca_contradiction_is_not_a_proof() -> None:
    """const_rate sends exactly one MSS per step: assuming otherwise is vacuous."""
    rep = run(CCAC, 5, SERVICE, cca="const_rate", assume=("A[3] - A[2] > MSS",))
    assert isinstance(rep.outcome, Unknown) and "vacuous" in rep.outcome.reason
    assert run(CCAC, 5, "A[3] - A[2] == MSS", cca="const_rate").verdict == "proved"
    assert run(CCAC, 5, "A[3] - A[2] == MSS + 1/100", cca="const_rate").verdict == "counterexample"


# -- (b) timeouts -----------------------------------------------------------------------------

def test_tiny_timeout_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that does not finish within its limit (made deterministic: Z3's resource
    limit too) is unknown, never proved."""
    helpers.solver_gives_up(monkeypatch)
    q = load(ROOT / "queries" / "verify" / "cc_probe_drain-ccac-arbitrary.toml")
    rep = verify(q, RunOptions(timeout_s=0.001, seed=0))
    assert rep.verdict == "unknown", rep.verdict
    assert isinstance(rep.outcome, Unknown) and "unknown" in rep.outcome.reason


def test_unconfirmed_premises_are_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the property is unsat but the solver cannot confirm that the premises admit
    a trace (timeout on every later check, the steady-state witness's and the base
    alone), the result is unknown, not proved."""
    real = Session.check

    def check(self: Session, extra: Iterable[Tagged] = (), rlimit: int | None = None) -> Any:
        extra = list(extra)
        if not any(tag == "negated property" for tag, _c in extra):
            return SolverUnknown("timeout")
        return real(self, extra, rlimit)

    monkeypatch.setattr(Session, "check", check)
    rep = run(CCAC, 5, SERVICE)
    assert isinstance(rep.outcome, Unknown) and "could not confirm" in rep.outcome.reason


# -- (c) the exact re-check ------------------------------------------------------------------------

def session_without(prefix: str) -> type[Session]:
    """A Session whose solver silently drops the constraints tagged ``prefix`` — a
    stand-in for an unsound solver or encoding bug.  The re-check still evaluates the
    full encoding."""

    class Dropping(Session):
        def __init__(self, base: Iterable[Tagged], timeout_s: float | None, seed: int,
                     logic: str | None = LOGIC) -> None:
            base = list(base)
            kept = [(tag, c) for tag, c in base if not tag.startswith(prefix)]
            assert len(kept) < len(base), f"no constraint tagged {prefix!r}"
            super().__init__(kept, timeout_s, seed, logic)

    return Dropping


@pytest.mark.parametrize("tag, model, prop, cca", [
    ("A.2.1", CCAC, SERVICE, "any_sender"),
    ("A.2.2", CCAC, "all(S[t] <= A[t] - L[t] for t in range(T))", "any_sender"),
    ("sending rule", CCAC, "A[3] - A[2] == MSS", "const_rate"),
    ("CBR service", CBR, "all(bq[t] >= 0 for t in range(T))", "any_sender"),
    ("CBR service", IDEAL, "all(bq[t] > 0 => W[t] == W[t-1] for t in range(1, T))", "any_sender"),
])
def test_recheck_rejects_wrong_model(monkeypatch: pytest.MonkeyPatch, tag: str, model: ModelConfig,
                                     prop: str, cca: str) -> None:
    """A solver that silently drops one tagged constraint family finds a trace the exact re-check rejects: unknown, naming the family."""
    q = query(model, 5, prop, cca=cca)
    assert isinstance(verify(q, OPTS).outcome, Proved)
    monkeypatch.setattr(verify_mod, "Session", session_without(tag))
    prob, formula = build_query(q, query_cca(q))
    out = solve(prob, formula, OPTS)
    assert isinstance(out, Unknown), out
    assert "re-check" in out.reason and tag in out.reason


def test_recheck_catches_wrong_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The re-check's verdict is what gates a counterexample: if it rejects, no
    counterexample is reported even though the solver said sat."""
    q = query(CCAC, 5, SERVICE + " - 1/100")
    assert isinstance(verify(q, OPTS).outcome, Counterexample)

    def reject(model: Any, constraints: Any, cache: Any = None) -> Any:
        raise RecheckError("constraint [test] is violated by the solver's model")

    monkeypatch.setattr(verify_mod, "recheck", reject)
    out = verify(q, OPTS).outcome
    assert isinstance(out, Unknown) and "re-check" in out.reason


# -- (d) several flows ---------------------------------------------------------------------------

def two_flows(prop: str, assume: tuple[str, ...] = ()) -> Query:
    q = load(ROOT / "queries" / "verify" / "const_rate-ccac.toml")
    scenario = replace(q.scenario, model=replace(q.model, N=2), T=5, initial=Initial(),
                       assumptions=tuple(Source("<test>", a) for a in assume))
    return replace(q, scenario=scenario,
                   objectives=(Objective("expr", {}, Loc("<test>"), Source("<test>", prop), "property"),))


def test_multiflow_aggregates() -> None:
    """With two flows the aggregates are the flows' sums exactly, and fair sharing or equal starts are not assumed."""
    for prop in ("all(S[t] == S[0, t] + S[1, t] for t in range(T))",
                 "all(A[t] - L[t] == A[0, t] - L[0, t] + A[1, t] - L[1, t] for t in range(T))",
                 "all(A[i, t] - A[i, t-1] == MSS for i in range(2) for t in range(1, T))",
                 "all(queue[t] == queue[0, t] + queue[1, t] for t in range(T))"):
        rep = verify(two_flows(prop), OPTS)
        assert rep.verdict == "proved", (prop, rep.verdict)
    # the network need not share fairly, and the flows' initial states differ
    for prop in ("S[0, T-1] - S[0, 0] == S[1, T-1] - S[1, 0]", "A[0, 0] == A[1, 0]",
                 "all(S[t] == S[0, t] + S[1, t] + 1/100 for t in range(T))"):
        assert verify(two_flows(prop), OPTS).verdict == "counterexample", prop


def test_multiflow_counterexample_trace() -> None:
    """A two-flow counterexample has both flows in its trace and JSON, sums that add up, and violates the property exactly."""
    rep = verify(two_flows("S[T-1] - S[0] >= C * (T - 1 - D) / 2"), OPTS)
    assert isinstance(rep.outcome, Counterexample)
    tr = rep.outcome.trace
    assert tr.N == 2 and len(tr.flows) == 2
    js = trace_to_json(tr)
    assert js["N"] == 2 and len(js["flows"]) == 2
    for t in range(tr.T):
        assert tr.aggregate["S"][t] == tr.flows[0]["S"][t] + tr.flows[1]["S"][t]
        assert tr.aggregate["A"][t] == tr.flows[0]["A"][t] + tr.flows[1]["A"][t]
    check_trace(js, lambda g: g["S"][-1] - g["S"][0] < g["C"] * (js["T"] - 1 - g["D"]) / 2)


# -- (e) counterexample traces are exact and lawful -----------------------------------------------

def exact(x: object) -> F:
    assert isinstance(x, str), f"{x!r} is not an exact rational string"
    v = F(x)
    assert str(v) == x, f"{x!r} is not in canonical form"
    return v


def check_trace(js: dict[str, Any], violated: Callable[[dict[str, Any]], bool]) -> None:
    """Re-check a JSON trace with Fractions: basic laws of every model, and that it
    violates the property (``violated`` gets params + aggregate series)."""
    js = json.loads(json.dumps(js))  # what a JSON consumer sees
    T, N = js["T"], js["N"]
    p: dict[str, Any] = {k: (exact(v) if v is not None else None) for k, v in js["params"].items()}
    agg = {k: [exact(x) for x in v] for k, v in js["aggregate"].items()}
    flows = [{k: [x if isinstance(x, bool) else exact(x) for x in v] for k, v in fl.items()} for fl in js["flows"]]
    assert len(flows) == N
    C, D = p["C"], int(p["D"])
    assert p["MSS"] > 0
    for fl in flows:
        A, S, L, Ld = fl["A"], fl["S"], fl["L"], fl["Ld"]
        assert S[0] == 0
        for t in range(T):
            assert S[t] <= A[t] - L[t], ("S <= A - L", t)
            assert 0 <= Ld[t] <= L[t], ("0 <= Ld <= L", t)
            if t > 0:
                for name in ("A", "S", "L", "Ld"):
                    assert fl[name][t] >= fl[name][t - 1], (name, "monotone", t)
                assert A[t] - L[t] >= A[t - 1] - L[t - 1]
                assert L[t] - L[t - 1] <= A[t] - A[t - 1], ("only arriving bytes are dropped", t)
    for name in ("A", "S", "L"):
        assert agg[name] == [sum((fl[name][t] for fl in flows), F(0)) for t in range(T)], name
    W, tok = agg["W"], agg["tokens"]
    assert W[0] == 0
    for t in range(T):
        assert tok[t] == p["C0"] + C * t - W[t]
        assert agg["tokens_lo"][t] == (tok[t - D] if t >= D else p["C0"] + C * (t - D) - W[0])
        assert agg["tokens_lo"][t] <= agg["S"][t] <= tok[t], ("A.2.1/A.2.3", t)
        assert agg["queue"][t] == agg["A"][t] - agg["L"][t] - agg["S"][t]
        assert agg["bq"][t] == agg["A"][t] - agg["L"][t] - tok[t]
        if p["buffer"] is not None:
            assert agg["bq"][t] <= p["buffer"], ("buffer", t)
        if t > 0:
            assert 0 <= W[t] - W[t - 1] <= C, ("waste", t)
    g: dict[str, Any] = dict(p)
    g.update(agg)
    assert violated(g), "the trace does not violate the property"


CEX_CASES = [
    ("ccac", CCAC, "any_sender", SERVICE + " - 1/100",
     lambda g: g["S"][-1] - g["S"][0] > g["C"] * (len(g["S"]) - 1 + g["D"]) - F(1, 100)),
    ("ccac-finite-droptail", replace(CCAC, buffer=Buffer("finite", F(1)), loss="droptail"), "any_sender",
     "L[T-1] == L[0]", lambda g: g["L"][-1] != g["L"][0]),
    ("ccac-arbitrary-ccacloss", replace(CCAC, buffer=Buffer("arbitrary"), loss="ccac"), "any_sender",
     "all(A[t] - L[t] - tokens[t] <= buffer - 1/100 for t in range(T))",
     lambda g: any(b > g["buffer"] - F(1, 100) for b in g["bq"])),
    ("noncompose", NONCOMPOSE, "const_rate", "S[T-1] - S[0] >= C * (T - 1 - D) / 2",
     lambda g: g["S"][-1] - g["S"][0] < g["C"] * (len(g["S"]) - 1 - g["D"]) / 2),
    ("cbr_delay", CBR, "any_sender", "all(S[t] == tokens[t] for t in range(T))",
     lambda g: g["S"] != g["tokens"]),
    ("ideal", IDEAL, "any_sender", "W[T-1] == 0", lambda g: g["W"][-1] != 0),
    ("timeouts", replace(CCAC, loss="droptail", belief_timeouts=BeliefTimeouts(period=3, guard=F(11, 10))),
     "any_sender", "all(c_hi[t] <= c_hi[t-1] for t in range(1, T))", lambda g: True),
]


@pytest.mark.parametrize("name, model, cca, prop, violated", CEX_CASES, ids=[c[0] for c in CEX_CASES])
def test_counterexample_traces_are_exact(name: str, model: ModelConfig, cca: str, prop: str,
                                         violated: Callable[[dict[str, Any]], bool]) -> None:
    """Counterexamples on each model are exact: the JSON trace, read back as rationals, violates the property and satisfies the model."""
    initial = Initial(beliefs_consistent=True) if model.belief_timeouts else Initial()
    T = 7 if model.belief_timeouts else 5
    rep = run(model, T, prop, cca=cca, initial=initial)
    assert isinstance(rep.outcome, Counterexample), rep.verdict
    js = verify_json(rep)
    assert js["verdict"] == "counterexample"
    check_trace(js["trace"], violated)
    if model.belief_timeouts:
        fl = js["trace"]["flows"][0]
        hi = [exact(x) for x in fl["c_hi"]]
        lo = [exact(x) for x in fl["c_lo"]]
        C = exact(js["trace"]["params"]["C"])
        assert any(b > a for a, b in pairwise(hi))       # the violation
        assert all(l <= C <= h for l, h in zip(lo, hi))      # beliefs stayed sound


def test_warm_up_follows_D(tmp_path: Path) -> None:
    """Copa reads qdel_hi[t - R - D]: its warm-up grows with D.  On a model with
    D = 2 the CCA starts after 3 steps (it used to start after 2 and read step -1,
    i.e. the last step, through Python's negative indexing)."""
    from ccmatic.spec.cca import load_cca

    copa = load_cca(ROOT / "templates" / "copa.cca")
    assert (copa.warmup(1, 1, 10), copa.warmup(1, 2, 10)) == (2, 3)
    q = load(ROOT / "queries" / "verify" / "copa-ccac-noncompose.toml")
    q2 = replace(q, scenario=replace(q.scenario, model=replace(q.model, D=2), T=8))
    rep = verify(q2, OPTS)
    # pinned: with D = 2 the composing-free model still lets Copa fall below 10% (the
    # exactly re-checked trace says so); reading step -1 used to crash or mislead
    assert isinstance(rep.outcome, Counterexample), rep.verdict
    tr = rep.outcome.trace
    C = tr.params["C"]
    assert C is not None and tr.aggregate["S"][-1] - tr.aggregate["S"][0] < C * tr.T / 10
