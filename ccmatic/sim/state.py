"""The fine mode's state as arrays (struct of arrays), for the compiled loop
(:mod:`ccmatic.sim.kernel`): one row per flow, one row per packet in the network
(:mod:`ccmatic.sim.packets`), one per hop, and the run's records.  The packet pool
and the RTT samples' buffer grow geometrically, between calls of the loop."""

from __future__ import annotations

import math
from array import array

import numpy as np

from ccmatic.sim import kernel as K
from ccmatic.sim.ackpath import KIND_CODES, seed
from ccmatic.sim.bottleneck import new_hops, schedule_arrays
from ccmatic.sim.packets import Pool
from ccmatic.sim.records import HopRecord, RttSamples, SimConfig
from ccmatic.sim.sampler import COLUMNS, init_row
from ccmatic.sim.tally import Tally

BUDGET = 200_000  # packets and flow-ticks of work between two returns to Python (milliseconds)


class RunState:
    """Every array of one run; :meth:`advance` runs the compiled loop."""

    def __init__(self, cfg: SimConfig, starts: list[int], steps: list[int], dt: float, ticks: int,
                 chunk: int | None = None) -> None:
        """``chunk``: keep the per-tick records and RTT samples of that many ticks at a
        time, handed to a tally by :meth:`flush` (None: of the whole run)."""
        N = len(cfg.flows)
        self.cfg, self.dt, self.ticks = cfg, dt, ticks
        self.ff = np.zeros((N, K.FLOW_FLOATS))
        self.ff[:, K.RATE] = self.ff[:, K.CWND] = math.nan
        self.ff[:, K.RX] = [f.R + f.extra for f in cfg.flows]
        fi = self.fi = np.zeros((N, K.FLOW_INTS), dtype=np.int64)
        fi[:, K.START], fi[:, K.STEPS] = starts, steps
        fi[:, K.PEND_HEAD] = fi[:, K.PEND_TAIL] = -1
        fi[:, K.BURST] = [1 if f.cca.sets_rate else cfg.burst for f in cfg.flows]  # paced: one by one
        # L's history: tick − start − steps is read at a tick, so start + steps ticks of it
        fi[:, K.LLEN] = fi[:, K.STEPS] + 1  # L of the ticks since one RTprop back
        fi[1:, K.LOFF] = np.cumsum(fi[:-1, K.LLEN])
        self.lring = np.zeros(int(fi[:, K.LLEN].sum()))
        self.smp = np.empty((N, COLUMNS))
        for f in range(N):
            init_row(self.smp[f], starts[f] * dt)
        self.pool = Pool(1024)
        link = cfg.link
        hops = cfg.hops if cfg.topology == "parking_lot" else 1
        buf = math.inf if link.buffer is None else link.buffer
        self.hf, self.hi = new_hops(hops, link.C, [buf] * hops, link.schedule is not None)
        self.st, self.sc = schedule_arrays(link.schedule)
        self.kind, self.fixed, self.train = KIND_CODES[link.kind], link.agg == "fixed", link.train
        # the ACK paths: last ACK and D per flow; next release, releases and last ACK
        # out per box
        self.ack = np.zeros((5, N + 1))
        self.ack[1, :N] = [f.jitter(link) for f in cfg.flows]
        self.ack[4, :] = -math.inf
        self.box = np.array([0 if f.D is None else i + 1 for i, f in enumerate(cfg.flows)], dtype=np.int64)
        rows = ticks if chunk is None else min(chunk, ticks)
        self.rec = np.zeros((2, rows))  # the queue at each tick's end, and its peak within it
        self.delivered = np.zeros((rows, N))
        self.sent = np.zeros((rows, N))
        self.lost = np.zeros((rows, N))
        self.lot = cfg.topology == "parking_lot"
        self.hrec = np.zeros((3, rows, hops) if self.lot else (3, 1, 0))
        # the RTT samples, at most one per packet delivered: room for as many as the
        # hops can deliver in the records' ticks (zeros: memory is taken only as samples come)
        bound = math.ceil(hops * (link.capacity(0.0, rows * dt) / cfg.mss + 1)) + 1024
        self.rtt_f = np.zeros(bound, dtype=np.int32)
        self.rtt_v = np.zeros((bound, 2))
        self.rn = np.zeros(K.RUN_INTS, dtype=np.int64)
        self.bflows = np.zeros(N, dtype=np.int64)
        self.qlimit = cfg.max_queue_packets
        seed(cfg.seed)

    @property
    def tick(self) -> int:
        return int(self.rn[K.TICK])

    def boundary_flows(self) -> list[int]:
        return [int(f) for f in self.bflows[:self.rn[K.NB]]]

    def advance(self, end: int) -> int:
        """Run the loop until an event other than growth (:mod:`ccmatic.sim.kernel`)."""
        while True:
            status = int(K.run(self.ff, self.fi, self.smp, self.lring, self.pool.pf, self.pool.pi, self.pool.free,
                               self.hf, self.hi, self.st, self.sc, self.kind, self.fixed, self.train, self.ack,
                               self.box, self.rec, self.delivered, self.sent, self.lost, self.hrec, self.rtt_f, self.rtt_v,
                               self.rn, self.bflows, self.dt, self.cfg.mss, end, BUDGET, self.qlimit))
            if status != K.GROW:
                return status
            self.pool.reserve(int(self.rn[K.NEED]))
            need = int(self.rn[K.DELIV])
            if need > len(self.rtt_f):
                cap = max(2 * len(self.rtt_f), need)
                self.rtt_f = np.concatenate([self.rtt_f, np.zeros(cap - len(self.rtt_f), dtype=np.int32)])
                self.rtt_v = np.concatenate([self.rtt_v, np.zeros((cap - len(self.rtt_v), 2))])

    def flush(self, tally: Tally) -> None:
        """Hand the records and RTT samples since the last flush to ``tally``, and start
        the next chunk of ticks."""
        k = self.tick - int(self.rn[K.BASE])
        tally.add_ticks(self.rec[0, :k], self.rec[1, :k], self.delivered[:k], self.sent[:k], self.lost[:k])
        for arr in (self.rec, self.delivered, self.sent, self.lost):
            arr.fill(0.0)
        self.rn[K.BASE] = self.tick
        n = int(self.rn[K.RCOUNT])
        for f, (times, rtts) in enumerate(self._samples_by_flow()):
            if len(times):
                tally.add_rtts(f, times, rtts)
        self.rn[K.RCOUNT] = 0
        self.rn[K.DELIV] -= n  # still at least the samples the ACKs on their way may give

    def detected(self, f: int, tick: int) -> float:
        return float(K.detected(self.fi, self.lring, f, tick))

    def queued_by_flow(self) -> np.ndarray:
        return np.asarray(K.queued_by_flow(self.hi, self.pool.pi, len(self.ff)))

    def rtt_samples(self) -> list[RttSamples]:
        """Each flow's RTT samples (ACK time, RTT), in ACK order; the buffer is freed."""
        per_flow = self._samples_by_flow()
        self.rtt_f, self.rtt_v = np.zeros(0, dtype=np.int32), np.zeros((0, 2))  # freed
        return [RttSamples(array("d", times.tobytes()), array("d", rtts.tobytes())) for times, rtts in per_flow]

    def _samples_by_flow(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The RTT samples in the buffer, per flow: (ACK times, RTTs), in ACK order."""
        times, rtts, bounds = K.by_flow(self.rtt_f, self.rtt_v, int(self.rn[K.RCOUNT]), len(self.ff))
        return [(times[bounds[f]:bounds[f + 1]], rtts[bounds[f]:bounds[f + 1]]) for f in range(len(self.ff))]

    def hop_record(self, upto: int) -> HopRecord | None:
        if not self.lot:
            return None
        h = self.hrec[:, :upto]
        return HopRecord(h[0], h[1], h[2])
