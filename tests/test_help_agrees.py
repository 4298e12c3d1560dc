"""Help, README and behaviour agree (issue 25, deliverable 8): each corrected
behaviour, with the exact line printed and the exit code."""

from __future__ import annotations

import pytest
from helpers import run_cli


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
