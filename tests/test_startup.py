"""What `ccmatic verify` loads (issue 26): at T = 10 the process start is half of what
a user waits for, so a verify run must not load what only other commands or options
need.  Not a timing test: the modules are read from ``sys.modules`` of a fresh
interpreter after a real run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: large third-party libraries only some commands or options need (plots, sympy's
#: tradeoff, Ray's executor)
HEAVY = ("matplotlib", "numpy", "sympy", "ray", "scipy")
#: ccmatic's modules of other commands: proofs, synthesis, the simulators, executors
OTHER_COMMANDS = ("ccmatic.core.proof", "ccmatic.io.proofs", "ccmatic.spec.template_tree", "ccmatic.engine.cegis",
                  "ccmatic.engine.proof", "ccmatic.engine.parallel", "ccmatic.sim.fine", "ccmatic.io.charts",
                  "ccmatic.export", "ccmatic.testbed", "ccmatic.io.sim_args")


def modules_after(code: str) -> set[str]:
    """The modules loaded once ``code`` ran in a fresh interpreter (in the repository)."""
    probe = code + "\nimport json, sys\nsys.__stdout__.write('\\n' + json.dumps(sorted(sys.modules)) + '\\n')\n"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def offending(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded for name in HEAVY + OTHER_COMMANDS if m == name or m.startswith(name + "."))


def test_verify_command_loads_only_what_it_needs() -> None:
    """The ``ccmatic verify`` parser (what ``main`` imports for the command)."""
    loaded = modules_after("from ccmatic.cli.main import parse\nparse(['verify', 'q.toml'])")
    assert "ccmatic.cli.verify" in loaded and "z3" in loaded
    assert offending(loaded) == []
    assert not any(m.startswith("ccmatic.cli.") and m not in ("ccmatic.cli.main", "ccmatic.cli.common", "ccmatic.cli.verify")
                   for m in loaded), "main imports only the module of the command being run"


def test_a_verify_run_loads_only_what_it_needs() -> None:
    """A whole run, to its counterexample (re-checked, replayed, explained, as JSON):
    neither the synthesizer, the executors, the simulators, the proof checker nor the
    plotting and algebra libraries."""
    loaded = modules_after("import io\nfrom ccmatic.cli.main import main\n"
                           "assert main(['verify', 'queries/ccac/aimd_premature_loss.toml', '--json'], io.StringIO(),"
                           " io.StringIO()) == 1")
    assert "ccmatic.sim.replay" in loaded and "ccmatic.engine.recheck" in loaded
    assert offending(loaded) == []


def test_the_program_ends_with_mains_code_and_all_its_output() -> None:
    """``run`` ends the process without Python's teardown: the output is still whole
    (flushed) and the exit code is main's, for an answer and for bad input."""
    cmd = [sys.executable, "-m", "ccmatic.cli.main", "verify"]
    done = subprocess.run([*cmd, "queries/ccac/aimd_premature_loss.toml", "--json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 1 and json.loads(done.stdout)["verdict"] == "counterexample"
    bad = subprocess.run([*cmd, "no_such_query.toml"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=False)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines()[-1].startswith("no_such_query.toml: error: ")
