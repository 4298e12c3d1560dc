"""What a run's metrics need, gathered as the run goes (:mod:`ccmatic.sim.metrics`).

A :class:`Tally` takes the run's ticks in chunks, in order, and its RTT samples, and
keeps only

* per tick, four numbers over all flows: the queue at the tick's end and its peak
  within the tick, the bytes delivered and the bytes lost (8 bytes each a tick:
  about 400 kB for a minute at 1,000 ticks a second, whatever the number of flows);
* per flow, sums over the measurement window [warm-up, end): bytes delivered,
  sent and lost, its loss episodes so far, and its RTT samples' count, sum and
  largest.

So the metrics of a long run with many flows do not need its per-flow, per-tick
history or its per-packet RTT samples.  Bytes delivered, sent and lost are whole
packets, so their sums are exact in any order; the queue's mean is taken over the
kept per-tick values, as over a whole record.  Only a flow's mean RTT depends on
how the run was cut: its samples are summed chunk by chunk (a difference in the
last bit, e.g. 0.06276195154005446 against ...447).
"""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING

from ccmatic.sim.records import SimConfig

if TYPE_CHECKING:
    import numpy as np


class Tally:
    """A run's metrics, gathered in chunks of ticks (see the module doc)."""

    def __init__(self, cfg: SimConfig, dt: float, ticks: int, warmup: float) -> None:
        import numpy as np  # large, and only the simulator needs it

        self.cfg, self.dt, self.ticks, self.warmup = cfg, dt, ticks, warmup
        self.i0 = max(0, min(int(warmup / dt), ticks - 1))  # the first tick measured
        n = len(cfg.flows)
        self.queue, self.peak = array("d"), array("d")
        self.delivered_all, self.lost_all = array("d"), array("d")
        self.delivered = np.zeros(n)
        self.sent = np.zeros(n)
        self.lost = np.zeros(n)
        self.episodes = np.zeros(n, dtype=np.int64)
        self.gaps = np.array([max(1, round(f.R / dt)) for f in cfg.flows])  # an episode: one RTprop apart
        self.last_loss = np.full(n, -(1 << 62), dtype=np.int64)  # the tick of each flow's latest loss
        self.rtt_n = np.zeros(n, dtype=np.int64)
        self.rtt_sum = np.zeros(n)
        self.rtt_max = np.full(n, -math.inf)
        self.seen = 0  # ticks taken so far

    def add_ticks(self, queue: np.ndarray, peak: np.ndarray, delivered: np.ndarray, sent: np.ndarray,
                  lost: np.ndarray) -> None:
        """The next ticks: the queue and its peak per tick (shape k), the bytes each
        flow had delivered, sent and lost in each (shape k × flows)."""
        import numpy as np

        k = len(queue)
        self.queue.extend(queue)
        self.peak.extend(peak)
        self.delivered_all.extend(delivered.sum(axis=1))
        self.lost_all.extend(lost.sum(axis=1))
        skip = max(0, self.i0 - self.seen)  # rows before the window
        if skip < k:
            self.delivered += delivered[skip:].sum(axis=0)
            self.sent += sent[skip:].sum(axis=0)
            self.lost += lost[skip:].sum(axis=0)
            rows, flows = np.nonzero(lost[skip:] > 0)
            for t, f in zip((rows + self.seen + skip).tolist(), flows.tolist(), strict=True):
                if t - self.last_loss[f] > self.gaps[f]:
                    self.episodes[f] += 1
                self.last_loss[f] = t
        self.seen += k

    def add_rtts(self, flow: int, times: np.ndarray, rtts: np.ndarray) -> None:
        """RTT samples of one flow (those before the warm-up are not measured)."""
        x = rtts[times >= self.warmup]
        if len(x):
            self.rtt_n[flow] += len(x)
            self.rtt_sum[flow] += float(x.sum())
            self.rtt_max[flow] = max(float(self.rtt_max[flow]), float(x.max()))
