"""Tight pairs on the network-model primitives (thesis Listing A.1, docs/semantics.md).

Every bound comes with a companion: the exact bound must be *proved* (its negation
is unsat together with the model) and a bound off by a little (1/100 byte, one
step) must give a *counterexample*, so that no proof here is vacuous or loose.
Queries use ``templates/any_sender.cca`` (the solver picks every rate), so the
claims hold for every sender.

Models are built here (not loaded from models/), so that editing a model file does
not change what these tests check.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction as F

import helpers
import pytest

from ccmatic.core.model import Buffer, ModelConfig
from ccmatic.core.scenario import Initial
from ccmatic.engine.verify import VerifyReport

NO_PREMISES = Initial()

CCAC = ModelConfig(name="ccac", family="ccac", compose=True, C=F(100), R=1, D=1)
NONCOMPOSE = replace(CCAC, name="ccac_noncompose", compose=False)
CBR = ModelConfig(name="cbr_delay", family="cbr_delay", C=F(100), R=1, D=1)
IDEAL = ModelConfig(name="ideal", family="ideal", C=F(100), R=1, D=0)
FAMILIES = {"ccac": CCAC, "ccac_noncompose": NONCOMPOSE, "cbr_delay": CBR, "ideal": IDEAL}
ALL = list(FAMILIES)
FINITE = Buffer("finite", F(1))


def check(model: ModelConfig, T: int, prop: str, **kw: object) -> VerifyReport:
    return helpers.check(model, T, prop, **kw)


def proved(model: ModelConfig, T: int, prop: str, **kw: object) -> None:
    helpers.proved(model, T, prop, **kw)


def refuted(model: ModelConfig, T: int, prop: str, **kw: object) -> None:
    helpers.refuted(model, T, prop, **kw)


# -- service curve (A.2.1, A.2.3) -------------------------------------------------------

@pytest.mark.parametrize("fam", ALL)
@pytest.mark.parametrize("buf", [Buffer(), FINITE], ids=["inf", "finite"])
def test_service_upper_bound(fam: str, buf: Buffer) -> None:
    """S(T−1) − S(0) ≤ C·(T−1+D): at most C per step plus a burst of C·D that jitter
    held back before the trace (S(0) ≥ T_A(−D), S(T−1) ≤ T_A(T−1))."""
    m = replace(FAMILIES[fam], buffer=buf)
    proved(m, 6, "S[T-1] - S[0] <= C * (T - 1 + D)")
    refuted(m, 6, "S[T-1] - S[0] <= C * (T - 1 + D) - 1/100")


def test_service_upper_bound_longer_rtt() -> None:
    """The same bound with R = D = 2."""
    for m in (replace(CCAC, R=2, D=2), replace(NONCOMPOSE, R=2, D=2), replace(CBR, R=2, D=2)):
        proved(m, 7, "S[T-1] - S[0] <= C * (T - 1 + D)")
        refuted(m, 7, "S[T-1] - S[0] <= C * (T - 1 + D) - 1/100")


def test_ideal_per_step_service() -> None:
    """Ideal link: at most C per step, and exactly the Table 4.1 settings' recurrence
    S(t) = min(S(t−1) + C, A(t) − L(t−1)), which CBR-delay (jitter) does not obey."""
    for buf in (Buffer(), FINITE):
        m = replace(IDEAL, buffer=buf, loss="droptail")
        proved(m, 6, "all(S[t] - S[t-1] <= C * R for t in range(1, T))")
        refuted(m, 6, "all(S[t] - S[t-1] <= C * R - 1/100 for t in range(1, T))")
        proved(m, 6, "all(S[t] == min(S[t-1] + C * R, A[t] - L[t-1]) for t in range(1, T))")
    refuted(CBR, 6, "all(S[t] == min(S[t-1] + C * R, A[t] - L[t-1]) for t in range(1, T))")


BACKLOG = "all(bq[t] > 0 for t in range(1, T))"


@pytest.mark.parametrize("fam", ALL)
@pytest.mark.parametrize("buf", [Buffer(), FINITE, Buffer("arbitrary")], ids=["inf", "finite", "arbitrary"])
def test_service_lower_bound_under_backlog(fam: str, buf: Buffer) -> None:
    """While the bottleneck queue is positive no token is wasted, so
    S(T−1) − S(0) ≥ T_A(T−1−D) − T_A(0) = C·(T−1−D)."""
    m = replace(FAMILIES[fam], buffer=buf)
    proved(m, 6, "S[T-1] - S[0] >= C * (T - 1 - D)", assume=(BACKLOG,))
    refuted(m, 6, "S[T-1] - S[0] >= C * (T - 1 - D) + 1/100", assume=(BACKLOG,))


@pytest.mark.parametrize("fam", ALL)
def test_service_lower_bound_big_initial_queue(fam: str) -> None:
    """A backlog given as a large initial queue (infinite buffer): A − L never
    decreases and T_A(0) ≤ S(0) + C·D, so the queue never empties."""
    m = FAMILIES[fam]
    big = ("A[0] - L[0] >= S[0] + C * (T + D)",)
    proved(m, 6, "S[T-1] - S[0] >= C * (T - 1 - D)", assume=big)
    refuted(m, 6, "S[T-1] - S[0] >= C * (T - 1 - D) + 1/100", assume=big)
    # without a backlog, nothing need be served at all
    refuted(m, 6, "S[T-1] - S[0] >= 1/100")


# -- buffer and loss -------------------------------------------------------------------

@pytest.mark.parametrize("fam", ALL)
@pytest.mark.parametrize("loss", ["droptail", "ccac"])
def test_buffer_bound(fam: str, loss: str) -> None:
    """The bottleneck queue A − L − T_A never exceeds β = 1 BDP, and reaches it."""
    m = replace(FAMILIES[fam], buffer=FINITE, loss=loss)  # type: ignore[arg-type]
    proved(m, 6, "all(A[t] - L[t] - tokens[t] <= buffer for t in range(T))")
    refuted(m, 6, "all(A[t] - L[t] - tokens[t] <= buffer - 1/100 for t in range(T))")
    proved(m, 6, "buffer == C * R")


@pytest.mark.parametrize("fam", ALL)
def test_infinite_buffer_no_loss(fam: str) -> None:
    """An infinite buffer loses nothing on every model; a finite one can."""
    proved(FAMILIES[fam], 6, "all(L[t] == L[0] for t in range(T))")
    refuted(replace(FAMILIES[fam], buffer=FINITE), 6, "all(L[t] == L[0] for t in range(T))")


def test_droptail_is_deterministic() -> None:
    """Drop-tail: bytes are lost exactly when the queue would exceed β, and then it is
    full.  CCAC's loss rule compares the queue with the previous step's tokens, so it
    may drop while the queue still has room."""
    dt = replace(CCAC, buffer=FINITE, loss="droptail")
    cc = replace(CCAC, buffer=FINITE, loss="ccac")
    full = "all(L[t] > L[t-1] => bq[t] == buffer for t in range(1, T))"
    room = "all(A[t] - L[t-1] <= tokens[t] + buffer => L[t] == L[t-1] for t in range(1, T))"
    proved(dt, 6, full)
    proved(dt, 6, room)
    refuted(cc, 6, full)
    refuted(cc, 6, room)
    # CCAC's rule itself: loss only if the queue exceeds β against T_A(t − 1)
    proved(cc, 6, "all(L[t] > L[t-1] => A[t] - L[t] >= tokens[t-1] + buffer for t in range(1, T))")
    refuted(cc, 6, "all(L[t] > L[t-1] => A[t] - L[t] >= tokens[t-1] + buffer + 1/100 for t in range(1, T))")


@pytest.mark.parametrize("fam", ALL)
@pytest.mark.parametrize("loss", ["droptail", "ccac"])
def test_loss_detection_never_precedes_loss(fam: str, loss: str) -> None:
    """Ld(t) ≤ L(t − R), and detection of a loss one RTT old is possible."""
    m = replace(FAMILIES[fam], buffer=FINITE, loss=loss)  # type: ignore[arg-type]
    proved(m, 6, "all(Ld[t] <= L[t-R] for t in range(R, T))")
    refuted(m, 6, "all(Ld[t] <= L[t-R-1] for t in range(R + 1, T))")
    proved(m, 6, "all(Ld[t] <= L[t] for t in range(T))")


def test_droptail_infinite_buffer_detects_nothing_new() -> None:
    """docs/semantics.md §Table 4.1 settings: with an infinite buffer and drop-tail, Ld = L throughout; CCAC's
    loss mode lets undetected initial losses be detected later."""
    proved(replace(CCAC, loss="droptail"), 6, "all(Ld[t] == L[t] for t in range(T))")
    refuted(replace(CCAC, loss="ccac"), 6, "all(Ld[t] == L[t] for t in range(T))")


# -- waste (A.2.5) ---------------------------------------------------------------------

@pytest.mark.parametrize("fam", ALL)
def test_waste_only_when_queue_empty(fam: str) -> None:
    """Tokens are wasted only when the bottleneck queue is empty (≤ 0; CCAC lets the
    token curve run ahead of arrivals, so 'empty' includes bq < 0) — and waste does
    happen."""
    m = FAMILIES[fam]
    proved(m, 6, "all(W[t] > W[t-1] => bq[t] <= 0 for t in range(1, T))")
    refuted(m, 6, "all(W[t] > W[t-1] => bq[t] < 0 for t in range(1, T))")
    refuted(m, 6, "W[T-1] == 0")
    proved(m, 6, "all(W[t] - W[t-1] <= C * R for t in range(1, T))")


def test_noncomposing_epsilon_waste() -> None:
    """Non-composing CCAC wastes only when at most ε bytes are undelivered."""
    m = replace(NONCOMPOSE, epsilon=F(1, 10))
    proved(m, 6, "all(W[t] > W[t-1] => A[t] - L[t] - S[t] <= 1/10 for t in range(1, T))")
    refuted(m, 6, "all(W[t] > W[t-1] => A[t] - L[t] - S[t] <= 1/10 - 1/1000 for t in range(1, T))")
    # so with ε > 0 it may waste while the bottleneck queue is positive ...
    refuted(m, 6, "all(W[t] > W[t-1] => bq[t] <= 0 for t in range(1, T))")


@pytest.mark.parametrize("fam", ["cbr_delay", "ideal"])
def test_cbr_waste_is_deterministic(fam: str) -> None:
    """CBR box: its queue is never negative, tokens are never wasted while it is
    positive, and they *must* be wasted when arrivals fall short of C — CCAC may
    instead let the token curve run ahead."""
    m = FAMILIES[fam]
    proved(m, 6, "all(bq[t] >= 0 for t in range(T))")
    proved(m, 6, "all(bq[t] > 0 => W[t] == W[t-1] for t in range(1, T))")
    forced = "all(A[t] - L[t] < tokens[t-1] + C * R => W[t] > W[t-1] for t in range(1, T))"
    proved(m, 6, forced)
    refuted(CCAC, 6, forced)
    refuted(CCAC, 6, "all(bq[t] >= 0 for t in range(T))")


def test_ideal_serves_tokens() -> None:
    """Ideal link: S = T_A exactly; CBR-delay may hold bytes back up to D."""
    proved(IDEAL, 6, "all(S[t] == tokens[t] for t in range(T))")
    refuted(CBR, 6, "all(S[t] == tokens[t] for t in range(T))")
    proved(CBR, 6, "all(S[t] >= tokens[t-D] for t in range(1, T))")
    refuted(CBR, 6, "all(S[t] >= tokens[t-D] + 1/100 for t in range(1, T))")


# -- periodic (steady state) -------------------------------------------------------------

@pytest.mark.parametrize("fam", ALL)
def test_periodic(fam: str) -> None:
    """periodic = K is CCAC's make_periodic(dur = K): rate and cwnd of the last K
    steps repeat the first K, and the state (bottleneck queue, A − L − S, L − Ld) at
    the last step equals the first step's, at no other pair of steps."""
    m = FAMILIES[fam]
    last = "bq[T-1] == bq[0] and A[T-1] - L[T-1] - S[T-1] == A[0] - L[0] - S[0] and L[T-1] - Ld[T-1] == L[0] - Ld[0]"
    proved(m, 6, last, periodic=2)
    refuted(m, 6, last)
    refuted(m, 6, "bq[T-2] == bq[0]", periodic=2)
    refuted(m, 6, "bq[T-1] == bq[1]", periodic=2)
    rate = "all(rate[t] == rate[T-2+t] for t in range(2))"
    proved(m, 6, rate, periodic=2)
    refuted(m, 6, rate)
    refuted(m, 6, "rate[2] == rate[T-2]", periodic=2)  # only the last K steps repeat the first K


