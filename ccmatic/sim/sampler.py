"""What a sender measures from its ACKs: RTT samples and delivery-rate samples.

* **RTT**: each ACK gives one sample, the time since the newest packet it
  acknowledges was sent.  The smoothed RTT follows RFC 6298 §2 (SRTT ← R on the
  first sample, then SRTT ← 7/8 SRTT + 1/8 R').
* **Delivery rate**: the rate sampler of Linux (net/ipv4/tcp_rate.c, after Cheng
  and Cardwell's draft "Delivery Rate Estimation").  When a packet is sent it
  carries a snapshot of the flow's delivery state: bytes delivered so far, when the
  latest of them was ACKed, and when the packet most recently ACKed had been sent
  (the start of the send interval; both times restart at the send if nothing is in
  flight).  An ACK takes the snapshot of the newest packet it acknowledges, P, and
  gives the sample

      (delivered now − delivered at P's send) / max(send interval, ACK interval)

  where the send interval runs from the snapshot's send start to P's send and the
  ACK interval from the snapshot's ACK time to now.  Taking the longer of the two
  keeps ACK compression (aggregation) from inflating the rate.  (Linux also discards
  a sample whose interval is shorter than the minimum RTT, which retransmissions can
  cause; here the ACK interval is never shorter than the ACK's own RTT sample.)

A CCA step sees the latest RTT, the smallest RTT and the largest delivery-rate
sample among the ACKs since its previous step (:meth:`FlowSampler.take_step`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Snapshot:
    """A packet's view of the flow's delivery state when it was sent."""

    delivered: float     # bytes ACKed when it was sent
    delivered_at: float  # when the latest of them was ACKed (s)
    first_sent: float    # when the packet most recently ACKed had been sent (s)


@dataclass(frozen=True)
class StepView:
    """The ACK measurements a CCA step reads (seconds and bytes/second)."""

    rtt: float       # latest sample (nan: none yet)
    rtt_min: float   # smallest sample since the previous step (the latest if none)
    srtt: float      # RFC 6298 smoothed RTT (nan: none yet)
    delivery_rate: float  # largest valid rate sample since the previous step (0: none)


class FlowSampler:
    """One flow's RTT estimator and Linux-style delivery-rate sampler."""

    def __init__(self, start: float) -> None:
        self.delivered = 0.0
        self.delivered_at = start
        self.first_sent = start
        self.rtt = math.nan
        self.srtt = math.nan
        # the current ACK's newest packet: its snapshot and its send time
        self._prior: Snapshot | None = None
        self._prior_sent = 0.0
        # since the previous CCA step
        self._step_min = math.inf
        self._step_rate = 0.0

    def snapshot(self, now: float, nothing_in_flight: bool) -> Snapshot:
        """The snapshot the packets sent now carry."""
        if nothing_in_flight:
            self.first_sent = self.delivered_at = now
        return Snapshot(self.delivered, self.delivered_at, self.first_sent)

    def packet_acked(self, delivered: float, sent: float, snap: Snapshot) -> None:
        """One packet, sent at ``sent``, is acknowledged; ``delivered`` is the flow's
        cumulative ACKed bytes with it.  Call :meth:`ack_done` once per ACK."""
        self.delivered = delivered
        if self._prior is None or snap.delivered >= self._prior.delivered:
            self._prior, self._prior_sent = snap, sent
            self.first_sent = sent

    def ack_done(self, now: float) -> None:
        """The ACK arriving at ``now`` (covering the packets passed to
        :meth:`packet_acked` since the previous call) is processed."""
        p = self._prior
        if p is None:
            return
        self._prior = None
        self.delivered_at = now
        r = now - self._prior_sent
        self.rtt = r
        self.srtt = r if math.isnan(self.srtt) else self.srtt + (r - self.srtt) / 8
        self._step_min = min(self._step_min, r)
        interval = max(self._prior_sent - p.first_sent, now - p.delivered_at)
        if interval > 0:
            self._step_rate = max(self._step_rate, (self.delivered - p.delivered) / interval)

    def take_step(self) -> StepView:
        """The measurements since the previous step; starts a new step."""
        lo = self._step_min if self._step_min < math.inf else self.rtt
        view = StepView(self.rtt, lo, self.srtt, self._step_rate)
        self._step_min, self._step_rate = math.inf, 0.0
        return view
