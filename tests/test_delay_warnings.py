"""A time literal compared with a delay in steps (docs/language.md, "Delay signals"):
``if qdel_lo > 0.050:`` (meant as 50 ms) is valid, so the command goes on, but check,
verify and simulate print one warning line with its location and a hint."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli

from ccmatic.spec.cca import load_cca

BODY = "    cwnd = MSS\nelse:\n    cwnd = cwnd + MSS\n"
HINT = ("(hint: delays are whole steps of R, and time literals are steps, not seconds "
        "(R = 1 step by default): compare with a whole number of steps)")


def write(tmp_path: Path, cond: str) -> Path:
    p = tmp_path / "w.cca"
    p.write_text(f"if {cond}:\n{BODY}")
    return p


def test_check_warns_on_a_seconds_literal_against_qdel_lo(tmp_path: Path) -> None:
    """The exact line: file:line:col of the comparison, what it acts as, the hint;
    exit code 0 (a warning is not an error)."""
    p = write(tmp_path, "qdel_lo > 0.050")
    code, out, err = run_cli("check", p)
    assert code == 0 and out.startswith(f"{p}: ok\n")
    assert err == (f"{p}:1:4: warning: 'qdel_lo' is a whole number of steps, so 'qdel_lo > 0.05' acts as "
                   f"'qdel_lo >= 1' {HINT}\n")


@pytest.mark.parametrize(("cond", "acts"), [
    ("0.5 <= qdel_hi", "'qdel_hi >= 1'"),        # the constant on the left: flipped
    ("qdel_hi < 2.5", "'qdel_hi <= 2'"),
    ("qdel_lo[t - 2] == 1 / 2", "false"),
])
def test_the_warning_says_what_the_comparison_acts_as(tmp_path: Path, cond: str, acts: str) -> None:
    warnings = load_cca(write(tmp_path, cond)).warnings
    assert len(warnings) == 1 and warnings[0].message.endswith(f"acts as {acts}"), warnings


@pytest.mark.parametrize("cond", ["qdel_lo > 0", "qdel_lo >= 2", "qdel_hi > T", "qdel_lo >= 3 * R / 2 + 1 / 2",
                                  "rtt > 1.25 * R", "rtt > 0", "c_lo > 0.5 * MSS / R"])
def test_no_warning_for_whole_steps_or_other_quantities(tmp_path: Path, cond: str) -> None:
    """Whole numbers of steps (also when folded from R), rtt against at least a
    step, and quantities that are not delays warn nothing."""
    code, _out, err = run_cli("check", write(tmp_path, cond))
    assert code == 0 and err == ""


def test_rtt_below_one_step_warns(tmp_path: Path) -> None:
    """rtt is measured, not bucketed: a constant below one step looks like seconds."""
    p = write(tmp_path, "rtt > 0.05")
    _code, _out, err = run_cli("check", p)
    assert err.startswith(f"{p}:1:4: warning: 'rtt' is in steps and at least R once a sample exists, "
                          "so comparing it with 0.05 (less than one step) looks like seconds (hint: ")


def test_verify_and_simulate_print_the_warning_and_go_on(tmp_path: Path) -> None:
    p = write(tmp_path, "qdel_lo > 0.050")
    line = f"{p}:1:4: warning: 'qdel_lo' is a whole number of steps"
    code, out, err = run_cli("verify", "const_rate-ccac", "--cca", p, "--timeout", "60")
    assert err.startswith(line) and err.count("warning:") == 1 and code in (0, 1), (code, out, err)
    assert "PROVED" in out or "COUNTEREXAMPLE" in out
    code, out, err = run_cli("simulate", p, "--duration", "1")
    assert code == 0 and err.startswith(line) and err.count("warning:") == 1, (code, err)