@pytest.mark.parametrize("fam", ALL)
def test_periodic_all(fam: str) -> None:
    """periodic_all = K: the state is tied at every pair of steps K apart among the
    first and last K (the queue at the last step repeats step K − 1's, not step 0's)."""
    m = FAMILIES[fam]
    pairs = "all(bq[t] == bq[T-2+t] and A[t] - L[t] - S[t] == A[T-2+t] - L[T-2+t] - S[T-2+t] for t in range(2))"
    proved(m, 6, pairs, periodic=2, periodic_all=True)
    refuted(m, 6, pairs, periodic=2)
    refuted(m, 6, "bq[T-1] == bq[0]", periodic=2, periodic_all=True)


@pytest.mark.parametrize(("mode", "bound"), [("arbitrary", "MSS"), ("small", "2 * C * (R + D)"),
                                           ("large", "2 * C * (R + D)")])
def test_symbolic_buffer_edges(mode: str, bound: str) -> None:
    """The symbolic buffer's bounds and their equality cases: arbitrary β > MSS (β = MSS
    excluded, β just above it possible); small β ≤ 2·C·(R + D) and large β ≥ 2·C·(R + D),
    the bound itself possible."""
    m = replace(CCAC, buffer=Buffer(mode, F(2) if mode != "arbitrary" else None), loss="droptail")  # type: ignore[arg-type]
    if mode == "arbitrary":
        proved(m, 3, "buffer > MSS")
        refuted(m, 3, "buffer > MSS * 101/100")
    else:
        proved(m, 3, f"buffer {'<=' if mode == 'small' else '>='} {bound}")
        refuted(m, 3, f"buffer != {bound}")



