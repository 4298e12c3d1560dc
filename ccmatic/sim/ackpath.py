"""Fine-mode ACK paths: when the ACK of a packet the bottleneck delivered at τ reaches
its sender (thesis §2.3, Appendix B.6), by the link's kind
(:class:`ccmatic.sim.links.Link`):

* ``ideal``: τ + R (FIFO at rate C, no jitter);
* ``cbr_delay``: τ + R plus a uniform random delay in [0, D] drawn per delivery, kept
  FIFO per flow (a later byte is never ACKed before an earlier one);
* ``ack_agg``: ACK aggregation as in B.6: delivered bytes are held and released
  in batches; batch k is released agg_k after batch k−1, agg_k uniform in [0, D),
  i.e. about C·agg_k bytes at once (``agg = "uniform"``); with ``agg = "fixed"``
  (Pantheon's and the FRCC traces' fixed aggregation) a batch is released exactly
  every D, at the times k·D.  A batch leaves its aggregator at once, or, with the
  link's ``train`` δ > 0 (:attr:`ccmatic.sim.links.Link.train`), as a train: each ACK
  δ after the one before it (across the flows sharing the aggregator), as a real
  aggregating link or the testbed's delay line sends the frames of a batch one after
  another.  Then a sender may act between the ACKs of one batch, which matters to a
  delivery-rate sampler (docs/simulation.md, "ACK trains").

The jitter bound D is the link's, and then one aggregator serves every flow; a flow
may have its own D (:attr:`ccmatic.sim.records.Flow.D`), and then its own jitter box:
its own aggregator (its own next release) or its own delay bound, and no extra delay
at all with D = 0.  So ``32, 0, 0`` puts jitter on flow 0's ACK path only.

R here is the flow's RTprop plus its persistent extra delay.  The random draws come
from numba's generator, seeded per run (:func:`seed`).
"""

from __future__ import annotations

import math

import numpy as np

from ccmatic.sim.jit import njit
from ccmatic.sim.links import Link

IDEAL, CBR_DELAY, ACK_AGG = 0, 1, 2
KIND_CODES = {"ideal": IDEAL, "cbr_delay": CBR_DELAY, "ack_agg": ACK_AGG}


@njit
def seed(s: int) -> None:
    """Seed the compiled code's random generator (numba's, one per process)."""
    np.random.seed(s)


@njit
def ack_time(kind: int, fixed: bool, f: int, delivered_at: float, R: float, last_ack: np.ndarray,
             D: np.ndarray, box: np.ndarray, next_release: np.ndarray, releases: np.ndarray,
             last_out: np.ndarray, train: float) -> float:
    """Flow f's ACK of bytes delivered at ``delivered_at``: the time it reaches the
    sender.  ``box[f]``: f's aggregator (0: the link's, shared), whose next release
    (uniform), releases so far (fixed) and last ACK out the box arrays hold; ``train``
    is the link's (0: a batch at once)."""
    Df = D[f]
    if kind == IDEAL or Df <= 0:
        t = delivered_at + R
    elif kind == CBR_DELAY:
        t = delivered_at + R + np.random.random() * Df
    else:
        b = box[f]
        if fixed:
            k = max(releases[b], math.ceil(delivered_at / Df))
            if k * Df < delivered_at:  # the division's rounding
                k += 1
            releases[b] = k
            out = k * Df
        else:
            while next_release[b] < delivered_at:
                next_release[b] += np.random.random() * Df
            out = next_release[b]
        if train > 0:  # the batch leaves as a train
            out = max(out, last_out[b] + train)
            last_out[b] = out
        t = out + R
    t = max(t, last_ack[f])  # cumulative ACKs: FIFO per flow
    last_ack[f] = t
    return float(t)


class AckDelay:
    """The ACK paths of a run's flows.  ``Ds[f]`` is flow f's own jitter bound, or None
    for the link's D; the flows without their own D share one aggregator (box 0),
    each other flow has its own (box f + 1)."""

    def __init__(self, link: Link, Ds: list[float | None], rng: np.random.Generator | None = None) -> None:
        n = len(Ds)
        self.kind = KIND_CODES[link.kind]
        self.fixed = link.agg == "fixed"
        self.last_ack = np.zeros(n)
        self.D = np.array([link.D if d is None else d for d in Ds], dtype=np.float64)
        self.box = np.array([0 if d is None else f + 1 for f, d in enumerate(Ds)], dtype=np.int64)
        self.next_release = np.zeros(n + 1)
        self.releases = np.zeros(n + 1)
        self.last_out = np.full(n + 1, -math.inf)
        self.train = link.train
        if rng is not None:
            seed(int(rng.integers(2**32)))

    def ack_time(self, flow: int, delivered_at: float, R: float) -> float:
        return float(ack_time(self.kind, self.fixed, flow, delivered_at, R, self.last_ack, self.D, self.box,
                              self.next_release, self.releases, self.last_out, self.train))
