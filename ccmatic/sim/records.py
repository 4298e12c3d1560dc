"""The simulator's input and output records: flows and the run's configuration,
and what a run records (per tick, per step and per RTT sample)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from ccmatic.core.limits import MAX_SIM_QUEUE
from ccmatic.sim.links import Link
from ccmatic.spec.cca import CcaProgram

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Flow:
    """One sender: its CCA, RTprop R (s) and start time (s); D (s) is its own jitter
    bound and jitter box on the ACK path (None: the link's D and its shared box;
    :class:`ccmatic.sim.links.AckDelay`).  ``extra`` (s) is a persistent delay added
    to its ACK path that its CCA is not told about (thesis §6.5's δs): the CCA's R
    stays ``R``, its RTT samples include ``extra``."""

    cca: CcaProgram
    R: float
    start: float = 0.0
    holes: tuple[tuple[str, Fraction], ...] = ()
    D: float | None = None
    extra: float = 0.0

    def jitter(self, link: Link) -> float:
        """The jitter bound D on this flow's ACK path (s)."""
        return link.D if self.D is None else self.D


Topology = Literal["dumbbell", "parking_lot"]


@dataclass(frozen=True)
class SimConfig:
    """A run.  ``topology = "parking_lot"`` chains ``hops`` bottlenecks of the link's
    rate (:mod:`ccmatic.sim.topology`): flow 0 crosses them all, flow i ≥ 1 only hop i."""

    link: Link
    flows: tuple[Flow, ...]
    duration: float
    mss: float = 1500.0
    seed: int = 0
    ticks_per_rtt: int = 20
    # an unpaced sender's packets of a tick leave this many back to back, as an
    # ACK-clocked sender's do after each delayed ACK (Linux: 2); 1: evenly
    burst: int = 1
    belief_period: int = 10  # steps between belief timeouts (thesis §4.1.1.2: 10 R)
    init_cwnd_pkts: float = 10.0
    init_rate_pkts: float = 10.0  # per RTprop, before the CCA's first step
    topology: Topology = "dumbbell"
    hops: int = 1
    # the packets the queues may hold together: past it the run stops
    # (:class:`ccmatic.sim.fine.QueueLimit`)
    max_queue_packets: int = MAX_SIM_QUEUE


def _floats() -> array[float]:
    return array("d")


@dataclass
class FlowRecord:
    """Per-step values of one flow (index k: the step starting at time[k]), packed (8
    bytes a value: a run of 1,000 flows keeps millions of them)."""

    time: array[float] = field(default_factory=_floats)
    rate: array[float] = field(default_factory=_floats)   # bytes/s (nan: not set)
    cwnd: array[float] = field(default_factory=_floats)   # bytes (nan: not set)
    A: array[float] = field(default_factory=_floats)
    S: array[float] = field(default_factory=_floats)      # ACKed by time[k]
    L: array[float] = field(default_factory=_floats)
    Ld: array[float] = field(default_factory=_floats)
    c_lo: array[float] = field(default_factory=_floats)   # bytes/s (nan: none yet)
    c_hi: array[float] = field(default_factory=_floats)   # bytes/s
    c_lo_lambda: array[float] = field(default_factory=_floats)  # bytes/s
    qdel_lo: array[float] = field(default_factory=_floats)  # s
    rtt: array[float] = field(default_factory=_floats)    # latest RTT sample (s; nan: none yet)
    state: dict[str, array[float]] = field(default_factory=dict)


@dataclass
class RttSamples:
    """One flow's RTT samples, packed (16 bytes a sample: a long run takes
    millions of them)."""

    time: array[float] = field(default_factory=_floats)  # s
    rtt: array[float] = field(default_factory=_floats)   # s

    def append(self, t: float, rtt: float) -> None:
        self.time.append(t)
        self.rtt.append(rtt)

    def __len__(self) -> int:
        return len(self.rtt)


@dataclass
class HopRecord:
    """Per tick and hop of a parking lot: the bytes each hop served (all flows, and
    flow 0's) and its queue at the tick's end (shape ticks x hops)."""

    served: np.ndarray
    served_long: np.ndarray
    queue: np.ndarray


@dataclass
class SimResult:
    config: SimConfig
    dt: float
    queue: np.ndarray            # bytes, per tick (after service)
    delivered: np.ndarray        # bytes per tick per flow (shape ticks x N)
    sent: np.ndarray             # bytes per tick per flow
    lost: np.ndarray             # bytes per tick per flow
    rtt_samples: list[RttSamples]  # per flow
    flows: list[FlowRecord]
    queue_peak: np.ndarray       # bytes, the largest queue within each tick
    hop_record: HopRecord | None = None  # per hop, on a parking lot

    def queue_at(self, t: float) -> float:
        """The queue at time t (a step boundary): at the end of the tick before it,
        0 at the start."""
        i = round(t / self.dt) - 1
        return 0.0 if i < 0 else float(self.queue[min(len(self.queue) - 1, i)])


def model_warnings(cfg: SimConfig) -> list[str]:
    """Parameters the simulation can run with but that stretch its model: the CCA's
    step must be a whole number of ticks, the models' jitter bound a whole number of
    steps, a window or pacing quantum of one packet small against the BDP, and ticks
    short enough for a sender to act within an ACK train."""
    out: list[str] = []
    dt = min(f.R for f in cfg.flows) / cfg.ticks_per_rtt
    for i, f in enumerate(cfg.flows):
        ticks = max(1, round(f.R / dt))
        if abs(ticks * dt - f.R) > 0.005 * f.R:
            out.append(f"flow {i}'s RTprop {f.R * 1000:g} ms is not a whole number of ticks of {dt * 1000:g} ms: "
                       f"its CCA steps last {ticks * dt * 1000:g} ms")
        bdp_pkts = cfg.link.C * f.R / cfg.mss
        if bdp_pkts < 4:
            out.append(f"flow {i}'s BDP is {bdp_pkts:.2g} packets: one packet of window or pacing is a large part of "
                       f"it, and packet-level effects dominate (raise --C or --R)")
        D = f.jitter(cfg.link)
        D_steps = D / f.R
        if cfg.link.kind != "ideal" and abs(D_steps - round(D_steps)) > 0.01:
            out.append(f"the jitter bound D = {D * 1000:g} ms is not a whole number of flow {i}'s RTprops: "
                       f"its CCA's delay buckets and beliefs use D = {round(D_steps)} steps")
    batch = cfg.link.C * cfg.link.D / cfg.mss * cfg.link.train  # a batch of one D's ACKs, as a train (s)
    if cfg.link.train > 0 and dt > batch:
        out.append(f"ticks of {dt * 1000:g} ms outlast an ACK train ({batch * 1000:.2g} ms for a batch of D's "
                   f"ACKs): senders act between a batch's ACKs only where a tick ends (raise --ticks)")
    return out
