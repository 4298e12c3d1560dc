"""The fine mode's compiled loop: every flow's per-tick work and every packet, over
arrays (struct of arrays: one row per flow, one row per packet).

Each tick (:mod:`ccmatic.sim.fine` gives the model) runs in three phases:

0. each flow takes the ACKs that reached it (S, its RTT and delivery-rate samples,
   :mod:`ccmatic.sim.sampler`); if some flow's CCA steps at this tick, the loop
   returns :data:`BOUNDARY` with those flows, and Python runs their CCA step (the one
   semantics over floats), writes their rate and cwnd, and calls it again;
1. each flow's allowance: pacing credit and the cwnd rule A ≤ S + Ld + cwnd, in
   whole packets, and the snapshot its packets carry;
2. the network: the packets reach the first hop spread over the tick
   (:mod:`ccmatic.sim.bottleneck`); a parking lot's flow 0 goes on hop by hop (a
   packet a later hop drops is lost at that tick); each
   flow's last hop hands its packets to its ACK path (:mod:`ccmatic.sim.ackpath`);
   then A, L, the losses' history and the tick's records.

The loop also returns to Python when the packet pool or the RTT buffer must grow
(:data:`GROW`), when the queue passes its limit (:data:`LIMIT`), when the per-tick
records (a chunk of ticks from ``rn[BASE]``) are full (:data:`FLUSH`: Python hands
them to the metrics' tally and starts the next chunk), at ``end``, and after about
``budget`` packets and flow-ticks of work (:data:`BUDGET`), so that a signal is
handled within milliseconds.
"""

from __future__ import annotations

import math

import numpy as np

from ccmatic.sim.ackpath import ack_time
from ccmatic.sim.bottleneck import LEN, OUT_HEAD, OUT_TAIL, PEAK, QBYTES, hop_tick, spread
from ccmatic.sim.jit import njit
from ccmatic.sim.packets import AT, CUM, FLOW, FREE_LEN, NEXT, S_DAT, S_DEL, S_FS, SENT, append, pop_free, push_free
from ccmatic.sim.sampler import SNAP_DAT, SNAP_DEL, SNAP_FS, ack_done, packet_acked, snapshot

# a flow's floats (bytes, bytes/s; RATE and CWND nan when the CCA does not set them)
A, S_ACK, L, PACE, RATE, CWND, CUMUL, RX, OFFERED = range(9)
FLOW_FLOATS = 9
# a flow's ints: first tick, ticks per step, its ACKs on their way (head, tail), packets
# this tick, its history of L (offset and length in the ring), the packets it sends
# back to back (1 if its CCA paces it)
START, STEPS, PEND_HEAD, PEND_TAIL, COUNT, LOFF, LLEN, BURST = range(8)
FLOW_INTS = 8
# the run's ints: the tick and its phase, the flows stepping, the RTT samples taken,
# the packets the pool must supply, the packets delivered to the ACK paths so far
# the packets delivered to the ACK paths so far, the tick the records' first row holds
TICK, PHASE, NB, RCOUNT, NEED, DELIV, BASE = range(7)
RUN_INTS = 7
# what the loop returns
DONE, BOUNDARY, GROW, LIMIT, BUDGET, FLUSH = range(6)


@njit
def detected(fi: np.ndarray, lring: np.ndarray, f: int, tick: int) -> float:
    """Flow f's losses detected at ``tick``: L at the end of tick tick − steps, one
    RTprop back (0 before)."""
    back = tick - fi[f, STEPS]
    if back < 0:
        return 0.0
    return float(lring[fi[f, LOFF] + back % fi[f, LLEN]])


