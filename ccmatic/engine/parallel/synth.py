"""Parallel synthesis: CEGIS per cube of the hole space, sharing counterexamples.

* **Cubes.** The hole space is split into disjoint cubes, each hole restricted to a
  subset of its domain.  Only holes that multiply trace terms are split (when the
  template has any): a solution blocks every candidate that differs from it only in
  the coefficients of constant terms (§4.2.1), and splitting on the other holes
  keeps each such class inside one cube, so the union of the cubes' solutions is
  the sequential run's set of classes.
* **One CEGIS loop per cube** (:meth:`Synthesizer.restrict`): a worker keeps one
  synthesizer per query and runs the cubes it is given one after another in a
  pushed scope of its generator.
* **Shared counterexamples.** A counterexample rules out every candidate that makes
  the same choices on its trace (Eq. B.1.4), in every cube.  Before each generator
  step a worker publishes its new counterexamples to the executor's pool and prunes
  with the ones other workers published.
* **Load balance.** There are several cubes per worker, handed out as workers free
  up; a cube's task stops after ``slice_s`` seconds and the rest of it is split in
  two (re-splitting) and queued again, with the solutions and unknown candidates
  found so far blocked.  No work is lost: its counterexamples are in the pool.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.core.options import SynthOptions
from ccmatic.core.results import SynthStats, SynthStatus
from ccmatic.core.scenario import Query
from ccmatic.engine.cegis import Solution, Synthesizer, SynthResult
from ccmatic.engine.parallel.executor import CexPool, Executor
from ccmatic.engine.templates import Candidate, hole_domains
from ccmatic.spec.cca import load_cca
from ccmatic.spec.template_fill import fill_template, variable_term_holes

Cube = dict[str, tuple[Fraction, ...]]


@dataclass(frozen=True)
class CubeTask:
    """One cube for a worker.  The query travels loaded and the template as text,
    so that workers on other machines need none of the user's files."""

    query: Query
    opts: SynthOptions
    cube: Cube
    solutions: tuple[Candidate, ...]
    unknown: tuple[Candidate, ...]
    pool: CexPool | None
    run_id: str
    slice_s: float | None


@dataclass
class ParallelStats:
    cubes: int = 0               # tasks run (initial cubes and re-split parts)
    resplits: int = 0
    workers: int = 0
    shared_out: int = 0          # counterexamples published
    shared_in: int = 0           # counterexamples applied from other workers
    exchange_s: float = 0.0      # time in publishing, pulling and pruning with them
    task_wall_s: list[float] = field(default_factory=list)


def split_cube(cube: Cube, order: list[str]) -> list[Cube]:
    """Split the first hole (in ``order``) with more than one value in two; [] if the
    cube is a single point in those holes."""
    for h in order:
        vals = cube[h]
        if len(vals) > 1:
            mid = len(vals) // 2
            return [dict(cube, **{h: vals[:mid]}), dict(cube, **{h: vals[mid:]})]
    return []


def initial_cubes(domains: dict[str, tuple[Fraction, ...]], order: list[str], target: int) -> list[Cube]:
    """Split the largest cube until there are ``target`` cubes (or no more splits)."""
    cubes: list[Cube] = [{h: domains[h] for h in order}]
    while len(cubes) < target:
        cubes.sort(key=_size, reverse=True)
        parts = split_cube(cubes[0], order)
        if not parts:
            break
        cubes = parts + cubes[1:]
    return cubes


def _size(c: Cube) -> int:
    n = 1
    for v in c.values():
        n *= len(v)
    return n


# -- the worker side ---------------------------------------------------------------------------------

class _WorkerState:
    """A worker process's synthesizer for the current run (kept across its cubes)."""

    def __init__(self, key: tuple[Any, ...], syn: Synthesizer) -> None:
        self.key = key
        self.syn = syn
        self.published = 0
        self.cursor = 0


@dataclass(frozen=True)
class CubeResult:
    """What a worker reports for one cube: how its search ended, the solutions and
    undecided candidates it found (hole values as exact rational strings), its
    counters, and its exchange of counterexamples with the other workers."""

    status: SynthStatus
    solutions: tuple[dict[str, str], ...]
    unknown: tuple[dict[str, str], ...]
    stats: dict[str, Any]
    wall_s: float
    shared_out: int
    shared_in: int
    exchange_s: float
    worker: str


_STATE: dict[str, _WorkerState] = {}  # per worker process: the one current run


def _state(task: CubeTask) -> _WorkerState:
    key = (task.run_id,)
    st = _STATE.get("run")
    if st is None or st.key != key:
        prog = load_cca(task.query.scenario.cca_path, task.query.scenario.cca_text)
        st = _WorkerState(key, Synthesizer(task.query, task.opts, prog))
        _STATE["run"] = st
    return st


