"""Exact mode: re-execute a counterexample with exact rationals.

The network's free choices (wasted tokens W, per-flow service S, losses L and their
detection Ld, timeouts, and the observations derived from them: beliefs,
queueing-delay bounds and RTT samples) are read from the trace — the *adversarial replay* link —
while everything the sender decides is recomputed from scratch by the one CCA
semantics (:mod:`ccmatic.semantics.cca` over exact rationals): rate, cwnd and
state each step, then A(t) by CCAC's sending rule.  The derived network quantities
(token curve, queues, and where the model makes them deterministic: drop-tail loss,
ideal and CBR service, oracle loss detection) are recomputed by the same rules the
encoder asserts (:mod:`ccmatic.semantics.network`).  Every recomputed value must
equal the trace's exactly; :class:`ReplayResult` lists the ones that do not.  An
RTT sample, the adversary's choice within its delay bucket, is checked to lie in it.

``choose(...)`` in a CCA is nondeterministic; replay picks, step by step, the
combination of options that reproduces the recorded outputs (there are few: a
step's choices only affect that step's outputs).  A step that reaches ``choose()``
with no options (any value) keeps the recorded outputs.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from ccmatic.core.model import ALL_PARTS, ModelConfig
from ccmatic.core.results import ConcreteTrace, Value
from ccmatic.semantics import network, qdel
from ccmatic.semantics.cca import initial_values, run_step
from ccmatic.semantics.domain import EXACT
from ccmatic.spec import ir
from ccmatic.spec.cca import CcaProgram
from ccmatic.spec.step import StepCode

MAX_CHOICE_COMBOS = 4096


@dataclass(frozen=True)
class Mismatch:
    """One recomputed value that differs from the trace (flow None: aggregate)."""

    flow: int | None
    name: str
    t: int
    trace: Value | None
    replay: Value | None

    def describe(self) -> str:
        where = "aggregate" if self.flow is None else f"flow {self.flow}"
        return f"{where} {self.name}[{self.t}]: trace {self.trace}, replay {self.replay}"


@dataclass
class ReplayResult:
    """The replayed per-step values (per flow, and aggregate) and every mismatch."""

    flows: list[dict[str, list[Value]]]
    aggregate: dict[str, list[Fraction]]
    mismatches: list[Mismatch] = field(default_factory=list)
    compared: int = 0

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def compare(self, flow: int | None, name: str, t: int, trace: Value | None, mine: Value | None) -> None:
        self.compared += 1
        if mine != trace:
            self.mismatches.append(Mismatch(flow, name, t, trace, mine))


class _FreeChoice(Exception):
    """A choose() with no options: the step's outputs are the adversary's free choice."""


class ReplayError(Exception):
    """A trace that cannot be replayed at all (a value the CCA reads is missing)."""


def replay(prog: CcaProgram, model: ModelConfig, tr: ConcreteTrace,
           holes: Mapping[str, Fraction] | None = None, parts: frozenset[str] = ALL_PARTS) -> ReplayResult:
    """Replay ``tr`` with ``prog`` on ``model`` in exact arithmetic (see module doc),
    with the rules of the model parts assumed (a rule of a part left out is not
    one the trace must follow)."""
    mss = _param(tr, "MSS")
    res = ReplayResult([], {})
    for f in range(tr.N):
        code = prog.code(model.flow_R(f), model.D, tr.T, dict(holes) if holes else None)
        res.flows.append(_replay_flow(prog, code, model, tr, f, mss, res, "sender" in parts))
    _replay_network(model, tr, res, parts)
    _check_rtt(model, tr, res)
    return res


def replay_problem(prog: CcaProgram, model: ModelConfig, tr: ConcreteTrace,
                   holes: Mapping[str, Fraction] | None = None, parts: frozenset[str] = ALL_PARTS) -> str | None:
    """Replay a counterexample before it is shown; None if every value matches,
    else why not (an engine bug: the counterexample is then not reported).  A
    template whose holes are left symbolic is not replayed."""
    if prog.is_template and not holes:
        return None
    try:
        res = replay(prog, model, tr, holes, parts)
    except ReplayError as e:
        return f"counterexample could not be replayed: {e}"
    if res.ok:
        return None
    shown = "; ".join(m.describe() for m in res.mismatches[:3])
    more = f" (and {len(res.mismatches) - 3} more)" if len(res.mismatches) > 3 else ""
    return f"counterexample failed the exact replay: {shown}{more}"


def _hop_arrived(model: ModelConfig, tr: ConcreteTrace, res: ReplayResult, h: int) -> list[Fraction]:
    """What reached bottleneck h of a parking lot, step by step: the replayed A − L of
    the flows that start there, the trace's first-bottleneck output (O1) of those
    that come from the other one."""
    out: list[Fraction] = []
    for t in range(tr.T):
        parts = [network.hop_input(route, h, _frac(res.flows[f]["A"][t]) - _frac(tr.flows[f]["L"][t]),
                                   {route[0]: _frac(tr.flows[f]["O1"][t])})
                 for f, route in enumerate(model.routes) if h in route]
        out.append(EXACT.sum(parts))
    return out


def _param(tr: ConcreteTrace, name: str) -> Fraction:
    v = tr.params.get(name)
    if v is None:
        raise ReplayError(f"the trace has no value for the parameter {name}")
    return v


def _series(tr: ConcreteTrace, f: int, name: str) -> list[Value]:
    fl = tr.flows[f]
    if name not in fl:
        if name == "timeout":
            return [False] * tr.T
        raise ReplayError(f"the trace does not record '{name}' for flow {f}, which the CCA reads")
    return list(fl[name])


def _frac(v: Value | None) -> Fraction:
    if v is None or isinstance(v, bool) or not isinstance(v, Fraction):
        raise ReplayError(f"expected an exact number, got {v!r}")
    return v


def _replay_flow(prog: CcaProgram, code: StepCode, model: ModelConfig, tr: ConcreteTrace, f: int, mss: Fraction,
                 res: ReplayResult, sender: bool = True) -> dict[str, list[Value]]:
    T, R = tr.T, model.flow_R(f)
    persistent = prog.outputs
    recorded = {n: _series(tr, f, n) for n in persistent}
    mine: dict[str, list[Value]] = {n: [] for n in [*persistent, "A"]}
    net: dict[str, list[Value]] = {}

    def fetch_at(t: int) -> Callable[[str, int], Value]:
        def fetch(name: str, lag: int) -> Value:
            if name in mine:
                return mine[name][t - lag]
            if name not in net:
                net[name] = _series(tr, f, name)
            return net[name][t - lag]
        return fetch

    A_rec, S_rec, Ld_rec = _series(tr, f, "A"), _series(tr, f, "S"), _series(tr, f, "Ld")
    for t in range(T):
        if t < code.warmup:
            for n in persistent:  # warm-up: the initial conditions are the adversary's
                mine[n].append(recorded[n][t])
        else:
            out = _run_matching(code, mss, fetch_at(t), {n: recorded[n][t] for n in persistent})
            for n in persistent:
                mine[n].append(out[n])
        if t < R or not sender or not (prog.sets_cwnd or prog.sets_rate):
            # the sending rule (CCAC §3); before R the arrivals are initial state, and
            # without the rule (or with no CCA) the sender's choice
            mine["A"].append(A_rec[t])
            continue
        cwnd = _frac(mine["cwnd"][t]) if prog.sets_cwnd else None
        rate = _frac(mine["rate"][t]) if prog.sets_rate else None
        mine["A"].append(network.sending(EXACT, _frac(mine["A"][t - 1]), _frac(S_rec[t - R]), _frac(Ld_rec[t]),
                                         cwnd, rate))
    for n in [*persistent, "A"]:
        rec = recorded[n] if n != "A" else A_rec
        for t in range(T):
            res.compare(f, n, t, rec[t], mine[n][t])
    # initial values the file declares must hold in the warm-up steps too
    for name, values in _initial_options(code, mss).items():
        for t in range(min(code.warmup, T)):
            res.compare(f, name, t, recorded[name][t], recorded[name][t] if recorded[name][t] in values else None)
    return mine


def _run_matching(code: StepCode, mss: Fraction, fetch: Callable[[str, int], Value],
                  want: dict[str, Value]) -> dict[str, Value]:
    """One step; if the CCA calls choose(), the combination of options whose outputs
    equal ``want`` (else the first combination's outputs, which then mismatch)."""
    arities: list[int] = []

    def first(opts: list[Value], node: ir.Choose) -> Value:
        if not opts:  # choose() with no options: any value, the adversary's (not recomputable)
            raise _FreeChoice
        arities.append(len(opts))
        return opts[0]

    def param(name: str) -> Value:
        return mss

    try:
        out = run_step(code, EXACT, fetch, param, first)
    except _FreeChoice:
        return dict(want)
    if not arities or all(out[k] == v for k, v in want.items()):
        return out
    # the options taken, call by call (a combination's later calls take the first
    # option if a different branch makes more calls than the first run)
    for combo in itertools.islice(itertools.product(*[range(a) for a in arities]), MAX_CHOICE_COMBOS):
        o = run_step(code, EXACT, fetch, param, _Picker(combo))
        if all(o[k] == v for k, v in want.items()):
            return o
    return out


class _Picker:
    """choose() by a fixed list of option indices."""

    def __init__(self, combo: tuple[int, ...]) -> None:
        self.calls = iter(combo)

    def __call__(self, opts: list[Value], node: ir.Choose) -> Value:
        if not opts:
            raise _FreeChoice
        i = next(self.calls, 0)
        return opts[i] if i < len(opts) else opts[0]


def _initial_options(code: StepCode, mss: Fraction) -> dict[str, list[Value]]:
    """The values each declared initial value allows (every option of its choose())."""
    out: dict[str, list[Value]] = {}
    for name in code.init:
        arities: list[int] = []

        def count(opts: list[Value], node: ir.Choose, arities: list[int] = arities) -> Value:
            arities.append(len(opts))
            return opts[0]
        one = StepCode((), (), {}, {name: code.init[name]})
        initial_values(one, EXACT, lambda p: mss, count)
        vals: list[Value] = []
        for combo in itertools.islice(itertools.product(*[range(a) for a in arities]), MAX_CHOICE_COMBOS):
            v = initial_values(one, EXACT, lambda p: mss, _Picker(combo))[name]
            if v not in vals:
                vals.append(v)
        out[name] = vals
    return out


def _check_rtt(model: ModelConfig, tr: ConcreteTrace, res: ReplayResult) -> None:
    """The RTT samples are the adversary's choice: each must lie in its delay bucket
    and stay put while no new ACK arrives (:func:`ccmatic.semantics.qdel.rtt_in_bucket`,
    :func:`~ccmatic.semantics.qdel.rtt_kept`: the rules the encoder asserts)."""
    for f, fl in enumerate(tr.flows):
        if "rtt" not in fl:
            continue
        rtt, S = [_frac(x) for x in fl["rtt"]], [_frac(x) for x in fl["S"]]
        for t in range(tr.T):
            ok = qdel.rtt_in_bucket(EXACT, _frac(fl["qdel_hi"][t]), rtt[t], model.flow_R(f), tr.T)
            res.compare(f, "rtt (within its delay bucket)", t, fl["rtt"][t], fl["rtt"][t] if ok else None)
            if t > 0:
                kept = qdel.rtt_kept(EXACT, S[t], S[t - 1], rtt[t], rtt[t - 1])
                res.compare(f, "rtt (kept without a new ACK)", t, fl["rtt"][t], fl["rtt"][t] if kept else None)


def _replay_network(model: ModelConfig, tr: ConcreteTrace, res: ReplayResult,
                    parts: frozenset[str] = ALL_PARTS) -> None:
    """Recompute the aggregate curves from the replayed arrivals and the trace's
    choices, and the deterministic parts of the model, by the encoder's rules."""
    T = tr.T
    C = _param(tr, "C")
    agg = tr.aggregate
    W = agg.get("W")
    if W is None:
        return
    A = [EXACT.sum([_frac(fl["A"][t]) for fl in res.flows]) for t in range(T)]
    S = [EXACT.sum([_frac(fl["S"][t]) for fl in tr.flows]) for t in range(T)]
    L = [EXACT.sum([_frac(fl["L"][t]) for fl in tr.flows]) for t in range(T)]
    tokens = [network.tokens(EXACT, _param(tr, "C0"), C, t, W[t]) for t in range(T)]
    arrived = [[A[t] - L[t] for t in range(T)]] if model.hops == 1 else [_hop_arrived(model, tr, res, h)
                                                                          for h in range(model.hops)]
    mine: dict[str, list[Fraction]] = {
        "A": A, "S": S, "L": L, "W": list(W), "tokens": tokens,
        "queue": [network.in_network(EXACT, A[t], L[t], S[t]) for t in range(T)],
        "bq": [arrived[0][t] - tokens[t] for t in range(T)],
    }
    boxes = [tokens]
    if model.hops > 1:
        W2 = [_frac(w) for w in agg["W2"]]
        tokens2 = [network.tokens(EXACT, _param(tr, "C0_2"), C, t, W2[t]) for t in range(T)]
        mine |= {"W2": W2, "tokens2": tokens2, "bq2": [arrived[1][t] - tokens2[t] for t in range(T)]}
        boxes.append(tokens2)
    elif model.family == "ideal" and "service" in parts:
        mine["S"] = list(tokens)
    beta = tr.params.get("buffer")
    if beta is not None and model.loss == "droptail" and "loss" in parts:
        Lr = [L[0]]
        for t in range(1, T):
            Lr.append(network.droptail_loss(EXACT, A[t], Lr[t - 1], tokens[t], beta))
        mine["L"] = Lr
    res.aggregate = mine
    for n in mine:
        if n in agg:
            for t in range(T):
                res.compare(None, n, t, agg[n][t], mine[n][t])
    if model.family in ("ideal", "cbr_delay") and "service" in parts:
        for tok, arr in zip(boxes, arrived, strict=True):
            for t in range(T):
                box = tok[0] if t == 0 else network.cbr_tokens(EXACT, tok[t - 1], C, arr[t])
                res.compare(None, "tokens (CBR box)", t, tok[t], box)
    N = tr.N
    if model.loss_detection == "oracle" and "loss_detection" in parts:
        for f in range(N):
            R = model.flow_R(f)
            for t in range(R, T):
                res.compare(f, "Ld", t, tr.flows[f]["Ld"][t], network.oracle_detection(tr.flows[f]["L"][t - R]))
