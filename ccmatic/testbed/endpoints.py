"""The testbed's TCP endpoints, each run as its own process inside a network
namespace (``ip netns exec NS python -m ccmatic.testbed.endpoints ...``):

* ``sink HOST PORT N``: accepts N connections on ports PORT .. PORT+N-1 and reads
  and discards what they carry until they close;
* ``send CONFIG``: opens one socket per flow with its congestion control
  (``TCP_CONGESTION``), keeps it backlogged from its start time to the end, and
  samples each socket's ``tcp_info`` every ``dt`` seconds; it prints the samples as
  one JSON document when done.

SIGINT is ignored (a Ctrl-C reaches the whole process group; the testbed ends its
children with SIGTERM, in order)."""

from __future__ import annotations

import json
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from ccmatic.testbed import tcpinfo

CHUNK = 1 << 16


@dataclass(frozen=True)
class SendFlow:
    cca: str          # the congestion control's kernel name
    host: str
    port: int
    start: float      # s after the common start


def abortive(s: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0), also when the process is killed: no orphan
    socket outlives the run (an orphan keeps its namespace, and an exported CCA's
    program, alive in the kernel for minutes)."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _drain(conn: socket.socket) -> None:
    buf = bytearray(CHUNK)
    with conn:
        abortive(conn)
        try:
            while conn.recv_into(buf):
                pass
        except OSError:  # the sender's reset at the end
            pass


def sink(host: str, port: int, n: int) -> None:
    listeners = []
    for i in range(n):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, port + i))
        ls.listen(4)
        listeners.append(ls)
    print("ready", flush=True)
    threads = []
    for ls in listeners:
        conn, _ = ls.accept()
        t = threading.Thread(target=_drain, args=(conn,), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()


def _pump(sock: socket.socket, end: float) -> None:
    data = b"\x5a" * CHUNK
    while time.monotonic() < end:
        try:
            sock.send(data)
        except TimeoutError:  # a full send buffer (a slow flow): keep it backlogged
            continue
        except OSError:
            return


def _connect(f: SendFlow) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    abortive(s)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, f.cca.encode())
    s.connect((f.host, f.port))
    s.settimeout(0.2)  # a send blocked at the end of the run returns
    return s


def send(flows: list[SendFlow], duration: float, dt: float) -> dict[str, Any]:
    """Run the flows; per flow, its samples (:data:`ccmatic.testbed.tcpinfo.SAMPLE`)
    every dt from its start, and the monotonic clock's reading at t = 0."""
    t0 = time.monotonic()
    end = t0 + duration
    socks: list[socket.socket | None] = [None] * len(flows)
    rows: list[list[list[float]]] = [[] for _ in flows]
    pumps = []
    tick = 0
    while (now := time.monotonic()) < end:
        for i, f in enumerate(flows):
            if socks[i] is None and now - t0 >= f.start:
                new = socks[i] = _connect(f)
                th = threading.Thread(target=_pump, args=(new, end), daemon=True)
                th.start()
                pumps.append(th)
            cur = socks[i]
            if cur is not None:
                rows[i].append(tcpinfo.sample(cur, t0))
        tick += 1
        time.sleep(max(0.0, t0 + tick * dt - time.monotonic()))
    for th in pumps:
        th.join(timeout=2.0)
    for s in socks:
        if s is not None:
            s.close()
    return {"columns": tcpinfo.SAMPLE, "flows": rows, "t0": t0}


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if argv[0] == "sink":
        sink(argv[1], int(argv[2]), int(argv[3]))
        return 0
    cfg = json.loads(argv[1])
    flows = [SendFlow(**f) for f in cfg["flows"]]
    json.dump(send(flows, float(cfg["duration"]), float(cfg["dt"])), sys.stdout)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
