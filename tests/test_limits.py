"""Regression tests for each class of bad or extreme input (issue 13): sizes that
used to hang or exhaust memory get a limit error up front, files that are not files
are refused, output paths are checked before the work, huge numbers are refused
rather than overflowed.  Each case: exit 2, one line naming where, the limit's words."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from helpers import run_cli as run

from tests.test_bad_input import LINE

ROOT = Path(__file__).resolve().parent.parent
Q = ROOT / "queries" / "verify" / "const_rate-ccac.toml"
G1 = ROOT / "queries" / "table4_1" / "G1-T4.toml"




def refused(*argv: object, where: str, words: tuple[str, ...] = ()) -> str:
    """Exit 2 within a few seconds, one stderr line starting with ``where``."""
    t0 = time.monotonic()
    code, out, err = run(*argv)
    assert time.monotonic() - t0 < 20
    assert code == 2 and "Traceback" not in err + out, (code, err)
    lines = err.splitlines()
    assert len(lines) == 1, lines
    m = LINE.match(lines[0])
    assert m is not None and m["file"] == where, lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def _query_with(tmp_path: Path, old: str, new: str, name: str = "q.toml") -> Path:
    text = Q.read_text()
    assert old in text
    p = tmp_path / name
    p.write_text(text.replace(old, new, 1))
    return p


def _cca_query(tmp_path: Path, program: str) -> tuple[Path, Path]:
    cca = tmp_path / "p.cca"
    cca.write_text(program)
    return _query_with(tmp_path, 'cca = "const_rate"', f'cca = "{cca}"'), cca


# -- sizes ------------------------------------------------------------------------------------

def test_horizon_limit_in_a_query_and_on_the_command_line(tmp_path: Path) -> None:
    """T over 100 is refused in a query and on --T; 100 is accepted, and --max-T raises the limit."""
    p = _query_with(tmp_path, "T = 5", "T = 1000000000")
    refused("verify", p, where=str(p), words=("horizon limit of 100", "--max-T"))
    refused("verify", Q, "--T", "1000000000", where="--T", words=("horizon limit",))
    # the limit is the user's to raise, and is exact: T = 100 is under it, 101 over
    refused("check", _query_with(tmp_path, "T = 5", "T = 101", "q101.toml"), where=str(tmp_path / "q101.toml"))
    assert run("check", _query_with(tmp_path, "T = 5", "T = 100", "q100.toml"))[0] == 0
    assert run("check", tmp_path / "q101.toml", "--max-T", "101")[0] == 0


def test_horizon_limit_in_a_proof(tmp_path: Path) -> None:
    """A proof's huge T is refused in one line before any work."""
    src = (ROOT / "proofs" / "cc_qdel-ccac.toml").read_text()
    p = tmp_path / "proof.toml"
    p.write_text(src.replace("\nT = ", "\nT = 1000000000 #", 1))
    refused("prove", p, where=str(p), words=("horizon limit",))


def test_comprehension_over_a_huge_range(tmp_path: Path) -> None:
    """A comprehension over 10^9 terms is refused at once, naming the 100,000 limit."""
    q, cca = _cca_query(tmp_path, "cwnd = sum(MSS for i in range(1000000000))\n")
    refused("verify", q, where=str(cca), words=("1,000,000,000", "100,000"))


def test_twenty_thousand_digit_literal_in_a_cca_and_in_toml(tmp_path: Path) -> None:
    """A 20,000-digit number in a CCA or a query is refused (Python's 4,300-digit limit), one line."""
    q, cca = _cca_query(tmp_path, "cwnd = " + "1" * 20000 + "\n")
    refused("verify", q, where=str(cca), words=("4300 digits",))
    p = _query_with(tmp_path, "T = 5", "T = " + "1" * 20000, "big.toml")
    refused("verify", p, where=str(p), words=("4300 digits",))


def test_twenty_thousand_nested_minus_signs(tmp_path: Path) -> None:
    """20,000 nested minus signs are refused as too deeply nested, one line."""
    q, cca = _cca_query(tmp_path, "cwnd = " + "-" * 20000 + "MSS\n")
    refused("verify", q, where=str(cca), words=("nested",))


def test_chain_of_five_thousand_temporaries_works(tmp_path: Path) -> None:
    """README's Limits table: a chain of 5,000 temporaries has no limit and is proved.
    cwnd = max(MSS, (cwnd + 4999/5000 MSS) / 2) stays at least MSS (proved), and from
    cwnd = MSS it stays exactly there, so more than MSS is refuted (the chain's sum counts)."""
    body = ["x0 = cwnd"] + [f"x{i} = x{i - 1} + MSS / 5000" for i in range(1, 5000)] + ["cwnd = max(MSS, x4999 / 2)"]
    q, _ = _cca_query(tmp_path, "\n".join(body) + "\n")
    util = 'kind = "utilization"\nmin = 0.5'
    text = q.read_text()
    assert util in text
    q.write_text(text.replace(util, 'kind = "expr"\nexpr = "cwnd[T-1] >= MSS"'))
    code, out, err = run("verify", q, "--timeout", "60")
    assert code == 0 and "PROVED" in out, (code, err)
    q.write_text(text.replace(util, 'kind = "expr"\nexpr = "cwnd[T-1] > MSS"'))
    code, out, err = run("verify", q, "--timeout", "60")
    assert code == 1 and "COUNTEREXAMPLE" in out, (code, err)


