"""The testbed's network: network namespaces joined by veth pairs, built and
removed with iproute2's ``ip`` and ``tc`` and ``ethtool`` (subprocesses; one line
when one fails).

::

    sender S ──veth── router R1 ──veth── delay D ──veth── receiver C
     10.201.1.1     .1.2 │ .2.1          (a)   (b)         10.201.2.2
                         tbf: rate C, drop-tail limit β bytes

A parking lot of K hops chains K routers, R1 ── R2 ── … ── RK (10.201.(10+j).0/24
between Rj and Rj+1), each with the same bottleneck on its egress towards the
receiver; hop j's bottleneck takes only the data of its flows (flow 0's and flow
j's, by their TCP destination ports, under an ``htb`` that sends every other frame
on at once), so every flow crosses the same devices and the one delay line, and
queues only where the thesis' parking lot (Fig. 6.1) queues it.

Names carry the run's process id, ``ccmtb<pid><role>`` (namespaces: ``s``, ``r1``
… ``rK``, ``d``, ``c``) and ``ccmtb<pid><role><n>`` (links), so that two runs never
collide and a later run can tell leftovers of a dead one (:func:`remove_stale`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from ccmatic.core.processes import alive

PREFIX = "ccmtb"
NAME = re.compile(rf"^{PREFIX}(\d+)([a-z]\d?)$")
#: a link's name is at most 15 bytes: PREFIX, a pid of up to 7 digits, "r9", "1"
MAX_HOPS = 9
SENDER_IP, ROUTER_IP_S, ROUTER_IP_C, RECEIVER_IP = "10.201.1.1", "10.201.1.2", "10.201.2.1", "10.201.2.2"
#: the htb class above a parking lot's tbf: far above any rate the delay line carries
UNLIMITED = "10gbit"
SENDER_NET, RECEIVER_NET = "10.201.1.0/24", "10.201.2.0/24"
OFFLOADS = ("tso", "gso", "gro", "tx")
#: a link's MTU over the TCP payload of a full segment: IPv4 20, TCP 20 + 12 (timestamps)
MTU_OVER_MSS = 52
#: a frame on the wire over the MTU: the Ethernet header
ETHERNET = 14
#: every veth's receive processing on one CPU (RPS mask): a veth hands a frame to the
#: backlog of the CPU that sent it, and two CPUs' backlogs drain in either order, so
#: a flow's frames sent from two CPUs (its process, its ACK-clocked softirq) would
#: be reordered; one backlog keeps them in the order they were sent
RPS_CPUS = "1"
#: sysctls per namespace: no IPv6 chatter; socket buffers that never limit a flow
#: (the window, not the buffer, must be what the CCA decides)
BUFFERS = "4096 131072 134217728"


class NetError(Exception):
    """A command failed: one line first, then its output."""


def run(cmd: Sequence[str], check: bool = True) -> str:
    res = subprocess.run(list(cmd), check=False, capture_output=True, text=True)
    if check and res.returncode != 0:
        text = (res.stderr or res.stdout).strip()
        raise NetError(f"'{' '.join(cmd)}' failed: {text.splitlines()[0] if text else res.returncode}\n{text}")
    return res.stdout


def in_ns(ns: str, *cmd: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *cmd]


@dataclass(frozen=True)
class Net:
    """One run's names: ``hops`` routers (1 on a dumbbell)."""

    pid: int
    hops: int = 1

    def ns(self, role: str) -> str:
        return f"{PREFIX}{self.pid}{role}"

    def dev(self, role: str, n: int) -> str:
        return f"{PREFIX}{self.pid}{role}{n}"

    @property
    def roles(self) -> tuple[str, ...]:
        return ("s", *(f"r{j}" for j in range(1, self.hops + 1)), "d", "c")

    def bottleneck(self, hop: int = 1) -> tuple[str, str]:
        """(namespace, device) of hop ``hop``'s tbf (1-based)."""
        return self.ns(f"r{hop}"), self.dev(f"r{hop}", 1)

    @property
    def delay_devs(self) -> tuple[str, str]:
        return self.dev("d", 0), self.dev("d", 1)