# -- queueing-delay samples (docs/semantics.md §Queueing delay) ----------------------------

def bucket(t: int, dt: int) -> str:
    """'S moved at t and the byte S(t) was sent in (t−dt−1, t−dt]', written directly
    with A, S, L (no qdel booleans involved)."""
    return (f"(S[{t}] > S[{t-1}] and A[{t-dt-1}] - L[{t-dt-1}] < S[{t}] "
            f"and S[{t}] <= A[{t-dt}] - L[{t-dt}])")


@pytest.mark.parametrize("fam", ["ccac", "cbr_delay", "ideal"])
@pytest.mark.parametrize("loss", ["droptail", "ccac"])
def test_delay_bound_from_buffer(fam: str, loss: str) -> None:
    """With β = C/2, a sampled byte is at most ⌈β/C⌉ + D = 1 + D buckets old.  The
    bucket's lower edge may exceed β/C + D (sent late in its step, served early in
    the sample's step), so C·dt ≤ β + C·D would be unsound."""
    m = replace(FAMILIES[fam], buffer=Buffer("finite", F(1, 2)), loss=loss)  # type: ignore[arg-type]
    k = 1 + m.D
    proved(m, 6, f"not {bucket(5, k + 1)}")
    refuted(m, 6, f"not {bucket(5, k)}")
    # the qdel booleans agree (regression: they used to exclude the second trace)
    hi = " and ".join(f"(qdel_hi[{t}] <= {k + 1} or qdel_hi[{t}] > 100)" for t in range(1, 6))
    proved(m, 6, hi)
    refuted(m, 6, hi.replace(f"<= {k + 1}", f"<= {k}"))