@njit
def _take_acks(f: int, now: float, ff: np.ndarray, fi: np.ndarray, smp: np.ndarray, pf: np.ndarray,
               pi: np.ndarray, free: np.ndarray, rtt_f: np.ndarray, rtt_v: np.ndarray, run: np.ndarray) -> None:
    """The ACKs that reached flow f by ``now``: S, the RTT and delivery-rate samples
    (packets ACKed at the same instant are one ACK)."""
    p = fi[f, PEND_HEAD]
    while p >= 0 and pf[p, AT] <= now + 1e-12:
        at = pf[p, AT]
        ff[f, S_ACK] = pf[p, CUM]
        k = run[RCOUNT]
        rtt_f[k] = f
        rtt_v[k, 0] = at
        rtt_v[k, 1] = at - pf[p, SENT]
        run[RCOUNT] = k + 1
        packet_acked(smp[f], pf[p, CUM], pf[p, SENT], pf[p, S_DEL], pf[p, S_DAT], pf[p, S_FS])
        nxt = pi[p, NEXT]
        if nxt < 0 or pf[nxt, AT] != at:
            ack_done(smp[f], at)
        push_free(pi, free, p)
        p = nxt
    fi[f, PEND_HEAD] = p
    if p < 0:
        fi[f, PEND_TAIL] = -1


@njit
def _allowance(f: int, tick: int, dt: float, mss: float, ff: np.ndarray, fi: np.ndarray,
               lring: np.ndarray) -> float:
    """Bytes flow f may inject in this tick, in whole packets."""
    allow = math.inf
    rate = ff[f, RATE]
    if not math.isnan(rate):
        ff[f, PACE] = min(ff[f, PACE] + rate * dt, rate * dt + mss)
        allow = ff[f, PACE]
    cwnd = ff[f, CWND]
    if not math.isnan(cwnd):
        allow = min(allow, max(0.0, ff[f, S_ACK] + detected(fi, lring, f, tick) + cwnd - ff[f, A]))
    if math.isinf(allow):
        return 0.0
    return math.floor(allow / mss + 1e-9) * mss


@njit
def _to_ack_path(p: int, row: int, mss: float, ff: np.ndarray, fi: np.ndarray, pf: np.ndarray, pi: np.ndarray,
                 delivered: np.ndarray, kind: int, fixed: bool, train: float, ack: np.ndarray, box: np.ndarray,
                 rn: np.ndarray) -> None:
    """A packet leaves its last hop: its ACK joins its flow's ACKs on their way."""
    rn[DELIV] += 1
    f = pi[p, FLOW]
    ff[f, CUMUL] += mss
    delivered[row, f] += mss
    pf[p, AT] = ack_time(kind, fixed, f, pf[p, AT], ff[f, RX], ack[0], ack[1], box, ack[2], ack[3], ack[4], train)
    pf[p, CUM] = ff[f, CUMUL]
    append(pi, fi, f, PEND_HEAD, PEND_TAIL, p)


@njit
def _new_packets(tick: int, dt: float, f: int, ff: np.ndarray, fi: np.ndarray, smp: np.ndarray, pf: np.ndarray,
                 pi: np.ndarray, free: np.ndarray, times: np.ndarray, pkts: np.ndarray, k: int) -> int:
    """Flow f's packets of the tick, spread over it in its bursts, into ``times``/``pkts``
    from k."""
    n = fi[f, COUNT]
    if n == 0:
        return k
    spread(tick * dt, dt, n, np.random.random(), times, k, fi[f, BURST])
    for j in range(k, k + n):
        p = pop_free(pi, free)
        pi[p, FLOW] = f
        pf[p, SENT] = times[j]
        pf[p, S_DEL] = smp[f, SNAP_DEL]
        pf[p, S_DAT] = smp[f, SNAP_DAT]
        pf[p, S_FS] = smp[f, SNAP_FS]
        pkts[j] = p
    return int(k + n)


