"""Property tests: whatever bytes, TOML values or well-formed but extreme programs a
user gives, every loader and command ends with exit code 2 and one error line, or a
definite answer; never a traceback.  ``main`` lets every exception other than an
input error escape, so an escaping exception fails the test."""

from __future__ import annotations

import io
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccmatic.cli.main import main
from ccmatic.io.schema import MODEL

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

QUERY = """cca = "{cca}"
model = "ccac"
T = 3
[model_params]
{params}
[[objective]]
kind = "expr"
expr = "{expr}"
"""


def run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--timeout", "20"] if argv[0] in ("verify", "synth") else list(argv), out=out, err=err)
    return code, err.getvalue()


def assert_answer(code: int, err: str) -> None:
    assert code in (0, 1, 2, 3), code
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "error: " in lines[0], err
    assert "Traceback" not in err


@SETTINGS
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".cca", ".toml"]))
def test_random_bytes_to_check(tmp_path: Path, data: bytes, suffix: str) -> None:
    """Random bytes as a CCA or query file: 'check' answers or refuses in one line, never a traceback."""
    f = tmp_path / f"x{suffix}"
    f.write_bytes(data)
    assert_answer(*run("check", str(f)))


@SETTINGS
@given(text=st.text(alphabet=string.printable, max_size=300))
def test_random_text_as_a_query(tmp_path: Path, text: str) -> None:
    """Random text as a query file: 'verify' answers or refuses in one line, never a traceback."""
    f = tmp_path / "q.toml"
    f.write_text(text)
    assert_answer(*run("verify", str(f)))


TOML_VALUES = st.one_of(
    st.integers(min_value=-10**30, max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda x: {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(
        repr(x), repr(x))),
    st.booleans().map(lambda b: "true" if b else "false"),
    st.text(alphabet=string.ascii_letters + string.digits + "/.-", max_size=12).map(lambda s: f'"{s}"'),
    st.sampled_from(['"free"', '"infinite"', '"arbitrary"', "{finite = 2}", "{small = -1}", "[]", "{}",
                     '"1/0"', '"3/2"', "{period = 0}", "{guard = -1}", "{max_expand = 0.5}"]),
)


@SETTINGS
@given(key=st.sampled_from(sorted(MODEL.keys)), value=TOML_VALUES)
def test_random_model_param(tmp_path: Path, key: str, value: str) -> None:
    """Any value for any model key: a verdict on the const_rate CCA, or one error line
    (a domain error names the key)."""
    f = tmp_path / "q.toml"
    f.write_text(QUERY.format(cca="const_rate", params=f"{key} = {value}", expr="S[T-1] >= S[0]"))
    code, err = run("verify", str(f))
    assert_answer(code, err)
    if code == 2 and "invalid TOML" not in err:
        assert key in err or "model" in err, err


EXPR_ATOMS = st.sampled_from(["cwnd", "MSS", "rate", "A[t-1]", "S[t-R]", "C", "2", "1/3", "c_lo", "qdel_hi"])


def _expr(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return EXPR_ATOMS
    sub = _expr(depth - 1)
    return st.one_of(
        sub,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, sub).map(lambda t: f"max({t[0]}, {t[1]})"),
        st.tuples(sub, sub, sub, sub).map(lambda t: f"({t[0]} if {t[1]} < {t[2]} else {t[3]})"),
        sub.map(lambda s: f"-{s}"),
    )


@SETTINGS
@given(rhs=_expr(3), reps=st.integers(min_value=1, max_value=3))
def test_random_programs(tmp_path: Path, rhs: str, reps: int) -> None:
    """Well-formed programs over the language (with unit and linearity errors mixed
    in): verified, or refused in one line."""
    (tmp_path / "p.cca").write_text("".join(f"cwnd = max(MSS, {rhs})\n" for _ in range(reps)))
    f = tmp_path / "q.toml"
    f.write_text(QUERY.format(cca=str(tmp_path / "p.cca"), params="", expr="cwnd[T-1] > 0"))
    assert_answer(*run("verify", str(f)))


@pytest.mark.parametrize("n", [5000])
def test_extreme_but_legitimate_programs_work(tmp_path: Path, n: int) -> None:
    """An elif chain of n branches and an n-term sum (in a CCA and in an assumption):
    each proved, as README's Limits table states."""
    chain = ["if cwnd < MSS:\n    cwnd = MSS"] + [f"elif cwnd < {i} * MSS:\n    cwnd = cwnd + MSS" for i in range(2, n)]
    (tmp_path / "chain.cca").write_text("\n".join([*chain, "else:\n    cwnd = cwnd / 2"]) + "\n")
    (tmp_path / "sum.cca").write_text("cwnd = max(MSS, (" + " + ".join(["cwnd", "MSS"] * (n // 2)) + f") / {n})\n")
    for cca in ("chain", "sum"):
        f = tmp_path / f"q_{cca}.toml"
        f.write_text(QUERY.format(cca=str(tmp_path / f"{cca}.cca"), params="", expr="cwnd[T-1] > 0"))
        code, err = run("verify", str(f))
        assert code == 0, err
    f = tmp_path / "q_assume.toml"
    big_sum = " + ".join(["S[1]"] * n)
    f.write_text(f'assume = ["{big_sum} >= {n} * S[0]"]\n' + QUERY.format(cca="const_rate", params="", expr="S[T-1] >= S[0]"))
    code, err = run("verify", str(f))
    assert code == 0, err
