"""One testbed run (docs/testbed.md): build the network, register the exported
CCAs, start the delay line, the receiver and the senders, apply the rate schedule,
collect the samples and the counters, and remove everything — on success, on an
error, on Ctrl-C and on SIGTERM (the caller turns SIGTERM into KeyboardInterrupt,
as every ccmatic command does); leftovers of a crashed earlier run go first."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ccmatic.core.processes import dead_runs_folders
from ccmatic.core.source import Source
from ccmatic.export import build
from ccmatic.export.program import Steps
from ccmatic.sim.links import AggKind, Link, LinkKind, RateSchedule
from ccmatic.sim.records import Flow, SimConfig, SimResult, Topology
from ccmatic.spec.cca import CcaProgram
from ccmatic.testbed import ccas, netns
from ccmatic.testbed.ccas import FlowCca, Registry
from ccmatic.testbed.results import HEADERS, payload_rate, sim_result, summary

PORT = 5201
#: the delay line's limit on one core (frames per second, both directions; docs/testbed.md)
MAX_FRAMES_PER_S = 25_000
TOOLS = {"ip": "iproute2", "tc": "iproute2", "ethtool": "ethtool"}


class TestbedError(Exception):
    """The testbed cannot run as asked: one line."""


@dataclass(frozen=True)
class TestbedFlow:
    """A flow, as :class:`ccmatic.sim.records.Flow`: ``D`` its own jitter bound and box
    on the ACK path (None: the link's), ``extra`` a delay its CCA is not told about."""

    cca: FlowCca
    R: float          # s
    start: float = 0.0
    D: float | None = None
    extra: float = 0.0


@dataclass(frozen=True)
class TestbedConfig:
    C: float                   # the bottleneck's rate, bytes/s on the wire (frames with their headers)
    buffer: int                # its drop-tail limit, bytes on the wire
    flows: tuple[TestbedFlow, ...]
    duration: float
    model: LinkKind = "ideal"
    D: float = 0.0
    agg: AggKind = "uniform"
    seed: int = 0
    schedule: RateSchedule | None = None  # wire bytes/s
    mss: int = 1448            # TCP payload per segment (the links' MTU is mss + MTU_OVER_MSS)
    trace: bool = False        # keep the exported CCAs' step traces (TestbedRun.traces)
    quickack: bool = False     # the receiver ACKs every segment (else Linux's delayed ACKs)
    steps: Steps = "ack"       # where an exported CCA's steps begin (ccmatic.export.program.Settings)
    topology: Topology = "dumbbell"
    hops: int = 1              # a parking lot's: flow 0 crosses them all, flow i only hop i

    def frames_per_s(self) -> float:
        """Data frames at the highest rate (on a parking lot, every hop's cross flow
        may take all of it: K times), and an ACK for every two (every one with
        ``quickack``)."""
        top = self.C if self.schedule is None else max(c for _, c in self.schedule.points)
        return (2.0 if self.quickack else 1.5) * top * self.hops / (self.mss + HEADERS)

    def hop_ports(self, hop: int) -> list[int] | None:
        """The ports whose data hop ``hop``'s bottleneck takes (None: every frame)."""
        return None if self.topology == "dumbbell" or self.hops == 1 else [PORT, PORT + hop]


@dataclass
class TestbedRun:
    result: SimResult
    delay_line: dict[str, Any]
    bottleneck: dict[str, int]  # hop 1's tbf
    devices: dict[str, dict[str, int]]
    senders: dict[str, Any]
    kernel_names: list[str]
    removed_stale: list[str] = field(default_factory=list)
    #: per exported program (kernel name), its steps (:func:`ccmatic.export.trace.read`)
    traces: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    #: per flow, the sender's samples (:data:`ccmatic.testbed.tcpinfo.SAMPLE`), and the
    #: monotonic clock's reading at their time 0 (the kernel's clock, which the step
    #: traces use too)
    samples: list[list[list[float]]] = field(default_factory=list)
    samples_t0: float = 0.0
    #: every hop's tbf (one on a dumbbell)
    bottlenecks: list[dict[str, int]] = field(default_factory=list)

    def steps_by_flow(self, flows: int) -> dict[int, list[dict[str, float]]]:
        """The traced steps of each of the first ``flows`` flows (by its port), in step
        order."""
        out: dict[int, list[dict[str, float]]] = {}
        for steps in self.traces.values():
            for row in steps:
                i = int(row["port"]) - PORT
                if 0 <= i < flows:
                    out.setdefault(i, []).append(row)
        return {i: sorted(rows, key=lambda row: row["k"]) for i, rows in sorted(out.items())}


def missing(exported: bool) -> str | None:
    """What the testbed needs and this machine lacks, as one line with its remedy."""
    if os.geteuid() != 0:
        return "the testbed needs root (network namespaces, tc, packet sockets): run it as root"
    for tool, pkg in TOOLS.items():
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {pkg})"
    if exported:
        return build.missing(load=True)
    return None