@pytest.mark.parametrize("fam", ["ccac", "cbr_delay"])
def test_delay_bucket_edges(fam: str) -> None:
    """Equality at a bucket's edges: the byte delivered last at t = 3 is exactly the last
    byte sent in step 1 (S[3] = A[1] − L[1]).  Such a trace exists, and its sample is in
    bucket dt = 2 (qdel_hi = 3, qdel_lo = 2 − D): the upper edge is included (S ≤
    A[t−dt] − L), the lower one excluded (A[t−dt−1] − L < S), so exactly one bucket
    holds (both edges included would leave no such trace, none no sample)."""
    m = FAMILIES[fam]
    edge = "S[3] > S[2] and S[3] == A[1] - L[1] and A[1] - L[1] > A[0] - L[0]"
    refuted(m, 5, f"not ({edge} and qdel_hi[3] == 3)")  # with the qdel booleans built
    proved(m, 5, f"({edge}) => qdel_hi[3] == 3 and qdel_lo[3] == {max(0, 2 - m.D)}")


def test_delay_bound_at_a_whole_buffer() -> None:
    """β = C·R exactly (a whole number of steps): a byte waits at most ⌈β/C⌉ + D = 1 + D
    buckets, so C·(dt − D − 1) < β is strict.  Checked on samples of bytes sent before
    the trace (qdel_prehistory = "free"), which only this bound limits."""
    m = replace(CCAC, buffer=Buffer("finite", F(1)), loss="droptail", qdel_prehistory="free")
    k = 1 + m.D
    proved(m, 5, f"qdel_hi[1] <= {k + 1} or qdel_hi[1] > 100")
    refuted(m, 5, f"qdel_hi[1] <= {k} or qdel_hi[1] > 100")


