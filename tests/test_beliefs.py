"""Belief soundness (thesis §4.1.1.1, §4.1.1.2, §4.2.2.1; Appendix A.2.2).

With an arbitrary sender (``templates/any_sender.cca``: the solver picks every
rate) and beliefs that start consistent, the beliefs must stay consistent at every
step: c_lo ≤ C ≤ c_hi (CCAC, ideal), c_lo_lambda ≤ C and q_hi ≥ the queue
(CBR-delay).  These are *proved* for every buffer and loss mode.  Non-vacuity
companions show that the beliefs really move, that they can get arbitrarily close
to C (so a slightly stronger claim fails), and that the belief-timeout machinery
fires.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction as F
from itertools import pairwise

import helpers
import pytest

from ccmatic.core.model import BeliefTimeouts, Buffer, ModelConfig
from ccmatic.core.results import Counterexample
from ccmatic.core.scenario import Initial

CONSISTENT = Initial(beliefs_consistent=True)

CCAC = ModelConfig(name="ccac", family="ccac", compose=True, C=F(100), R=1, D=1, mss_max_bdp=F(1, 5))
NONCOMPOSE = replace(CCAC, name="ccac_noncompose", compose=False)
IDEAL = ModelConfig(name="ideal", family="ideal", C=F(100), R=1, D=0, mss_max_bdp=F(1, 5))
CBR = ModelConfig(name="cbr_delay", family="cbr_delay", C=F(100), R=1, D=1, mss_max_bdp=F(1, 5))
# models/ccac_timeouts.toml, with a period short enough to fire within T = 7
TIMEOUTS = replace(CCAC, name="ccac_timeouts", loss="droptail",
                   belief_timeouts=BeliefTimeouts(period=3, guard=F(11, 10), invalid=True, max_expand=F(2)))

BUFFERS = {"inf": Buffer(), "finite": Buffer("finite", F(1)), "arbitrary": Buffer("arbitrary")}
LOSSES = ["droptail", "ccac"]

SOUND = "all(c_lo[t] <= C and C <= c_hi[t] for t in range(T))"


def proved(model: ModelConfig, T: int, prop: str, **kw: object) -> None:
    kw.setdefault("initial", CONSISTENT)
    helpers.proved(model, T, prop, **kw)


def refuted(model: ModelConfig, T: int, prop: str, **kw: object) -> Counterexample:
    kw.setdefault("initial", CONSISTENT)
    return helpers.refuted(model, T, prop, **kw)


# -- link-rate beliefs: CCAC and ideal ----------------------------------------------------

@pytest.mark.parametrize("base", [CCAC, NONCOMPOSE], ids=["composing", "noncomposing"])
@pytest.mark.parametrize("buf", list(BUFFERS), ids=list(BUFFERS))
@pytest.mark.parametrize("loss", LOSSES)
def test_ccac_beliefs_sound(base: ModelConfig, buf: str, loss: str) -> None:
    """c_lo <= C <= c_hi at every step, for any sender, on composing and non-composing CCAC with each buffer and loss mode."""
    m = replace(base, buffer=BUFFERS[buf], loss=loss)  # type: ignore[arg-type]
    proved(m, 6, SOUND)


@pytest.mark.parametrize("buf", list(BUFFERS), ids=list(BUFFERS))
@pytest.mark.parametrize("loss", LOSSES)
def test_ideal_beliefs_sound(buf: str, loss: str) -> None:
    """c_lo <= C <= c_hi at every step, for any sender, on the ideal link with each buffer and loss mode."""
    m = replace(IDEAL, buffer=BUFFERS[buf], loss=loss)  # type: ignore[arg-type]
    proved(m, 6, SOUND)


def test_beliefs_sound_longer_horizon_and_rtt() -> None:
    """T = 7, and R = D = 2 (upper-bound windows must be longer than D)."""
    proved(replace(CCAC, buffer=BUFFERS["arbitrary"], loss="droptail"), 7, SOUND)
    for base in (CCAC, NONCOMPOSE):
        proved(replace(base, R=2, D=2, buffer=BUFFERS["finite"], loss="droptail"), 7, SOUND)
    proved(replace(IDEAL, R=2, buffer=BUFFERS["finite"], loss="droptail"), 7, SOUND)


@pytest.mark.parametrize("m", [CCAC, NONCOMPOSE, IDEAL], ids=["composing", "noncomposing", "ideal"])
def test_beliefs_move_and_are_tight(m: ModelConfig) -> None:
    """The beliefs change, and each bound can get within 1% of C: soundness is not
    obtained by beliefs that never leave their initial values."""
    refuted(m, 6, "c_hi[T-1] == c_hi[0]")
    refuted(m, 6, "c_lo[T-1] == c_lo[0]")
    refuted(m, 6, "c_lo[T-1] <= C * 99/100", assume=("c_lo[0] <= C / 2",))
    refuted(m, 6, "c_hi[T-1] >= C * 101/100", assume=("c_hi[0] >= 2 * C",))
    # a slightly wrong claim fails (c_lo may equal C)
    refuted(m, 6, "all(c_lo[t] <= C * 99/100 for t in range(T))")
    refuted(m, 6, "all(c_hi[t] >= C * 101/100 for t in range(T))")


def test_beliefs_need_consistent_start() -> None:
    """Without the initial-consistency premise the claim is not provable: the
    premise is what the proofs above rely on."""
    refuted(CCAC, 6, SOUND, initial=Initial())


SPEC_EVIDENCE = " and ".join(f"((qdel_lo[{x + 1}] > 0 and A[{x + 1}] > A[{x}]) or Ld[{x + 1}] > Ld[{x}])"
                            for x in range(1, 4))
BACKLOG_EVIDENCE = " and ".join(f"S[{x + 1} + D] < A[{x + 1}] - L[{x + 1}]" for x in range(1, 4))


def test_upper_bound_evidence() -> None:
    """Eq. A.2.7 on the window (1, 4]: if every step is known to be utilized, the
    ACK rate gives ΔS ≥ C·(w − D), exactly.  The engine's backlog evidence (a byte
    that arrived by x+1 is still undelivered at x+1+D) proves it; the Table 4.1 tool's
    evidence (no delay bucket ≤ D and new bytes sent, or any detection in the step)
    does not once losses are possible (a detection of old losses says nothing about
    the step), which is why beliefs.py does not use it."""
    for buf in (Buffer(), Buffer("finite", F(1))):
        m = replace(CCAC, buffer=buf, loss="droptail")
        proved(m, 6, f"({BACKLOG_EVIDENCE}) => S[4] - S[1] >= C * (3 - D)")
        refuted(m, 6, f"({BACKLOG_EVIDENCE}) => S[4] - S[1] >= C * (3 - D) + 1/100")
    refuted(replace(CCAC, buffer=Buffer("finite", F(1)), loss="droptail"), 6,
            f"({SPEC_EVIDENCE}) => S[4] - S[1] >= C * (3 - D)")


BACKLOG_HIDDEN = "all(S[t] >= A[t-1] - L[t-1] for t in range(2, T))"  # no backlog evidence


@pytest.mark.parametrize("buf", ["finite", "arbitrary"])
def test_loss_evidence(buf: str) -> None:
    """Detected drop-tail losses show the link was busy (β > 0): even with no
    backlog evidence, c_hi can come down from 10·C to below 2·C.  CCAC's loss mode
    gives no such evidence."""
    m = replace(CCAC, buffer=BUFFERS[buf], loss="droptail")
    refuted(m, 6, "c_hi[T-1] >= 2 * C", assume=(BACKLOG_HIDDEN, "c_hi[0] >= 10 * C"))
    proved(replace(m, loss="ccac"), 6, "c_hi[T-1] == c_hi[0]", assume=(BACKLOG_HIDDEN,))


@pytest.mark.parametrize("m", [CCAC, NONCOMPOSE, IDEAL, CBR], ids=["composing", "noncomposing", "ideal", "cbr"])
def test_zero_buffer_loss_is_no_evidence(m: ModelConfig) -> None:
    """Regression: with β = 0 a drop leaves an *empty* queue, where tokens may be
    wasted, so a loss proves nothing about utilization.  Taking it as evidence made
    c_hi < C possible."""
    z = replace(m, buffer=Buffer("finite", F(0)), loss="droptail")
    proved(z, 6, SOUND)
    proved(z, 6, "c_hi[T-1] == c_hi[0]", assume=(BACKLOG_HIDDEN,) if m.D > 0 else
           ("all(S[t] >= A[t] - L[t] for t in range(1, T))",))


def test_noncomposing_loss_evidence_needs_buffer_above_epsilon() -> None:
    """Regression: non-composing CCAC may waste while ≤ ε bytes are undelivered, so
    a full queue of β ≤ ε bytes is no evidence; with β > ε it is."""
    for buf in (Buffer("arbitrary"), Buffer("finite", F(1, 400)), Buffer("finite", F(1))):
        proved(replace(NONCOMPOSE, buffer=buf, loss="droptail", epsilon=F(1, 2)), 6, SOUND)
    big = replace(NONCOMPOSE, buffer=Buffer("finite", F(1)), loss="droptail", epsilon=F(1, 2))
    refuted(big, 6, "c_hi[T-1] >= 2 * C", assume=(BACKLOG_HIDDEN, "c_hi[0] >= 10 * C"))


def test_multiflow_c_lo_sound() -> None:
    """With two flows each flow's ACK rate is a share of C: c_lo stays a lower bound."""
    proved(replace(CCAC, N=2), 6, "all(c_lo[0, t] <= C and c_lo[1, t] <= C for t in range(T))")


