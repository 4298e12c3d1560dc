"""Witness questions (``exists``) and model-only questions (no CCA, ``model_parts``):
answers in both words, tight pairs (a witness, and the same condition a hair
beyond made impossible), parts really left out (and put back), the replay of a
witness under the parts assumed, and bad input as one line with exit 2."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import run_cli as run

from ccmatic.core.model import ALL_PARTS, MODEL_PARTS
from ccmatic.core.options import RunOptions
from ccmatic.core.results import ConcreteTrace, Counterexample, result_word
from ccmatic.core.source import Source
from ccmatic.engine.verify import VerifyReport, verify
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.queries import load_query

ROOT = Path(__file__).resolve().parent.parent
OPTS = RunOptions(timeout_s=120, seed=0)
LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.+)$")

MODEL_ONLY = """\
model = "ccac_default"
T = 6
model_parts = {parts}
exists = "{cond}"
"""


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / f"{name}.toml"
    p.write_text(text)
    return p


def ask(path: Path) -> VerifyReport:
    lib = Library.default()
    return verify(load_query(path, lib, load_objectives(lib)), OPTS)


def answer(rep: VerifyReport) -> str:
    return result_word(rep.query.question, rep.verdict)


def witness(rep: VerifyReport) -> ConcreteTrace:
    assert isinstance(rep.outcome, Counterexample), answer(rep)
    return rep.outcome.trace


def test_service_tight_pair(tmp_path: Path) -> None:
    """Without a CCA, the link serves exactly C·T in T steps (a witness, checked on its
    numbers), but not C·T + 1/1000 (no witness)."""
    parts = '["monotone", "service", "loss"]'
    at = ask(write(tmp_path, "at", MODEL_ONLY.format(parts=parts, cond="S[T-1] - S[0] >= C * T")))
    tr = witness(at)
    C = tr.params["C"]
    assert C is not None and tr.aggregate["S"][-1] - tr.aggregate["S"][0] >= C * tr.T
    beyond = ask(write(tmp_path, "beyond", MODEL_ONLY.format(parts=parts, cond="S[T-1] - S[0] >= C * T + 1/1000")))
    assert answer(beyond) == "no_witness" and beyond.verdict == "proved"


def test_bbr_low_utilization_witness_tight_pair() -> None:
    """CCAC's bbr_low_util as an exists question: a periodic trace below 10% of C·T
    exists (its numbers say so), none below 0% (S never decreases)."""
    text = (ROOT / "queries" / "verify" / "bbr-ccac-lowutil.toml").read_text()
    lib = Library.default()
    q = load_query(ROOT / "queries" / "verify" / "bbr-ccac-lowutil.toml", lib, load_objectives(lib))
    assert "expr = \"S[T-1] - S[0] >= 0.1 * C * T\"" in text
    low = replace(q, objectives=(), exists=(Source("<test>", "S[T-1] - S[0] < 0.1 * C * T"),), expect=None)
    tr = witness(verify(low, OPTS))
    C = tr.params["C"]
    assert C is not None and tr.aggregate["S"][-1] - tr.aggregate["S"][0] < Fraction(1, 10) * C * tr.T
    none = replace(low, exists=(Source("<test>", "S[T-1] - S[0] < 0"),))
    assert answer(verify(none, OPTS)) == "no_witness"


def test_leaving_out_a_part_admits_its_traces(tmp_path: Path) -> None:
    """Without "monotone" (and "loss", whose infinite buffer keeps L and so A − L
    from falling too) a decreasing A is a witness; with it there is none."""
    cond = "any(A[t] < A[t-1] for t in range(1, T))"
    without = ask(write(tmp_path, "without", MODEL_ONLY.format(parts='["service"]', cond=cond)))
    A = witness(without).aggregate["A"]
    assert any(A[t] < A[t - 1] for t in range(1, len(A)))
    withit = ask(write(tmp_path, "with", MODEL_ONLY.format(parts='["monotone", "service"]', cond=cond)))
    assert answer(withit) == "no_witness"


def test_witness_replayed_without_the_sending_rule(tmp_path: Path) -> None:
    """A constant window of one BDP: with the sending rule a step sends at most the
    window, C·R (a witness at C·R, none beyond); without it ("sender" left out) a
    witness sends more, and its replay does not apply the rule."""
    body = 'cca = "const_cwnd"\nmodel = "ccac_default"\nT = 6\nassume = ["cwnd[0] == C * R"]\n'
    at = ask(write(tmp_path, "at", body + 'exists = "any(A[t] - A[t-1] >= C * R for t in range(R, T))"\n'))
    assert answer(at) == "witness"
    beyond = 'exists = "any(A[t] - A[t-1] > C * R for t in range(R, T))"\n'
    assert answer(ask(write(tmp_path, "full", body + beyond))) == "no_witness"
    parts = '", "'.join(sorted(ALL_PARTS - {"sender"}))
    tr = witness(ask(write(tmp_path, "free", body + beyond + f'model_parts = ["{parts}"]\n')))
    A, C = tr.flows[0]["A"], tr.params["C"]
    assert C is not None and any(A[t] - A[t - 1] > C for t in range(1, tr.T))  # type: ignore[operator]


def test_no_cca_is_any_sender(tmp_path: Path) -> None:
    """No cca key and cca = "none" are the same question; the sender is free (a
    witness sends 5 C·R in one step, which no rate bounds), and the report says so."""
    cond = "A[T-1] - A[T-2] >= 5 * C * R"
    absent = ask(write(tmp_path, "absent", MODEL_ONLY.format(parts='["monotone", "service", "loss"]', cond=cond)))
    named = ask(write(tmp_path, "named", 'cca = "none"\n' + MODEL_ONLY.format(
        parts='["monotone", "service", "loss"]', cond=cond)))
    assert answer(absent) == answer(named) == "witness"
    assert not absent.query.scenario.has_cca
    assert "rate" not in witness(absent).flows[0] and "cwnd" not in witness(absent).flows[0]


def test_cli_words_json_and_exit_codes(tmp_path: Path) -> None:
    """Text says WITNESS / NO WITNESS and the parts assumed; JSON keeps the verdict of
    the property "no trace meets it" and adds question and answer; exit codes 1 / 0."""
    parts = '["monotone", "service", "loss"]'
    yes = write(tmp_path, "yes", MODEL_ONLY.format(parts=parts, cond="S[T-1] - S[0] == 0"))
    no = write(tmp_path, "no", MODEL_ONLY.format(parts=parts, cond="S[T-1] - S[0] < 0"))
    png = tmp_path / "w.png"
    code, out, _ = run("verify", yes, "--plot", png)
    assert code == 1 and "WITNESS (re-checked with exact rationals and replayed)" in out and png.exists()
    assert "model parts assumed: monotone, service, loss (left out: initial, loss_detection, sender" in out
    code, out, _ = run("verify", no)
    assert code == 0 and "NO WITNESS: proved that no trace of T=6 steps" in out
    code, out, _ = run("verify", no, "--json")
    d = json.loads(out)
    assert code == 0 and (d["question"], d["verdict"], d["answer"]) == ("exists", "proved", "no_witness")
    assert d["model_parts"] == ["monotone", "service", "loss"]
    code, out, _ = run("verify", ROOT / "queries" / "verify" / "const_rate-ccac.toml", "--json")
    d = json.loads(out)
    assert (d["question"], d["verdict"]) == ("forall", "counterexample") and "answer" not in d


def test_vacuity_check_still_runs_without_parts(tmp_path: Path) -> None:
    """Contradictory assumptions with parts left out: unknown (vacuous), never proved
    and never "no witness"."""
    text = MODEL_ONLY.format(parts='["monotone"]', cond="S[T-1] < S[0]") + 'assume = ["A[0] > A[1]"]\n'
    rep = ask(write(tmp_path, "vacuous", text))
    assert rep.verdict == "unknown" and "vacuous" in rep.outcome.reason  # type: ignore[union-attr]


BAD_CASES = [
    # name, text, line, words
    ("both", ('cca = "const_rate"\nmodel = "ccac"\nT = 5\nexists = "S[T-1] < S[0]"\n\n[[objective]]\n'
              'kind = "utilization"\nmin = 0.5\n'), 4, ("either", "not both")),
    ("part", MODEL_ONLY.format(parts='["monotone", "loss_detect"]', cond="S[T-1] < S[0]"), 3,
     ("unknown model part 'loss_detect'", "did you mean 'loss_detection'")),
    ("expect", MODEL_ONLY.format(parts='["monotone"]', cond="S[T-1] < S[0]") + 'expect = "proved"\n', 5,
     ("does not answer an exists question", "witness")),
    ("neither", 'model = "ccac"\nT = 5\n', 1, ("no [[objective]] and no exists",)),
    ("rate_without_cca", MODEL_ONLY.format(parts='["monotone"]', cond="rate[1] > 0"), 4, ("rate",)),
]


@pytest.mark.parametrize("name,text,line,words", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_is_one_line(tmp_path: Path, name: str, text: str, line: int, words: tuple[str, ...]) -> None:
    path = write(tmp_path, name, text)
    code, out, err = run("verify", path)
    assert code == 2 and "Traceback" not in err + out
    lines = err.splitlines()
    assert len(lines) == 1, lines
    m = LINE.match(lines[0])
    assert m is not None and m["file"] == str(path) and int(m["line"]) == line, lines[0]
    for w in words:
        assert w.lower() in m["msg"].lower() or w.lower() in lines[0].lower(), lines[0]


def test_synth_refuses_an_exists_question(tmp_path: Path) -> None:
    """Synthesis is for objectives every trace meets; an exists question is one line."""
    text = (ROOT / "queries" / "table4_1" / "G1-T4.toml").read_text()
    text = re.sub(r"\[\[objective\]\][^\[]*", "", text) + '\nexists = "S[T-1] < S[0]"\n'
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith(("expect", "thesis_solutions")))
    code, _out, err = run("synth", write(tmp_path, "syn", text + "\n"))
    assert code == 2 and len(err.splitlines()) == 1 and "exists" in err, err


def test_bench_checks_an_exists_answer() -> None:
    """bench compares an exists query's expect with its answer (witness / no_witness)."""
    q = ROOT / "queries" / "ccac_model"
    code, out, _ = run("bench", q / "service_extreme-CT.toml", q / "service_extreme-negative.toml", "--json")
    rows = json.loads(out)["rows"]
    assert code == 0 and [(r["answer"], r["verdict"], r["ok"]) for r in rows] == \
        [("witness", "counterexample", True), ("no_witness", "proved", True)]


def test_every_model_part_is_documented() -> None:
    """docs/language.md's table of model parts has a row for each part, and only those."""
    text = (ROOT / "docs" / "language.md").read_text()
    section = text.split("## Model-only questions", 1)[1].split("\n## ", 1)[0]
    table = section.split("| part |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)
    assert rows == list(MODEL_PARTS)


@pytest.mark.parametrize("cond,expected", [("A[T-1] - A[T-2] >= 5 * C * R", "witness"),
                                           ("any(A[t] < A[t-1] for t in range(1, T))", "no_witness")])
def test_no_cca_answers_as_any_sender(tmp_path: Path, cond: str, expected: str) -> None:
    """On the whole model, no CCA and templates/any_sender.cca (rate = choose()) answer
    alike: any burst can be sent, A never falls."""
    base = f'model = "ccac_default"\nT = 6\nexists = "{cond}"\n'
    assert answer(ask(write(tmp_path, "none", base))) == expected
    assert answer(ask(write(tmp_path, "any", 'cca = "any_sender"\n' + base))) == expected
