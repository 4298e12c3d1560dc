"""``ccmatic simulate`` and ``ccmatic evaluate`` through the CLI (in-process).

JSON shapes and ranges of the metrics, reproducibility of seeded runs, plots,
several flows, link defaults, one-line input errors (exit 2, no traceback), the
refusal of simulator-only CCA files by verify/check, and a tiny evaluate grid with
the proofs' steady-state bounds.  Runs are short (a few simulated seconds).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli as run

from ccmatic.io.runs import report_progress
from ccmatic.io.sim_report import flows_text

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# file or flag, optional :line[:col], then ': error: ' and the message
LINE = re.compile(r"^(?P<file>.+?)(?::(?P<line>\d+)(?::(?P<col>\d+))?)?: error: (?P<msg>.+)$")




def _no_constant(name: str) -> Any:
    raise ValueError(f"JSON output contains {name}")


def strict_json(text: str) -> Any:
    """Parse JSON, refusing NaN / Infinity / -Infinity (not JSON)."""
    return json.loads(text, parse_constant=_no_constant)


def sim_json(*argv: object) -> dict[str, Any]:
    code, out, err = run("simulate", *argv, "--json")
    assert code == 0, err
    d = strict_json(out)
    assert isinstance(d, dict)
    return d


def expect_input_error(*argv: object, where: str | None = None, words: tuple[str, ...] = ()) -> str:
    """Exit code 2, exactly one stderr line 'where[:line[:col]]: error: ...', no traceback."""
    code, out, err = run(*argv)
    assert "Traceback" not in err and "Traceback" not in out
    assert code == 2, f"exit code {code}, stderr: {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), f"expected one stderr line, got {lines!r}"
    m = LINE.match(lines[0])
    assert m is not None, f"not 'where[:line[:col]]: error: ...': {lines[0]!r}"
    if where is not None:
        assert m["file"] == where, lines[0]
    for w in words:
        assert w.lower() in m["msg"].lower(), f"{w!r} not in {lines[0]!r}"
    return lines[0]


# -- simulate --json ---------------------------------------------------------------------

@pytest.mark.parametrize("model", ["ideal", "cbr_delay", "ack_agg"])
def test_simulate_json_shape_and_ranges(model: str) -> None:
    d = sim_json("cc_qdel", "--model", model, "--flows", "3", "--duration", "3", "--seed", "5")
    assert set(d) == {"config", "metrics", "inputs"}
    assert d["inputs"] == {"cca": [str(ROOT / "templates" / "cc_qdel.cca")]}
    cfg, m = d["config"], d["metrics"]
    assert cfg["link"] == model and cfg["seed"] == 5 and cfg["duration_s"] == 3.0
    assert cfg["C_bytes_per_s"] == pytest.approx(48e6 / 8)
    assert 0.0 <= m["utilization"] <= 1.0
    assert len(m["flows"]) == 3 and len(cfg["flows"]) == 3
    assert 0.0 < m["jain"] <= 1.0
    # the flows' shares add up to the utilization, and Jain's index is theirs
    assert sum(f["share"] for f in m["flows"]) == pytest.approx(m["utilization"])
    thr = [f["throughput"] for f in m["flows"]]
    assert m["jain"] == pytest.approx(sum(thr) ** 2 / (len(thr) * sum(x * x for x in thr)))
    assert 0.0 <= m["loss_rate"] <= 1.0 and m["queue_max_bdp"] >= m["queue_mean_bdp"] >= 0.0
    # the queue never exceeds the drop-tail buffer (default 1 BDP)
    assert m["queue_max_bytes"] <= cfg["buffer_bytes"] + 1e-6
    for f in m["flows"]:
        assert f["rtt_mean"] is not None and f["rtt_mean"] >= 0.04 - 1e-9  # never below the RTprop
        assert f["rtt_max"] >= f["rtt_mean"]


def test_simulate_json_has_no_nan_when_a_flow_never_starts() -> None:
    # flow 1 starts after the end of the run: no RTT samples (NaN inside) -> null in JSON
    d = sim_json("reno", "--flows", "2", "--stagger", "5", "--duration", "2")
    f0, f1 = d["metrics"]["flows"]
    assert d["config"]["flows"][1]["start_s"] == 5.0
    assert f1["throughput"] == 0.0 and f1["rtt_mean"] is None and f1["rtt_ratio"] is None
    assert f0["throughput"] > 0 and f0["rtt_mean"] is not None
    assert d["metrics"]["jain"] == pytest.approx(0.5)


def test_strict_json_rejects_nan() -> None:
    # the helper the tests above rely on really refuses NaN
    with pytest.raises(ValueError, match="NaN"):
        strict_json('{"x": NaN}')


def test_simulate_text_output() -> None:
    code, out, err = run("simulate", "reno", "--with", "bbr1", "--flows", "2", "--duration", "2")
    assert code == 0 and err == ""
    assert "utilization" in out and "Jain's index" in out
    assert "flow 0 (reno" in out and "flow 1 (bbr1" in out


# -- reproducibility ---------------------------------------------------------------------

def test_same_seed_same_metrics_other_seed_differs() -> None:
    args = ("cc_qdel", "--model", "cbr_delay", "--R", "20", "--duration", "3")
    a = sim_json(*args, "--seed", "1")
    b = sim_json(*args, "--seed", "1")
    c = sim_json(*args, "--seed", "2")
    assert a == b
    assert a["metrics"] != c["metrics"]  # the jitter is random
    assert c["config"]["seed"] == 2


# -- plots -------------------------------------------------------------------------------

def test_plot_writes_png(tmp_path: Path) -> None:
    p = tmp_path / "run.png"
    code, out, err = run("simulate", "reno", "--with", "bbr1", "--flows", "2", "--duration", "2", "--plot", p)
    assert code == 0, err
    data = p.read_bytes()
    assert len(data) > 1000 and data.startswith(PNG_MAGIC)
    assert str(p) in out


def test_plot_under_a_regular_file_is_input_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    p = tmp_path / "file" / "run.png"
    expect_input_error("simulate", "reno", "--duration", "2", "--plot", p, where="--plot", words=("not a folder",))


def test_plot_in_missing_folder_creates_it(tmp_path: Path) -> None:
    p = tmp_path / "missing" / "run.png"
    code, _, err = run("simulate", "reno", "--duration", "2", "--plot", p)
    assert code == 0 and p.is_file(), err


def test_plot_with_txt_suffix_is_input_error(tmp_path: Path) -> None:
    p = tmp_path / "run.txt"
    expect_input_error("simulate", "reno", "--duration", "2", "--plot", p, where="--plot", words=(".png",))
    assert not p.exists()


# -- several flows, --with, per-flow RTprops ---------------------------------------------

def test_with_assigns_ccas_in_turn() -> None:
    d = sim_json("reno", "--with", "bbr1", "--flows", "2", "--duration", "2")
    assert [f["cca"] for f in d["config"]["flows"]] == ["reno", "bbr1"]
    assert d["config"]["ccas"] == ["reno", "bbr1"]
    assert len(d["metrics"]["flows"]) == 2
    d3 = sim_json("reno", "--with", "bbr1", "--flows", "3", "--duration", "2")
    assert [f["cca"] for f in d3["config"]["flows"]] == ["reno", "bbr1", "reno"]


def test_with_runs_every_named_cca() -> None:
    """Without --flows, each CCA named runs one flow; fewer flows than CCAs named is
    one error line (--with is never silently dropped)."""
    d = sim_json("reno", "--with", "bbr1", "--with", "cubic", "--duration", "1")
    assert [f["cca"] for f in d["config"]["flows"]] == ["reno", "bbr1", "cubic"]
    expect_input_error("simulate", "reno", "--with", "bbr1", "--flows", "1", where="--flows", words=("2 CCAs",))


def test_per_flow_rtprops() -> None:
    d = sim_json("reno", "--R", "20,40", "--flows", "2", "--duration", "2")
    assert [f["R_s"] for f in d["config"]["flows"]] == pytest.approx([0.02, 0.04])
    # the BDP is that of the shortest flow: C * 20 ms with a 1-BDP buffer
    assert d["config"]["buffer_bytes"] == pytest.approx(48e6 / 8 * 0.02)
    # each flow's RTT is at least its own RTprop
    r0, r1 = d["metrics"]["flows"]
    assert r0["rtt_mean"] >= 0.02 - 1e-9 and r1["rtt_mean"] >= 0.04 - 1e-9
    one = sim_json("reno", "--R", "30", "--flows", "2", "--duration", "2")
    assert [f["R_s"] for f in one["config"]["flows"]] == pytest.approx([0.03, 0.03])


def test_stagger_and_warmup_in_config() -> None:
    d = sim_json("aimd_incr_every_step", "--flows", "3", "--stagger", "0.5", "--warmup", "1", "--duration", "3")
    assert [f["start_s"] for f in d["config"]["flows"]] == pytest.approx([0.0, 0.5, 1.0])
    assert d["config"]["warmup_s"] == 1.0
    default = sim_json("aimd_incr_every_step", "--duration", "3")
    assert default["config"]["warmup_s"] == pytest.approx(0.6)  # 20% of the run


def test_a_one_packet_buffer_is_accepted() -> None:
    """The smallest buffer that holds a packet (0.00625 BDP at 48 Mbit/s, 40 ms) runs."""
    d = sim_json("reno", "--buffer", "0.00625", "--duration", "2")
    assert d["metrics"]["queue_max_bytes"] <= 1500 + 1e-6


def test_ack_trains_and_ticks_reach_the_config() -> None:
    """--ack-train and --ticks appear in --json's config when set, and only then; a
    train shorter than a tick gets a warning."""
    d = sim_json("reno", "--model", "ack_agg", "--ack-train", "3", "--ticks", "200", "--duration", "2")
    assert d["config"]["ack_train_s"] == pytest.approx(3e-6) and d["config"]["ticks_per_rtt"] == 200
    assert not any("ACK train" in w for w in d["config"]["warnings"])
    # ticks of R/20 (2 ms) outlast a 40-ms batch's train (160 ACKs, 0.48 ms): said
    coarse = sim_json("reno", "--model", "ack_agg", "--ack-train", "3", "--duration", "2")["config"]
    assert any("outlast an ACK train" in w for w in coarse["warnings"])
    plain = sim_json("reno", "--model", "ack_agg", "--duration", "2")["config"]
    assert "ack_train_s" not in plain and "ticks_per_rtt" not in plain


def test_infinite_buffer_has_no_loss() -> None:
    d = sim_json("reno", "--buffer", "inf", "--model", "ack_agg", "--duration", "2")
    assert d["config"]["buffer_bytes"] is None
    assert d["metrics"]["loss_rate"] == 0.0 and d["metrics"]["loss_per_R_max"] == 0.0


# -- link defaults -----------------------------------------------------------------------

def test_default_D_ideal_is_zero_cbr_delay_is_R() -> None:
    assert sim_json("cc_qdel", "--model", "ideal", "--R", "30", "--duration", "2")["config"]["D_s"] == 0
    assert sim_json("cc_qdel", "--model", "cbr_delay", "--R", "30", "--duration", "2")["config"]["D_s"] \
        == pytest.approx(0.03)
    # several RTprops: D defaults to the shortest
    assert sim_json("cc_qdel", "--model", "cbr_delay", "--R", "20,40", "--flows", "2",
                    "--duration", "2")["config"]["D_s"] == pytest.approx(0.02)
    # an explicit --D wins
    assert sim_json("cc_qdel", "--model", "cbr_delay", "--R", "30", "--D", "5",
                    "--duration", "2")["config"]["D_s"] == pytest.approx(0.005)


def test_ideal_link_rtt_is_at_least_R_and_bounded_by_buffer() -> None:
    # no jitter: an RTT sample is R plus the queueing delay, at most buffer / C (+ one tick)
    d = sim_json("aimd_incr_every_step", "--model", "ideal", "--R", "40", "--buffer", "2", "--duration", "3")
    f = d["metrics"]["flows"][0]
    assert 0.04 - 1e-9 <= f["rtt_mean"] <= f["rtt_max"] <= 0.04 + 2 * 0.04 + 0.04 / 20 + 1e-9


# -- bad input: one line, exit 2 ---------------------------------------------------------

@pytest.mark.parametrize(("extra", "where", "words"), [
    (("--model", "warp"), "--model", ("unknown link model",)),
    (("--C", "0"), "--C", ("positive",)),
    (("--C", "abc"), "--C", ("number",)),
    (("--buffer", "-1"), "--buffer", ("non-negative",)),
    (("--buffer", "0"), "--buffer", ("less than one packet",)),
    (("--buffer", "0.006"), "--buffer", ("less than one packet", "0.00625 BDP")),  # 1440 of 240,000 bytes
    (("--flows", "0"), "--flows", ("at least one flow",)),
    (("--R", "20,40,60", "--flows", "2"), "--R", ("one per flow",)),
    (("--R", "0"), "--R", ("positive",)),
    (("--duration", "0"), "--duration", ("positive",)),
    (("--stagger", "-1", "--flows", "2"), "--stagger", ("non-negative",)),
    (("--flows", "two"), "ccmatic simulate", ("invalid int",)),
    (("--ack-train", "3"), "--ack-train", ("ack_agg",)),
    (("--model", "ack_agg", "--ack-train", "-1"), "--ack-train", ("non-negative",)),
    (("--model", "ack_agg", "--ack-train", "2000"), "--ack-train", ("over 1000",)),
    (("--ticks", "0"), "--ticks", ("outside 1..100,000",)),
    (("--ticks", "100000", "--duration", "600"), "--duration", ("R/100000", "lower --ticks")),
])
def test_simulate_bad_options(extra: tuple[str, ...], where: str, words: tuple[str, ...]) -> None:
    expect_input_error("simulate", "reno", "--duration", "2", *extra, where=where, words=words)


def test_simulate_unknown_cca() -> None:
    expect_input_error("simulate", "no_such_cca", "--duration", "2", where="no_such_cca", words=("not found",))
    expect_input_error("simulate", "reno", "--with", "no_such_cca", "--duration", "2", where="no_such_cca")


def test_simulate_template_with_holes() -> None:
    line = expect_input_error("simulate", "tpl_ccac_2expr", "--duration", "2", words=("template with holes",))
    m = LINE.match(line)
    assert m is not None and m["file"].endswith("tpl_ccac_2expr.cca") and m["line"] is not None
    # also as the --with CCA
    expect_input_error("simulate", "reno", "--with", "tpl_ccac_2expr", "--flows", "2", "--duration", "2",
                       words=("template with holes",))


def test_simulate_choose_without_options() -> None:
    line = expect_input_error("simulate", "any_sender", "--duration", "2", words=("choose()",))
    assert "any_sender.cca" in line


def test_evaluate_bad_buffer_and_jobs(tmp_path: Path) -> None:
    base = ("evaluate", "reno", "--C", "24", "--R", "20", "--duration", "2")
    out = tmp_path / "ev"
    expect_input_error(*base, "--buffer", "0", "--jobs", "1", "--out", out, where="--buffer", words=("positive",))
    expect_input_error(*base, "--buffer", "1", "--jobs", "0", "--out", out, where="--jobs", words=("at least one",))
    expect_input_error(*base, "--buffer", "1", "--C", "x", "--jobs", "1", "--out", out, where="--C")
    expect_input_error(*base, "--buffer", "1", "--model", "warp", "--jobs", "1", "--out", out, where="--model")
    # 1/64 BDP at 24 Mbit/s and 20 ms is 937 bytes: no whole packet
    expect_input_error(*base, "--buffer", "1/64,1", "--jobs", "1", "--out", out, where="--buffer",
                       words=("less than one packet",))
    expect_input_error("evaluate", "tpl_ccac_2expr", "--out", out, words=("template with holes",))
    assert not out.exists()  # nothing written on bad input


# -- simulator-only CCA files are refused by verify / check ------------------------------

@pytest.mark.parametrize("cca", ["cubic", "reno"])
def test_verify_refuses_simulator_only_cca(cca: str) -> None:
    path = TEMPLATES / f"{cca}.cca"
    line = expect_input_error("verify", ROOT / "queries" / "verify" / "aimd-ccac-premature-loss.toml",
                              "--cca", path, words=("simulator-only",))
    m = LINE.match(line)
    assert m is not None and m["file"] == str(path) and m["line"] == "1"


def test_check_refuses_query_with_simulator_only_cca(tmp_path: Path) -> None:
    src = (ROOT / "queries" / "verify" / "aimd-ccac-premature-loss.toml").read_text()
    assert 'cca = "aimd"' in src
    q = tmp_path / "cubic-query.toml"
    q.write_text(src.replace('cca = "aimd"', 'cca = "cubic"'))
    expect_input_error("check", q, words=("simulator-only",))
    expect_input_error("verify", q, words=("simulator-only",))
    # the linear twin is accepted
    ok = tmp_path / "aimd-query.toml"
    ok.write_text(src)
    code, _, err = run("check", ok)
    assert (code, err) == (0, "")


def test_simulator_only_cca_still_simulates() -> None:
    d = sim_json("cubic", "--duration", "2")
    assert d["config"]["flows"][0]["cca"] == "cubic" and d["metrics"]["utilization"] > 0


# -- evaluate ----------------------------------------------------------------------------

EV_ARGS = ("--model", "cbr_delay", "--C", "24", "--R", "20", "--duration", "20")


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    out = tmp_path_factory.mktemp("sim_cli") / "ev"  # created by evaluate
    code, stdout, err = run("evaluate", "cc_probe_slow", "cc_qdel", *EV_ARGS, "--buffer", "1/16,8",
                            "--jobs", "2", "--json", "--out", out)
    assert code == 0, err
    assert "Traceback" not in err
    summary = strict_json(stdout)
    data = strict_json((out / "evaluate.json").read_text())
    return out, summary, data


def test_evaluate_runs(evaluated: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    _out, summary, data = evaluated
    runs = data["runs"]
    assert len(runs) == 4 and summary["runs"] == 4
    for r in runs:
        assert {"cca", "C_mbps", "R_ms", "buffer_bdp", "metrics", "steady"} <= set(r)
        assert r["C_mbps"] == 24.0 and r["R_ms"] == 20.0 and r["model"] == "cbr_delay"
        assert 0.0 <= r["metrics"]["utilization"] <= 1.0
        assert len(r["metrics"]["flows"]) == 1
    assert sorted((r["cca"], r["buffer_bdp"]) for r in runs) == [
        ("cc_probe_slow", "1/16"), ("cc_probe_slow", "8"), ("cc_qdel", "1/16"), ("cc_qdel", "8")]
    assert data["grid"]["buffer_bdp"] == ["1/16", "8"] and data["grid"]["model"] == "cbr_delay"


def test_evaluate_bounds_hold(evaluated: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    _out, summary, data = evaluated
    bounds = data["bounds"]
    assert {b["cca"] for b in bounds} == {"cc_probe_slow", "cc_qdel"}
    assert all(b["holds"] is True for b in bounds), [b for b in bounds if b["holds"] is not True]
    # cc_qdel's proof needs a deep buffer (3 C (R + D)): its bounds apply to the 8-BDP run only
    qdel = [b for b in bounds if b["cca"] == "cc_qdel"]
    assert qdel and {b["buffer_bdp"] for b in qdel} == {"8"}
    assert {b["bound"] for b in qdel} == {"utilization >= 0.83", "queue <= 4.5 C (R + D)"}
    # cc_probe_slow's (CBR-delay link) apply to both buffers
    probe = [b for b in bounds if b["cca"] == "cc_probe_slow"]
    assert {b["buffer_bdp"] for b in probe} == {"1/16", "8"}
    for b in bounds:
        assert b["steady_from_s"] is not None and 0 <= b["steady_from_s"] <= 0.9 * 20
    assert summary["bounds_checked"] == len(bounds) and summary["bounds_violated"] == []
    assert summary["bounds_not_reached"] == 0
    # the steady-state metrics behind the check satisfy the bound
    run8 = next(r for r in data["runs"] if r["cca"] == "cc_qdel" and r["buffer_bdp"] == "8")
    assert run8["steady"]["metrics"]["utilization"] >= 0.83


def test_evaluate_plots(evaluated: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    out, summary, _data = evaluated
    for name in ("utilization.png", "queue.png", "loss.png"):
        data = (out / name).read_bytes()
        assert len(data) > 1000 and data.startswith(PNG_MAGIC)
    assert sorted(Path(p).name for p in summary["plots"]) == ["loss.png", "queue.png", "utilization.png"]


def test_evaluate_one_job_and_simulate_agree(tmp_path: Path,
                                             evaluated: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    """A run is the same in a worker process, in-process (--jobs 1) and with simulate."""
    _out, _summary, data = evaluated
    ref = next(r for r in data["runs"] if r["cca"] == "cc_qdel" and r["buffer_bdp"] == "8")
    code, stdout, err = run("evaluate", "cc_qdel", *EV_ARGS, "--buffer", "8", "--jobs", "1", "--out", tmp_path)
    assert code == 0, err
    assert "1 runs" in stdout and "proved bounds" in stdout
    row = strict_json((tmp_path / "evaluate.json").read_text())["runs"][0]
    assert row["metrics"] == ref["metrics"] and row["steady"] == ref["steady"]
    # simulate with evaluate's setting: D = R, metrics over the second half; simulate
    # streams its metrics (sim/tally.py), so a flow's mean RTT may differ in its last bit
    sim = sim_json("cc_qdel", "--model", "cbr_delay", "--C", "24", "--R", "20", "--buffer", "8",
                   "--duration", "20", "--warmup", "10", "--seed", "0")
    rtt = ("rtt_mean", "rtt_ratio")
    for a, b in zip(sim["metrics"].pop("flows"), dict(ref["metrics"]).pop("flows"), strict=True):
        assert {k: v for k, v in a.items() if k not in rtt} == {k: v for k, v in b.items() if k not in rtt}
        assert [a[k] for k in rtt] == pytest.approx([b[k] for k in rtt], rel=1e-12)
    assert sim["metrics"] == {k: v for k, v in ref["metrics"].items() if k != "flows"}


# -- input errors found while writing these tests (now fixed) ---------------------------

def test_evaluate_flows_zero_is_input_error(tmp_path: Path) -> None:
    expect_input_error("evaluate", "reno", "--C", "24", "--R", "20", "--buffer", "1", "--duration", "2",
                       "--jobs", "1", "--flows", "0", "--out", tmp_path / "ev", where="--flows")


def test_negative_seed_is_input_error() -> None:
    expect_input_error("simulate", "reno", "--duration", "2", "--seed", "-1", where="--seed")


def test_huge_rate_is_input_error() -> None:
    expect_input_error("simulate", "reno", "--duration", "2", "--C", "1e400", where="--C")


def test_evaluate_out_is_a_file_is_input_error(tmp_path: Path) -> None:
    f = tmp_path / "not_a_dir"
    f.write_text("")
    expect_input_error("evaluate", "reno", "--C", "24", "--R", "20", "--buffer", "1", "--duration", "2",
                       "--jobs", "1", "--out", f)


def test_evaluate_choose_error_in_worker_is_one_line(tmp_path: Path) -> None:
    expect_input_error("evaluate", "any_sender", "--C", "24", "--R", "20", "--buffer", "1", "--duration", "2",
                       "--jobs", "2", "--out", tmp_path / "ev", words=("choose()",))


def test_evaluate_choose_error_in_process_is_one_line(tmp_path: Path) -> None:
    # the --jobs 1 twin of the test above works
    expect_input_error("evaluate", "any_sender", "--C", "24", "--R", "20", "--buffer", "1", "--duration", "2",
                       "--jobs", "1", "--out", tmp_path / "ev", words=("choose()",))


def test_seeds_matter_only_through_randomness() -> None:
    """On the ideal link with a deterministic CCA the seed only moves packets within
    their tick (their arrival phase at the bottleneck): the same seed gives the same
    run, another seed nearly the same throughput."""
    a = sim_json("aimd_incr_every_step", "--model", "ideal", "--duration", "2", "--seed", "1")
    again = sim_json("aimd_incr_every_step", "--model", "ideal", "--duration", "2", "--seed", "1")
    b = sim_json("aimd_incr_every_step", "--model", "ideal", "--duration", "2", "--seed", "2")
    assert a["metrics"] == again["metrics"]
    assert a["metrics"] != b["metrics"]
    assert abs(a["metrics"]["utilization"] - b["metrics"]["utilization"]) < 0.01


# -- --series: per-flow time series ---------------------------------------------------------

def test_series_csv_has_a_row_per_flow_and_step(tmp_path: Path) -> None:
    f = tmp_path / "out" / "series.csv"
    code, out, err = run("simulate", "bbr1", "--with", "reno", "--flows", "2", "--duration", "2", "--series", f)
    assert code == 0, err
    assert f"series: {f}" in out
    rows = list(csv.DictReader(f.open()))
    assert len(rows) == 2 * 50  # two flows, 2 s of 40 ms steps
    assert {r["cca"] for r in rows} == {"bbr1", "reno"}
    assert "state.btl_bw" in rows[0] and "state.ssthresh" in rows[0]
    for flow in ("0", "1"):
        mine = [r for r in rows if r["flow"] == flow]
        sent = [float(r["sent_B"]) for r in mine]
        assert sent == sorted(sent) and sent[-1] > 0
        assert float(mine[0]["queue_B"]) == 0.0  # nothing sent yet
        assert all(float(r["acked_B"]) + float(r["lost_B"]) <= float(r["sent_B"]) + 1e-6 for r in mine)
    bbr = [r for r in rows if r["cca"] == "bbr1"]
    assert all(r["state.ssthresh"] == "" for r in bbr)  # reno's state is not bbr's
    assert any(r["rtt_s"] == "" for r in bbr) and float(bbr[-1]["rtt_s"]) >= 0.04


def test_series_json_is_strict_and_matches_the_metrics(tmp_path: Path) -> None:
    f = tmp_path / "series.json"
    d = sim_json("reno", "--duration", "2", "--series", f)
    doc = strict_json(f.read_text())
    (flow,) = doc["flows"]
    s = flow["series"]
    assert flow["cca"] == "reno" and flow["R_s"] == 0.04
    assert len(s["time_s"]) == 50 and s["rtt_s"][0] is None
    assert s["cwnd_B"][-1] > 0 and d["metrics"]["flows"][0]["throughput"] > 0


def test_series_bad_suffix_is_input_error(tmp_path: Path) -> None:
    expect_input_error("simulate", "reno", "--duration", "2", "--series", tmp_path / "s.txt", where="--series",
                       words=(".csv",))


def test_evaluate_progress_in_a_log_is_a_line_per_tenth() -> None:
    """Not on a terminal, the progress is a line at every tenth of the grid (not one
    carriage-returned line per run)."""
    buf = io.StringIO()
    for n in range(1, 487):
        report_progress(buf, n, 486)
    lines = buf.getvalue().splitlines()
    assert "\r" not in buf.getvalue() and len(lines) == 10
    assert lines[0] == "  49/486 runs" and lines[-1] == "  486/486 runs"


def test_the_first_line_counts_each_ccas_flows() -> None:
    assert flows_text(["reno"]) == "1 reno flow"
    assert flows_text(["bbr1"] * 4) == "4 bbr1 flows"
    assert flows_text(["cubic", "reno", "cubic"]) == "3 flows (2 cubic, 1 reno)"
    assert flows_text(["reno"] * 1000) == "1,000 reno flows"


def test_running_out_of_memory_is_one_line_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import ccmatic.cli.simulate as simulate_cli

    def full(*_a: Any, **_k: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(simulate_cli, "simulate_metrics", full)  # a run without --plot or --series
    code, out, err = run("simulate", "reno", "--duration", "1")
    assert (code, out) == (3, "") and err.count("\n") == 1
    assert err.startswith("out of memory: the run stopped, nothing was decided (hint:")
