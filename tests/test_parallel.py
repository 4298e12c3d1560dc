"""Parallel and distributed runs (ccmatic/engine/parallel): the local process executor and
Ray, for real — the Ray tests start a local Ray instance with 2 CPUs and stop it
(no mocks).  Every test runs once per executor.

* parallel synthesis (cubes, shared counterexamples, re-splitting) finds the
  sequential run's solutions on G1-T5 and G5-infinite;
* proof lemmas, constant-search grid points and `evaluate` grid runs are
  independent tasks with the same results on either executor.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from fractions import Fraction as F
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli as run

from ccmatic.core.options import SynthOptions
from ccmatic.core.scenario import Query
from ccmatic.engine.cegis import Synthesizer
from ccmatic.engine.parallel.executor import (
    Executor,
    LocalExecutor,
    RayExecutor,
    map_unordered,
    ray_temp_dir,
)
from ccmatic.engine.parallel.synth import initial_cubes, split_cube, synthesize_parallel
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query
from ccmatic.spec.cca import load_cca
from ccmatic.spec.template_fill import variable_term_holes

ROOT = Path(__file__).resolve().parent.parent
T41 = ROOT / "queries" / "table4_1"
PROOF = ROOT / "tests" / "data" / "proofs" / "const_rate-ideal.toml"


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    ray = pytest.importorskip("ray")  # installed with the 'test' extra; CI always has it
    root = ray_temp_dir()  # not Ray's default /tmp/ray, which it never empties
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR, _temp_dir=root)
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["local", "ray"])
def executor(request: pytest.FixtureRequest) -> Iterator[Executor]:
    if request.param == "ray":
        request.getfixturevalue("ray_instance")
        ex: Executor = RayExecutor(2)
    else:
        ex = LocalExecutor(2)
    try:
        yield ex
    finally:
        ex.close()




def load(query: str) -> Query:
    lib = Library.default()
    return load_query(T41 / f"{query}.toml", lib, load_objectives(lib))


def classes(query: str, sols: list[Any]) -> list[tuple[tuple[str, F], ...]]:
    """Solutions up to the coefficients of constant terms (each class is reported once)."""
    q = load(query)
    vh = [h for h in variable_term_holes(load_cca(q.scenario.cca_path, q.scenario.cca_text))]
    return sorted(tuple(sorted((h, s.holes[h]) for h in vh if h in s.holes)) for s in sols)


SEQUENTIAL: dict[str, list[Any]] = {}


def sequential(query: str) -> list[Any]:
    if query not in SEQUENTIAL:
        q = load(query)
        res = Synthesizer(q, SynthOptions()).run()
        assert res.status == "complete" and len(res.solutions) == q.expect_solutions
        SEQUENTIAL[query] = res.solutions
    return SEQUENTIAL[query]


# -- synthesis ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", ["G1-T5", "G5-infinite"])
def test_parallel_synthesis_finds_the_sequential_solutions(executor: Executor, query: str) -> None:
    q = load(query)
    pr = synthesize_parallel(q, SynthOptions(), executor)
    assert pr.result.status == "complete"
    assert len(pr.result.solutions) == len(sequential(query))
    assert classes(query, pr.result.solutions) == classes(query, sequential(query))
    ps = pr.parallel
    assert ps.cubes >= 2 * executor.jobs
    # counterexamples travel between the workers
    assert ps.shared_out > 0 and ps.shared_in > 0


def test_resplitting_and_no_sharing_keep_the_solutions(executor: Executor) -> None:
    """A tiny time slice forces cubes to stop and be split again; without sharing
    no counterexample crosses workers.  Either way: the sequential solutions."""
    q = load("G1-T5")
    pr = synthesize_parallel(q, SynthOptions(), executor, cubes_per_worker=1, slice_s=0.05)
    assert pr.parallel.resplits > 0
    assert classes("G1-T5", pr.result.solutions) == classes("G1-T5", sequential("G1-T5"))
    alone = synthesize_parallel(q, SynthOptions(), executor, share=False)
    assert alone.parallel.shared_in == 0 and alone.parallel.shared_out == 0
    assert classes("G1-T5", alone.result.solutions) == classes("G1-T5", sequential("G1-T5"))


def test_cubes_are_disjoint_and_cover_the_space() -> None:
    doms = {"a": (F(0), F(1), F(2)), "b": (F(-1), F(1)), "c": (F(5),)}
    cubes = initial_cubes(doms, ["a", "b", "c"], 5)
    points = [(a, b, c) for cu in cubes for a in cu["a"] for b in cu["b"] for c in cu["c"]]
    assert len(points) == len(set(points)) == 6
    assert split_cube({"a": (F(0),), "b": (F(1),)}, ["a", "b"]) == []


# -- independent tasks ----------------------------------------------------------------------------------

def test_map_unordered_returns_every_result(executor: Executor) -> None:
    from ccmatic.io.sim_args import (
        check_flows,  # a library function: Ray workers import it by name
    )

    got = dict(map_unordered(executor, check_flows, [3, 1, 4, 1, 5]))
    assert got == {0: 3, 1: 1, 2: 4, 3: 1, 4: 5}


@pytest.mark.parametrize(("setting", "want"), [("qb=6/5", "proved"), ("qb=119/100", "counterexample")])
def test_proof_lemmas_on_either_executor(executor: Executor, setting: str, want: str) -> None:
    from ccmatic.core.options import RunOptions
    from ccmatic.engine.proof.prove import prove
    from ccmatic.io.proofs import load_proof

    lib = Library.default()
    proof = load_proof(PROOF, lib)
    k, v = setting.split("=")
    proof = proof.with_values({k: F(v)})
    rep = prove(proof, RunOptions(60.0, 0), 2, executor=executor)
    assert rep.verdict == want
    lem = next(x for x in rep.lemmas if x.name == "one_step")
    assert lem.verdict == want and (lem.trace is not None) == (want == "counterexample")


def test_search_grid_on_either_executor(executor: Executor) -> None:
    args = ["search", PROOF, "--lemma", "one_step", "--constant", "qb", "--grid", "1,119/100,6/5,2", "--json"]
    code, out, _ = run(*args, "--jobs", "1")
    seq = json.loads(out)
    code2, out2, _ = run(*args, "--jobs", "2", "--executor", executor.kind)
    par = json.loads(out2)
    assert code == code2 == 0
    assert (seq["proved"], seq["counterexample"]) == (par["proved"], par["counterexample"]) == ("6/5", "119/100")


def test_evaluate_grid_on_either_executor(executor: Executor, tmp_path: Path) -> None:
    from ccmatic.sim.grid import Task, run_task

    def evaluate(tasks: list[Task], ex: Executor) -> list[dict[str, Any]]:
        """Every task on the executor; rows in task order (the evaluate command's loop)."""
        rows = dict(map_unordered(ex, run_task, tasks))
        return [rows[i] for i in range(len(tasks))]

    cca = ROOT / "templates" / "reno.cca"
    tasks = [Task(str(cca), "reno", "cbr_delay", 24, 20, F(b), 3, 1, 0, cca.read_text()) for b in ("1/2", "2")]
    rows = evaluate(tasks, executor)
    here = evaluate(tasks, LocalExecutor(1))
    assert [r["metrics"] for r in rows] == [r["metrics"] for r in here]
    assert [r["buffer_bdp"] for r in rows] == ["1/2", "2"]


# -- the command line -----------------------------------------------------------------------------------

def test_synth_jobs_reports_the_parallel_run() -> None:
    code, out, _ = run("synth", T41 / "G5-infinite.toml", "--jobs", "2", "--json")
    d = json.loads(out)
    assert code == 0 and d["status"] == "complete" and len(d["solutions"]) == 48
    assert d["parallel"]["executor"] == "local" and d["parallel"]["cubes"] >= 4


@pytest.mark.parametrize(("extra", "flag"), [
    (("--jobs", "2", "--checkpoint", "x.json"), "--checkpoint"),
    (("--jobs", "0"), "--jobs"),
    (("--executor", "nope", "--jobs", "2"), "--executor"),
    (("--jobs", "2", "--address", "auto"), "--address"),
])
def test_synth_parallel_bad_input(extra: tuple[str, ...], flag: str) -> None:
    code, _out, err = run("synth", T41 / "G1-T5.toml", *extra)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(flag) and "Traceback" not in err
