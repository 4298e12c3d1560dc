"""Stopping a long run on Ctrl-C (SIGINT) or SIGTERM, within a second.

Python runs signal handlers only between bytecodes, never inside a long Z3 call.
:class:`Interrupts` therefore installs two things: a Python handler (sets the flag
and, unless the run polls the flag itself, raises :class:`KeyboardInterrupt` at the
next bytecode), and a watcher thread woken by the C-level wakeup fd that interrupts
Z3 at once, so that a check in progress returns ``unknown`` in milliseconds.  Z3's
own Ctrl-C handling is off (:func:`ccmatic.engine.session.make_solver`).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Self

import z3

from ccmatic.engine.session import clear_interrupt

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """``with Interrupts() as stop:``; ``stop()`` tells whether a signal came.

    ``cooperative=True``: only set the flag (and interrupt Z3); the run polls
    ``stop()`` and ends cleanly (CEGIS keeps its solutions).  Otherwise the signal
    also raises :class:`KeyboardInterrupt`, but never inside Z3's Python API, a
    destructor (an exception there leaves half-built objects, or is printed as
    "Exception ignored" and dropped) or a :func:`critical` section: the signal is then
    sent again 10 ms later, while
    the watcher has already interrupted Z3.  Outside the main thread this is a no-op
    (signals are delivered to the main thread only)."""

    def __init__(self, cooperative: bool = False) -> None:
        self.cooperative = cooperative
        self.signum: int | None = None
        self._old: dict[int, object] = {}
        self._old_fd: int | None = None
        self._pipe: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # the signal is sent again only while the handlers are in place

    def __call__(self) -> bool:
        return self.signum is not None

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self._stop(signum)
        if self.cooperative:
            return
        if _unsafe(frame):
            threading.Timer(0.01, self._again, (signum,)).start()
            return
        raise KeyboardInterrupt

    def _again(self, signum: int) -> None:
        with self._lock:
            if self._pipe is not None:
                os.kill(os.getpid(), signum)

    def _stop(self, signum: int) -> None:
        if self.signum is None:
            self.signum = signum
        try:
            z3.main_ctx().interrupt()
        except z3.Z3Exception:  # the context's error state, set by a call the interrupt canceled
            pass

    def _watch(self, r: int) -> None:
        while True:
            try:
                data = os.read(r, 1)
            except OSError:
                return
            if not data:
                return
            if data[0] in SIGNALS:
                self._stop(data[0])

    def __enter__(self) -> Self:
        if threading.current_thread() is not threading.main_thread():
            return self
        for s in SIGNALS:
            self._old[s] = signal.signal(s, self._handler)
        r, w = os.pipe()
        os.set_blocking(w, False)
        self._pipe = (r, w)
        self._old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, args=(r,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, tp: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._pipe is None:
            return
        with self._lock:
            self._restore()

    def _restore(self) -> None:
        assert self._pipe is not None
        signal.set_wakeup_fd(self._old_fd if self._old_fd is not None else -1)
        for s, h in self._old.items():
            signal.signal(s, h)  # type: ignore[arg-type]
        r, w = self._pipe
        os.close(w)
        if self._thread is not None:
            self._thread.join(timeout=1)
        os.close(r)
        self._pipe = None
        if self.signum is not None:
            clear_interrupt()  # a late interrupt must not cancel the caller's next Z3 call

    def describe(self) -> str:
        return "interrupted" if self.signum in (None, signal.SIGINT) else f"interrupted ({signal.Signals(self.signum).name})"


Z3_DIR = os.path.dirname(z3.__file__) + os.sep


_critical_depth = 0


@contextmanager
def critical() -> Iterator[None]:
    """A section of the main thread that a signal must not cut short, such as starting
    a worker process: a spawned child whose parent stops before handing it its task
    dies with a traceback of its own.  :class:`Interrupts` raises
    :class:`KeyboardInterrupt` after the section instead (Z3 is interrupted at once)."""
    global _critical_depth
    _critical_depth += 1
    try:
        yield
    finally:
        _critical_depth -= 1


def _unsafe(frame: FrameType | None) -> bool:
    """Whether the interrupted code runs in Z3's Python API, in a destructor or in a
    :func:`critical` section."""
    if _critical_depth > 0:
        return True
    while frame is not None:
        if frame.f_code.co_name == "__del__" or frame.f_code.co_filename.startswith(Z3_DIR):
            return True
        frame = frame.f_back
    return False
