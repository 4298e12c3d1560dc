"""Exact mode: the SMT models' step semantics on concrete rationals.

:func:`replay` re-executes a counterexample.  The network's free choices (wasted
tokens W, per-flow service S, losses L and their detection Ld, timeouts, and the
observations derived from them: beliefs and queueing-delay bounds) are read from
the trace — the *adversarial replay* link — while everything the sender decides is
recomputed from scratch by the concrete CCA interpreter (:mod:`ccmatic.lang.interp`,
independent of the Z3 compiler): rate, cwnd and state each step, then A(t) by
CCAC's sending rule.  The derived network quantities (token curve, queues, and
where the model makes them deterministic: drop-tail loss, ideal and CBR service,
oracle loss detection) are recomputed too.  Every recomputed value must equal the
trace's exactly; :class:`ReplayResult` lists the ones that do not.

``choose(...)`` in a CCA is nondeterministic; replay picks, step by step, the
combination of options that reproduces the recorded outputs (there are few: a
step's choices only affect that step's outputs).  A step that reaches ``choose()``
with no options (any value) keeps the recorded outputs.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from ccmatic.config import ModelConfig
from ccmatic.lang.cca import CcaProgram
from ccmatic.lang.interp import Value, initial_state, run_step
from ccmatic.verify import ConcreteTrace

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


class _FreeChoice(Exception):
    """A choose() with no options: the step's outputs are the solver's free choice."""


class ReplayError(Exception):
    """A trace that cannot be replayed at all (a value the CCA reads is missing)."""


def replay(prog: CcaProgram, model: ModelConfig, tr: ConcreteTrace,
           holes: Mapping[str, Fraction] | None = None) -> ReplayResult:
    """Replay ``tr`` with ``prog`` on ``model`` in exact arithmetic (see module doc)."""
    mss = _param(tr, "MSS")
    res = ReplayResult([], {})
    for f in range(tr.N):
        res.flows.append(_replay_flow(prog, model, tr, f, mss, holes, res))
    _replay_network(model, tr, res)
    return res


def replay_problem(prog: CcaProgram, model: ModelConfig, tr: ConcreteTrace,
                   holes: Mapping[str, object] | None = None) -> str | None:
    """Replay a counterexample before it is shown; None if every value matches,
    else why not (an engine bug: the counterexample is then not reported).  A
    candidate with symbolic holes is not replayed."""
    concrete: dict[str, Fraction] | None = None
    if holes:
        if not all(isinstance(v, Fraction) for v in holes.values()):
            return None
        concrete = {k: v for k, v in holes.items() if isinstance(v, Fraction)}
    try:
        res = replay(prog, model, tr, concrete)
    except ReplayError as e:
        return f"counterexample could not be replayed: {e}"
    if res.ok:
        return None
    shown = "; ".join(m.describe() for m in res.mismatches[:3])
    more = f" (and {len(res.mismatches) - 3} more)" if len(res.mismatches) > 3 else ""
    return f"counterexample failed the exact replay: {shown}{more}"


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


def _replay_flow(prog: CcaProgram, model: ModelConfig, tr: ConcreteTrace, f: int, mss: Fraction,
                 holes: Mapping[str, Fraction] | None, res: ReplayResult) -> dict[str, list[Value]]:
    T, R = tr.T, model.R
    outputs = [n for n, sets in (("rate", prog.sets_rate), ("cwnd", prog.sets_cwnd)) if sets]
    persistent = outputs + [s.name for s in prog.states]
    recorded = {n: _series(tr, f, n) for n in persistent}
    mine: dict[str, list[Value]] = {n: [] for n in persistent}
    mine["A"] = []
    net: dict[str, list[Value]] = {}

    def fetch_at(t: int) -> Callable[[str, int], Value]:
        def fetch(name: str, lag: int) -> Value:
            step = t - lag
            if name in mine and name != "A":
                return mine[name][step]
            if name == "A":
                return mine["A"][step]
            if name not in net:
                net[name] = _series(tr, f, name)
            return net[name][step]
        return fetch

    t0 = prog.warmup(R, model.D, T)
    A_rec = _series(tr, f, "A")
    S_rec = _series(tr, f, "S")
    Ld_rec = _series(tr, f, "Ld")
    for t in range(T):
        if t < t0:
            for n in persistent:  # warm-up: the initial conditions are the solver's
                mine[n].append(recorded[n][t])
        else:
            out = _run_matching(prog, model, T, mss, fetch_at(t), holes, {n: recorded[n][t] for n in persistent})
            for n in persistent:
                mine[n].append(out[n])
        # the sending rule (CCAC §3); before R the arrivals are initial state
        if t < R:
            mine["A"].append(A_rec[t])
            continue
        prev = _frac(mine["A"][t - 1])
        cands: list[Fraction] = []
        if prog.sets_cwnd:
            aw = _frac(S_rec[t - R]) + _frac(Ld_rec[t]) + _frac(mine["cwnd"][t])
            cands.append(max(aw, prev))
        if prog.sets_rate:
            cands.append(prev + max(_frac(mine["rate"][t]), Fraction(0)))
        mine["A"].append(min(cands) if cands else A_rec[t])
    for n in persistent + ["A"]:
        rec = recorded[n] if n != "A" else A_rec
        for t in range(T):
            res.compared += 1
            if mine[n][t] != rec[t]:
                res.mismatches.append(Mismatch(f, n, t, rec[t], mine[n][t]))
    # initial values the file declares must hold in the warm-up steps too
    allowed = _initial_options(prog, R, mss)
    for name, values in allowed.items():
        for t in range(min(t0, T)):
            res.compared += 1
            if recorded[name][t] not in values:
                res.mismatches.append(Mismatch(f, name, t, recorded[name][t], None))
    return mine


def _run_matching(prog: CcaProgram, model: ModelConfig, T: int, mss: Fraction, fetch: Callable[[str, int], Value],
                  holes: Mapping[str, Fraction] | None, want: dict[str, Value]) -> dict[str, Value]:
    """One step; if the CCA calls choose(), the combination of options whose outputs
    equal ``want`` (else the first combination's outputs, which then mismatch)."""
    arities: list[int] = []

    def first(opts: list[Value]) -> Value:
        if not opts:  # choose() with no options: any value, the solver's (not recomputable)
            raise _FreeChoice
        arities.append(len(opts))
        return opts[0]

    try:
        out = run_step(prog, R=model.R, D=model.D, T=T, mss=mss, fetch=fetch, choose=first, holes=holes, exact=True)
    except _FreeChoice:
        return dict(want)
    if not arities or all(out[k] == v for k, v in want.items()):
        return out
    # the options taken, call by call (a combination's later calls take the first
    # option if a different branch makes more calls than the first run)
    for combo in itertools.islice(itertools.product(*[range(a) for a in arities]), MAX_CHOICE_COMBOS):
        o = run_step(prog, R=model.R, D=model.D, T=T, mss=mss, fetch=fetch, choose=_Picker(combo),
                     holes=holes, exact=True)
        if all(o[k] == v for k, v in want.items()):
            return o
    return out


class _Picker:
    """choose() by a fixed list of option indices."""

    def __init__(self, combo: tuple[int, ...]) -> None:
        self.calls = iter(combo)

    def __call__(self, opts: list[Value]) -> Value:
        if not opts:
            raise _FreeChoice
        i = next(self.calls, 0)
        return opts[i] if i < len(opts) else opts[0]


def _initial_options(prog: CcaProgram, R: int, mss: Fraction) -> dict[str, list[Value]]:
    """The values each declared initial value allows (every option of its choose())."""
    out: dict[str, list[Value]] = {}
    for s in prog.states:
        if s.init is None:
            continue
        arities: list[int] = []

        def count(opts: list[Value], arities: list[int] = arities) -> Value:
            arities.append(len(opts))
            return opts[0]
        initial_state(prog, R=R, mss=mss, choose=count)
        vals: list[Value] = []
        for combo in itertools.islice(itertools.product(*[range(a) for a in arities]), MAX_CHOICE_COMBOS):
            v = initial_state(prog, R=R, mss=mss, choose=_Picker(combo))[s.name]
            if v not in vals:
                vals.append(v)
        out[s.name] = vals
    return out


def _frac(v: Value) -> Fraction:
    if isinstance(v, bool) or not isinstance(v, Fraction):
        raise ReplayError(f"expected an exact number, got {v!r}")
    return v


def _replay_network(model: ModelConfig, tr: ConcreteTrace, res: ReplayResult) -> None:
    """Recompute the aggregate curves from the replayed arrivals and the trace's
    choices, and the deterministic parts of the model."""
    T, N = tr.T, tr.N
    C = _param(tr, "C")
    C0 = _param(tr, "C0")
    agg = tr.aggregate
    W = agg.get("W")
    if W is None:
        return

    def fsum(name: str, t: int, flows: Sequence[Mapping[str, Sequence[Value]]]) -> Fraction:
        return sum((_frac(fl[name][t]) for fl in flows), Fraction(0))

    A = [fsum("A", t, res.flows) for t in range(T)]
    S = [fsum("S", t, tr.flows) for t in range(T)]
    L = [fsum("L", t, tr.flows) for t in range(T)]
    tokens = [C0 + C * t - W[t] for t in range(T)]
    mine: dict[str, list[Fraction]] = {
        "A": A, "S": S, "L": L, "W": list(W), "tokens": tokens,
        "queue": [A[t] - L[t] - S[t] for t in range(T)],
        "bq": [A[t] - L[t] - tokens[t] for t in range(T)],
    }
    beta = tr.params.get("buffer")
    # deterministic parts of the model, recomputed from the replayed arrivals
    cbr = None
    if model.family in ("ideal", "cbr_delay"):
        # the CBR box: T_A(t) = min(T_A(t-1) + C, A(t) - L(t))
        cbr = [tokens[0]] + [min(tokens[t - 1] + C, A[t] - L[t]) for t in range(1, T)]
        if model.family == "ideal":
            mine["S"] = list(tokens)
    if beta is not None and model.loss == "droptail":
        Lr = [L[0]]
        for t in range(1, T):
            over = A[t] - Lr[t - 1] > tokens[t] + beta
            Lr.append(A[t] - tokens[t] - beta if over else Lr[t - 1])
        mine["L"] = Lr
    res.aggregate = mine
    checks = [n for n in ("A", "S", "L", "W", "tokens", "queue", "bq") if n in agg]
    for n in checks:
        for t in range(T):
            res.compared += 1
            if mine[n][t] != agg[n][t]:
                res.mismatches.append(Mismatch(None, n, t, agg[n][t], mine[n][t]))
    if cbr is not None:
        for t in range(T):
            res.compared += 1
            if cbr[t] != tokens[t]:
                res.mismatches.append(Mismatch(None, "tokens (CBR box)", t, tokens[t], cbr[t]))
    if model.loss_detection == "oracle":
        for f in range(N):
            for t in range(model.R, T):
                res.compared += 1
                want, got = tr.flows[f]["Ld"][t], tr.flows[f]["L"][t - model.R]
                if want != got:
                    res.mismatches.append(Mismatch(f, "Ld", t, want, got))
