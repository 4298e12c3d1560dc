"""Bad user input gives exactly one clear line on stderr, exit code 2, no traceback.

The line is ``file:line:col: error: ...`` (or ``file: error: ...`` when there is no
position, e.g. a missing file or a command-line option).  Fixtures live in
``tests/data/bad/``; the CLI is called in-process.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import run_cli as run

from ccmatic.core.errors import SpecError

BAD = Path(__file__).parent / "data" / "bad"

# file, then optional :line and :col, then ': error: ' and the message
LINE = re.compile(r"^(?P<file>.+?)(?::(?P<line>\d+)(?::(?P<col>\d+))?)?: error: (?P<msg>.+)$")




def expect_error(argv: tuple[object, ...], file: object, line: int | None = None, col: int | None = None,
                 words: tuple[str, ...] = ()) -> str:
    """Run the CLI and check the one-line error; ``line=None`` means no position."""
    rc, out, err = run(*argv)
    assert "Traceback" not in err and "Traceback" not in out
    assert rc == 2, f"exit code {rc}, stderr: {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), f"expected exactly one stderr line, got {lines!r}"
    text = lines[0]
    m = LINE.match(text)
    assert m is not None, f"not 'file[:line[:col]]: error: ...': {text!r}"
    assert m["file"] == str(file), text
    if line is None:
        assert m["line"] is None, f"expected no position: {text!r}"
    else:
        assert m["line"] is not None and int(m["line"]) == line, f"expected line {line}: {text!r}"
    if col is not None:
        assert m["col"] is not None and int(m["col"]) == col, f"expected column {col}: {text!r}"
    for w in words:
        assert w.lower() in m["msg"].lower(), f"{w!r} not in {text!r}"
    return text


# -- controls: the fixtures' good twins pass, so the failures below are meaningful --------

def test_control_cca_is_ok() -> None:
    rc, out, err = run("check", BAD / "control_ok.cca")
    assert (rc, err) == (0, "")
    assert "ok" in out


def test_control_query_is_ok() -> None:
    rc, out, err = run("check", BAD / "control_ok.toml")
    assert (rc, err) == (0, "")
    assert "ok" in out


# -- CCA files (ccmatic check FILE.cca) -------------------------------------------------------

CCA_CASES = [
    # fixture, line, col, words
    ("syntax.cca", 2, None, ("syntax error", "':'")),
    ("unknown_name.cca", 2, 8, ("unknown name 'c_low'", "did you mean 'c_lo'")),
    ("unit_mismatch.cca", 2, 8, ("unit mismatch", "bytes/second and bytes")),
    ("nonlinear.cca", 2, 8, ("nonlinear",)),
    ("reads_C.cca", 2, 8, ("'C'", "cannot observe")),
    ("reads_L.cca", 3, 4, ("'L'", "cannot observe", "Ld")),
    ("reads_current.cca", 3, 8, ("'S[t]'", "current step")),
    ("reads_future.cca", 3, 8, ("'A[t+1]'", "future")),
    ("no_output.cca", 1, 1, ("never sets rate or cwnd",)),
    ("assign_observation.cca", 2, 1, ("cannot assign to 'S'",)),
    ("while_loop.cca", 2, 1, ("'while'", "not allowed")),
    ("def.cca", 1, 1, ("def", "not allowed")),
    ("bare_expression.cca", 2, 1, ("bare expression", "'='")),
    ("inf_literal.cca", 1, 8, ("finite",)),
    ("not_utf8.cca", 1, 6, ("UTF-8",)),
    ("range_step_zero.cca", 2, 38, ("step must not be zero",)),
]


@pytest.mark.parametrize("name,line,col,words", CCA_CASES, ids=[c[0] for c in CCA_CASES])
def test_bad_cca(name: str, line: int, col: int | None, words: tuple[str, ...]) -> None:
    path = BAD / name
    expect_error(("check", path), path, line, col, words)


def test_missing_cca_file() -> None:
    path = BAD / "no_such_file.cca"
    expect_error(("check", path), path, None, None, ("not found",))


def test_cca_given_to_verify() -> None:
    path = BAD / "control_ok.cca"
    expect_error(("verify", path), path, None, None, ("not a query",))


# -- queries (ccmatic check / verify FILE.toml) -----------------------------------------------

QUERY_CASES = [
    # fixture, file the error is in (None: the query), line, col, words
    ("missing_cca.toml", None, 2, 1, ("CCA 'no_such_cca.cca' not found",)),
    ("missing_model.toml", None, 2, 1, ("model 'no_such_model' not found",)),
    ("bad_toml.toml", None, 3, 5, ("invalid TOML",)),
    ("T_string.toml", None, 4, 1, ("'T' must be a whole number", "'five'")),
    ("T_one.toml", None, 3, 1, ("'T' must be at least 2",)),
    ("unknown_key.toml", None, 5, 1, ("unknown key 'expcet'", "did you mean 'expect'")),
    ("unknown_kind.toml", None, 10, 1, ("unknown objective kind 'inflite'", "did you mean 'inflight'")),
    ("kind_not_string.toml", None, 6, 1, ("unknown objective kind",)),
    ("bad_param_second_objective.toml", None, 11, 1, ("'max_bdp' must be a number", "'lots'")),
    ("inf_number.toml", None, 7, 1, ("'min' must be a finite number",)),
    ("buffer_mode.toml", None, 7, 1, ("unknown buffer mode 'bottomless'",)),
    # expressions inside query strings: the position is in the TOML file, on the string
    ("assume_unit.toml", None, 7, 6, ("unit mismatch", "bytes and bytes/second")),
    ("assume_unknown_name.toml", None, 4, 23, ("unknown name 'Cee'",)),
    ("objective_expr_unit.toml", None, 7, 9, ("unit mismatch",)),
    # the query is fine, its CCA is not: the error points into the CCA file
    ("bad_cca.toml", "unit_mismatch.cca", 2, 8, ("unit mismatch",)),
    ("not_utf8.toml", None, 2, 6, ("UTF-8",)),
]


@pytest.mark.parametrize("command", ["check", "verify"])
@pytest.mark.parametrize("name,where,line,col,words", QUERY_CASES, ids=[c[0] for c in QUERY_CASES])
def test_bad_query(command: str, name: str, where: str | None, line: int, col: int | None,
                   words: tuple[str, ...]) -> None:
    path = BAD / name
    expect_error((command, path), BAD / (where or name), line, col, words)


@pytest.mark.parametrize("command", ["check", "verify"])
def test_missing_query_file(command: str) -> None:
    path = BAD / "no_such_query.toml"
    expect_error((command, path), path, None, None, ("query file not found",))


# -- command line ------------------------------------------------------------------------------

def test_T_too_small_on_command_line() -> None:
    expect_error(("verify", "--T", "1", BAD / "control_ok.toml"), "--T", None, None, ("T must be at least 2",))


@pytest.mark.parametrize("value", ["-3", "0", "nan", "inf"])
def test_bad_timeout(value: str) -> None:
    expect_error(("verify", f"--timeout={value}", BAD / "control_ok.toml"), "--timeout", None, None,
                 ("timeout must be a positive number",))


def test_bad_timeout_separate_argument() -> None:
    expect_error(("verify", "--timeout", "-3", BAD / "control_ok.toml"), "--timeout", None, None,
                 ("timeout must be a positive number",))


def test_option_value_of_wrong_type() -> None:
    expect_error(("verify", "--T", "five", BAD / "control_ok.toml"), "ccmatic verify", None, None,
                 ("--T", "invalid int value"))


def test_unknown_command() -> None:
    expect_error(("frobnicate",), "ccmatic", None, None, ("invalid choice", "frobnicate"))


def test_option_not_taken_by_command() -> None:
    expect_error(("check", "--T", "3", BAD / "control_ok.toml"), "ccmatic", None, None,
                 ("unrecognized arguments",))


# -- --debug -----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ("check", "--debug", BAD / "unknown_name.cca"),
    ("--debug", "check", BAD / "unknown_name.cca"),  # before the command, too
], ids=["after-command", "before-command"])
def test_debug_raises(argv: tuple[object, ...]) -> None:
    with pytest.raises(SpecError) as info:
        run(*argv)
    assert info.value.loc is not None and info.value.loc.file == str(BAD / "unknown_name.cca")
    assert (info.value.loc.line, info.value.loc.col) == (2, 8)
    assert "unknown name 'c_low'" in info.value.message
