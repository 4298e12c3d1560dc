"""Executors: where independent tasks run (issue 6).

One small interface, two implementations:

* :class:`LocalExecutor` — local processes (the default; one solver per worker
  process, spawned fresh so that no Z3 state is shared); ``jobs = 1`` runs tasks
  in this process;
* :class:`RayExecutor` — a Ray cluster (``--executor ray [--address ADDR]``; the
  optional extra ``pip install 'ccmatic[ray]'``).  Without an address it starts a
  local Ray instance with ``jobs`` CPUs.

Tasks are top-level functions of one picklable argument.  Both executors also
provide a :class:`CexPool`, the shared counterexample pool of parallel synthesis:
an append-only list every worker pushes to and reads from.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Protocol, TypeVar

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.limits import deep_recursion
from ccmatic.core.processes import dead_runs_folders
from ccmatic.engine.interrupt import critical

T = TypeVar("T")
R = TypeVar("R")

EXECUTORS = ("local", "ray")


class CexPool(Protocol):
    """Append-only shared list of (source, item) pairs."""

    def push(self, source: str, items: list[Any]) -> None: ...

    def pull(self, cursor: int) -> tuple[list[tuple[str, Any]], int]:
        """The entries from ``cursor`` on, and the new cursor."""
        ...


class Executor(Protocol):
    jobs: int
    kind: str

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        """Start ``fn(arg)``; returns a handle for :meth:`wait_any`."""
        ...

    def wait_any(self, handles: list[Any]) -> tuple[Any, Any]:
        """Wait for one of the handles: (handle, its result).  A task's exception
        is raised here."""
        ...

    def cex_pool(self) -> CexPool: ...

    def close(self) -> None: ...


def map_unordered(ex: Executor, fn: Callable[[T], R], args: Iterable[T]) -> Iterator[tuple[int, R]]:
    """Run ``fn`` over ``args`` with at most ``ex.jobs`` tasks in flight; yields
    (index, result) as tasks finish."""
    todo = list(enumerate(args))
    todo.reverse()
    running: dict[Any, int] = {}
    while todo or running:
        while todo and len(running) < max(1, ex.jobs):
            i, a = todo.pop()
            running[ex.submit(fn, a)] = i
        h, r = ex.wait_any(list(running))
        yield running.pop(h), r


# -- local -------------------------------------------------------------------------------------

class _ListPool:
    """A pool over a list (a plain one in-process, a manager proxy across processes)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def push(self, source: str, items: list[Any]) -> None:
        if items:
            self.store.extend([(source, it) for it in items])

    def pull(self, cursor: int) -> tuple[list[tuple[str, Any]], int]:
        new = list(self.store[cursor:])
        return new, cursor + len(new)


class _Inline:
    """A task run in this process when it is waited for (jobs = 1)."""

    def __init__(self, fn: Callable[[Any], Any], arg: Any) -> None:
        self.fn = fn
        self.arg = arg


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent (which stops them), so that a terminal's
    SIGINT to the whole process group does not print a traceback per worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    deep_recursion()


class LocalExecutor:
    kind = "local"

    def __init__(self, jobs: int, in_process: bool | None = None) -> None:
        """``in_process``: run tasks in this process when waited for (default: when
        ``jobs`` is 1; a background worker wants a process even then)."""
        self.jobs = max(1, jobs)
        self.in_process = self.jobs == 1 if in_process is None else in_process
        self._pool: ProcessPoolExecutor | None = None
        self._manager: Any = None
        self._futures: list[Future[Any]] = []

    def _procs(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_worker_init)
        return self._pool

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        if self.in_process:
            return _Inline(fn, arg)
        with critical():  # submit may spawn a worker: a signal must not cut the handshake
            f = self._procs().submit(fn, arg)
        self._futures = [x for x in self._futures if not x.done()] + [f]
        return f

    def wait_any(self, handles: list[Any]) -> tuple[Any, Any]:
        for h in handles:
            if isinstance(h, _Inline):
                return h, h.fn(h.arg)
        done, _ = wait(handles, return_when=FIRST_COMPLETED)
        h = next(iter(done))
        assert isinstance(h, Future)
        return h, h.result()

    def done(self, handle: Any) -> bool:
        """Whether waiting for ``handle`` would return at once."""
        return isinstance(handle, _Inline) or bool(handle.done())

    def cex_pool(self) -> CexPool:
        if self.in_process:
            return _ListPool([])
        with critical():
            if self._manager is None:
                self._manager = multiprocessing.get_context("spawn").Manager()
            return _ListPool(self._manager.list())

    def close(self) -> None:
        """Shut the workers down.  Tasks still running mean the caller stopped
        waiting (an interrupt, or an error): their workers are terminated at once
        rather than waited for."""
        if self._pool is not None:
            if any(not f.done() for f in self._futures):
                for proc in list(getattr(self._pool, "_processes", {}).values()):
                    proc.terminate()  # no public API before Python 3.14's terminate_workers()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._futures = []
        if self._manager is not None:
            self._manager.shutdown()
            self._manager = None


