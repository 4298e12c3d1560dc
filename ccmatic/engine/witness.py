"""Steady-state traces: non-vacuity first, and counterexamples on periodic questions.

After the deciding check is unsat (proved, or an exists question without a witness),
:func:`ccmatic.engine.verify.solve` must show that the network, the CCA, the initial
conditions and the assumptions admit *some* trace of T steps; otherwise the answer
would be vacuous.  One trace suffices, and any trace will do.  The check as first
posed (the base constraints alone, in the session of the deciding check) is the
hard part of long periodic questions: at T = 20 the solver searches seconds for a
trace that returns to its first state (``periodic``) through the non-composing
model's waste, against tenths of a second for the deciding check.

So a trace is first looked for in a small part of the space: a *steady state*, in
which every level (cwnd, rate, the CCA's state, timeouts) repeats with the query's
period K (``periodic``, else 1) and every cumulative curve (A, S, L, Ld, W, the
per-flow outputs) grows by the same amount over every K steps, from step 0 on.  That
space is a handful of numbers, and CCAC's steady-state questions are asked about
exactly such traces, so the solver finds one there quickly when there is one.  The
check runs in the deciding check's session, in a scope, with a small budget of
Z3's resource units (deterministic: whether the witness is found does not depend on
the machine's load).

A trace found there is a model of the base constraints and more, so it is a model
of the base constraints; it is nevertheless accepted only after every base
constraint was evaluated on it with exact rationals (:mod:`ccmatic.engine.recheck`),
so that no mistake here can turn a contradictory setup into "proved".  If no steady
state is found in time (there may be none: the premises may pin a transient), the
base constraints alone are checked as before, under the run's own time limit: that
check, not this module, says "vacuous".

The same narrowing finds counterexamples.  On a periodic question whose deciding
check is not decided within a first slice, :func:`steady_counterexample` looks for a
counterexample among steady states of :func:`witness_shapes` before the whole check
runs again (:func:`ccmatic.engine.verify.decide`); CCAC's BBR question at T = 30 has
one of period 4 from step 4, found in seconds where an arbitrary witness took
minutes.  Such a counterexample is re-checked exactly and replayed like any other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import z3

from ccmatic.core.results import TraceBy
from ccmatic.encode.trace import SymbolicTrace, Tagged
from ccmatic.engine.recheck import RecheckError, recheck
from ccmatic.engine.session import Answer, Guard, Sat, Session, Unsat

#: the steady-state check's budget in Z3's resource units (deterministic; about 3 s of
#: one core of the 2026 test machine on CCAC's Copa question, where the check found
#: its trace within 7–68 million units, median 16, over seeds 0–9 at T = 20; the
#: run's time limit applies too)
STEADY_STATE_RLIMIT = 100_000_000

#: the deciding check's first slice (resource units) on a periodic question: the
#: questions decided within it (CCAC's Copa question at T = 20: 5 to 40 million) never
#: pay for the steady-state search; only if it is not decided are steady-state
#: counterexamples looked for, and then the check starts again without a slice
FIRST_SLICE_RLIMIT = 50_000_000

#: each steady-state counterexample check's budget (resource units; CCAC's BBR
#: question at T = 20 and 30 found its witness, period 4 after a warm-up of 4 steps,
#: within 15–84 million over seeds 0–2)
WITNESS_RLIMIT = 400_000_000

STEADY: TraceBy = "steady state"
SOLVER: TraceBy = "solver"


@dataclass(frozen=True)
class TraceCheck:
    """How the premises were shown to admit a trace: ``by`` the steady-state witness
    (re-checked exactly) or the solver's check of the base constraints (``answer``:
    its sat, unsat or unknown), in ``seconds``."""

    answer: Answer
    by: TraceBy
    seconds: float
    note: str = ""  # why the steady state was not used, if it was tried


def series(tr: SymbolicTrace) -> tuple[list[list[z3.ExprRef]], list[list[z3.ExprRef]]]:
    """The trace's per-step variables the steady state ties: cumulative curves (they
    grow) and levels (they repeat)."""
    cumulative: list[list[z3.ExprRef]] = []
    levels: list[list[z3.ExprRef]] = []
    for f in range(tr.N):
        cumulative += [tr.A_f[f], tr.S_f[f], tr.L_f[f], tr.Ld_f[f]]
        if tr.O_f:
            cumulative.append(tr.O_f[f])
        levels += [tr.timeout_f[f], *tr.state_f[f].values()]
        if tr.sets_rate:
            levels.append(tr.rate_f[f])
        if tr.sets_cwnd:
            levels.append(tr.cwnd_f[f])
    for hop in tr.hops:  # its wasted tokens, and each flow's output from it if not O itself
        cumulative.append(hop.W)
        cumulative += [out for f, out in hop.O.items() if out is not tr.O_f[f]]
    return cumulative, levels


def steady_state(tr: SymbolicTrace, K: int, start: int = 0) -> list[Tagged]:
    """Every level repeats with period K and every cumulative curve grows by the same
    amount over any K steps, from step ``start`` on (constraints that only narrow the
    traces: a model of base ∧ these is a model of base)."""
    cumulative, levels = series(tr)
    out: list[Tagged] = []
    for x in cumulative:
        out += [("steady state", x[t + K] - x[t] == x[start + K] - x[start]) for t in range(start + 1, tr.T - K)]
    for x in levels:
        out += [("steady state", x[t + K] == x[t]) for t in range(start, tr.T - K)]
    return out


def witness_shapes(T: int, period: int) -> list[tuple[int, int]]:
    """The steady states a witness (counterexample) is first looked for in, as (period,
    first step): the query's period and twice it (a CCA's own cycle, such as BBR's
    four gain phases against CCAC's period of 2 R, often doubles it), from step 0 or
    after a warm-up of two periods (a CCA's history windows start empty)."""
    shapes = [(k, s0) for s0 in (0, 2 * period) for k in (period, 2 * period)]
    return [(k, s0) for k, s0 in shapes if s0 + k < T - 1]


def steady_counterexample(base: list[Tagged], neg: list[Tagged], tr: SymbolicTrace, period: int,
                          timeout_s: float | None, seed: int, guard: Guard | None = None) -> Answer | None:
    """A model of ``base`` and ``neg`` that is a steady state of one of
    :func:`witness_shapes`, each tried in a solver of its own (no state learned by an
    earlier check steers it) under :data:`WITNESS_RLIMIT`; None if none is found.
    (The caller re-checks it exactly and replays it, as every counterexample.)  Unsat
    if ``guard`` ends a check with it (a rival's proof: then there is no
    counterexample at all)."""
    for k, s0 in witness_shapes(tr.T, period):
        r = Session(base, timeout_s, seed, guard=guard).check([*neg, *steady_state(tr, k, s0)],
                                                              rlimit=WITNESS_RLIMIT)
        if isinstance(r, Sat) or (isinstance(r, Unsat) and guard is not None and guard.decided()):
            return r
    return None


def confirm_trace(sess: Session, base: list[Tagged], tr: SymbolicTrace, period: int | None) -> TraceCheck:
    """Show that ``base`` (the constraints ``sess`` holds) admits a trace: a steady
    state re-checked exactly, else the solver's check of ``base`` alone."""
    t0 = time.perf_counter()
    found = steady_witness(sess, base, tr, period or 1)
    if isinstance(found, Sat):
        return TraceCheck(found, STEADY, time.perf_counter() - t0)
    return TraceCheck(sess.check(), SOLVER, time.perf_counter() - t0, found)


def steady_witness(sess: Session, base: list[Tagged], tr: SymbolicTrace, K: int) -> Sat | str:
    """A steady state of period K that meets every constraint of ``base`` under exact
    evaluation (the solver's model), or why there is none at hand."""
    if tr.T <= K:
        return "horizon not longer than the period"
    r = sess.check(steady_state(tr, K), rlimit=STEADY_STATE_RLIMIT)
    if not isinstance(r, Sat):
        return f"no steady state of period {K} found ({type(r).__name__.lower()})"
    try:
        recheck(r.model, base)
    except RecheckError as e:
        return f"the steady state failed the exact re-check: {e}"
    return r
