"""The userspace delay line: an AF_PACKET forwarder between two interfaces of its own
network namespace, run as its own process (``python -m ccmatic.testbed.delayline
CONFIG``).  It bridges every frame from ``a`` (the bottleneck's side) to ``b`` (the
receiver's) and back:

* data (a → b) of flow i, recognized by its TCP destination port, is held for the
  flow's RTprop R_i plus its extra delay: one FIFO per flow, so that nothing is
  reordered;
* ACKs (b → a) are released at once on the ``ideal`` link; on ``cbr_delay`` each
  after a uniform random delay in [0, D], never before the flow's previous ACK
  (FIFO kept, App. B.6); on ``ack_agg`` in batches, at release times spaced
  uniformly in [0, D) (``agg = "uniform"``) or exactly D apart (``fixed``).  The
  flows share the link's D and one aggregator, but for a flow given its own D (its
  own box, as in :class:`ccmatic.sim.links.AckDelay`; D = 0: no delay);
* any other frame (ARP) is passed on at once.

Both packet sockets get large forced buffers (SO_RCVBUFFORCE, SO_SNDBUFFORCE): a
default receive buffer drops frames in bursts, a default send buffer caps what the
path downstream can hold.  On SIGTERM it prints its counts as one JSON line: frames
in and out per direction, frames the kernel dropped on its receive sockets
(PACKET_STATISTICS), send failures, frames left held, frames out of order (an IPv4
ID lower than the flow's last one sent, the sender's per-socket counter), and how
late frames left against their due time."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23
BUFFER = 64 << 20
LATE_BINS = 200  # lateness histogram: 50 µs bins up to 10 ms
BIN = 50e-6
RT_PRIORITY = 10


class Stop(Exception):
    pass


def _open(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, 33, BUFFER)  # SO_RCVBUFFORCE
    s.setsockopt(socket.SOL_SOCKET, 32, BUFFER)  # SO_SNDBUFFORCE
    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    s.bind((ifname, 0))
    s.setblocking(False)
    return s


def _tcp_ports(frame: bytes) -> tuple[int, int, int, int] | None:
    """(source port, destination port, order of a data segment, order of an ACK) of
    a TCP/IPv4 frame, else None.  A data segment's order is its IPv4 ID (the sending
    socket's counter, mod 2^16), an ACK's its acknowledgment number (mod 2^32); -1
    where the frame has none: no payload (not a data segment), or a SYN, FIN or RST
    (sent from other counters: a listener's, the namespace's control socket)."""
    if len(frame) < 54 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
        return None
    ihl = (frame[14] & 0x0F) * 4
    sport, dport, _seq, ack = struct.unpack_from("!HHII", frame, 14 + ihl)
    flags = frame[14 + ihl + 13]
    if flags & 0x07:
        return sport, dport, -1, -1
    data = ((frame[16] << 8) | frame[17]) > ihl + (frame[14 + ihl + 12] >> 4) * 4
    return sport, dport, (frame[18] << 8) | frame[19] if data else -1, ack if flags & 0x10 else -1


class Line:
    """One direction's held frames: per key (the flow's port; -1: other frames) a
    FIFO of (due, frame, order), and the frames that left out of order."""

    def __init__(self, modulus: int) -> None:
        self.modulus = modulus
        self.q: dict[int, deque[tuple[float, bytes, int]]] = {}
        self.last: dict[int, int] = {}
        self.frames_in = self.frames_out = self.send_fail = self.reordered = 0
        self.late = [0] * (LATE_BINS + 1)

    def hold(self, key: int, due: float, frame: bytes, order: int) -> None:
        self.frames_in += 1
        q = self.q.get(key)
        if q is None:
            q = self.q[key] = deque()
        q.append((due, frame, order))

    def next_due(self) -> float:
        return min((q[0][0] for q in self.q.values() if q), default=float("inf"))

    def release(self, out: socket.socket, now: float) -> None:
        for key, q in self.q.items():
            while q and q[0][0] <= now:
                due, frame, order = q.popleft()
                try:
                    out.send(frame)
                except OSError:
                    self.send_fail += 1
                    continue
                self.frames_out += 1
                self.late[min(LATE_BINS, int((now - due) / BIN))] += 1
                if key >= 0 and order >= 0:
                    last = self.last.get(key)
                    if last is not None and 0 < (last - order) % self.modulus < self.modulus // 2:
                        self.reordered += 1
                    self.last[key] = order

    def held(self) -> int:
        return sum(len(q) for q in self.q.values())

    def stats(self) -> dict[str, Any]:
        n = sum(self.late)
        acc, p50, p99 = 0, 0.0, 0.0
        for i, c in enumerate(self.late):
            acc += c
            if not p50 and acc >= 0.5 * n:
                p50 = (i + 1) * BIN
            if acc >= 0.99 * n:
                p99 = (i + 1) * BIN
                break
        over = sum(self.late[int(1e-3 / BIN):])
        return {"in": self.frames_in, "out": self.frames_out, "send_failed": self.send_fail, "held": self.held(),
                "reordered": self.reordered, "late_p50_s": p50, "late_p99_s": p99, "late_over_1ms": over}


class AckClock:
    """When an ACK that arrives at ``now`` leaves (see the module doc).  ``own`` gives a
    flow (by its key) its own jitter bound and box: its own FIFO delay bound, or its own
    aggregator; the other flows share the link's ``D`` and one aggregator."""

    def __init__(self, model: str, D: float, agg: str, seed: int, own: dict[int, float] | None = None) -> None:
        self.model, self.D, self.agg = model, D, agg
        self.own = own or {}
        self.rng = random.Random(seed)
        self.last: dict[int, float] = {}
        self.release_at: dict[int, float] = {}  # per box (-1: the shared one)

    def due(self, key: int, now: float) -> float:
        D = self.own.get(key, self.D)
        if D <= 0:
            return now
        if self.model == "cbr_delay":
            d = max(now + self.rng.uniform(0.0, D), self.last.get(key, 0.0))
            self.last[key] = d
            return d
        if self.model == "ack_agg":
            box = key if key in self.own else -1
            at = self.release_at.get(box, now)
            while at < now:
                at += D if self.agg == "fixed" else self.rng.uniform(0.0, D)
            self.release_at[box] = at
            return at
        return now