@njit
def _network(tick: int, row: int, dt: float, mss: float, ff: np.ndarray, fi: np.ndarray, smp: np.ndarray, pf: np.ndarray,
             pi: np.ndarray, free: np.ndarray, hf: np.ndarray, hi: np.ndarray, st: np.ndarray, sc: np.ndarray,
             kind: int, fixed: bool, train: float, ack: np.ndarray, box: np.ndarray, delivered: np.ndarray,
             hrec: np.ndarray, admitted: np.ndarray, rn: np.ndarray) -> None:
    """The tick's packets through the hops (one on a dumbbell), into the ACK paths;
    on a parking lot (``hrec`` has a column per hop) each hop's record."""
    N, K = ff.shape[0], hf.shape[0]
    lot = hrec.shape[2] > 0
    fwd = np.empty(0, dtype=np.int64)  # flow 0's packets from the previous hop
    for j in range(K):
        entering = np.arange(N) if K == 1 else (np.array([0, 1]) if j == 0 else np.array([j + 1]))
        n = len(fwd)
        for f in entering:
            n += fi[f, COUNT]
        times = np.empty(n)
        pkts = np.empty(n, dtype=np.int64)
        k = 0
        for f in entering:
            k = _new_packets(tick, dt, f, ff, fi, smp, pf, pi, free, times, pkts, k)
        for p in fwd:
            times[k] = pf[p, AT]
            pkts[k] = p
            k += 1
        got = np.zeros(N, dtype=np.int64)
        hop_tick(hf, hi, j, pf, pi, free, st, sc, times, pkts, (tick + 1) * dt, mss, got)
        for f in entering:
            admitted[f] = got[f]
        if j > 0:  # flow 0's packets a later hop dropped: lost now (its L grows at this tick)
            admitted[0] -= len(fwd) - got[0]
        nf = 0
        p = hi[j, OUT_HEAD]
        while p >= 0:  # flow 0's packets are at most all of them
            nf += 1 if pi[p, FLOW] == 0 and j < K - 1 else 0
            p = pi[p, NEXT]
        fwd = np.empty(nf, dtype=np.int64)
        nf = 0
        p = hi[j, OUT_HEAD]
        while p >= 0:
            nxt = pi[p, NEXT]
            if lot:
                hrec[0, row, j] += mss
                if pi[p, FLOW] == 0:
                    hrec[1, row, j] += mss
            if pi[p, FLOW] == 0 and j < K - 1:
                fwd[nf] = p
                nf += 1
            else:
                _to_ack_path(p, row, mss, ff, fi, pf, pi, delivered, kind, fixed, train, ack, box, rn)
            p = nxt
        hi[j, OUT_HEAD] = hi[j, OUT_TAIL] = -1
        if lot:
            hrec[2, row, j] = hf[j, QBYTES]


@njit
def _intake(tick: int, dt: float, ff: np.ndarray, fi: np.ndarray, smp: np.ndarray, pf: np.ndarray, pi: np.ndarray,
            free: np.ndarray, rtt_f: np.ndarray, rtt_v: np.ndarray, rn: np.ndarray, bflows: np.ndarray) -> int:
    """Phase 0: every flow's ACKs; the flows whose CCA steps at this tick into
    ``bflows``; returns how many."""
    nb = 0
    for f in range(ff.shape[0]):
        _take_acks(f, tick * dt, ff, fi, smp, pf, pi, free, rtt_f, rtt_v, rn)
        if tick >= fi[f, START] and (tick - fi[f, START]) % fi[f, STEPS] == 0:
            bflows[nb] = f
            nb += 1
    return nb


@njit
def _decide(tick: int, dt: float, mss: float, ff: np.ndarray, fi: np.ndarray, smp: np.ndarray,
            lring: np.ndarray) -> None:
    """Phase 1: what each flow sends in this tick, and the snapshot its packets carry."""
    for f in range(ff.shape[0]):
        o = _allowance(f, tick, dt, mss, ff, fi, lring) if tick >= fi[f, START] else 0.0
        ff[f, OFFERED] = o
        fi[f, COUNT] = round(o / mss)
        if fi[f, COUNT]:
            inflight = ff[f, A] - ff[f, S_ACK] - detected(fi, lring, f, tick)
            snapshot(smp[f], tick * dt, inflight <= 0)