def test_too_many_jobs_and_flows() -> None:
    """--jobs beyond the limit or 0, and 100,000 simulated flows, are refused in one line."""
    refused("synth", G1, "--jobs", "10000", where="--jobs", words=("limit",))
    refused("synth", G1, "--jobs", "0", where="--jobs")
    refused("simulate", "reno", "--flows", "100000", where="--flows", words=("10,000",))


def test_files_that_are_not_files(tmp_path: Path) -> None:
    """A FIFO, /dev/zero or a file over 4 MiB is refused in one line, without reading it."""
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    refused("verify", fifo, where=str(fifo), words=("not a regular file",))
    refused("check", fifo, where=str(fifo), words=("not a regular file",))
    refused("check", "/dev/zero", where="/dev/zero", words=("not a regular file",))
    big = tmp_path / "big.cca"
    big.write_text("# padding\n" * 500_000)
    refused("check", big, where=str(big), words=("over the limit",))


# -- simulator sizes ------------------------------------------------------------------------

@pytest.mark.parametrize("argv,where,words", [
    (("--R", "1", "--duration", "1e5"), "--duration", ("ticks",)),  # the shortest RTprop (--R under 1 ms: seconds)
    (("--duration", "1e9"), "--duration", ("ticks",)),
    (("--warmup", "100", "--duration", "5"), "--warmup", ("nothing",)),
])
def test_simulator_sizes_are_checked_before_allocating(argv: tuple[str, ...], where: str,
                                                       words: tuple[str, ...]) -> None:
    """Simulations over the tick limit, or with a warm-up as long as the run, are refused before any memory is allocated."""
    refused("simulate", "reno", *argv, where=where, words=words)


# -- huge numbers ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,where", [
    (("search", "cc_qdel-ccac", "--lemma", "B.4.7", "--constant", "util", "--grid", "1e400"), "--grid"),
    (("search", "cc_qdel-ccac", "--lemma", "B.4.7", "--constant", "util", "--hi", "1e400"), "--hi"),
    (("search", "cc_qdel-ccac", "--lemma", "B.4.7", "--constant", "util", "--tol", "1e-400"), "--tol"),
    (("tradeoff", "--loss", "1/C", "--C0", "1e400", "--beta-s", "1"), "--C0"),
    (("tradeoff", "--loss", "1/C", "--C0", "1", "--beta-s", "1e-400"), "--beta-s"),
])
def test_huge_or_tiny_numbers_are_refused(argv: tuple[str, ...], where: str) -> None:
    """Command-line numbers like 1e400 or 1e-400 (outside [1e-15, 1e15] in magnitude) are refused in one line."""
    refused(*argv, where=where, words=("out of range",))


def test_a_tolerance_needing_too_many_probes_is_refused() -> None:
    """A search --tol finer than the range / 2^40 is refused in one line."""
    base = ("search", "cc_qdel-ccac", "--lemma", "B.4.7", "--constant", "util")
    refused(*base, "--tol", "1e-14", where="--tol", words=("2^40",))


# -- output paths, checked before the work ---------------------------------------------------------

def test_output_paths_are_checked_before_the_work(tmp_path: Path) -> None:
    """Output paths (--out, --checkpoint, --plot) that cannot be written are refused before the run starts."""
    f = tmp_path / "file"
    f.write_text("x")
    refused("synth", G1, "--out", f / "sols", where="--out", words=("is a file",))
    refused("synth", G1, "--checkpoint", f / "ck.json", where="--checkpoint")
    refused("synth", G1, "--checkpoint", tmp_path, where="--checkpoint", words=("folder",))
    refused("verify", Q, "--plot", f / "x.png", where="--plot")
    refused("synth", G1, "--checkpoint", "/proc/ck.json", where="--checkpoint", words=("cannot create",))


def test_checkpoint_with_a_malformed_counterexample(tmp_path: Path) -> None:
    """A checkpoint whose stored counterexample is malformed is refused on --resume in one line naming it."""
    ck = tmp_path / "ck.json"
    code, _out, err = run("synth", G1, "--checkpoint", ck, "--json")
    assert code == 0 and ck.exists(), err
    data = json.loads(ck.read_text())
    assert data["counterexamples"]
    data["counterexamples"][0] = {"values": 5, "MSS": "1"}
    ck.write_text(json.dumps(data))
    refused("synth", G1, "--resume", ck, where=str(ck), words=("counterexample #1",))
    data["counterexamples"][0] = {"values": {}, "MSS": "1"}
    ck.write_text(json.dumps(data))
    refused("synth", G1, "--resume", ck, where=str(ck), words=("'values' must hold",))


# -- plain bugs ----------------------------------------------------------------------------------

def test_expr_objective_without_expr(tmp_path: Path) -> None:
    """An 'expr' objective without its formula is refused in one line."""
    p = _query_with(tmp_path, 'kind = "utilization"\nmin = 0.5', 'kind = "expr"')
    refused("verify", p, where=str(p), words=("needs 'expr'",))