# -- Ray -----------------------------------------------------------------------------------------

def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SpecError(Loc("--executor"), "Ray is not installed",
                        "pip install 'ccmatic[ray]' (or use --executor local)") from None
    return ray


class _RayPoolActor:
    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []

    def push(self, source: str, items: list[Any]) -> None:
        self.items.extend((source, it) for it in items)

    def pull(self, cursor: int) -> tuple[list[tuple[str, Any]], int]:
        new = self.items[cursor:]
        return new, cursor + len(new)


class _RayPool:
    """Client side of the pool actor (picklable: it holds the actor handle)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def push(self, source: str, items: list[Any]) -> None:
        if items:
            _ray().get(self.actor.push.remote(source, items))

    def pull(self, cursor: int) -> tuple[list[tuple[str, Any]], int]:
        out: tuple[list[tuple[str, Any]], int] = _ray().get(self.actor.pull.remote(cursor))
        return out


#: a local Ray instance's root folder: ``ccmatic-ray-<pid>-<random>`` in the temp dir
RAY_DIR_PREFIX = "ccmatic-ray-"


def ray_temp_dir() -> str:
    """A fresh root folder for a local Ray instance's sessions (sockets, logs), which
    :meth:`RayExecutor.close` removes; first the folders of earlier runs whose process
    is gone (killed: Ray's agents outlive a killed driver), with the processes that
    still hold files in them, so none outlives the next run."""
    for folder in dead_runs_folders(RAY_DIR_PREFIX, "-"):
        for pid in _holders(folder):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(folder, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{RAY_DIR_PREFIX}{os.getpid()}-")


def _holders(folder: str) -> list[int]:
    """The processes with a file open under ``folder`` (from Linux's /proc; none
    where there is no /proc)."""
    inside, out = folder.rstrip("/") + "/", []
    for pid in (d for d in (os.listdir("/proc") if os.path.isdir("/proc") else []) if d.isdigit()):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith(inside) for fd in fds):
                out.append(int(pid))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return out


class RayExecutor:
    """Tasks as Ray tasks (one CPU each).  ``address``: an existing cluster
    ("auto", or "ray://host:10001"); None starts a local instance with ``jobs``
    CPUs, its sessions under a folder of its own (Ray's default is /tmp/ray, which it
    never empties), and stops it and removes the folder on close."""

    kind = "ray"

    def __init__(self, jobs: int, address: str | None = None) -> None:
        ray = _ray()
        self.ray = ray
        self._started = False
        self._temp_dir: str | None = None
        if not ray.is_initialized():
            try:
                quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
                if address:
                    ray.init(address=address, **quiet)
                else:
                    self._temp_dir = ray_temp_dir()
                    ray.init(num_cpus=max(1, jobs), _temp_dir=self._temp_dir, **quiet)
            except (ConnectionError, RuntimeError, ValueError) as e:
                self.close()
                raise SpecError(Loc("--address"), f"cannot connect to Ray: {e}",
                                "start a cluster ('ray start --head') or drop --address") from None
            self._started = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.jobs = max(1, jobs if jobs > 0 else cpus)
        self._remote: dict[Callable[[Any], Any], Any] = {}

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        rf = self._remote.get(fn)
        if rf is None:
            rf = self._remote[fn] = self.ray.remote(num_cpus=1)(fn)
        return rf.remote(arg)

    def wait_any(self, handles: list[Any]) -> tuple[Any, Any]:
        done, _ = self.ray.wait(handles, num_returns=1)
        h = done[0]
        try:
            return h, self.ray.get(h)
        except self.ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, BaseException):
                raise cause from None  # the task's own error (e.g. a one-line input error)
            raise

    def cex_pool(self) -> CexPool:
        actor = self.ray.remote(num_cpus=0)(_RayPoolActor).remote()
        return _RayPool(actor)

    def close(self) -> None:
        if self._started:
            self.ray.shutdown()
            self._started = False
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None


def make_executor(kind: str, jobs: int, address: str | None = None) -> Executor:
    if kind not in EXECUTORS:
        raise SpecError(Loc("--executor"), f"unknown executor {kind!r}", f"use one of {', '.join(EXECUTORS)}")
    if jobs < 1:
        raise SpecError(Loc("--jobs"), f"need at least one job, got {jobs}")
    if kind == "local":
        if address:
            raise SpecError(Loc("--address"), "--address is for --executor ray")
        return LocalExecutor(jobs)
    return RayExecutor(jobs, address)


def chosen_executor(kind: str, jobs: int, address: str | None = None) -> Executor | None:
    """The executor of ``--executor``/``--address``, or None for the default (local
    processes, which the caller starts as it needs them)."""
    if kind == "local" and not address:
        return None
    return make_executor(kind, jobs, address)
