"""Names resolve from where the user stands (ccmatic/io/library.py): the current
directory's library folders first, then ``--lib``, then ``$CCMATIC_LIB``, then the
packaged copy; names inside a query resolve in the query's own library first;
``--json`` names the files used; an unknown name gets a "did you mean"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

SHIPPED_QUERY = ROOT / "queries" / "verify" / "aimd-ccac-premature-loss.toml"
CCA = (ROOT / "templates" / "aimd.cca").read_text()


def make_lib(root: Path, cca_name: str = "mycca", query: str = "mine") -> Path:
    """A library folder with templates/<cca_name>.cca and queries/<query>.toml naming it."""
    (root / "templates").mkdir(parents=True, exist_ok=True)
    (root / "queries").mkdir(exist_ok=True)
    (root / "templates" / f"{cca_name}.cca").write_text(CCA)
    text = SHIPPED_QUERY.read_text().replace('cca = "aimd"', f'cca = "{cca_name}"')
    assert f'cca = "{cca_name}"' in text
    (root / "queries" / f"{query}.toml").write_text(text)
    return root


def check_json(*argv: object) -> dict[str, object]:
    code, out, err = run_cli("check", *argv, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert isinstance(d, dict)
    return d


def test_current_directory_wins_over_the_packaged_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query of the same name as a shipped one, in ./queries, is the one that runs;
    its CCA name finds ./templates; verify --json names the files used."""
    make_lib(tmp_path, cca_name="mycca", query="aimd-ccac-premature-loss")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("verify", "aimd-ccac-premature-loss", "--json")
    assert code == 1, err
    inputs = json.loads(out)["inputs"]
    assert inputs["query"] == str(tmp_path / "queries" / "aimd-ccac-premature-loss.toml")
    assert inputs["cca"] == str(tmp_path / "templates" / "mycca.cca")
    assert inputs["model"] == str(ROOT / "models" / "ccac.toml")  # not in ./models: the packaged one
    code, out, _ = run_cli("verify", "aimd-ccac-premature-loss")
    assert f"  query: {tmp_path / 'queries' / 'aimd-ccac-premature-loss.toml'} (current directory)\n" in out
    assert "  model:" not in out  # the packaged copy is not announced


def test_a_query_names_a_cca_of_its_own_library_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cca = "aimd" inside a --lib folder's query is that folder's aimd.cca, even where
    the current directory has another aimd.cca; a bare CCA name on the command line
    is the current directory's."""
    make_lib(tmp_path / "lib", cca_name="aimd", query="q")
    (tmp_path / "here" / "templates").mkdir(parents=True)
    (tmp_path / "here" / "templates" / "aimd.cca").write_text(CCA)
    monkeypatch.chdir(tmp_path / "here")
    d = check_json("q", "--lib", tmp_path / "lib")
    assert d["inputs"] == {"query": str(tmp_path / "lib" / "queries" / "q.toml"),
                           "cca": str(tmp_path / "lib" / "templates" / "aimd.cca"),
                           "model": str(ROOT / "models" / "ccac.toml")}
    assert check_json("aimd", "--lib", tmp_path / "lib")["file"] == str(tmp_path / "here" / "templates" / "aimd.cca")


def test_lib_then_environment_then_packaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--lib folders in the order given, before $CCMATIC_LIB, before the packaged copy;
    the current directory before all of them."""
    a, b = make_lib(tmp_path / "a", "aimd"), make_lib(tmp_path / "b", "aimd")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    monkeypatch.delenv("CCMATIC_LIB", raising=False)
    assert check_json("aimd")["file"] == str(ROOT / "templates" / "aimd.cca")
    monkeypatch.setenv("CCMATIC_LIB", str(b))
    assert check_json("aimd")["file"] == str(b / "templates" / "aimd.cca")
    assert check_json("aimd", "--lib", a)["file"] == str(a / "templates" / "aimd.cca")
    assert check_json("aimd", "--lib", b, "--lib", a)["file"] == str(b / "templates" / "aimd.cca")
    monkeypatch.chdir(a)
    assert check_json("aimd", "--lib", b)["file"] == str(a / "templates" / "aimd.cca")


def test_list_says_where_an_entry_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ccmatic list marks the current directory's files; --json has "from"."""
    make_lib(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("list")
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("  mycca "))
    assert line.endswith(f"[current directory: {tmp_path / 'templates' / 'mycca.cca'}]")
    code, out, _ = run_cli("list", "--json")
    rows = json.loads(out)
    assert {r["name"]: r["from"] for r in rows["templates"]}["mycca"] == "current directory"
    assert {r["name"]: r["from"] for r in rows["templates"]}["bbr"] == "packaged"


@pytest.mark.parametrize(("argv", "line"), [
    (("verify", "aimd-ccac-prematur-loss"),
     ("aimd-ccac-prematur-loss: error: query file not found (hint: did you mean 'aimd-ccac-premature-loss' or "
     "'aimd_premature_loss'?)")),
    (("verify", "aimd-ccac-premature-loss", "--cca", "aimdd"),
     "aimdd: error: CCA file not found (hint: did you mean 'aimd' or 'aimd_delay'?)"),
    (("check", "bbr2"), "bbr2: error: CCA file not found (hint: did you mean 'bbr' or 'bbr1'?)"),
    (("prove", "cc_qdel-cca"), "cc_qdel-cca: error: proof file not found (hint: did you mean 'cc_qdel-ccac' or 'cc_qdel-ccac-timeouts'?)"),
    (("simulate", "renoo"), "renoo: error: CCA file not found (hint: did you mean 'reno'?)"),
    (("check", "zzzz"), "zzzz: error: CCA file not found (hint: give a path, or a name from 'ccmatic list')"),
])
def test_unknown_names_get_did_you_mean(argv: tuple[str, ...], line: str) -> None:
    """An unknown query, CCA or proof name: one line with the closest names, exit 2."""
    code, out, err = run_cli(*argv)
    assert (code, out, err) == (2, "", line + "\n")


def test_unknown_names_inside_a_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A misspelt model or CCA inside a query: file:line:col and the closest names."""
    monkeypatch.chdir(tmp_path)
    text = SHIPPED_QUERY.read_text()
    (tmp_path / "m.toml").write_text(text.replace('model = "ccac"', 'model = "cac"'))
    (tmp_path / "c.toml").write_text(text.replace('cca = "aimd"', 'cca = "aimdd"'))
    code, _, err = run_cli("check", "m.toml")
    assert code == 2 and err == "m.toml:3:1: error: model 'cac' not found (hint: did you mean 'ccac'?)\n"
    code, _, err = run_cli("check", "c.toml")
    assert code == 2 and err == "c.toml:2:1: error: CCA 'aimdd' not found (hint: did you mean 'aimd' or 'aimd_delay'?)\n"
