"""``ccmatic export --to ebpf`` (docs/export.md): what exports and what is refused
(one line), the generated C against the exact semantics on random observation
sequences (differential), and with root, clang and bpftool: compiled, accepted by
the kernel verifier, registered and unregistered, nothing left behind (also after
SIGTERM, and a stale registration is removed by the next run)."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import pytest

from ccmatic.cli.main import main
from ccmatic.core.errors import SpecError
from ccmatic.export import build, program
from ccmatic.export.cdomain import CDomain, ExportError
from ccmatic.export.harness import build_harness, differential
from ccmatic.export.kernel import bpf_source, ca_name
from ccmatic.export.program import Settings, generate
from ccmatic.spec.cca import load_cca

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
EXPORTS = ["cc_qdel", "cc_probe_slow", "reno", "const_cwnd", "aimd_incr_every_step", "contract_lin"]
needs_cc = pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed (the harness is built with it)")
LOAD_WHY = build.missing(load=True)
needs_kernel = pytest.mark.skipif(LOAD_WHY is not None, reason=LOAD_WHY or "")


def _cca(name: str) -> Path:
    return TEMPLATES / f"{name}.cca"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", EXPORTS)
def test_exports_generate(name: str) -> None:
    g = generate(load_cca(_cca(name)), Settings())
    text = bpf_source(g, Settings(), ca_name(name), None)
    assert "struct tcp_congestion_ops" in text and f'.name = "{ca_name(name)}"' in text
    assert g.blocks["cca"], "the CCA step is emitted"


def test_grid_steps_are_a_setting_of_the_kernel_program(tmp_path: Path) -> None:
    """``--steps grid`` switches the program's boundary rule on (a constant the compiler
    folds), and only the two rules exist."""
    g = generate(load_cca(_cca("cc_probe_slow")), Settings())
    ack = bpf_source(g, Settings(), "ccm_x", None)
    grid = bpf_source(g, Settings(steps="grid"), "ccm_x", None)
    assert "if (0)  /* a boundary passed" in ack and "if (1)  /* a boundary passed" in grid
    # the grid's send budget per step (docs/export.md), off with ACK-started steps
    assert "if (0 && st->budget_end)" in ack and "if (1 && st->budget_end)" in grid
    # grid steps also run on the send path; a rate-only CCA's window is its step budget
    assert ".min_tso_segs = (void *)ccm_x_min_tso_segs," in grid and "min_tso_segs" not in ack
    assert "st->cwnd_pkts = (u64)tp->snd_cwnd_clamp;" in grid and "(u64)(2 * rate / " in ack
    with pytest.raises(ValueError, match="steps must be one of ack, grid"):
        bpf_source(g, Settings(steps="acks"), "ccm_x", None)
    code, out, err = run("export", str(_cca("cc_probe_slow")), "-o", str(tmp_path), "--steps", "grid", "--json")
    assert code == 0, err
    assert '"steps": "grid"' in out and "if (1)  /* a boundary passed" in (tmp_path / "ccm_cc_probe_sl.bpf.c").read_text()
    code, _, err = run("export", str(_cca("cc_probe_slow")), "-o", str(tmp_path), "--steps", "tick")
    assert code == 2 and "invalid choice: 'tick'" in err


@needs_kernel
def test_grid_steps_load_and_unload(tmp_path: Path) -> None:
    code, out, err = run("export", str(_cca("cc_probe_slow")), "-o", str(tmp_path), "--steps", "grid", "--D", "1",
                         "--load", "--hold", "0", "--json")
    assert code == 0, err
    assert '"registered": true' in out and '"left_registered": false' in out


@pytest.mark.parametrize(("name", "line"), [("aimd", 40), ("copa", 37), ("bbr1", 102)])
def test_choose_is_refused_in_one_line(name: str, line: int) -> None:
    code, _out, err = run("export", str(_cca(name)), "-o", "/nonexistent/never")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"{_cca(name)}:{line}:") and "choose()" in err


def test_template_and_unbounded_history_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="template with holes"):
        generate(load_cca(_cca("tpl_ccac_2expr")), Settings())
    deep = tmp_path / "deep.cca"
    deep.write_text("cwnd = S - S[t - 80]\n")
    with pytest.raises(SpecError, match="unbounded history: 'S' is read 80 steps back"):
        generate(load_cca(deep), Settings())
    with pytest.raises(SpecError, match=r"cubic.cca: error: cannot export: '\*\*' with a computed base"):
        generate(load_cca(_cca("cubic")), Settings())


def test_an_observation_the_kernel_lacks_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setattr(program, "MEASURED", tuple(n for n in program.MEASURED if n != "rtt_min"))
    with pytest.raises(SpecError, match="'rtt_min' is an observation the kernel program does not make"):
        program.generate(load_cca(_cca("contract_lin")), Settings())


def test_codegen_domain_folds_constants_and_refuses_big_ratios() -> None:
    d = CDomain()
    x = d.add(d.num(Fraction(1, 3)), d.num(Fraction(2, 3)))
    assert x.const == 1 and not d.lines
    y = d.mul(d.div(d.emit("st->mss"), d.whole(3)), d.num(Fraction(3)))
    assert d.lines[-2:] == ["T[1] = ccm_mulc(T[0], 1LL, 3LL);", "T[2] = ccm_mulc(T[1], 3LL, 1LL);"]
    assert y.expr == "T[2]"
    with pytest.raises(ExportError, match="over 2"):
        d.mul(y, d.num(Fraction(1, 2 ** 32)))


@needs_cc
def test_differential_quick(tmp_path: Path) -> None:
    prog = load_cca(_cca("cc_probe_slow"))
    s = Settings(D=1)
    g = generate(prog, s)
    r = differential(prog, g, s, build_harness(g, s, tmp_path), 100, 30, seed=7)
    assert r.steps == 3000 and not r.mismatches, r.mismatches[:3]


@needs_cc
def test_check_option(tmp_path: Path) -> None:
    code, out, err = run("export", str(_cca("const_cwnd")), "-o", str(tmp_path), "--check", "40", "--json")
    assert code == 0, err
    assert '"steps": 1200' in out and '"mismatches": 0' in out


@pytest.mark.slow
@needs_cc
@pytest.mark.parametrize("name", EXPORTS)
@pytest.mark.parametrize("D", [0, 1])
def test_differential_thousands(tmp_path: Path, name: str, D: int) -> None:
    prog = load_cca(_cca(name))
    s = Settings(D=D)
    g = generate(prog, s)
    r = differential(prog, g, s, build_harness(g, s, tmp_path), 2000, 30, seed=D)
    assert r.steps == 60000 and not r.mismatches, r.mismatches[:3]


def _ours() -> list[str]:
    return [n for n in build.available() if n.startswith("ccm_")]


@needs_kernel
@pytest.mark.parametrize("name", ["const_cwnd", pytest.param("cc_probe_slow", marks=pytest.mark.slow)])
def test_compile_verify_load_unload(tmp_path: Path, name: str) -> None:
    code, out, err = run("export", str(_cca(name)), "-o", str(tmp_path), "--load", "--hold", "0", "--json")
    assert code == 0, err
    assert '"registered": true' in out and '"left_registered": false' in out
    assert ca_name(name) not in build.available()


@pytest.mark.slow
@needs_kernel
@pytest.mark.parametrize("name", ["cc_qdel", "reno"])
def test_compile_verify_load_unload_slow(tmp_path: Path, name: str) -> None:
    code, out, err = run("export", str(_cca(name)), "-o", str(tmp_path), "--load", "--smoke", "5")
    assert code == 0, err
    assert f"with {ca_name(name)}:" in out and f"unregistered {ca_name(name)}" in out
    assert ca_name(name) not in build.available()


@contextmanager
def _held(name: str, out: Path) -> Iterator[subprocess.Popen[str]]:
    """``export --load`` of const_cwnd as ``name`` in a process of its own, once the
    kernel lists it; killed and unregistered at the end, whatever happened."""
    cmd = [sys.executable, "-c", "import sys; from ccmatic.cli.main import main; sys.exit(main())",
           "export", str(_cca("const_cwnd")), "-o", str(out), "--name", name, "--load"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while name not in build.available() and time.monotonic() < end and p.poll() is None:
            time.sleep(0.1)
        assert name in build.available(), p.communicate()[1] if p.poll() is not None else "not registered"
        yield p
    finally:
        if p.poll() is None:
            p.kill()
        build.unregister(name)


@pytest.mark.slow
@needs_kernel
def test_sigterm_during_load_unregisters(tmp_path: Path) -> None:
    name = "ccm_t_sigterm"
    with _held(name, tmp_path) as p:
        p.send_signal(signal.SIGTERM)
        out, _err = p.communicate(timeout=30)
    assert f"unregistered {name}" in out
    assert name not in build.available()


@pytest.mark.slow
@needs_kernel
def test_stale_registration_is_removed(tmp_path: Path) -> None:
    name = "ccm_t_stale"
    code, _, err = run("export", str(_cca("const_cwnd")), "-o", str(tmp_path), "--name", name, "--compile")
    assert code == 0, err
    build.register(tmp_path / f"{name}.bpf.o")  # a run that crashed before unregistering
    try:
        assert name in build.available()
        code, out, err = run("export", str(_cca("const_cwnd")), "-o", str(tmp_path), "--name", name, "--load",
                             "--hold", "0")
    finally:
        build.unregister(name)
    assert code == 0, err
    assert f"removed a stale registration of {name}" in out and name not in build.available()


def test_the_generated_c_is_the_same_in_every_process() -> None:
    """The temporaries' slots do not depend on Python's string hashing."""
    code = ("from ccmatic.export.program import Settings, generate; from ccmatic.export.kernel import bpf_source; "
            "from ccmatic.spec.cca import load_cca; "
            f"print(bpf_source(generate(load_cca({str(_cca('vegas'))!r}), Settings()), Settings(), 'ccm_x', None))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2, 3)}
    assert len(outs) == 1 and "ccm_sel" in outs.pop()


def test_a_name_is_held_by_one_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(build, "LOCKS", tmp_path / "locks")
    with build.claim("ccm_x"):
        assert (tmp_path / "locks" / "export-ccm_x.lock").read_text() == str(os.getpid())
        held = rf"'ccm_x' is loaded by another ccmatic process \(pid {os.getpid()}\)"
        with pytest.raises(build.NameHeld, match=held), build.claim("ccm_x"):
            pass
        with build.claim("ccm_y"):  # another name is free
            pass
    assert not (tmp_path / "locks").exists()  # nothing left behind
    with build.claim("ccm_x"):  # free again
        pass


@pytest.mark.slow
@needs_kernel
def test_a_second_load_of_a_live_name_is_refused(tmp_path: Path) -> None:
    name = "ccm_t_twice"
    with _held(name, tmp_path) as p:
        code, _out, err = run("export", str(_cca("const_cwnd")), "-o", str(tmp_path / "b"), "--name", name,
                              "--load", "--hold", "0")
        assert code == 1 and err.count("\n") == 1, err
        assert f"'{name}' is loaded by another ccmatic process (pid {p.pid})" in err
        assert name in build.available()  # the first run's registration is left alone
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    assert name not in build.available()
    code, _, err = run("export", str(_cca("const_cwnd")), "-o", str(tmp_path), "--name", name, "--load",
                       "--hold", "0")
    assert code == 0, err  # the kernel has freed the program: the name registers again at once


def test_no_root_or_tools_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(shutil, "which", lambda tool: None)
    code, _out, err = run("export", str(_cca("const_cwnd")), "-o", str(tmp_path), "--load")
    assert code == 2 and err.count("\n") == 1 and "cannot load: clang is not installed" in err
    assert (tmp_path / "ccm_const_cwnd.bpf.c").exists()


@pytest.mark.slow
@needs_kernel
def test_kernel_applies_the_decisions(tmp_path: Path) -> None:
    """Mid-transfer, ``ss -ti`` shows the window and pacing rate the program wrote:
    const_cwnd keeps its first window (7 packets here); const_rate's MSS per RTprop of
    10 ms is 1448 B / 10 ms = 1,158,400 bit/s, and a rate-only CCA's window is
    2 · rate / mss + 4 = 6 packets."""
    code, out, err = run("export", str(_cca("const_cwnd")), "-o", str(tmp_path), "--load", "--smoke", "3",
                         "--init-cwnd-pkts", "7", "--json")
    assert code == 0, err
    assert '"ss_cwnd": 7' in out
    code, out, err = run("export", str(_cca("const_rate")), "-o", str(tmp_path), "--load", "--smoke", "3",
                         "--rtprop-ms", "10", "--json")
    assert code == 0, err
    assert '"ss_pacing_rate": "1158400bps"' in out and '"ss_cwnd": 6' in out