def test_delay_unbounded_noncomposing_epsilon() -> None:
    """Non-composing CCAC with ε > 0 may hold a byte back indefinitely: the buffer
    gives no delay bound (ε = 0 does)."""
    b = Buffer("finite", F(1, 2))
    proved(replace(NONCOMPOSE, buffer=b), 6, f"not {bucket(5, 3)}")
    m = replace(NONCOMPOSE, buffer=b, epsilon=F(1, 10))
    refuted(m, 6, f"not {bucket(5, 4)}")
    refuted(m, 6, "not (qdel_hi[5] == 5)")


@pytest.mark.parametrize("fam", ["ccac", "cbr_delay"])
def test_delay_growth(fam: str) -> None:
    """Between two fresh samples one step apart the delay grows by at most 1 (FIFO);
    across a stale step (S did not move) it may grow by 2."""
    m = FAMILIES[fam]
    proved(m, 6, f"not ({bucket(3, 0)} and {bucket(4, 2)})")
    refuted(m, 6, f"not ({bucket(3, 0)} and {bucket(4, 1)})")
    stale = f"({bucket(2, 0)} and S[3] == S[2] and {bucket(4, 2)})"
    refuted(m, 6, f"not {stale}")
    proved(m, 6, f"not ({bucket(2, 0)} and S[3] == S[2] and {bucket(4, 3)})")
    # the qdel booleans admit the stale case (regression: it used to be excluded)
    refuted(m, 6, f"{stale} => qdel_hi[4] <= 2")
    proved(m, 6, f"{stale} => qdel_hi[4] == 3 and qdel_lo[4] == {max(0, 2 - m.D)}")


def test_delay_of_two_flows_bounded_only_with_fifo() -> None:
    """Without the FIFO split (``fifo = false``) the network may serve the other flow
    while one flow's byte waits: no per-flow delay bound from β.  With it (the
    default for N > 1) a byte of flow 0 that arrived at step 1 behind at most β bytes
    has left by step 3 and is delivered D = 1 later, so a 4-step delay is impossible."""
    fifo = replace(CCAC, N=2, buffer=Buffer("finite", F(1, 2)))
    aggregate = replace(fifo, fifo=False)
    old = ("(S[0,5] > S[0,4] and A[0,0] - L[0,0] < S[0,5] and S[0,5] <= A[0,1] - L[0,1])")
    refuted(aggregate, 6, f"not {old}")
    refuted(aggregate, 6, "not (qdel_hi[0, 5] == 5)")
    proved(fifo, 6, f"not {old}")
    refuted(fifo, 6, "not (S[0,5] > S[0,4] and A[0,2] - L[0,2] < S[0,5] and S[0,5] <= A[0,3] - L[0,3])")
    proved(aggregate, 6, "all(A[t] - L[t] - tokens[t] <= buffer for t in range(T))")
