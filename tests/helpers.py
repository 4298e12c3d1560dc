"""Shared test helpers: the ``ccmatic`` command run in-process, one-property
queries, and proved/refuted assertions that explain what the solver found instead."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import z3

from ccmatic.cli.main import main
from ccmatic.core.errors import Loc
from ccmatic.core.model import ModelConfig
from ccmatic.core.options import RunOptions
from ccmatic.core.results import Counterexample, Proved, Unknown, result_word
from ccmatic.core.scenario import Initial, Objective, Query, Scenario
from ccmatic.core.source import Source
from ccmatic.engine import session
from ccmatic.engine.verify import VerifyReport, verify
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query
from ccmatic.io.report import trace_table

ROOT = Path(__file__).resolve().parent.parent


def wait_until(cond: Callable[[], bool], seconds: float, poll_s: float = 0.02) -> bool:
    """Poll ``cond`` until it holds or ``seconds`` have passed; whether it holds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(poll_s)
    return cond()


def run_cli(*argv: object) -> tuple[int, str, str]:
    """``ccmatic ARGV`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def load_file_query(path: Path) -> Query:
    """A query file of the checkout, read with the default library."""
    lib = Library.default()
    return load_query(path, lib, load_objectives(lib))


def assert_golden(path: Path, opts: RunOptions) -> None:
    """The query file gives its declared verdict (``expect``), and a proof its horizon."""
    q = load_file_query(path)
    assert q.expect is not None, f"{path.name} declares no expected result"
    rep = verify(q, opts)
    got = result_word(q.question, rep.verdict)  # an exists question's expect is witness / no_witness
    assert got == q.expect, f"{path.name}: got {got}, expected {q.expect}"
    if isinstance(rep.outcome, Proved):
        assert rep.outcome.T == q.T


def query(model: ModelConfig, T: int, prop: str, assume: tuple[str, ...] = (), cca: str = "any_sender",
          periodic: int | None = None, initial: Initial | None = None, periodic_all: bool = False) -> Query:
    """A query checking one expression ``prop`` for a CCA from templates/."""
    path = ROOT / "templates" / f"{cca}.cca"
    scenario = Scenario("test", "<test>", str(path), path.read_text(), model, T, 0, periodic,
                        initial if initial is not None else Initial(),
                        tuple(Source("<test>", a) for a in assume), periodic_all=periodic_all)
    return Query(scenario, (Objective("expr", {}, Loc("<test>"), Source("<test>", prop), "property"),))


def check(model: ModelConfig, T: int, prop: str, **kw: object) -> VerifyReport:
    return verify(query(model, T, prop, **kw), RunOptions(timeout_s=60, seed=0))  # type: ignore[arg-type]


def explain(rep: VerifyReport) -> str:
    o = rep.outcome
    if isinstance(o, Counterexample):
        return "counterexample:\n" + trace_table(o.trace)
    if isinstance(o, Unknown):
        return f"unknown: {o.reason}"
    return rep.verdict


def proved(model: ModelConfig, T: int, prop: str, **kw: object) -> None:
    rep = check(model, T, prop, **kw)
    assert rep.verdict == "proved", f"{model.name} {model.buffer.mode} T={T}: expected '{prop}' proved, got {explain(rep)}"


def refuted(model: ModelConfig, T: int, prop: str, **kw: object) -> Counterexample:
    rep = check(model, T, prop, **kw)
    assert isinstance(rep.outcome, Counterexample), (
        f"{model.name} {model.buffer.mode} T={T}: expected a counterexample to '{prop}', got {explain(rep)}")
    return rep.outcome


def solver_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks limited to under a second also get Z3's resource limit of 1 (``rlimit``),
    so they answer unknown on any machine, however fast: a test of what happens when
    the solver does not finish does not depend on a 1 ms wall-clock limit."""
    real = session.set_timeout

    def limited(s: z3.Solver, timeout_s: float | None) -> None:
        real(s, timeout_s)
        if timeout_s is not None and timeout_s < 1:
            s.set("rlimit", 1)
    monkeypatch.setattr(session, "set_timeout", limited)