def check_rate(cfg: TestbedConfig) -> None:
    fps = cfg.frames_per_s()
    if fps > MAX_FRAMES_PER_S:
        top = MAX_FRAMES_PER_S / fps * cfg.C * 8 / 1e6
        raise TestbedError(f"the delay line forwards at most {MAX_FRAMES_PER_S:,} frames/s accurately on one core; "
                           f"this link needs {fps:,.0f} (hint: keep C at or below {top:.0f} Mbit/s)")


def kernel_program(name: str) -> CcaProgram:
    """A stand-in CcaProgram for a kernel congestion control (the records name it)."""
    return CcaProgram(path=f"kernel:{name}", name=name, source=Source(f"kernel:{name}", ""), states=[], body=[],
                      sets_rate=False, sets_cwnd=True)


def sim_config(cfg: TestbedConfig) -> SimConfig:
    """The run as the simulator's records describe it, in TCP payload bytes."""
    def pay(x: float) -> float:
        return payload_rate(x, cfg.mss)

    sched = None if cfg.schedule is None else RateSchedule(tuple((t, pay(c)) for t, c in cfg.schedule.points))
    link = Link(cfg.model, pay(cfg.C), cfg.D, pay(cfg.buffer), sched, cfg.agg)
    flows = tuple(Flow(f.cca.program or kernel_program(f.cca.name), f.R, f.start, D=f.D, extra=f.extra)
                  for f in cfg.flows)
    return SimConfig(link, flows, cfg.duration, mss=cfg.mss, seed=cfg.seed, topology=cfg.topology, hops=cfg.hops)


def remove_stale() -> list[str]:
    """Namespaces, registrations and build folders of runs whose process is gone."""
    gone = netns.remove_stale() + ccas.remove_stale()
    for d in dead_runs_folders(netns.PREFIX, "_"):
        shutil.rmtree(d, ignore_errors=True)
        gone.append(d)
    return gone


