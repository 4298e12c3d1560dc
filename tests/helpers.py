"""Shared helpers for the model and belief tests: one-property queries and
proved/refuted assertions that explain what the solver found instead."""

from __future__ import annotations

from pathlib import Path

from ccmatic.config import Initial, ModelConfig, Objective, Query, RunOptions
from ccmatic.lang.source import Source
from ccmatic.report import trace_table
from ccmatic.verify import Counterexample, Unknown, VerifyReport, verify

ROOT = Path(__file__).resolve().parent.parent


def query(model: ModelConfig, T: int, prop: str, assume: tuple[str, ...] = (), cca: str = "any_sender",
          periodic: int | None = None, initial: Initial | None = None) -> Query:
    """A query checking one expression ``prop`` for a CCA from templates/."""
    return Query(
        path="<test>", name="test", description="", cca_path=str(ROOT / "templates" / f"{cca}.cca"),
        model=model, T=T, periodic=periodic, initial=initial if initial is not None else Initial(),
        assumptions=tuple(Source("<test>", a) for a in assume),
        objectives=(Objective("expr", {}, Source("<test>", prop), "property"),),
    )


def check(model: ModelConfig, T: int, prop: str, **kw: object) -> VerifyReport:
    return verify(query(model, T, prop, **kw), RunOptions(timeout_s=60, seed=0))  # type: ignore[arg-type]


def explain(rep: VerifyReport) -> str:
    o = rep.outcome
    if isinstance(o, Counterexample):
        return "counterexample:\n" + trace_table(o.trace)
    if isinstance(o, Unknown):
        return f"unknown: {o.reason}"
    return rep.result


def proved(model: ModelConfig, T: int, prop: str, **kw: object) -> None:
    rep = check(model, T, prop, **kw)
    assert rep.result == "proved", f"{model.name} {model.buffer.mode} T={T}: expected '{prop}' proved, got {explain(rep)}"


def refuted(model: ModelConfig, T: int, prop: str, **kw: object) -> Counterexample:
    rep = check(model, T, prop, **kw)
    assert isinstance(rep.outcome, Counterexample), (
        f"{model.name} {model.buffer.mode} T={T}: expected a counterexample to '{prop}', got {explain(rep)}")
    return rep.outcome