def test_multiflow_c_hi_sound() -> None:
    """A flow's own ACK rate bounds only its share of C, so with N > 1 ccmatic derives
    no upper candidates: c_hi stays sound (and stays at its initial value)."""
    proved(replace(CCAC, N=2), 6, "all(C <= c_hi[0, t] and C <= c_hi[1, t] for t in range(T))")
    proved(replace(CCAC, N=2), 6, "all(c_hi[0, t] == c_hi[0, 0] for t in range(T))")


# -- belief timeouts (§4.1.1.2) ---------------------------------------------------------------

@pytest.mark.parametrize("buf", ["inf", "arbitrary"])
def test_timeouts_keep_beliefs_sound(buf: str) -> None:
    """Belief timeouts (periodic and on empty beliefs) keep c_lo <= C <= c_hi."""
    proved(replace(TIMEOUTS, buffer=BUFFERS[buf]), 7, SOUND)


NEVER_WIDER = "all(c_hi[t] <= c_hi[t-1] for t in range(1, T))"


def test_periodic_timeout_fires() -> None:
    """A periodic timeout widens the beliefs; without periodic timeouts consistent
    beliefs never widen (the invalid-belief timeout cannot fire)."""
    cex = refuted(TIMEOUTS, 7, NEVER_WIDER)
    hi = cex.trace.flows[0]["c_hi"]
    assert any(b > a for a, b in pairwise(hi))
    refuted(TIMEOUTS, 7, "all(c_lo[t] >= c_lo[t-1] for t in range(1, T))")
    invalid_only = replace(TIMEOUTS, belief_timeouts=BeliefTimeouts(period=None, guard=None, invalid=True))
    proved(invalid_only, 7, NEVER_WIDER)