def run_cube(task: CubeTask) -> CubeResult:
    """Worker: CEGIS on one cube for at most ``slice_s`` seconds."""
    t0 = time.perf_counter()
    st = _state(task)
    syn = st.syn
    me = f"{socket.gethostname()}:{os.getpid()}"
    xs = {"out": 0, "in": 0, "s": 0.0}

    def exchange(s: Synthesizer) -> None:
        if task.pool is None:
            return
        e0 = time.perf_counter()
        new = s.cex_log[st.published:]
        task.pool.push(me, new)
        st.published = len(s.cex_log)
        xs["out"] += len(new)
        items, st.cursor = task.pool.pull(st.cursor)
        for src, cex in items:
            if src != me:
                s.prune_recorded(cex)
                xs["in"] += 1
        xs["s"] += time.perf_counter() - e0

    deadline = None if task.slice_s is None else time.perf_counter() + task.slice_s
    syn.restrict(task.cube, list(task.solutions), list(task.unknown))
    try:
        res = syn.run(should_stop=(lambda: deadline is not None and time.perf_counter() > deadline),
                      exchange=exchange)
        exchange(syn)  # publish the last ones
    finally:
        syn.unrestrict()
    return CubeResult(res.status, tuple({k: str(v) for k, v in s.holes.items()} for s in res.solutions),
                      tuple({k: str(v) for k, v in c.items()} for c in res.unknown_candidates),
                      dict(res.stats.__dict__), time.perf_counter() - t0,
                      int(xs["out"]), int(xs["in"]), xs["s"], me)


# -- the driver ------------------------------------------------------------------------------------

@dataclass
class ParallelResult:
    result: SynthResult
    parallel: ParallelStats


def synthesize_parallel(query: Query, opts: SynthOptions, ex: Executor,
                        cubes_per_worker: int = 4, slice_s: float | None = 30.0, share: bool = True,
                        progress: Callable[[int, int, int], None] | None = None) -> ParallelResult:
    """Every solution of ``query`` (a template), with cubes run on ``ex``.
    ``progress(done cubes, queued + running, solutions)`` after each task."""
    t0 = time.perf_counter()
    prog = load_cca(query.scenario.cca_path, query.scenario.cca_text)
    domains = hole_domains(prog, query)
    order = [h for h in variable_term_holes(prog) if h in domains] or list(domains)
    order.sort(key=lambda h: -len(domains[h]))
    cubes = initial_cubes(domains, order, max(1, cubes_per_worker * ex.jobs))
    pool = ex.cex_pool() if share else None
    run_id = uuid.uuid4().hex
    # every core runs a cube already: no background re-verification
    opts = replace(opts, record_counterexamples=True, background_reverify=False)
    solutions: dict[tuple[tuple[str, Fraction], ...], Candidate] = {}
    unknown: list[Candidate] = []
    stats = SynthStats()
    pst = ParallelStats(workers=ex.jobs)
    queue: deque[Cube] = deque(cubes)
    running: dict[Any, Cube] = {}
    status: SynthStatus = "complete"
    done = 0
    workers: set[str] = set()
    try:
        while queue or running:
            left = None if opts.budget_s is None else opts.budget_s - (time.perf_counter() - t0)
            if left is not None and left <= 0:
                status = "timeout"
                queue.clear()
            while queue and len(running) < ex.jobs:
                cube = queue.popleft()
                sl = slice_s if left is None else (left if slice_s is None else min(slice_s, left))
                task = CubeTask(query, opts, cube, tuple(solutions.values()), tuple(unknown),
                                pool, run_id, sl)
                running[ex.submit(run_cube, task)] = cube
            if not running:
                break
            h, r = ex.wait_any(list(running))
            assert isinstance(r, CubeResult)
            cube = running.pop(h)
            done += 1
            pst.cubes += 1
            pst.shared_out += r.shared_out
            pst.shared_in += r.shared_in
            pst.exchange_s += r.exchange_s
            pst.task_wall_s.append(r.wall_s)
            workers.add(r.worker)
            for k, v in r.stats.items():
                setattr(stats, k, getattr(stats, k) + v)
            for s in r.solutions:
                cand = {k: Fraction(v) for k, v in s.items()}
                solutions[tuple(sorted(cand.items()))] = cand
            unknown.extend({k: Fraction(v) for k, v in c.items()} for c in r.unknown)
            if r.status != "complete":
                parts = split_cube(cube, order) or [cube]
                pst.resplits += len(parts) > 1
                queue.extend(parts)
            if progress is not None:
                progress(done, len(queue) + len(running), len(solutions))
    except KeyboardInterrupt:
        status = "interrupted"
    pst.workers = len(workers) or ex.jobs
    header = _header_fn(prog.path, query)
    sols = [Solution(c, fill_template(prog, c, header(c))) for c in sorted(solutions.values(), key=_order_key)]
    res = SynthResult(status, sols, stats, unknown, time.perf_counter() - t0)
    return ParallelResult(res, pst)


def _order_key(c: Candidate) -> tuple[tuple[str, Fraction], ...]:
    return tuple(sorted(c.items()))


def _header_fn(cca_path: str, q: Query) -> Callable[[Candidate], str]:
    def header(cand: Candidate) -> str:
        vals = ", ".join(f"?{h}={v}" for h, v in cand.items())
        return (f"synthesized by ccmatic from {Path(cca_path).name} for {q.name} "
                f"(model {q.model.name}, T={q.T})\nholes: {vals}")
    return header
