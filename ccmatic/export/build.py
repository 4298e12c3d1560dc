"""Building and loading the kernel program: clang (``-target bpf``), bpftool
(``struct_ops register`` / ``unregister``), the kernel's list of congestion
controls, and a short iperf3 run through a veth pair in two network namespaces.

Every tool runs as a subprocess; a missing tool or privilege is one line
(:func:`missing`).  A registration outlives the process that made it, so
:func:`load` unregisters in a ``finally`` (Ctrl-C and SIGTERM included), and removes
a stale registration of the same name (a crashed earlier run) before registering.
A name is held by one process at a time (:func:`claim`: a lock in :data:`LOCKS`,
which the kernel releases when the process dies, so a crashed run's registration is
stale and a live run's is not), and after unregistering, :func:`load` waits until
the kernel has freed the program, so that the name can be registered again at once.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
#: where the per-name locks live (a tmpfs: gone at reboot, as registrations are)
LOCKS = Path("/run/ccmatic")
#: how long the kernel may take to free an unregistered program
LINGER_S = 5.0


class BuildError(Exception):
    """A tool failed: its message, one line first."""


class NameHeld(BuildError):
    """Another live process holds the name: one line and a hint."""


def missing(load: bool = False) -> str | None:
    """Why the kernel program cannot be built (or loaded) here, or None."""
    if shutil.which("clang") is None:
        return "clang is not installed (apt-get install clang llvm)"
    if not Path("/usr/include/bpf/bpf_helpers.h").exists():
        return "libbpf's headers are not installed (apt-get install libbpf-dev)"
    if shutil.which("bpftool") is None:
        return "bpftool is not installed (apt-get install bpftool)"
    if not VMLINUX_BTF.exists():
        return "the kernel has no BTF (/sys/kernel/btf/vmlinux), which struct_ops needs"
    if load and os.geteuid() != 0:
        return "loading a congestion control needs root (CAP_BPF and CAP_NET_ADMIN)"
    return None


def _run(cmd: list[str], what: str, **kw: object) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, check=False, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if res.returncode != 0:
        text = (res.stderr or res.stdout).strip()
        first = next((ln for ln in text.splitlines() if "error" in ln.lower()), text.splitlines()[0] if text else "")
        raise BuildError(f"{what} failed: {first}\n{text}")
    return res  # type: ignore[no-any-return]


def vmlinux_header(out: Path) -> Path:
    """The kernel's types as a C header (``bpftool btf dump``), made once per folder."""
    h = out / "vmlinux.h"
    if not h.exists():
        res = _run(["bpftool", "btf", "dump", "file", str(VMLINUX_BTF), "format", "c"], "bpftool btf dump")
        h.write_text(res.stdout)
    return h


def compile_bpf(src: Path, cpu: str | None = None) -> Path:
    """``clang -O2 -g -target bpf``: the object bpftool registers (``cpu``: the BPF
    instruction set, e.g. v3 for atomic fetch-and-add)."""
    vmlinux_header(src.parent)
    obj = src.with_suffix(".o")
    isa = [] if cpu is None else [f"-mcpu={cpu}"]
    _run(["clang", "-O2", "-g", "-target", "bpf", *isa, "-I", str(src.parent), "-c", str(src), "-o", str(obj)],
         "clang -target bpf")
    return obj


def available() -> list[str]:
    """The congestion controls the kernel offers now."""
    return AVAILABLE.read_text().split()


def register(obj: Path) -> str:
    """Load and register (the kernel verifier runs here); bpftool's line."""
    res = _run(["bpftool", "struct_ops", "register", str(obj)], "bpftool struct_ops register (verifier)")
    return (res.stdout.strip() or res.stderr.strip()).splitlines()[-1]


def unregister(name: str) -> bool:
    """Unregister a congestion control registered from BPF; False if none was."""
    if name not in available():
        return False
    _run(["bpftool", "struct_ops", "unregister", "name", name], "bpftool struct_ops unregister")
    return True


@contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so that ``finally`` runs."""
    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextmanager
def signals_ignored() -> Iterator[None]:
    """A second Ctrl-C or SIGTERM must not cut a cleanup short."""
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def struct_ops() -> list[str]:
    """The names ``bpftool struct_ops show`` lists (programs still in the kernel)."""
    res = subprocess.run(["bpftool", "struct_ops", "show"], check=False, capture_output=True, text=True)
    return [w for line in res.stdout.splitlines() for w in line.split()[1:2]]


def wait_freed(names: list[str]) -> None:
    """Wait (at most :data:`LINGER_S`) until the kernel has freed these programs."""
    end = time.monotonic() + LINGER_S
    while names and time.monotonic() < end and any(n in struct_ops() for n in names):
        time.sleep(0.1)


@contextmanager
def claim(name: str) -> Iterator[None]:
    """Hold ``name`` for this process (see the module doc); raises
    :class:`NameHeld` if a live process holds it."""
    path = LOCKS / f"export-{name}.lock"
    while True:
        LOCKS.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            continue  # another process removed the empty folder just now
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise NameHeld(f"'{name}' is loaded by another ccmatic process (pid {holder})") from None
        if os.path.exists(path) and os.stat(path).st_ino == os.fstat(fd).st_ino:
            break
        os.close(fd)  # the holder before us removed this file: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.unlink(path)
        os.close(fd)
        with suppress(OSError):
            LOCKS.rmdir()  # the last one leaves no folder behind


def load(obj: Path, name: str, hold: Callable[[], None], say: Callable[[str], None]) -> None:
    """Register, run ``hold`` (wait, or a smoke test), then unregister, whatever
    happens; a stale registration of ``name`` is removed first, and a live one is
    left alone (:class:`NameHeld`)."""
    with _term_as_interrupt(), claim(name):
        if unregister(name):
            wait_freed([name])
            say(f"removed a stale registration of {name} (an earlier run did not unregister)")
        try:
            say(register(obj))
            if name not in available():
                raise BuildError(f"{name} was registered but the kernel does not list it")
            hold()
        finally:
            with signals_ignored():  # a second Ctrl-C or SIGTERM must not leave it registered
                gone = unregister(name)
                wait_freed([name])
            say(f"unregistered {name}" if gone else f"{name} was no longer registered")


def wait(seconds: float | None) -> None:
    """Hold the registration for ``seconds`` (None: until Ctrl-C or SIGTERM)."""
    end = None if seconds is None else time.monotonic() + seconds
    while end is None or time.monotonic() < end:
        time.sleep(0.2 if end is None else max(0.0, min(0.2, end - time.monotonic())))


def socket_state(netns: str, name: str) -> dict[str, object]:
    """What ``ss -tin`` shows of the busiest socket using congestion control ``name``
    in a namespace: its window (packets) and pacing rate, as the program set them."""
    res = _run(["ip", "netns", "exec", netns, "ss", "-tin"], "ss -tin")
    best: dict[str, object] = {}
    most = -1
    for line in res.stdout.splitlines():
        if f" {name} " not in f" {line.strip()} ":
            continue
        acked = re.search(r"bytes_acked:(\d+)", line)
        n = int(acked.group(1)) if acked else 0
        if n > most:
            most = n
            cwnd = re.search(r"\bcwnd:(\d+)", line)
            pacing = re.search(r"pacing_rate (\S+)", line)
            best = {"ss_cwnd": int(cwnd.group(1)) if cwnd else None, "ss_pacing_rate": pacing.group(1) if pacing else None}
    return best


def smoke(name: str, seconds: int = 5) -> dict[str, object]:
    """An iperf3 transfer of ``seconds`` through a veth pair between two network
    namespaces with congestion control ``name``; the namespaces are removed after."""
    if shutil.which("iperf3") is None:
        raise BuildError("iperf3 is not installed (apt-get install iperf3)")
    tag = f"ccm{os.getpid()}"
    srv, cli = f"{tag}s", f"{tag}c"
    ip = ["ip"]
    try:
        for ns in (srv, cli):
            _run([*ip, "netns", "add", ns], "ip netns add")
        _run([*ip, "link", "add", f"{tag}a", "netns", srv, "type", "veth", "peer", "name", f"{tag}b", "netns", cli],
             "ip link add veth")
        for ns, dev, addr in ((srv, f"{tag}a", "10.199.0.1/24"), (cli, f"{tag}b", "10.199.0.2/24")):
            _run([*ip, "-n", ns, "addr", "add", addr, "dev", dev], "ip addr add")
            _run([*ip, "-n", ns, "link", "set", dev, "up"], "ip link set up")
            _run([*ip, "-n", ns, "link", "set", "lo", "up"], "ip link set up")
        server = subprocess.Popen([*ip, "netns", "exec", srv, "iperf3", "-s", "-1"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            client = subprocess.Popen([*ip, "netns", "exec", cli, "iperf3", "-c", "10.199.0.1", "-t", str(seconds),
                                       "-C", name, "-J"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(seconds / 2)
            seen = socket_state(cli, name)
            stdout, stderr = client.communicate(timeout=seconds + 30)
            if client.returncode != 0:
                raise BuildError(f"iperf3 failed: {(stderr or stdout).strip().splitlines()[-1:]}")
        finally:
            server.kill()
            server.wait()
        end = json.loads(stdout)["end"]
        return {"congestion": end.get("sender_tcp_congestion"), "bits_per_second": end["sum_sent"]["bits_per_second"],
                "retransmits": end["sum_sent"].get("retransmits"), "seconds": seconds, **seen}
    finally:
        for ns in (srv, cli):
            subprocess.run([*ip, "netns", "del", ns], check=False, capture_output=True)