def test_timeout_guard() -> None:
    """Periodic timeouts happen only while c_hi ≤ 1.1·c_lo."""
    proved(TIMEOUTS, 7, NEVER_WIDER, assume=("all(c_hi[t] > 11/10 * c_lo[t] for t in range(T - 1))",))
    refuted(TIMEOUTS, 7, NEVER_WIDER, assume=("all(c_hi[t] > 109/100 * c_lo[t] for t in range(T - 1))",))


def test_timeout_guard_includes_equality() -> None:
    """The guard is c_hi ≤ 1.1·c_lo, equality included: with c_hi never below 1.1·c_lo a
    periodic timeout still fires (c_hi widens), and only after a step where c_hi is
    exactly 1.1·c_lo.  (A guard c_hi < 1.1·c_lo would prove NEVER_WIDER here.)"""
    cex = refuted(TIMEOUTS, 7, NEVER_WIDER, assume=("all(c_hi[t] >= 11/10 * c_lo[t] for t in range(T - 1))",))
    hi, lo = cex.trace.flows[0]["c_hi"], cex.trace.flows[0]["c_lo"]
    widened = [t for t in range(1, len(hi)) if hi[t] > hi[t - 1]]
    assert widened and all(hi[t - 1] == F(11, 10) * lo[t - 1] for t in widened), (hi, lo)