@njit
def _account(tick: int, row: int, mss: float, ff: np.ndarray, fi: np.ndarray, lring: np.ndarray, admitted: np.ndarray,
             hf: np.ndarray, hi: np.ndarray, rec: np.ndarray, sent: np.ndarray, lost: np.ndarray) -> int:
    """After the network: A, L and L's history of every flow, and the tick's records;
    returns the packets queued."""
    queued = 0
    rec[0, row] = rec[1, row] = 0.0
    for j in range(hf.shape[0]):
        rec[0, row] += hf[j, QBYTES]
        rec[1, row] += hf[j, PEAK]
        queued += hi[j, LEN]
    for f in range(ff.shape[0]):
        o = ff[f, OFFERED]
        ok = admitted[f] * mss  # below 0: only drops at later hops of earlier packets
        if o > 0:
            if not math.isnan(ff[f, RATE]):
                ff[f, PACE] -= o
            ff[f, A] += o
            sent[row, f] = o
        if o > 0 or ok < 0:
            ff[f, L] += o - ok
            lost[row, f] = o - ok
        lring[fi[f, LOFF] + tick % fi[f, LLEN]] = ff[f, L]
    return queued


@njit
def run(ff: np.ndarray, fi: np.ndarray, smp: np.ndarray, lring: np.ndarray, pf: np.ndarray, pi: np.ndarray,
        free: np.ndarray, hf: np.ndarray, hi: np.ndarray, st: np.ndarray, sc: np.ndarray, kind: int, fixed: bool,
        train: float,
        ack: np.ndarray, box: np.ndarray, rec: np.ndarray, delivered: np.ndarray, sent: np.ndarray,
        lost: np.ndarray, hrec: np.ndarray, rtt_f: np.ndarray, rtt_v: np.ndarray, rn: np.ndarray,
        bflows: np.ndarray, dt: float, mss: float, end: int, budget: int, qlimit: int) -> int:
    """Run ticks from ``rn[TICK]`` (resuming in phase ``rn[PHASE]``) until one of the
    events of the module doc; returns which."""
    N = ff.shape[0]
    work = 0
    admitted = np.zeros(N, dtype=np.int64)
    while rn[TICK] < end:
        tick = rn[TICK]
        row = tick - rn[BASE]
        if rn[PHASE] == 0:
            if row >= rec.shape[1]:
                return FLUSH
            if rn[DELIV] > len(rtt_f):  # every ACK on its way may be taken now
                rn[NEED] = 0
                return GROW
            rn[NB] = _intake(tick, dt, ff, fi, smp, pf, pi, free, rtt_f, rtt_v, rn, bflows)
            rn[PHASE] = 1
            if rn[NB]:
                return BOUNDARY
        if rn[PHASE] == 1:
            _decide(tick, dt, mss, ff, fi, smp, lring)
            rn[PHASE] = 2
        need = fi[:, COUNT].sum()
        if free[FREE_LEN] < need:
            rn[NEED] = need
            return GROW
        _network(tick, row, dt, mss, ff, fi, smp, pf, pi, free, hf, hi, st, sc, kind, fixed, train, ack, box, delivered,
                 hrec, admitted, rn)
        queued = _account(tick, row, mss, ff, fi, lring, admitted, hf, hi, rec, sent, lost)
        rn[PHASE] = 0
        rn[TICK] = tick + 1
        if queued > qlimit:
            return LIMIT
        work += need + N
        if work >= budget:
            return BUDGET
    return DONE


@njit
def queued_by_flow(hi: np.ndarray, pi: np.ndarray, n: int) -> np.ndarray:
    """The packets of each flow in the hops' queues."""
    out = np.zeros(n, dtype=np.int64)
    for j in range(hi.shape[0]):
        p = hi[j, 0]
        for _ in range(hi[j, LEN]):
            out[pi[p, FLOW]] += 1
            p = pi[p, NEXT]
    return out


@njit
def by_flow(rtt_f: np.ndarray, rtt_v: np.ndarray, n: int, flows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first ``n`` RTT samples (flow, (ACK time, RTT)) grouped by flow, in their
    order: times, RTTs, and each flow's first index (``flows + 1`` bounds)."""
    bounds = np.zeros(flows + 1, dtype=np.int64)
    for i in range(n):
        bounds[rtt_f[i] + 1] += 1
    bounds = np.cumsum(bounds)
    pos = bounds[:-1].copy()
    times = np.empty(n)
    rtts = np.empty(n)
    for i in range(n):
        f = rtt_f[i]
        times[pos[f]] = rtt_v[i, 0]
        rtts[pos[f]] = rtt_v[i, 1]
        pos[f] += 1
    return times, rtts, bounds
