"""Help, README and behaviour agree (issue 25, deliverable 8): each corrected
behaviour, with the exact line printed and the exit code."""

from __future__ import annotations

import importlib
import json
import os
import re
import signal
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run_cli

from ccmatic.core.limits import MAX_HOLE_VALUES
from ccmatic.spec.cca import load_cca


@pytest.mark.parametrize(("argv", "line"), [
    (("simulate", "aimd", "--R", "0.04"),
     "--R: error: 0.04 ms is less than 1 ms: --R is in milliseconds (hint: --R 40 for 40 ms)"),
    (("simulate", "aimd", "--R", "20,0.04", "--flows", "2"),
     "--R: error: 0.04 ms is less than 1 ms: --R is in milliseconds (hint: --R 40 for 40 ms)"),
    (("simulate", "aimd", "--model", "ack_agg", "--D", "0.01"),
     "--D: error: 0.01 ms is less than 1 ms: --D is in milliseconds (hint: --D 10 for 10 ms)"),
    (("contract", "aimd", "--R", "0.04"),
     "--R: error: 0.04 ms is less than 1 ms: --R is in milliseconds (hint: --R 40 for 40 ms)"),
    (("evaluate", "aimd", "--R", "0.04", "--out", "unused"),
     "--R: error: 0.04 ms is less than 1 ms: --R is in milliseconds (hint: --R 40 for 40 ms)"),
])
def test_delays_given_in_seconds_are_named(argv: tuple[str, ...], line: str) -> None:
    """A delay under 1 ms is seconds written for milliseconds: said so, not blamed on the buffer."""
    assert run_cli(*argv) == (2, "", line + "\n")


def test_zero_jitter_is_still_accepted() -> None:
    """--D 0 (no jitter) is not taken for seconds."""
    code, out, err = run_cli("simulate", "aimd", "--model", "ack_agg", "--D", "0", "--duration", "1")
    assert code == 0, err
    assert "D=0 ms" in out


def test_prove_announces_what_it_checks_and_reports_each_verdict_once() -> None:
    """aimd-ccac has 3 lemmas and [initial] conditions: the announcement counts the
    '[initial] holds again' check too; each verdict is on stdout once, stderr has
    progress lines without verdicts."""
    code, out, err = run_cli("prove", "aimd-ccac", "--jobs", "1")
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == "checking aimd-ccac: 3 lemmas and '[initial] holds again' at T=10, 1 job(s) ..."
    assert len(lines) == 5 and lines[-1].endswith(", 0 to go")
    assert not any(v in err for v in ("proved", "COUNTEREXAMPLE", "UNKNOWN"))
    for name in ("shrink", "stay", "bounded", "[initial] holds again"):
        assert sum(ln.strip().startswith(f"lemma {name} ") for ln in out.splitlines()) == 1


def test_search_prints_each_probe_verdict_once() -> None:
    """search: the verdict of each probe is on stdout only; stderr counts the probes."""
    code, out, err = run_cli("search", "aimd-ccac", "--lemma", "shrink", "--constant", "wmax", "--grid", "2,3")
    assert code == 0, err
    shown = [re.fullmatch(r"  probe (\d): wmax = (\d) checked \(\d+\.\ds\)", ln) for ln in err.splitlines()]
    assert all(shown) and sorted((m[1], m[2]) for m in shown if m) in ([("1", "2"), ("2", "3")], [("1", "3"), ("2", "2")])
    assert "counterexample" not in err and "proved" not in err
    verdicts = {ln.split("(")[1].split(")")[0]: ln.split(":")[1].split()[0]
                for ln in out.splitlines() if ln.startswith("  wmax =")}
    assert verdicts == {"2": "counterexample", "3": "proved"}


def test_evaluate_says_which_bounds_it_checked_or_why_none(tmp_path: Path) -> None:
    """evaluate names, per CCA, the proved bounds it checked, or why none: no proof
    (aimd), or the runs are not on the proof's link (cc_probe_slow off cbr_delay)."""
    code, out, err = run_cli("evaluate", "aimd", "cc_probe_slow", "--C", "24", "--R", "40", "--buffer", "2",
                             "--duration", "1", "--jobs", "1", "--model", "ack_agg", "--out", tmp_path)
    assert code == 0, err
    assert ("  proved bounds of aimd: none (evaluate checks the steady-state bounds of cc_qdel (proof cc_qdel-ccac) "
            "and cc_probe_slow (proof cc_probe_slow-cbrdelay))\n") in out
    slow = next(ln for ln in out.splitlines() if ln.startswith("  proved bounds of cc_probe_slow ("))
    assert slow.endswith("): not checked: they apply only on the cbr_delay link, and no run of this grid does")
    notes = json.loads((tmp_path / "evaluate.json").read_text())["bound_checks"]
    assert [(n["cca"], n["runs_checked"], bool(n["bounds"])) for n in notes] == \
        [("aimd", 0, False), ("cc_probe_slow", 0, True)]