def _sock_stats(s: socket.socket) -> tuple[int, int]:
    packets, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return packets, drops


def realtime() -> bool:
    """Run at a real-time priority (SCHED_FIFO), ahead of the machine's ordinary
    processes: frames then leave on time even on a busy machine.  The line sleeps in
    select() between frames; the kernel's real-time throttling (95% of a core) keeps
    the rest of the machine alive were it ever to spin."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
    except (OSError, AttributeError):
        return False
    return True


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    a, b = _open(cfg["a"]), _open(cfg["b"])
    rt = realtime() if cfg.get("realtime", True) else False
    delay = {int(p): float(r) for p, r in cfg["ports"].items()}  # destination port -> one-way delay (s)
    own = {int(p): float(d) for p, d in cfg.get("own_D", {}).items()}
    acks = AckClock(cfg["model"], float(cfg["D"]), cfg["agg"], int(cfg["seed"]), own)
    fwd, back = Line(1 << 16), Line(1 << 32)
    kernel = {"a": [0, 0], "b": [0, 0]}  # PACKET_STATISTICS resets on each read: summed here

    def data_at(tcp: tuple[int, int, int, int], now: float) -> tuple[int, float, int] | None:
        d = delay.get(tcp[1])  # by destination port; a frame of no flow is not delayed
        return None if d is None else (tcp[1], now + d, tcp[2])

    def ack_at(tcp: tuple[int, int, int, int], now: float) -> tuple[int, float, int]:
        return tcp[0], acks.due(tcp[0], now), tcp[3]

    def stop(signum: int, frame: object) -> None:
        raise Stop

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("ready", flush=True)
    try:
        while True:
            now = time.monotonic()
            wait = min(fwd.next_due(), back.next_due()) - now
            r, _, _ = select.select([a, b], [], [], min(0.05, max(0.0, wait)))
            now = time.monotonic()
            if a in r:
                _read(a, fwd, now, data_at)
            if b in r:
                _read(b, back, now, ack_at)
            fwd.release(b, now)
            back.release(a, now)
    except Stop:
        pass
    for name, s in (("a", a), ("b", b)):
        p, d = _sock_stats(s)
        kernel[name] = [kernel[name][0] + p, kernel[name][1] + d]
    cpu = os.times()
    return {"data": fwd.stats(), "acks": back.stats(), "realtime": rt, "cpu_s": cpu.user + cpu.system,
            "socket_drops": {"a": kernel["a"][1], "b": kernel["b"][1]},
            "socket_packets": {"a": kernel["a"][0], "b": kernel["b"][0]}}


Place = Callable[[tuple[int, int, int, int], float], tuple[int, float, int] | None]


def _read(s: socket.socket, line: Line, now: float, place: Place) -> None:
    """Take up to 256 waiting frames: a TCP frame is held where ``place`` (its ports
    and sequence numbers, now) puts it, as (flow key, due time, order); any other
    frame (ARP, a frame of no flow) is passed on at once."""
    for _ in range(256):
        try:
            frame = s.recv(65536)
        except BlockingIOError:
            return
        tcp = _tcp_ports(frame)
        at = None if tcp is None else place(tcp, now)
        if at is None:
            line.hold(-1, now, frame, 0)
        else:
            line.hold(at[0], at[1], frame, at[2])


def main(argv: list[str]) -> int:
    res = run(json.loads(argv[0]))
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
