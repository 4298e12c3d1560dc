"""The flows' congestion controls: the kernel's own by name (``reno``, ``cubic``,
``bbr``: BBRv1), or a CCA file exported to eBPF (:mod:`ccmatic.export`) and
registered for the run.

An exported CCA is registered once per RTprop its flows have (the step length is
the flow's RTprop, given at export), under a name of the run,
``ccmtb<pid>_<k>`` (at most 15 characters), so that two runs never share one and a
later run can unregister what a dead run left (:func:`remove_stale`).  It is
unregistered when the run ends, whatever ends it."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ccmatic.core.processes import alive
from ccmatic.export import build, trace
from ccmatic.export.kernel import bpf_source
from ccmatic.export.program import Settings, Steps, generate
from ccmatic.spec.cca import CcaProgram
from ccmatic.testbed.netns import PREFIX

KERNEL = ("reno", "cubic", "bbr")
REGISTERED = re.compile(rf"^{PREFIX}(\d+)_(\d+)$")


@dataclass(frozen=True)
class FlowCca:
    """A flow's congestion control: a kernel name, or an exported CCA file."""

    name: str                     # as the user gave it
    program: CcaProgram | None    # None: the kernel's own
    D_steps: int = 0              # the exported program's jitter bound, in steps

    @property
    def kernel(self) -> bool:
        return self.program is None


@dataclass
class Registry:
    """The run's registrations: (CCA file, RTprop µs) -> kernel name."""

    pid: int
    names: dict[tuple[str, int, int], str] = field(default_factory=dict)
    workdir: Path | None = None
    trace: bool = False  # keep each program's step trace (ccmatic.export.trace)
    steps: Steps = "ack" # where the programs' steps begin (ccmatic.export.program.Settings)

    def kernel_name(self, cca: FlowCca, R: float, say: Callable[[str], None]) -> str:
        """The name a socket selects with TCP_CONGESTION (exporting and registering
        the CCA file first if needed)."""
        if cca.program is None:
            return cca.name
        rtprop_us = max(1, round(R * 1e6))
        key = (cca.program.path, rtprop_us, cca.D_steps)
        if key not in self.names:
            # named before registering: a signal during bpftool still unregisters it
            name = self.names[key] = f"{PREFIX}{self.pid}_{len(self.names)}"
            self._register(cca.program, rtprop_us, cca.D_steps, name, say)
        return self.names[key]

    def _register(self, prog: CcaProgram, rtprop_us: int, D: int, name: str, say: Callable[[str], None]) -> None:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{self.pid}_"))
        s = Settings(D=D, steps=self.steps)
        src = self.workdir / f"{name}.bpf.c"
        src.write_text(bpf_source(generate(prog, s), s, name, rtprop_us, _trace_tag(name) if self.trace else None))
        say(f"exporting {prog.name} (RTprop {rtprop_us / 1000:g} ms) as {name}: compiling and registering")
        obj = build.compile_bpf(src, "v3" if self.trace else None)
        build.register(obj)
        if name not in build.available():
            raise build.BuildError(f"{name} was registered but the kernel does not list it")

    def traces(self) -> dict[str, list[dict[str, float]]]:
        """Each registered program's step trace (while it is still registered)."""
        return {name: trace.read(_trace_tag(name)) for name in self.names.values()} if self.trace else {}

    def close(self) -> list[str]:
        """Unregister everything this run registered; the names unregistered.  The
        kernel frees a program when the last socket using it is gone: wait for that
        (a few seconds at most, the run's sockets close with a reset)."""
        gone = [n for n in self.names.values() if build.unregister(n)]
        build.wait_freed(gone)
        self.names.clear()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        return gone


def _trace_tag(name: str) -> str:
    """The tag of a registered program's trace maps: its name without the prefix (short
    enough for a map's name, ccmatic.export.trace)."""
    return name[len(PREFIX):]


def remove_stale() -> list[str]:
    """Unregister the CCAs of runs whose process is gone; the names."""
    gone = []
    for name in build.available():
        m = REGISTERED.match(name)
        if m and int(m.group(1)) != os.getpid() and not alive(int(m.group(1))):
            build.unregister(name)
            gone.append(name)
    build.wait_freed(gone)
    return gone