def test_timeout_max_expand() -> None:
    """On a timeout the beliefs widen by at most max_expand = 2, and by that much."""
    proved(TIMEOUTS, 7, "all(c_hi[t] <= 2 * c_hi[t-1] for t in range(1, T))")
    refuted(TIMEOUTS, 7, "all(c_hi[t] <= 199/100 * c_hi[t-1] for t in range(1, T))")
    proved(TIMEOUTS, 7, "all(c_lo[t] >= c_lo[t-1] / 2 for t in range(1, T))")
    refuted(TIMEOUTS, 7, "all(c_lo[t] >= c_lo[t-1] * 101/200 for t in range(1, T))")


def test_invalid_beliefs_time_out() -> None:
    """Empty beliefs (c_hi < c_lo) time out at the next step and are recomputed."""
    inv = replace(TIMEOUTS, belief_timeouts=BeliefTimeouts(period=None, invalid=True))
    refuted(inv, 7, "c_hi[1] <= c_hi[0]", assume=("c_hi[0] < c_lo[0]",), initial=Initial())
    off = replace(TIMEOUTS, belief_timeouts=BeliefTimeouts(period=None, invalid=False))
    proved(off, 7, "c_hi[1] <= c_hi[0]", assume=("c_hi[0] < c_lo[0]",), initial=Initial())


# -- CBR-delay beliefs (§4.2.2.1) ------------------------------------------------------------

@pytest.mark.parametrize("buf", list(BUFFERS), ids=list(BUFFERS))
@pytest.mark.parametrize("loss", LOSSES)
def test_cbr_beliefs_sound(buf: str, loss: str) -> None:
    """CBR-delay beliefs stay sound: c_lo_lambda <= C, q_hi >= the queue, and the buffer belief of Eq. 4.2.3."""
    m = replace(CBR, buffer=BUFFERS[buf], loss=loss)  # type: ignore[arg-type]
    proved(m, 7, "all(c_lo_lambda[t] <= C for t in range(T))")
    proved(m, 7, "all(q_hi[t] >= bq[t] for t in range(T))")
    if m.buffer.mode != "infinite":
        # the buffer belief of Eq. 4.2.3
        proved(m, 7, "all(C * R + buffer >= c_lo_lambda[t] * (R + D) for t in range(T))")


def test_cbr_beliefs_move_and_are_tight() -> None:
    """CBR-delay beliefs move and each can get within 1/100 of the truth, also with R = D = 2."""
    m = replace(CBR, buffer=BUFFERS["arbitrary"], loss="droptail")
    refuted(m, 7, "c_lo_lambda[T-1] == c_lo_lambda[0]")
    refuted(m, 7, "c_lo_lambda[T-1] <= C * 99/100", assume=("c_lo_lambda[0] <= C / 2",))
    refuted(m, 7, "bq[T-1] > 0 => q_hi[T-1] >= bq[T-1] + 1/100")
    refuted(m, 7, "C * R + buffer >= c_lo_lambda[T-1] * (R + D) + 1/100", assume=("c_lo_lambda[0] <= C / 10",))
    refuted(replace(CBR, R=2, D=2), 7, "c_lo_lambda[T-1] == c_lo_lambda[0]")
    proved(replace(CBR, R=2, D=2), 7, "all(c_lo_lambda[t] <= C and q_hi[t] >= bq[t] for t in range(T))")


def test_cbr_window_counts_at_equality() -> None:
    """Eq. 4.2.2 counts a window whose bytes are all serviced by en, equality included:
    with S[s + R + D] never above A[s + R] − L[s + R], c_lo_lambda still rises (through
    windows served exactly), and stays sound."""
    m = replace(CBR, buffer=BUFFERS["arbitrary"], loss="droptail")
    exact = ("all(S[t] <= A[t - R] - L[t - R] for t in range(R + D, T))",)
    refuted(m, 7, "c_lo_lambda[T-1] == c_lo_lambda[0]", assume=exact)
    proved(m, 7, "all(c_lo_lambda[t] <= C for t in range(T))", assume=exact)


def test_reference_evidence_is_unsound_but_default_is_sound() -> None:
    """The Table 4.1 tool's literal evidence rule (kept as belief_evidence = "reference" to
    compare with Table 4.1) lets c_hi fall below C with a finite buffer, through the
    late detection of an old loss; ccmatic's default evidence is proved sound there."""
    finite = replace(CCAC, buffer=BUFFERS["finite"])
    proved(finite, 6, SOUND)
    refuted(replace(finite, belief_evidence="reference", qdel_prehistory="free"), 6, SOUND)