def _veth(net: Net, a: tuple[str, int], b: tuple[str, int], mtu: int) -> None:
    run(["ip", "link", "add", net.dev(*a), "netns", net.ns(a[0]), "type", "veth",
         "peer", "name", net.dev(*b), "netns", net.ns(b[0])])
    for role, n in (a, b):
        ns, dev = net.ns(role), net.dev(role, n)
        run(in_ns(ns, "ethtool", "-K", dev, *(x for o in OFFLOADS for x in (o, "off"))))
        run(in_ns(ns, "sh", "-c", f"echo {RPS_CPUS} > /sys/class/net/{dev}/queues/rx-0/rps_cpus"))
        run(["ip", "-n", ns, "link", "set", dev, "mtu", str(mtu), "up"])


def _sysctls(ns: str, forward: bool) -> None:
    pairs = [("net.ipv6.conf.all.disable_ipv6", "1"), ("net.ipv6.conf.default.disable_ipv6", "1"),
             ("net.ipv4.tcp_rmem", BUFFERS), ("net.ipv4.tcp_wmem", BUFFERS),
             ("net.ipv4.ip_forward", "1" if forward else "0"), ("net.ipv4.tcp_no_metrics_save", "1")]
    run(in_ns(ns, "sysctl", "-q", "-w", *(f"{k}={v}" for k, v in pairs)))


def build(net: Net, mtu: int = 1500, quickack: bool = False) -> None:
    """The namespaces, links (of this MTU), addresses and routes (no bottleneck yet:
    :func:`bottleneck`); ``quickack``: the receiver's route carries iproute2's
    ``quickack 1`` (RTAX_QUICKACK), so it ACKs every segment instead of delaying ACKs."""
    K = net.hops
    for role in net.roles:
        run(["ip", "netns", "add", net.ns(role)])
        run(["ip", "-n", net.ns(role), "link", "set", "lo", "up"])
        _sysctls(net.ns(role), role.startswith("r"))
    _veth(net, ("s", 0), ("r1", 0), mtu)
    for j in range(1, K):
        _veth(net, (f"r{j}", 1), (f"r{j + 1}", 0), mtu)
    _veth(net, (f"r{K}", 1), ("d", 0), mtu)
    _veth(net, ("d", 1), ("c", 0), mtu)
    addrs = [("s", 0, SENDER_IP), ("r1", 0, ROUTER_IP_S), (f"r{K}", 1, ROUTER_IP_C), ("c", 0, RECEIVER_IP)]
    addrs += [(f"r{j + i}", 1 - i, _hop_ip(j, i + 1)) for j in range(1, K) for i in (0, 1)]
    for role, n, addr in addrs:
        run(["ip", "-n", net.ns(role), "addr", "add", f"{addr}/24", "dev", net.dev(role, n)])
    run(["ip", "-n", net.ns("s"), "route", "add", "default", "via", ROUTER_IP_S])
    run(["ip", "-n", net.ns("c"), "route", "add", "default", "via", ROUTER_IP_C, *(["quickack", "1"] if quickack else [])])
    for j in range(1, K):  # between hops: towards the receiver, and back towards the sender
        run(["ip", "-n", net.ns(f"r{j}"), "route", "add", RECEIVER_NET, "via", _hop_ip(j, 2)])
        run(["ip", "-n", net.ns(f"r{j + 1}"), "route", "add", SENDER_NET, "via", _hop_ip(j, 1)])


def _hop_ip(j: int, host: int) -> str:
    """The address of router j (host 1) or router j + 1 (host 2) on the link between them."""
    return f"10.201.{10 + j}.{host}"