class Children:
    """The run's processes (in its namespaces), ended by their pids."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, ns: str, *argv: str, ready: bool = True) -> subprocess.Popen[str]:
        p = subprocess.Popen(netns.in_ns(ns, sys.executable, "-m", *argv), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        if ready and p.stdout is not None and p.stdout.readline().strip() != "ready":
            _, err = p.communicate(timeout=5)
            raise TestbedError(f"{argv[0]} did not start: {(err.strip().splitlines() or ['no output'])[-1]}")
        return p

    def stop(self, p: subprocess.Popen[str], timeout: float = 5.0) -> str:
        """SIGTERM, then its output (SIGKILL if it does not end in time)."""
        if p.poll() is None:
            p.terminate()
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        return out or ""

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


def _follow_schedule(net: netns.Net, cfg: TestbedConfig, sender: subprocess.Popen[str], t0: float) -> None:
    """Change the tbf's rate at the schedule's times while the senders run."""
    points = [] if cfg.schedule is None else list(cfg.schedule.points[1:])
    for t, c in points:
        while sender.poll() is None and time.monotonic() - t0 < t:
            time.sleep(min(0.05, max(0.0, t0 + t - time.monotonic())))
        if sender.poll() is not None:
            return
        netns.bottleneck(net, c * 8, cfg.buffer, cfg.mss + netns.MTU_OVER_MSS, change=True)


def run(cfg: TestbedConfig, say: Callable[[str], None]) -> TestbedRun:
    check_rate(cfg)
    why = missing(any(not f.cca.kernel for f in cfg.flows))
    if why is not None:
        raise TestbedError(f"cannot run the testbed: {why}")
    stale = remove_stale()
    if stale:
        say(f"removed what an earlier run left: {', '.join(stale)}")
    net, reg, kids = netns.Net(os.getpid(), cfg.hops), Registry(os.getpid(), trace=cfg.trace, steps=cfg.steps), Children()
    try:
        netns.build(net, cfg.mss + netns.MTU_OVER_MSS, quickack=cfg.quickack)
        for hop in range(1, cfg.hops + 1):
            netns.bottleneck(net, cfg.C * 8, cfg.buffer, cfg.mss + netns.MTU_OVER_MSS, hop=hop,
                             ports=cfg.hop_ports(hop))
        names = [reg.kernel_name(f.cca, f.R, say) for f in cfg.flows]
        r = _transfer(cfg, net, kids, names, stale)
        r.traces = reg.traces()
        return r
    finally:
        with build.signals_ignored():
            kids.close()
            netns.remove(net)
            reg.close()


def _transfer(cfg: TestbedConfig, net: netns.Net, kids: Children, names: list[str], stale: list[str]) -> TestbedRun:
    a, b = net.delay_devs
    dl_cfg = {"a": a, "b": b, "ports": {str(PORT + i): f.R + f.extra for i, f in enumerate(cfg.flows)},
              "own_D": {str(PORT + i): f.D for i, f in enumerate(cfg.flows) if f.D is not None},
              "model": cfg.model, "D": cfg.D, "agg": cfg.agg, "seed": cfg.seed}
    dl = kids.start(net.ns("d"), "ccmatic.testbed.delayline", json.dumps(dl_cfg))
    sink = kids.start(net.ns("c"), "ccmatic.testbed.endpoints", "sink", netns.RECEIVER_IP, str(PORT),
                      str(len(cfg.flows)))
    dt = min(f.R for f in cfg.flows) / SimConfig.ticks_per_rtt
    send_cfg = {"flows": [{"cca": n, "host": netns.RECEIVER_IP, "port": PORT + i, "start": f.start}
                          for i, (n, f) in enumerate(zip(names, cfg.flows))], "duration": cfg.duration, "dt": dt}
    t0 = time.monotonic()
    sender = kids.start(net.ns("s"), "ccmatic.testbed.endpoints", "send", json.dumps(send_cfg), ready=False)
    _follow_schedule(net, cfg, sender, t0)
    out, err = sender.communicate(timeout=cfg.duration + 60)
    if sender.returncode != 0:
        raise TestbedError(f"the sender failed: {(err.strip().splitlines() or ['no output'])[-1]}")
    sent = json.loads(out)
    kids.stop(sink, timeout=2 * max(f.R for f in cfg.flows) + 1.0)
    line = json.loads(kids.stop(dl).strip().splitlines()[-1])
    devices = {"a": netns.link_stats(net.ns("d"), a), "b": netns.link_stats(net.ns("d"), b)}
    hops = [netns.qdisc_stats(net, hop) for hop in range(1, cfg.hops + 1)]
    return TestbedRun(sim_result(sim_config(cfg), sent["flows"]), line, hops[0], devices, summary(sent["flows"]),
                      names, stale, samples=sent["flows"], samples_t0=float(sent["t0"]), bottlenecks=hops)
