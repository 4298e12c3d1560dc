"""The engine's structure (docs/architecture.md): layers import one way,
no import cycles, no imports inside functions to dodge one, modules of readable
size.  Read from the source with :mod:`ast` (nothing is imported)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ccmatic"
LAYERS = ["core", "spec", "semantics", "encode", "sim", "engine", "export", "testbed", "io", "cli"]
MAX_LINES = 400
#: third-party libraries imported where used, because they are large and only some
#: commands need them (start-up time)
LAZY_OK = {"matplotlib", "matplotlib.pyplot", "sympy", "ray", "numpy"}


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def imports(path: Path) -> tuple[set[str], list[tuple[int, str]]]:
    """(ccmatic modules imported at module level, (line, name) of imports inside functions)."""
    tree = ast.parse(path.read_text())
    top: set[str] = set()
    local: list[tuple[int, str]] = []

    def names(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        return [base] + [f"{base}.{a.name}" for a in node.names]

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    local += [(inner.lineno, n) for n in names(inner)]
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            top |= {n for n in names(node) if n.startswith("ccmatic")}
    return top, local


MODULES = modules()


def resolve(name: str) -> str | None:
    """The module a dotted import name refers to (``from m import x`` may name a module or an attribute)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_layers_import_downwards(module: str) -> None:
    top, _ = imports(MODULES[module])
    mine = layer(module)
    for name in top:
        target = resolve(name)
        if target is None or target == "ccmatic":
            continue
        theirs = layer(target)
        assert mine is not None and theirs is not None, f"{module} imports {target}: both must be in a layer"
        assert theirs <= mine, f"{module} ({LAYERS[mine]}) imports {target} ({LAYERS[theirs]}), a higher layer"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_imports_inside_functions(module: str) -> None:
    _, local = imports(MODULES[module])
    bad = [(line, n) for line, n in local if n.split(".")[0] not in ("matplotlib", "sympy", "ray", "numpy")
           and n not in LAZY_OK]
    assert not bad, f"{module}: imports inside functions (move them to the top): {bad}"


def test_no_import_cycles() -> None:
    graph = {m: {t for n in imports(p)[0] if (t := resolve(n)) is not None and t != m and t != "ccmatic"}
             for m, p in MODULES.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(n):] + [n]))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_spec_reads_python_ast(module: str) -> None:
    """Parsed text is the spec layer's: every other layer works on its checked tree
    (or on what the spec layer makes of the text), so only ccmatic/spec/ imports ast."""
    tree = ast.parse(MODULES[module].read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    if module.split(".")[1:2] != ["spec"]:
        assert "ast" not in names, f"{module} imports ast: reading parsed text belongs in ccmatic/spec/"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_are_readable_size(module: str) -> None:
    n = len(MODULES[module].read_text().splitlines())
    assert n <= MAX_LINES, f"{module} has {n} lines (at most {MAX_LINES}: split it)"


def test_one_module_per_command() -> None:
    from ccmatic.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    commands = set(sub.choices)  # type: ignore[union-attr]
    files = {p.stem for p in (PACKAGE / "cli").glob("*.py")} - {"__init__", "main", "common"}
    assert commands == {"list" if f == "list" else f for f in files}


def _architecture_table() -> dict[str, set[str]]:
    """docs/architecture.md's layer table: per layer, the names in backticks of its
    modules column (``proof/`` and the names in its parentheses included)."""
    import re

    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    out: dict[str, set[str]] = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`(\w+)/`", cells[0]) if len(cells) == 3 else None
        if m and m.group(1) in LAYERS:
            out[m.group(1)] = set(re.findall(r"`([\w/]+)`", cells[2]))
    return out


def test_architecture_lists_every_module() -> None:
    """Every module under ccmatic/ is named in docs/architecture.md's layer table, in
    its layer's row: ``finite`` for encode/finite.py, and ``proof/`` with ``graph``
    for engine/proof/graph.py (a module added without a line there fails)."""
    table = _architecture_table()
    assert set(table) == set(LAYERS), sorted(table)
    missing = []
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = p.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__" or parts[0] not in LAYERS:
            continue
        names, rest = table[parts[0]], parts[1:]
        listed = "/".join(rest) in names or (len(rest) == 2 and f"{rest[0]}/" in names and rest[1] in names)
        if not listed:
            missing.append("/".join(parts))
    assert not missing, f"not in docs/architecture.md's layer table: {missing}"


#: CLI modules every command may import: the entry point's shared glue
CLI_SHARED = {"ccmatic.cli", "ccmatic.cli.common"}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("ccmatic.cli.")))
def test_command_modules_do_not_import_each_other(module: str) -> None:
    """A command module imports only cli/common.py of the CLI layer (main imports
    each command by name at run time); what two commands share lives in io/ or engine/."""
    if module == "ccmatic.cli.main":
        return
    top, _ = imports(MODULES[module])
    others = sorted({t for n in top if (t := resolve(n)) is not None and t.startswith("ccmatic.cli")} - CLI_SHARED)
    assert not others, f"{module} imports the command module(s) {others}: move what they share to io/ or engine/"