def tbf_args(rate_bps: float, buffer_bytes: int, mtu: int = 1500) -> list[str]:
    """tbf at ``rate_bps`` bits/s with a drop-tail byte limit; a burst of two frames
    (or 1 ms at the rate, if more): the token bucket adds no queue of its own."""
    frame = mtu + ETHERNET
    burst = max(2 * frame, int(rate_bps / 8 / 1000))
    return ["tbf", "rate", f"{int(rate_bps)}bit", "burst", str(burst), "limit", str(max(buffer_bytes, frame))]


def bottleneck(net: Net, rate_bps: float, buffer_bytes: int, mtu: int = 1500, change: bool = False,
               hop: int = 1, ports: Sequence[int] | None = None) -> None:
    """Hop ``hop``'s tbf, at the root of its device (every frame passes it), or, with
    ``ports``, under an ``htb`` that sends to it only the frames to those TCP ports
    and every other frame on at once (its direct queue: no shaping, no wait)."""
    ns, dev = net.bottleneck(hop)
    tc = ["tc", "-n", ns]
    if ports is None:
        run([*tc, "qdisc", "change" if change else "add", "dev", dev, "root", *tbf_args(rate_bps, buffer_bytes, mtu)])
        return
    run([*tc, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "0"])
    run([*tc, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", UNLIMITED,
         "quantum", str(mtu + ETHERNET)])
    run([*tc, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *tbf_args(rate_bps, buffer_bytes, mtu)])
    for port in ports:
        run([*tc, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
             "match", "ip", "protocol", "6", "0xff", "match", "ip", "dport", str(port), "0xffff", "flowid", "1:1"])


def qdisc_stats(net: Net, hop: int = 1) -> dict[str, int]:
    """Hop ``hop``'s tbf's counters: packets and bytes sent, drops, overlimits."""
    ns, dev = net.bottleneck(hop)
    for q in json.loads(run(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev]) or "[]"):
        if q.get("kind") == "tbf":
            return {k: int(q.get(k, 0)) for k in ("packets", "bytes", "drops", "overlimits")}
    return {}


def link_stats(ns: str, dev: str) -> dict[str, int]:
    """A device's kernel counters (``ip -s``): rx/tx packets and drops."""
    for link in json.loads(run(["ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev]) or "[]"):
        st = link.get("stats64", {})
        return {"rx_packets": st["rx"]["packets"], "rx_dropped": st["rx"]["dropped"],
                "tx_packets": st["tx"]["packets"], "tx_dropped": st["tx"]["dropped"]}
    return {}


def namespaces_of(pid: int) -> list[str]:
    """The namespaces of run ``pid`` (whatever its hops)."""
    return [ns for ns in namespaces() if (m := NAME.match(ns)) and int(m.group(1)) == pid]


def remove(net: Net) -> list[str]:
    """Delete the run's namespaces (their links go with them); the names deleted."""
    gone = namespaces_of(net.pid)
    for ns in gone:
        run(["ip", "netns", "del", ns], check=False)
    return gone


def namespaces() -> list[str]:
    return [line.split()[0] for line in run(["ip", "netns", "list"], check=False).splitlines() if line.strip()]


def stale_pids() -> set[int]:
    """Runs whose namespaces are still there but whose process is gone (a crash)."""
    pids = {int(m.group(1)) for ns in namespaces() if (m := NAME.match(ns))}
    return {p for p in pids if p != os.getpid() and not alive(p)}


def remove_stale() -> list[str]:
    """Remove what dead runs left: their processes (still running in their
    namespaces) and the namespaces; the names removed."""
    removed = []
    for pid in sorted(stale_pids()):
        for ns in namespaces_of(pid):
            for p in run(["ip", "netns", "pids", ns], check=False).split():
                try:
                    os.kill(int(p), 9)
                except (ProcessLookupError, ValueError):
                    pass
        removed += remove(Net(pid))
    return removed
