"""ccmatic's fine-mode dumbbell in ns-3 (PyPI package ``ns3``; the ns-3 half of
benchmarks/ns3_compare.py).

Topology: sender i --access link--> router --bottleneck--> receiver, one TCP bulk
flow per sender, one PacketSink per flow on the receiver.  Every setting, and why:

* **Bottleneck**: a point-to-point link at C, propagation delay 0.  Its queue is a
  FifoQueueDisc (drop-tail) holding ``β − 2·1500`` bytes in front of a device queue of
  one packet.  A drop-tail DropTailQueue on the device alone would be the simpler FIFO,
  but ns-3's traffic-control layer then stops the device queue when it is full and
  drops the packets that arrive meanwhile itself, where no counter sees them; a queue
  disc counts its drops (QueueDisc::GetStats).  The queue disc sees IP packets of
  1500 bytes, as ccmatic's buffer does, and the two packets taken off its size are
  the one waiting in the device queue and the one being transmitted: ccmatic's buffer
  of β bytes counts the packet in service too, so both hold ⌊β/1500⌋ packets in all
  (80 for 1 BDP at 24 Mbit/s and 40 ms).
* **Access links**: max(1 Gbit/s, 10·C), one-way propagation delay R_i/2 each way, so
  flow i's RTprop is R_i (plus a packet's transmission time, as in ccmatic, whose
  packets are ACKed R after their last byte leaves the queue).  ccmatic puts the whole
  delay on the ACK path; where it lies does not change a FIFO's dynamics.  The
  traffic-control layer is removed from every other device and their device queues
  hold 100,000 packets, so the bottleneck is the only place a packet is dropped
  (``other_drops`` in the details checks it).
* **Segments**: MSS 1448 bytes of payload, so with TCP timestamps (Linux's default,
  12 option bytes) every data packet is 1500 bytes of IP, as ccmatic's 1500-byte
  packets; 1502 on the wire with the PPP header.
* **TCP**: SACK on (ns-3's default), timestamps on, window scaling on; delayed ACKs
  off (DelAckCount = 1: ccmatic ACKs every packet); initial cwnd 10 segments (as
  ccmatic's init_cwnd_pkts); send and receive buffers far above the largest window,
  so only cwnd limits a flow; minimum RTO 200 ms (Linux's TCP_RTO_MIN; ns-3's default
  is RFC 6298's 1 s; ccmatic has no timeouts at all).
* **Loss recovery**: TcpClassicRecovery (SACK-based, RFC 6675): on entering recovery
  cwnd drops to ssthresh at once and the sender waits until the pipe (data in
  flight, lost segments excluded) is below it, as ccmatic's sending rule does
  (A ≤ ACKed + detected lost + cwnd).  ``recovery="prr"`` selects ns-3's (and
  Linux's) default, PRR (RFC 6937), which keeps sending about ssthresh/cwnd packets
  per packet delivered during recovery: on these drop-tail buffers some of those
  still meet a full queue, so ns-3's CUBIC often enters recovery twice per
  congestion event and cuts cwnd to 0.7² of its peak.
* **CCAs**: ns3::TcpNewReno, ns3::TcpCubic with HyStart's delay test only and Linux's
  16-ms ceiling on its threshold (ns-3's default is 1 s), as ccmatic's cubic.cca
  (which leaves out the ACK-train test); fast convergence and the TCP-friendly region
  stay on, as there;
  ns3::TcpBbr with its defaults (BBRv1 after Linux: gains 2.89 / 5/4, 3/4, 1…, 10-round
  BtlBw window, 10 s RTprop window, 200 ms ProbeRTT).  Pacing is off (Linux's Reno and
  CUBIC do not pace without the fq qdisc; ccmatic's reno and cubic set no rate); BBR
  turns it on for its own sockets (TcpBbr::InitPacingRate).
* **Senders**: BulkSendApplication, 1448-byte writes, unlimited.  One flow starts at
  0; with several, flow i starts at a time drawn uniformly in [0, R_i) from the seed,
  as ccmatic starts each flow at a random tick of its first RTprop.

Measurements, over [warmup, duration]:

* throughput: the bytes each PacketSink received, counted as the 1502-byte frames
  (1448 + 32 TCP + 20 IP + 2 PPP) they took on the bottleneck, over C: a link busy
  with new data is at 100%, as in ccmatic (retransmissions count as waste);
* loss rate: the queue disc's drops over the packets that reached it (retransmissions
  included; ccmatic never retransmits, so its lost / sent is over new data only);
* queue: the packets in the queue disc and the device queue, sampled every 10 ms,
  1500 bytes each, in BDPs (C · min R_i); the packet in transmission is not counted
  (ccmatic counts what is left of it: on average half a packet more);
* per flow, the times it entered fast recovery and retransmission-timeout recovery
  (TcpSocketState CA_RECOVERY, CA_LOSS), from its CongState trace: ccmatic has no
  timeouts, so ``rto`` counts events ccmatic cannot have.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MTU = 1500                  # IP packet (bytes), ccmatic's packet size
MSS = 1448                  # TCP payload: 1500 - 20 IP - 20 TCP - 12 timestamp option
FRAME = MTU + 2             # on the point-to-point wire (PPP header)
SAMPLE = 0.01               # s between queue samples (and the simulator's Stop/Run step)
NS3_TCP = {"newreno": "ns3::TcpNewReno", "cubic": "ns3::TcpCubic", "bbr": "ns3::TcpBbr"}
NS3_RECOVERY = {"classic": "ns3::TcpClassicRecovery", "prr": "ns3::TcpPrrRecovery"}

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Scenario:
    """One dumbbell: a CCA and an RTprop (ms) per flow, C (Mbit/s), the buffer in BDPs
    (C · min R), the run's length and warm-up (s); ns-3's loss recovery."""

    ccas: tuple[str, ...]
    R_ms: tuple[float, ...]
    C_mbps: float = 24.0
    buffer_bdp: float = 1.0
    duration: float = 30.0
    warmup: float = 10.0
    seed: int = 0
    recovery: str = "classic"

    def __post_init__(self) -> None:
        if len(self.ccas) != len(self.R_ms) or not self.ccas:
            raise ValueError(f"one CCA and one RTprop per flow, got {self.ccas} and {self.R_ms}")
        if bad := [c for c in self.ccas if c not in NS3_TCP]:
            raise ValueError(f"unknown CCA {bad[0]!r} (known: {', '.join(NS3_TCP)})")
        if self.recovery not in NS3_RECOVERY:
            raise ValueError(f"unknown recovery {self.recovery!r} (known: {', '.join(NS3_RECOVERY)})")
        if not 0 <= self.warmup < self.duration:
            raise ValueError(f"warm-up {self.warmup} s must lie in [0, duration = {self.duration} s)")
        if self.buffer_bytes < 3 * MTU:
            raise ValueError(f"buffer {self.buffer_bytes:.0f} B: ns-3's side needs at least 3 packets ({3 * MTU} B)")

    @property
    def name(self) -> str:
        kinds = sorted(set(self.ccas), key=self.ccas.index)
        cca = f"{kinds[0]} x{len(self.ccas)}" if len(kinds) == 1 else "+".join(self.ccas)
        rs = sorted(set(self.R_ms), key=self.R_ms.index)
        r = "/".join(f"{x:g}" for x in (rs if len(rs) > 1 else rs[:1]))
        return f"{cca} R={r}ms buf={self.buffer_bdp:g}"

    @property
    def C(self) -> float:
        """Bytes per second."""
        return self.C_mbps * 1e6 / 8

    @property
    def bdp(self) -> float:
        """Bytes: C · the shortest RTprop (ccmatic's BDP unit)."""
        return self.C * min(self.R_ms) / 1000

    @property
    def buffer_bytes(self) -> float:
        return self.buffer_bdp * self.bdp

    def starts(self) -> tuple[float, ...]:
        """Each flow's start (s): 0 for one flow, else uniform in [0, R_i)."""
        if len(self.ccas) == 1:
            return (0.0,)
        rng = random.Random(self.seed)
        return tuple(rng.uniform(0, r / 1000) for r in self.R_ms)


@dataclass
class Outcome:
    """One simulator's figures for one scenario (shares: of C, per flow)."""

    utilization: float
    shares: list[float]
    jain: float
    loss_rate: float
    queue_mean_bdp: float
    wall_s: float
    details: dict[str, Any] = field(default_factory=dict)


def jain(xs: list[float]) -> float:
    s, q = sum(xs), sum(x * x for x in xs)
    return 1.0 if q == 0 else s * s / (len(xs) * q)


_NS: Any = None

_STATE_COUNTER = r"""
#include "ns3/core-module.h"
#include "ns3/tcp-socket-state.h"
namespace ccmatic_ns3 {
std::vector<long> recoveries, timeouts;
void OnState(int i, ns3::TcpSocketState::TcpCongState_t, ns3::TcpSocketState::TcpCongState_t now) {
    if (now == ns3::TcpSocketState::CA_RECOVERY) recoveries[i]++;
    if (now == ns3::TcpSocketState::CA_LOSS) timeouts[i]++;
}
void Reset(int n) { recoveries.assign(n, 0); timeouts.assign(n, 0); }
bool Watch(int i, uint32_t node) {  // node's first TCP socket, as flow i
    return ns3::Config::ConnectWithoutContextFailSafe("/NodeList/" + std::to_string(node) +
        "/$ns3::TcpL4Protocol/SocketList/0/CongState", ns3::MakeBoundCallback(&OnState, i));
}
}
"""


def import_ns() -> Any:
    """``from ns import ns`` (10-100 s), once per process.  cppyy prints two harmless
    'Failed to materialize symbols' lines at import (a static initializer of
    nstime.h); they are filtered out, anything else it prints is passed on."""
    global _NS
    if _NS is None:
        sys.stderr.flush()
        saved = os.dup(2)
        with tempfile.TemporaryFile(mode="w+b") as tmp:
            os.dup2(tmp.fileno(), 2)
            try:
                from ns import ns
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                tmp.seek(0)
                for line in tmp.read().decode(errors="replace").splitlines():
                    if "Failed to materialize symbols" not in line:
                        print(line, file=sys.stderr)
        ns.cppyy.cppdef(_STATE_COUNTER)  # a C++ trace sink: Python ones are slow
        _NS = ns
    return _NS


def _set_defaults(ns: Any, sc: Scenario) -> None:
    window = 4 * (1 + sc.buffer_bdp) * sc.C * max(sc.R_ms) / 1000
    buf = int(max(window, 4 << 20))
    d = ns.Config.SetDefault
    d("ns3::TcpSocket::SegmentSize", ns.UintegerValue(MSS))
    d("ns3::TcpSocket::DelAckCount", ns.UintegerValue(1))
    d("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    d("ns3::TcpSocket::SndBufSize", ns.UintegerValue(buf))
    d("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(buf))
    d("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    d("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    d("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    d("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))
    d("ns3::TcpSocketState::EnablePacing", ns.BooleanValue(False))
    d("ns3::TcpCubic::HyStart", ns.BooleanValue(True))
    d("ns3::TcpCubic::HyStartDetect", ns.StringValue("DELAY"))
    d("ns3::TcpCubic::HyStartDelayMax", ns.TimeValue(ns.MilliSeconds(16)))
    d("ns3::TcpL4Protocol::RecoveryType", ns.TypeIdValue(ns.TypeId.LookupByName(NS3_RECOVERY[sc.recovery])))
    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(sc.seed + 1)


def run_ns3(sc: Scenario, progress: Progress | None = None) -> Outcome:
    """Run ``sc`` in ns-3 (in this process; ns-3 keeps global state, so one run at a
    time, each ended by Simulator::Destroy)."""
    ns = import_ns()
    t0 = time.monotonic()
    _set_defaults(ns, sc)
    n = len(sc.ccas)
    senders, mid = ns.NodeContainer(), ns.NodeContainer()
    senders.Create(n)
    mid.Create(2)  # router, receiver
    router, receiver = mid.Get(0), mid.Get(1)
    p2p = ns.PointToPointHelper()
    access_bps = max(1e9, 10 * sc.C_mbps * 1e6)
    access = []
    for i in range(n):
        p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(access_bps))))
        p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.MicroSeconds(round(sc.R_ms[i] * 500))))
        access.append(p2p.Install(senders.Get(i), router))
    p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(sc.C_mbps * 1e6))))
    p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(0)))
    bott = p2p.Install(router, receiver)
    stack = ns.InternetStackHelper()
    stack.Install(senders)
    stack.Install(mid)
    addr = ns.Ipv4AddressHelper()
    for i, devs in enumerate(access):
        addr.SetBase(ns.Ipv4Address(f"10.1.{i + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        addr.Assign(devs)
    addr.SetBase(ns.Ipv4Address("10.2.1.0"), ns.Ipv4Mask("255.255.255.0"))
    dst = addr.Assign(bott).GetAddress(1)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    tch = ns.TrafficControlHelper()
    others = [devs.Get(k) for devs in access for k in (0, 1)] + [bott.Get(1)]
    for dev in [*others, bott.Get(0)]:
        tch.Uninstall(dev)  # Ipv4AddressHelper::Assign installed FqCoDel on each
    for dev in others:
        ns.DynamicCast[ns.PointToPointNetDevice](dev).GetQueue().SetMaxSize(ns.QueueSize("100000p"))
    devq = ns.DynamicCast[ns.PointToPointNetDevice](bott.Get(0)).GetQueue()
    devq.SetMaxSize(ns.QueueSize("1p"))
    tch.SetRootQueueDisc("ns3::FifoQueueDisc")
    qdisc = tch.Install(bott.Get(0)).Get(0)
    qdisc.SetMaxSize(ns.QueueSize(f"{int(sc.buffer_bytes) - 2 * MTU}B"))

    sinks = []
    for i, (cca, t_start) in enumerate(zip(sc.ccas, sc.starts(), strict=True)):
        tcp = senders.Get(i).GetObject[ns.TcpL4Protocol]()
        tcp.SetAttribute("SocketType", ns.TypeIdValue(ns.TypeId.LookupByName(NS3_TCP[cca])))
        port = 5000 + i
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(dst, port).ConvertTo())
        bulk.SetAttribute("SendSize", ns.UintegerValue(MSS))
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        app = bulk.Install(senders.Get(i))
        app.Start(ns.Seconds(t_start))
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        sapp = sink.Install(receiver)
        sapp.Start(ns.Seconds(0))
        sinks.append(ns.DynamicCast[ns.PacketSink](sapp.Get(0)))

    states = ns.cppyy.gbl.ccmatic_ns3

    def counters() -> tuple[list[int], int, int, list[int], list[int]]:
        st = qdisc.GetStats()
        return ([int(s.GetTotalRx()) for s in sinks], int(st.nTotalReceivedPackets), int(st.nTotalDroppedPackets),
                [int(states.recoveries[i]) for i in range(n)], [int(states.timeouts[i]) for i in range(n)])

    k_w, k_end = round(sc.warmup / SAMPLE), round(sc.duration / SAMPLE)
    k_watch = int(max(sc.starts()) / SAMPLE) + 1  # every socket exists (BulkSend opens it at its start)
    states.Reset(n)
    start: tuple[list[int], int, int, list[int], list[int]] | None = counters() if k_w == 0 else None
    queue: list[float] = []
    next_note = time.monotonic() + 30
    for k in range(1, k_end + 1):
        ns.Simulator.Stop(ns.Seconds(SAMPLE))
        ns.Simulator.Run()
        if k == k_watch and not all(states.Watch(i, senders.Get(i).GetId()) for i in range(n)):
            raise RuntimeError("ns-3: could not connect to a sender's CongState trace")
        if k == k_w:
            start = counters()
        if k > k_w:
            queue.append(float(qdisc.GetNBytes() + MTU * devq.GetNPackets()))
        if progress is not None and time.monotonic() >= next_note:
            next_note += 30
            progress(f"ns-3 {sc.name}: {k * SAMPLE:.0f}/{sc.duration:g} s simulated, "
                     f"{time.monotonic() - t0:.0f} s wall")
    assert start is not None
    rx, arrived, dropped, recs, rtos = counters()
    other_drops = sum(int(ns.DynamicCast[ns.PointToPointNetDevice](d).GetQueue().GetTotalDroppedPackets())
                      for d in others)
    ns.Simulator.Destroy()
    span = (k_end - k_w) * SAMPLE
    thr = [(b - a) * FRAME / MSS / span for a, b in zip(start[0], rx, strict=True)]
    arr, drop = arrived - start[1], dropped - start[2]
    return Outcome(
        utilization=sum(thr) / sc.C, shares=[x / sc.C for x in thr], jain=jain(thr),
        loss_rate=drop / arr if arr else 0.0,
        queue_mean_bdp=sum(queue) / len(queue) / sc.bdp if queue else 0.0,
        wall_s=time.monotonic() - t0,
        details={"throughput_Bps": thr, "arrived_pkts": arr, "dropped_pkts": drop,
                 "recoveries": [b - a for a, b in zip(start[3], recs, strict=True)],
                 "rto": [b - a for a, b in zip(start[4], rtos, strict=True)], "rto_total": sum(rtos) - sum(start[4]),
                 "other_drops": other_drops, "starts_s": list(sc.starts())},
    )
