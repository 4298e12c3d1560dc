"""How fast Ctrl-C (SIGINT) and SIGTERM stop a long command.

    python benchmarks/signal_latency.py [--only NAME,...] [--repeat N]

The goal is to stop within a second (ccmatic/engine/interrupt.py: Z3 is interrupted
at once, the partial result is written, exit code 3).  How fast that is depends on
the machine, so the tests (tests/test_checkpoint.py) check only *that* every command
stops, with exit code 3, "interrupted" and no traceback, within a generous hang
limit; the seconds are measured here.  Each row: the command, the signal, the
seconds from the signal to the exit (the median of ``--repeat`` runs) and whether
that meets the goal.

The signal is sent once the command is running (:func:`run_and_signal`): after the
command's own "now checking" line where it prints one, and only once it handles
SIGTERM (Linux: ``/proc/PID/status``), never during start-up.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 1.0
HANG_S = 300.0  # a command that does not reach its ready point, or does not stop, within this fails


@dataclass(frozen=True)
class Case:
    """A long command (``{tmp}`` in an argument is replaced by a scratch folder), the
    stderr text after which it is busy solving (None: once it handles signals), and
    seconds to wait after that (so that the signal is likely to find the solver busy;
    the expected outcome is the same whenever it comes)."""

    argv: tuple[str, ...]
    ready: str | None
    settle_s: float = 0.0


CASES: dict[str, Case] = {
    "verify": Case(("verify", "cc_probe_fast-ccac-small"), "verifying "),
    "prove": Case(("prove", "cc_qdel-ccac", "--jobs", "2"), "checking "),
    "search": Case(("search", "cc_qdel-ccac", "--lemma", "B.4.7", "--constant", "util"), None, 3.0),
    "evaluate": Case(("evaluate", "reno", "--jobs", "2", "--out", "{tmp}/ev"), None, 3.0),
    # the simulator's compiled loop (100 flows at 10 Gbit/s: mostly packets, little Python)
    "simulate": Case(("simulate", "reno", "--flows", "100", "--C", "10000", "--R", "100", "--duration", "30"), None, 3.0),
    "synth": Case(("synth", str(ROOT / "queries" / "table4_1" / "G6.toml"), "--checkpoint", "{tmp}/ck.json",
                   "--json"), None),
}


@dataclass(frozen=True)
class Stopped:
    code: int
    out: str
    err: str
    seconds: float  # from the signal to the exit


def handles_sigterm(pid: int) -> bool:
    """Whether the process has its own SIGTERM handler yet (ccmatic installs it when the
    command starts); True where ``/proc`` cannot tell."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return True
    caught = next((ln.split()[1] for ln in lines if ln.startswith("SigCgt:")), None)
    return caught is None or bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)


def file_exists(path: Path) -> Callable[[str], bool]:
    """A ``ready`` test: the command has written ``path`` (e.g. synth's checkpoint)."""
    return lambda _err: path.exists()


def _drain(stream: object, into: list[str]) -> threading.Thread:
    def read() -> None:
        into.extend(stream)  # type: ignore[call-overload]
    th = threading.Thread(target=read, daemon=True)
    th.start()
    return th


def run_and_signal(argv: list[str], sig: int, ready: Callable[[str], bool] | str | None = None,
                   settle_s: float = 0.0, cwd: Path = ROOT, hang_s: float = HANG_S) -> Stopped:
    """Run ``ccmatic ARGV``; once it handles signals and ``ready`` holds (a text its
    stderr shows, or a test of that stderr), wait ``settle_s`` more, send ``sig`` and
    wait for the exit.  Raises AssertionError if the command ends before the signal,
    or hangs."""
    test = (lambda _err: True) if ready is None else (lambda err: ready in err) if isinstance(ready, str) else ready
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "ccmatic.cli.main", *argv], cwd=cwd, text=True, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out: list[str] = []
    err: list[str] = []
    threads = [_drain(p.stdout, out), _drain(p.stderr, err)]
    start = time.monotonic()
    try:
        while not (handles_sigterm(p.pid) and test("".join(err))):
            assert p.poll() is None, f"finished before the signal (exit {p.returncode}): {''.join(err)[-2000:]}"
            assert time.monotonic() - start < hang_s, f"not ready after {hang_s} s"
            time.sleep(0.05)
        time.sleep(settle_s)
        assert p.poll() is None, f"finished before the signal (exit {p.returncode}): {''.join(err)[-2000:]}"
        t0 = time.monotonic()
        p.send_signal(sig)
        code = p.wait(timeout=hang_s)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    for th in threads:
        th.join(timeout=10)
    return Stopped(code, "".join(out), "".join(err), took)


def measure(name: str, sig: int, repeat: int) -> list[float]:
    case = CASES[name]
    times = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            argv = [a.replace("{tmp}", tmp) for a in case.argv]
            ready: Callable[[str], bool] | str | None = case.ready
            if name == "synth":  # busy once the first candidate is checked (the checkpoint is written)
                ready = file_exists(Path(tmp) / "ck.json")
            r = run_and_signal(argv, sig, ready, case.settle_s)
            if r.code != 3:
                print(f"  {name}: exit {r.code}, expected 3: {r.err[-500:]}", file=sys.stderr)
            times.append(r.seconds)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated: " + ",".join(CASES))
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(CASES)
    print(f"{'command':10} {'signal':8} {'seconds':>8}  goal {GOAL_S:g} s")
    for name in names:
        for sig in (signal.SIGINT, signal.SIGTERM):
            s = statistics.median(measure(name, sig, args.repeat))
            print(f"{name:10} {signal.Signals(sig).name:8} {s:8.2f}  {'ok' if s <= GOAL_S else 'SLOW'}", flush=True)


if __name__ == "__main__":
    main()
