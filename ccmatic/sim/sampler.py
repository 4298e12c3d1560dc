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

A flow's sampler is one row of floats (the columns below), so that the compiled
loop (:mod:`ccmatic.sim.kernel`) keeps every flow's in one array; the functions are
compiled (:mod:`ccmatic.sim.jit`), and :class:`FlowSampler` runs them on one row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ccmatic.sim.jit import njit

# a sampler's row
DELIVERED, DELIVERED_AT, FIRST_SENT, RTT, SRTT = 0, 1, 2, 3, 4
PRIOR, P_DEL, P_DAT, P_FS, PRIOR_SENT = 5, 6, 7, 8, 9  # the current ACK's newest packet (PRIOR: 1 if any)
STEP_MIN, STEP_RATE = 10, 11  # since the previous CCA step
SNAP_DEL, SNAP_DAT, SNAP_FS = 12, 13, 14  # the snapshot of the packets sent in this tick
COLUMNS = 15


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


def init_row(row: np.ndarray, start: float) -> None:
    """A sampler that has seen nothing, its clocks at ``start``."""
    row[:] = 0.0
    row[DELIVERED_AT] = row[FIRST_SENT] = start
    row[RTT] = row[SRTT] = math.nan
    row[STEP_MIN] = math.inf


@njit
def snapshot(s: np.ndarray, now: float, nothing_in_flight: bool) -> None:
    """The snapshot the packets sent now carry, into the row's SNAP columns."""
    if nothing_in_flight:
        s[FIRST_SENT] = now
        s[DELIVERED_AT] = now
    s[SNAP_DEL] = s[DELIVERED]
    s[SNAP_DAT] = s[DELIVERED_AT]
    s[SNAP_FS] = s[FIRST_SENT]


@njit
def packet_acked(s: np.ndarray, delivered: float, sent: float, snap_del: float, snap_dat: float,
                 snap_fs: float) -> None:
    """One packet, sent at ``sent`` with its snapshot, is acknowledged; ``delivered`` is
    the flow's cumulative ACKed bytes with it.  Call :func:`ack_done` once per ACK."""
    s[DELIVERED] = delivered
    if s[PRIOR] == 0.0 or snap_del >= s[P_DEL]:
        s[PRIOR] = 1.0
        s[P_DEL] = snap_del
        s[P_DAT] = snap_dat
        s[P_FS] = snap_fs
        s[PRIOR_SENT] = sent
        s[FIRST_SENT] = sent


@njit
def ack_done(s: np.ndarray, now: float) -> None:
    """The ACK arriving at ``now`` (covering the packets passed to
    :func:`packet_acked` since the previous call) is processed."""
    if s[PRIOR] == 0.0:
        return
    s[PRIOR] = 0.0
    s[DELIVERED_AT] = now
    r = now - s[PRIOR_SENT]
    s[RTT] = r
    s[SRTT] = r if math.isnan(s[SRTT]) else s[SRTT] + (r - s[SRTT]) / 8
    s[STEP_MIN] = min(s[STEP_MIN], r)
    interval = max(s[PRIOR_SENT] - s[P_FS], now - s[P_DAT])
    if interval > 0:
        s[STEP_RATE] = max(s[STEP_RATE], (s[DELIVERED] - s[P_DEL]) / interval)


def take_step(s: np.ndarray) -> StepView:
    """The measurements since the previous step; starts a new step."""
    lo = s[STEP_MIN] if s[STEP_MIN] < math.inf else s[RTT]
    view = StepView(float(s[RTT]), float(lo), float(s[SRTT]), float(s[STEP_RATE]))
    s[STEP_MIN], s[STEP_RATE] = math.inf, 0.0
    return view


class FlowSampler:
    """One flow's RTT estimator and Linux-style delivery-rate sampler, on its own row
    or on a row of the simulator's state (``row``)."""

    def __init__(self, start: float, row: np.ndarray | None = None) -> None:
        self.row = np.empty(COLUMNS) if row is None else row
        init_row(self.row, start)

    @property
    def rtt(self) -> float:
        return float(self.row[RTT])

    @property
    def srtt(self) -> float:
        return float(self.row[SRTT])

    def snapshot(self, now: float, nothing_in_flight: bool) -> Snapshot:
        s = self.row
        snapshot(s, now, nothing_in_flight)
        return Snapshot(float(s[SNAP_DEL]), float(s[SNAP_DAT]), float(s[SNAP_FS]))

    def packet_acked(self, delivered: float, sent: float, snap: Snapshot) -> None:
        packet_acked(self.row, delivered, sent, snap.delivered, snap.delivered_at, snap.first_sent)

    def ack_done(self, now: float) -> None:
        ack_done(self.row, now)

    def take_step(self) -> StepView:
        return take_step(self.row)
