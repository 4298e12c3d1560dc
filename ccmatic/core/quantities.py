"""The registry of quantities: every name a CCA file, a query or a proof can read.

One entry per quantity says what it is (unit, per flow or shared), whether a sender
may observe it and how late (its *lag*), and which part of the encoding builds it.
The CCA checker, the query scope, the encoder, the counterexample extraction, the
report, the replay and the simulator all read this table; a new quantity is one
entry here plus its builder.

Lags (thesis Table 2.1, CCAC §3), in steps, for a CCA running at step t:

* ``send``: the sender's own bookkeeping, known at t − 1 (``A``, ``q_hi``);
* ``ack``: learned from ACKs, which take R to return: t − R (``S``, beliefs, delays);
* ``now``: known at t (``Ld``, ``timeout``);
* ``output``: the CCA's own outputs and state: the previous step's value, t − 1.

Families (how the encoder builds a quantity): ``trace`` (the per-step variables of
every model), ``fifo`` (the per-flow output of the bottleneck, in models that split it
first-in first-out: several flows, or per-flow jitter), ``hops`` (the second
bottleneck of a parking lot), ``qdel`` (queueing-delay buckets, Eq. 4.1.1), ``rtt`` (the
latest RTT sample, a value of its bucket), ``rate_beliefs`` (Eq. 4.1.2), ``cbr_beliefs``
(§4.2.2.1); ``rate_beliefs`` and ``rtt`` bring ``qdel`` along (:func:`families_needed`).  ``sim``: what only the simulator measures
(:data:`SIM_OBSERVATIONS`, :data:`SIM_PARAMETERS`): a CCA file that reads one must be
marked simulator-only, and queries cannot read them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ccmatic.core.units import BYTES, COUNT, RATE, SECONDS, Unit

Lag = Literal["send", "ack", "now", "output"]
Family = Literal["trace", "fifo", "hops", "qdel", "rtt", "rate_beliefs", "cbr_beliefs", "sim"]


@dataclass(frozen=True)
class Quantity:
    """A per-step series.  ``unit`` None means a condition (true/false)."""

    name: str
    unit: Unit | None
    per_flow: bool          # one series per flow; else one shared by all flows
    summable: bool          # the aggregate over flows is the sum (queries may omit the flow)
    lag: Lag | None         # how late a sender sees it; None: hidden from the sender
    family: Family
    doc: str
    hidden_hint: str = ""   # what to read instead, for a CCA that reads a hidden one
    #: what a counterexample records: each flow's series, the aggregate, or both
    extract: Literal["flow", "aggregate", "both"] = "flow"
    column: bool = True     # shown in counterexample tables


@dataclass(frozen=True)
class Parameter:
    """A number fixed for the whole trace: a constant of the model (``C``, ``R``, ...)
    or a value the solver picks once (``MSS``, ``C0``, an arbitrary buffer)."""

    name: str
    unit: Unit | None
    visible: bool
    symbolic: bool          # picked by the solver (else a constant of the model)
    doc: str
    hidden_hint: str = ""


QUANTITIES: dict[str, Quantity] = {q.name: q for q in (
    Quantity("A", BYTES, True, True, "send", "trace", "cumulative bytes sent", extract="both"),
    Quantity("S", BYTES, True, True, "ack", "trace", "cumulative bytes serviced (ACKed R later)", extract="both"),
    Quantity("L", BYTES, True, True, None, "trace", "cumulative bytes lost",
             "true losses L are hidden; read Ld (losses the sender detected)", extract="both"),
    Quantity("Ld", BYTES, True, True, "now", "trace", "cumulative losses the sender has detected"),
    Quantity("W", BYTES, False, False, None, "trace", "cumulative wasted tokens (Eq. A.2.5)",
             "wasted tokens W are network state a sender cannot observe", extract="aggregate"),
    Quantity("tokens", BYTES, False, False, None, "trace", "the token curve T_A(t) = C0 + C·t − W(t) (Eq. A.2.4)",
             "the token curve is network state a sender cannot observe", extract="aggregate", column=False),
    Quantity("tokens_lo", BYTES, False, False, None, "trace", "the lower service bound T_A(t − D) (Eq. A.2.3)",
             "the token curve is network state a sender cannot observe", extract="aggregate", column=False),
    Quantity("O", BYTES, True, True, None, "fifo",
             "cumulative bytes of the flow that left the bottleneck, before its jitter box (FIFO split)",
             "the bottleneck's output is network state a sender cannot observe; read S"),
    Quantity("O1", BYTES, True, True, None, "hops",
             "parking lot: cumulative bytes of the flow that left its first bottleneck",
             "the bottleneck's output is network state a sender cannot observe; read S"),
    Quantity("W2", BYTES, False, False, None, "hops", "parking lot: the second bottleneck's wasted tokens",
             "wasted tokens are network state a sender cannot observe", extract="aggregate"),
    Quantity("tokens2", BYTES, False, False, None, "hops", "parking lot: the second bottleneck's token curve",
             "the token curve is network state a sender cannot observe", extract="aggregate", column=False),
    Quantity("bq2", BYTES, False, False, None, "hops", "parking lot: the second bottleneck's queue",
             "the bottleneck queue is hidden; use qdel_lo/qdel_hi", extract="aggregate"),
    Quantity("queue", BYTES, True, True, None, "trace", "bytes in the network, A − L − S",
             "the queue is hidden; use qdel_lo/qdel_hi or q_hi", extract="aggregate"),
    Quantity("bq", BYTES, False, False, None, "trace", "the bottleneck queue A − L − T_A (Eq. A.2.6)",
             "the bottleneck queue is hidden; use qdel_lo/qdel_hi or q_hi", extract="aggregate"),
    Quantity("rate", RATE, True, False, "output", "trace", "the CCA's pacing rate (if it sets one)"),
    Quantity("cwnd", BYTES, True, False, "output", "trace", "the CCA's window (if it sets one)"),
    Quantity("c_lo", RATE, True, False, "ack", "rate_beliefs", "link-rate belief, lower bound (Eq. 4.1.2)"),
    Quantity("c_hi", RATE, True, False, "ack", "rate_beliefs", "link-rate belief, upper bound (Eq. 4.1.2)"),
    Quantity("qdel_lo", SECONDS, True, False, "ack", "qdel", "queueing delay, lower end (Eq. 4.1.1)"),
    Quantity("qdel_hi", SECONDS, True, False, "ack", "qdel", "queueing delay, upper end (Eq. 4.1.1)"),
    Quantity("rtt", SECONDS, True, False, "ack", "rtt",
             "the latest RTT sample, in steps: in the models any value of its delay bucket, "
             "R + dt <= rtt < R + dt + 1 (any rtt >= 0 without a bucket); in the simulator the measured one"),
    Quantity("c_lo_lambda", RATE, True, False, "ack", "cbr_beliefs",
             "CBR-delay link-rate belief (Eq. 4.2.2)"),
    Quantity("q_hi", BYTES, True, False, "send", "cbr_beliefs", "CBR-delay queue upper bound (§4.2.2.1)"),
    Quantity("timeout", None, True, False, "now", "trace", "a retransmission timeout fires"),
)}

PARAMETERS: dict[str, Parameter] = {p.name: p for p in (
    Parameter("C", RATE, False, False, "the link rate",
              "the link rate C is hidden from the sender; use the beliefs c_lo/c_hi (or c_lo_lambda)"),
    Parameter("R", SECONDS, True, False, "the propagation delay (RTprop), in steps"),
    Parameter("D", SECONDS, True, False, "the jitter bound, in steps"),
    Parameter("Dmax", SECONDS, False, False, "the network's largest per-flow jitter, in steps (D unless "
              "the model sets jitter; queries only)", "a CCA assumes the jitter bound D"),
    Parameter("Dlambda", SECONDS, False, False, "what c_lo_lambda divides by, less R: D, or D + 1 with "
              "c_lo_lambda_divisor = \"reference\" (queries only)", "a CCA reads c_lo_lambda itself"),
    Parameter("T", SECONDS, True, False, "the horizon: steps 0..T−1"),
    Parameter("MSS", BYTES, True, True, "the smallest send quantum (CCAC's alpha)"),
    Parameter("C0", BYTES, False, True, "the token offset T_A(0)",
              "C0 is network state a sender cannot observe"),
    Parameter("buffer", BYTES, False, True, "the bottleneck buffer β", "the buffer size is hidden from the sender"),
    Parameter("N", COUNT, False, False, "the number of flows (queries only)",
              "the number of flows is not known to a sender"),
)}

#: observations only the simulator makes (docs/simulation.md): the smallest and the
#: smoothed RTT and the delivery rate, which the models do not have (they keep only
#: the latest sample's delay bucket, and their time is in steps); per flow, ACK-clocked
SIM_OBSERVATIONS: dict[str, Quantity] = {q.name: q for q in (
    Quantity("rtt_min", SECONDS, True, False, "ack", "sim",
             "the smallest RTT sample among the ACKs of the last step, else the latest (steps; simulator only)"),
    Quantity("srtt", SECONDS, True, False, "ack", "sim", "the smoothed RTT of RFC 6298, gain 1/8 (steps; 0 before the first sample; simulator only)"),
    Quantity("delivery_rate", RATE, True, False, "ack", "sim",
             "the largest delivery-rate sample (Linux's rate sampler) among the ACKs of the last step, "
             "0 if none (simulator only)"),
)}

#: parameters only the simulator has
SIM_PARAMETERS: dict[str, Parameter] = {p.name: p for p in (
    Parameter("SECOND", SECONDS, True, False, "one second of real time, in steps (simulator only)"),
)}


#: the CCA's outputs and their units (a CCA file assigns at least one of them)
OUTPUTS: dict[str, Unit] = {q.name: q.unit for q in QUANTITIES.values() if q.lag == "output" and q.unit is not None}

#: the quantities whose observation comes with ACKs (the simulator delivers them when the ACK arrives)
ACK_CLOCKED = frozenset(q.name for q in (*QUANTITIES.values(), *SIM_OBSERVATIONS.values()) if q.lag == "ack")

#: CCA-visible quantities other than the CCA's own outputs
OBSERVATIONS: dict[str, Quantity] = {q.name: q for q in QUANTITIES.values()
                                     if q.lag is not None and q.lag != "output"}


def lag_steps(lag: Lag, R: int) -> int:
    """How many steps back the latest visible value of a quantity with this lag is."""
    return {"send": 1, "ack": R, "now": 0, "output": 1}[lag]


def hidden_hint(name: str) -> str | None:
    """For a name a sender cannot observe, what to read instead (None: not hidden)."""
    q = QUANTITIES.get(name)
    if q is not None and q.lag is None:
        return q.hidden_hint
    p = PARAMETERS.get(name)
    if p is not None and not p.visible:
        return p.hidden_hint or f"{name} is not visible to the sender"
    return None


def families_needed(names: Iterable[str]) -> set[Family]:
    """The families the encoder must build for these quantity names, with their
    dependencies: the link-rate beliefs come with the delay buckets (the Table 4.1 tool's
    evidence reads them, and their constraints are part of the model the beliefs
    were specified on)."""
    fams: set[Family] = {QUANTITIES[n].family for n in names if n in QUANTITIES}
    if "rate_beliefs" in fams or "rtt" in fams:
        fams.add("qdel")
    return fams