def test_bench_plot_says_where_the_plot_is(tmp_path: Path) -> None:
    """bench --plot ends its text with 'plot: FILE', as every command that plots, and
    writes the file."""
    plot = tmp_path / "bench.png"
    code, out, err = run_cli("bench", "aimd-ccac-premature-loss", "--horizons", "4,5", "--plot", plot)
    assert code == 0, err
    assert out.splitlines()[-1] == f"plot: {plot}" and plot.stat().st_size > 0


def test_lowercase_booleans_in_a_cca_say_how_to_write_them(tmp_path: Path) -> None:
    """A CCA writes True/False (docs/language.md); 'true' gets a hint, not only 'unknown name'."""
    f = tmp_path / "tf.cca"
    f.write_text("flag: bool = False\nif flag:\n    cwnd = 2 * MSS\nelse:\n    cwnd = 3 * MSS\nflag = true\n")
    assert run_cli("check", f) == (2, "", f"{f}:6:8: error: unknown name 'true' (hint: write True, as in Python)\n")
    f.write_text(f.read_text().replace("flag = true", "flag = True"))
    assert run_cli("check", f)[0] == 0


def test_a_large_hole_domain_loads(tmp_path: Path) -> None:
    """A written-out domain of 200,000 values loads whole (each value exact), and a
    range over the stated limit of values is one error line."""
    f = tmp_path / "big.cca"
    f.write_text("?k = {" + ", ".join(str(i - 100_000) for i in range(200_000)) + ", 0.1}\nrate = ?k * MSS / R\n")
    code, out, err = run_cli("check", f, "--json")
    assert code == 0, err
    assert json.loads(out)["hole_values"] == {"k": 200_001}
    dom = load_cca(f).holes["k"].domain
    assert dom is not None and dom[0] == -100_000 and dom[-2] == 99_999 and dom[-1] == Fraction(1, 10)
    f.write_text(f"?k = range(0, {MAX_HOLE_VALUES + 1})\nrate = ?k * MSS / R\n")
    line = (f"{f}:1:6: error: a hole domain of {MAX_HOLE_VALUES + 1:,} values is over the limit of "
            f"{MAX_HOLE_VALUES:,} (hint: give a coarser range (a step) or fewer values)\n")
    assert run_cli("check", f) == (2, "", line)
    f.write_text(f"?k = range(0, {MAX_HOLE_VALUES})\nrate = ?k * MSS / R\n")
    assert run_cli("check", f)[0] == 0


def _term_self_then(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` after a SIGTERM to this process (delivered at the next bytecode)."""
    def wrapped(*a: Any, **kw: Any) -> Any:
        os.kill(os.getpid(), signal.SIGTERM)
        return fn(*a, **kw)
    return wrapped


@pytest.mark.parametrize("where", ["ccmatic.spec.source.check_depth", "ccmatic.cli.main.build_parser"])
def test_sigterm_while_loading_says_interrupted(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM while the template is parsed, or while the command's module is still
    being loaded: 'interrupted (SIGTERM)', exit 3, no traceback."""
    module, _, name = where.rpartition(".")
    target = importlib.import_module(module)
    monkeypatch.setattr(target, name, _term_self_then(getattr(target, name)))

    def unhandled(signum: int, frame: object) -> None:  # a signal ccmatic did not catch (not: kill pytest)
        raise AssertionError("SIGTERM reached the handler outside ccmatic")

    old = signal.signal(signal.SIGTERM, unhandled)
    try:
        assert run_cli("check", "tpl_ccac_2expr") == (3, "", "interrupted (SIGTERM)\n")
    finally:
        signal.signal(signal.SIGTERM, old)


def test_lowercase_booleans_in_a_query_formula_say_how_to_write_them(tmp_path: Path) -> None:
    """A formula in a query writes True/False too; 'true' gets the same hint."""
    q = tmp_path / "q.toml"
    text = (ROOT / "queries" / "verify" / "aimd-ccac-premature-loss.toml").read_text()
    line = text[:text.index('assume = ["MSS')].count("\n") + 1
    q.write_text(text.replace('assume = ["MSS', 'assume = ["finite_buffer == true", "MSS', 1))
    assert run_cli("check", q) == (2, "", f"{q}:{line}:29: error: unknown name 'true' (hint: write True, as in Python)\n")
