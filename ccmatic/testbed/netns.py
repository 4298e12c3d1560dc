"""The testbed's network: four network namespaces joined by veth pairs, built and
removed with iproute2's ``ip`` and ``tc`` and ``ethtool`` (subprocesses; one line
when one fails).

::

    sender S ──veth── router R ──veth── delay D ──veth── receiver C
     10.201.1.1     .1.2 │ .2.1          (a)   (b)         10.201.2.2
                         tbf: rate C, drop-tail limit β bytes

Names carry the run's process id, ``ccmtb<pid><role>`` (namespaces) and
``ccmtb<pid><role><n>`` (links), so that two runs never collide and a later run can
tell leftovers of a dead one (:func:`remove_stale`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from ccmatic.core.processes import alive

PREFIX = "ccmtb"
ROLES = ("s", "r", "d", "c")
NAME = re.compile(rf"^{PREFIX}(\d+)([a-z])$")
SENDER_IP, ROUTER_IP_S, ROUTER_IP_C, RECEIVER_IP = "10.201.1.1", "10.201.1.2", "10.201.2.1", "10.201.2.2"
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
    """One run's names."""

    pid: int

    def ns(self, role: str) -> str:
        return f"{PREFIX}{self.pid}{role}"

    def dev(self, role: str, n: int) -> str:
        return f"{PREFIX}{self.pid}{role}{n}"

    @property
    def bottleneck(self) -> tuple[str, str]:
        """(namespace, device) of the tbf."""
        return self.ns("r"), self.dev("r", 1)

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
    for role in ROLES:
        run(["ip", "netns", "add", net.ns(role)])
        run(["ip", "-n", net.ns(role), "link", "set", "lo", "up"])
        _sysctls(net.ns(role), role == "r")
    _veth(net, ("s", 0), ("r", 0), mtu)
    _veth(net, ("r", 1), ("d", 0), mtu)
    _veth(net, ("d", 1), ("c", 0), mtu)
    for role, n, addr in (("s", 0, SENDER_IP), ("r", 0, ROUTER_IP_S), ("r", 1, ROUTER_IP_C), ("c", 0, RECEIVER_IP)):
        run(["ip", "-n", net.ns(role), "addr", "add", f"{addr}/24", "dev", net.dev(role, n)])
    run(["ip", "-n", net.ns("s"), "route", "add", "default", "via", ROUTER_IP_S])
    run(["ip", "-n", net.ns("c"), "route", "add", "default", "via", ROUTER_IP_C, *(["quickack", "1"] if quickack else [])])


def tbf_args(rate_bps: float, buffer_bytes: int, mtu: int = 1500) -> list[str]:
    """tbf at ``rate_bps`` bits/s with a drop-tail byte limit; a burst of two frames
    (or 1 ms at the rate, if more): the token bucket adds no queue of its own."""
    frame = mtu + ETHERNET
    burst = max(2 * frame, int(rate_bps / 8 / 1000))
    return ["tbf", "rate", f"{int(rate_bps)}bit", "burst", str(burst), "limit", str(max(buffer_bytes, frame))]


def bottleneck(net: Net, rate_bps: float, buffer_bytes: int, mtu: int = 1500, change: bool = False) -> None:
    ns, dev = net.bottleneck
    run(["tc", "-n", ns, "qdisc", "change" if change else "add", "dev", dev, "root",
         *tbf_args(rate_bps, buffer_bytes, mtu)])


def qdisc_stats(net: Net) -> dict[str, int]:
    """The tbf's counters: packets and bytes sent, drops, overlimits."""
    ns, dev = net.bottleneck
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


def remove(net: Net) -> list[str]:
    """Delete the run's namespaces (their links go with them); the names deleted."""
    there = set(namespaces())
    gone = [net.ns(role) for role in ROLES if net.ns(role) in there]
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
        net = Net(pid)
        for role in ROLES:
            if net.ns(role) in namespaces():
                for p in run(["ip", "netns", "pids", net.ns(role)], check=False).split():
                    try:
                        os.kill(int(p), 9)
                    except (ProcessLookupError, ValueError):
                        pass
        removed += remove(net)
    return removed
