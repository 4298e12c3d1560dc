"""The input schema: the docs are rendered from it, its defaults are the code's, and
every out-of-domain value or unknown key of a model, query or proof file is one
error line naming the key (exit 2)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from ccmatic.core.model import Buffer, ModelConfig
from ccmatic.core.units import DECLARABLE
from ccmatic.io.schema import DECLARATIONS, MODEL, SCHEMAS, with_reference
from tests.test_bad_input import expect_error, run

ROOT = Path(__file__).parent.parent
QUERY = ROOT / "queries" / "verify" / "const_rate-ccac.toml"
PROOF = ROOT / "proofs" / "cc_qdel-ccac.toml"


def test_docs_reference_is_current() -> None:
    text = (ROOT / "docs" / "language.md").read_text()
    assert with_reference(text) == text, "run: python -m ccmatic.io.schema --write docs/language.md"


def test_declarations_are_the_languages_units() -> None:
    assert DECLARATIONS.keys == set(DECLARABLE) | {"bool"}


def _shown(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, Buffer):
        return f'"{v.mode}"'
    return "none" if v is None else str(v)


def test_model_defaults_are_the_codes() -> None:
    base = ModelConfig()
    for f in fields(ModelConfig):
        if f.name in MODEL.keys and f.name not in ("family", "description"):
            assert MODEL[f.name].default == _shown(getattr(base, f.name)), f.name


def test_every_table_names_its_keys_once() -> None:
    for s in SCHEMAS:
        keys = [f.key for f in s.fields]
        assert len(keys) == len(set(keys)), s.title
        assert all(f.doc and f.type and f.default for f in s.fields), s.title


def _with(tmp_path: Path, src: Path, old: str, new: str) -> Path:
    text = src.read_text()
    assert old in text
    p = tmp_path / src.name
    p.write_text(text.replace(old, new, 1))
    return p


# (file, text replaced, replacement, key named in the error, words)
CASES = [
    (QUERY, "T = 5", "T = 5\nperodic = 2", "perodic", ("did you mean 'periodic'",)),
    (QUERY, "T = 5", "T = 5\nperiodic = 2\nperiodic_all = 2", "periodic_all", ("not both",)),
    (QUERY, "T = 5", "T = 5\nperiodic_all = 5", "periodic_all", ("smaller than T = 5",)),
    (QUERY, "T = 5", "T = 1", "T", ("at least 2",)),
    (QUERY, "T = 5", "T = 5\nstart = -1", "start", ("at least 0",)),
    (QUERY, 'expect = "counterexample"', 'expect = "maybe"', "expect", ("proved",)),
    (QUERY, "[initial]", "[model_params]\ndupacks = -3\n\n[initial]", "dupacks", ("at least 0",)),
    (QUERY, "[initial]", "[model_params]\nepsilon = -1\n\n[initial]", "epsilon", ("at least 0",)),
    (QUERY, "[initial]", "[model_params]\nN = 0\n\n[initial]", "N", ("at least 1",)),
    (QUERY, "[initial]", "[model_params]\nN = 100000\n\n[initial]", "N", ("limit of 64",)),
    (QUERY, "[initial]", "[model_params]\nC = 0\n\n[initial]", "C", ("greater than 0",)),
    (QUERY, "[initial]", "[model_params]\nbuffer = {finite = -1}\n\n[initial]", "buffer", ("non-negative",)),
    (QUERY, "[initial]", "[model_params]\nlos = \"droptail\"\n\n[initial]", "los", ("did you mean 'loss'",)),
    (QUERY, "beliefs_consistent = true", "beliefs_consistent = 1", "beliefs_consistent", ("true or false",)),
    (QUERY, "beliefs_consistent = true", "belief_consistent = true", "belief_consistent",
     ("did you mean 'beliefs_consistent'",)),
    (QUERY, 'kind = "utilization"', 'kind = "utilization"\nlabl = "x"', "labl", ("did you mean 'label'",)),
]


@pytest.mark.parametrize("src,old,new,key,words", CASES, ids=[c[3] + ":" + c[2][:12] for c in CASES])
def test_out_of_domain_or_unknown_key_is_one_line(tmp_path: Path, src: Path, old: str, new: str, key: str,
                                                  words: tuple[str, ...]) -> None:
    p = _with(tmp_path, src, old, new)
    line = next(i for i, t in enumerate(p.read_text().splitlines(), 1) if t.lstrip().startswith(key))
    expect_error(("verify", p), p, line, None, words)


def test_the_unmodified_query_is_accepted() -> None:  # the control for CASES
    rc, out, _err = run("verify", QUERY)
    assert rc == 1 and "COUNTEREXAMPLE" in out


def test_a_horizon_shorter_than_R_plus_D_is_refused(tmp_path: Path) -> None:
    """D = 10^6 on T = 5 made every objective window empty and answered PROVED."""
    p = _with(tmp_path, QUERY, "[initial]", "[model_params]\nD = 1000000\n\n[initial]")
    expect_error(("verify", p), p, 8, 1, ("R + D = 1000001", "T = 5"))
    edge = _with(tmp_path, QUERY, "[initial]", "[model_params]\nD = 4\n\n[initial]")  # R + D = T
    expect_error(("verify", edge), edge, 8, 1, ("R + D = 5",))
    ok = _with(tmp_path, QUERY, "[initial]", "[model_params]\nD = 3\n\n[initial]")  # R + D = 4 < T
    assert run("verify", ok)[0] in (0, 1)


@pytest.mark.parametrize("old,new,key,words", [
    ("[constants]\n", '[constants]\nx = { value = 1, easier = "sideways" }\n', "x", ("up",)),
    ("[constants]\n", '[constants]\nx = { value = 1, unit = "meters" }\n', "x", ("bytes",)),
    ("[constants]\n", '[constants]\nx = { valu = 1 }\n', "x", ("did you mean 'value'",)),
    ("[constants]\n", '[constants]\nx = { range = [0, 1] }\n', "x", ("no 'value'",)),
])
def test_proof_keys_are_checked_by_the_schema(tmp_path: Path, old: str, new: str, key: str,
                                              words: tuple[str, ...]) -> None:
    p = _with(tmp_path, PROOF, old, new)
    line = next(i for i, t in enumerate(p.read_text().splitlines(), 1) if t.startswith(key))
    expect_error(("prove", p), p, line, None, words)

