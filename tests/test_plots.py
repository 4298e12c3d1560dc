"""The plots a reader meets without stdout (``simulate``, ``evaluate``, ``contract``,
``bench`` and ``tradeoff``): each figure has a title naming the command, the CCAs and
the link; axis labels carry units; legends name CCAs (never "flow 0") and sit
outside the axes; log axes have a few round, non-overlapping tick labels; a curve
that cannot be drawn is not listed.  Checked on matplotlib's Figure objects, not on
images."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from ccmatic.engine.tradeoff import compute
from ccmatic.io.charts import bench_figure, tradeoff_figure
from ccmatic.io.contract_plots import contract_figure
from ccmatic.io.figures import flow_labels, log_ticks
from ccmatic.io.growth import bench_growth
from ccmatic.io.sim_plots import grid_figure, run_figure, run_title
from ccmatic.sim.fine import simulate
from ccmatic.sim.links import Link
from ccmatic.sim.records import Flow, SimConfig
from ccmatic.spec.cca import load_cca
from ccmatic.spec.lossfn import parse_loss
from tests.helpers import run_cli

pytest.importorskip("matplotlib")

UNIT = re.compile(r"\((?:[^()]*\b(?:Mbit/s|ms|s|BDP|packets|kB|steps|bytes|fraction|count|seconds|true)\b[^()]*)\)"
                  r"|round trips|unit of C0")


def _cca(name: str) -> Any:
    return load_cca(Path(__file__).resolve().parents[1] / "templates" / f"{name}.cca")


def _run(names: list[str], duration: float = 1.0) -> Any:
    link = Link("ideal", 48e6 / 8, 0.0, 48e6 / 8 * 0.04)
    flows = tuple(Flow(_cca(n), 0.04) for n in names)
    return simulate(SimConfig(link, flows, duration, seed=1))


def _legend_texts(fig: Any) -> list[str]:
    legs = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    return [t.get_text() for leg in legs if leg is not None for t in leg.get_texts()]


def _assert_legends_outside(fig: Any) -> None:
    """No legend's box overlaps the plotting area of any axes."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [ax.get_window_extent(r) for ax in fig.axes]
    legs = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    assert legs
    for leg in legs:
        lb = leg.get_window_extent(r)
        for b in boxes:
            overlap = min(lb.x1, b.x1) - max(lb.x0, b.x0) > 1 and min(lb.y1, b.y1) - max(lb.y0, b.y0) > 1
            assert not overlap, (leg.get_texts()[0].get_text(), lb, b)


def _close(fig: Any) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_simulate_plot_names_ccas_link_and_units() -> None:
    """reno + cubic: the title says the command, both CCAs and the link; every panel's
    y label has a unit; every legend names flows by CCA and sits outside its panel; the
    RTT panel has a legend; the loss panel says what a step is; a state panel has the
    state's unit (ssthresh: bytes, shown in kB)."""
    fig = run_figure(_run(["reno", "cubic"]), ("ssthresh",))
    try:
        title = fig._suptitle.get_text()
        for w in ("ccmatic simulate", "reno", "cubic", "C = 48 Mbit/s", "R = 40 ms", "buffer 1 BDP"):
            assert w in title, (w, title)
        for ax in fig.axes:
            assert UNIT.search(ax.get_ylabel()), ax.get_ylabel()
        assert fig.axes[-1].get_xlabel() == "time (s)"
        assert fig.axes[-1].get_ylabel() == "ssthresh (kB)"
        texts = _legend_texts(fig)
        assert {"reno #0", "cubic #1"} <= set(texts)
        assert not any(t.startswith("flow ") for t in texts)
        rtt = fig.axes[2]
        assert "RTT" in rtt.get_ylabel() and rtt.get_legend() is not None
        assert {t.get_text() for t in rtt.get_legend().get_texts()} == {"reno #0", "cubic #1"}
        assert "step = RTprop = 40 ms" in fig.axes[3].get_legend().get_title().get_text()
        _assert_legends_outside(fig)
    finally:
        _close(fig)


def test_testbed_plot_title_names_its_command() -> None:
    """``testbed --plot`` draws the same figure; its title names ``ccmatic testbed``."""
    cfg = _run(["reno"], 0.1).config
    assert run_title(cfg).startswith("ccmatic simulate: reno, ")
    assert run_title(cfg, "testbed").startswith("ccmatic testbed: reno, ")


def test_many_flows_are_grouped_by_cca_in_legends() -> None:
    """Six flows of two CCAs: the RTT legend has two entries, one per CCA, naming the
    flows each covers; four flows keep one entry each."""
    colors, labels, grouped = flow_labels(["bbr1", "reno"] * 3)
    assert grouped and sorted(set(labels)) == ["bbr1 (flows 0, 2, 4)", "reno (flows 1, 3, 5)"]
    assert len(set(colors)) == 2
    assert flow_labels(["bbr1"] * 4)[1] == ["bbr1 #0", "bbr1 #1", "bbr1 #2", "bbr1 #3"]
    assert flow_labels(["bbr1"] * 5)[1][0] == "bbr1 (flows 0-4)"
    fig = run_figure(_run(["aimd"] * 6, 0.5))
    try:
        assert [t.get_text() for t in fig.axes[2].get_legend().get_texts()] == ["aimd (flows 0-5)"]
        assert "aimd ×6" in fig._suptitle.get_text()
    finally:
        _close(fig)


def test_parking_lot_plot_names_hops() -> None:
    """A 2-hop parking lot: the title says so; the legends say which hops each flow
    crosses; the queue panel draws each hop's queue and their sum."""
    link = Link("ideal", 48e6 / 8, 0.0, None)
    flows = tuple(Flow(_cca("reno"), 0.04) for _ in range(3))
    fig = run_figure(simulate(SimConfig(link, flows, 0.5, seed=1, topology="parking_lot", hops=2)))
    try:
        assert "2-hop parking lot" in fig._suptitle.get_text()
        assert [t.get_text() for t in fig.axes[2].get_legend().get_texts()] == [
            "reno #0 (all hops)", "reno #1 (hop 1)", "reno #2 (hop 2)"]
        assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()] == ["all hops", "hop 1", "hop 2"]
    finally:
        _close(fig)


def test_evaluate_grid_figure_title_units_ticks() -> None:
    """evaluate's figure: the title names the command, metric, CCAs and link model;
    the buffer ticks are the grid's buffers as fractions; the CCA legend is outside."""
    rows = [{"cca": c, "model": "ack_agg", "C_mbps": 48.0, "R_ms": 40.0, "buffer_bdp": b, "flows": 1, "seed": 0,
             "duration_s": 4.0, "metrics": {"utilization": 0.9, "queue_mean_bdp": 0.5, "loss_per_R_mean": 0.1}}
            for c in ("reno", "cubic") for b in ("1/4", "1", "4")]
    fig = grid_figure(rows, 1)
    try:
        title = fig._suptitle.get_text()
        for w in ("ccmatic evaluate", "queue", "cubic, reno", "ack_agg link"):
            assert w in title
        ax = fig.axes[0]
        assert ax.get_ylabel() == "mean queue (BDP)" and ax.get_xlabel() == "buffer (BDP)"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1/4", "1", "4"]
        assert _legend_texts(fig) == ["cubic", "reno"]
        _assert_legends_outside(fig)
    finally:
        _close(fig)


def test_log_ticks_are_few_and_round() -> None:
    """Narrow spans get about five two-digit ticks (not matplotlib's overlapping minor
    labels); wide spans get the 1-2-5 series; every tick lies in the span."""
    assert log_ticks(113.0, 144.0) == [120.0, 130.0, 140.0]
    assert log_ticks(0.041, 1.9) == [0.05, 0.1, 0.2, 0.5, 1.0]
    assert log_ticks(1e-3, 1e4) == [1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0, 1000.0, 1e4]
    for lo, hi in ((5e-4, 1.1e-3), (39.6, 39.7), (113.0, 144.0), (0.041, 1.9)):
        ticks = log_ticks(lo, hi)
        assert 3 <= len(ticks) <= 8 and all(lo <= v <= hi for v in ticks), ticks
        assert all(len(f"{v:.3g}") <= 7 for v in ticks), ticks


def test_contract_plot_title_ticks_and_legend(tmp_path: Path) -> None:
    """A measured contract (4 short runs): the title names the command, the CCA, its
    contract and the grid; axes are labelled with units and log scale; each log axis
    has at most 6 labelled ticks (no minor-tick labels); one legend below the panels
    names flow counts and fit families."""
    code, out, err = run_cli("contract", "reno", "--C", "24,48", "--flows", "2,4", "--duration", "4",
                             "--jobs", "1", "--json")
    assert code == 0, err
    d = json.loads(out)
    fig = contract_figure(d["runs"], d, d["grid"])
    try:
        title = fig._suptitle.get_text()
        for w in ("ccmatic contract reno", "C = 24, 48 Mbit/s", "R = 40 ms", "2, 4 flows"):
            assert w in title, (w, title)
        fig.canvas.draw()
        for ax in fig.axes:
            assert UNIT.search(ax.get_xlabel()) and "Mbit/s" in ax.get_ylabel()
            if ax.get_xscale() == "log":
                major = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
                minor = [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
                assert 1 <= len(major) <= 6 and minor == [], (major, minor)
        texts = _legend_texts(fig)
        assert {"2 flows", "4 flows", "power fit", "chosen contract"} <= set(texts)
        _assert_legends_outside(fig)
    finally:
        _close(fig)


def test_bench_plot_omits_zero_seconds_and_ticks_whole_horizons() -> None:
    """A phase measured as 0 s is not drawn (a log axis cannot show it; it used to
    be drawn as 1 ms) and a note says so; x ticks are the horizons, whole numbers."""
    rows = [{"query": "q/a.toml", "kind": "synth", "T": T, "process_s": 1.0 + T, "generator_s": 0.1 * T,
             "verifier_s": 0.0 if T == 3 else 0.2, "reverify_s": 0.05} for T in (3, 4, 5, 6)]
    fig = bench_figure(rows)
    try:
        ax = fig.axes[0]
        assert "ccmatic bench" in ax.get_title()
        assert [float(x) for x in ax.get_xticks()] == [3.0, 4.0, 5.0, 6.0]
        assert ax.get_ylabel().startswith("seconds")
        for line in ax.get_lines():
            ys = [float(y) for y in line.get_ydata()]
            assert all(y != pytest.approx(1e-3) for y in ys)
        notes = [t.get_text() for t in fig.texts]
        assert any("a verifier at T = 3" in n for n in notes), notes
        assert {"a", "verifier (in-process)", "process wall (start to exit)"} <= set(_legend_texts(fig))
        _assert_legends_outside(fig)
    finally:
        _close(fig)


def test_tradeoff_plot_lists_only_drawn_curves() -> None:
    """A zero loss allowance never leaves C0 (C/log(C) from C0 = 1 is refused at
    input): it is not in the legend, a note under the axes says why; the drawn curves
    are listed; the title names the command."""
    curves = [compute(parse_loss(s, "<--loss>"), Fraction(1), Fraction(1, 2), loss=s) for s in ("C", "0")]
    fig = tradeoff_figure(curves, Fraction(1), Fraction(1000))
    try:
        ax = fig.axes[0]
        assert "ccmatic tradeoff" in ax.get_title()
        assert _legend_texts(fig) == ["f(C) = C"]
        assert len(ax.get_lines()) == 1
        assert any("f(C) = 0 not drawn" in t.get_text() for t in fig.texts)
        _assert_legends_outside(fig)
    finally:
        _close(fig)


def test_bench_plot_draws_the_fit_and_names_its_factor() -> None:
    """With a fit, a query's legend entry gives its factor per step of T, and the
    fitted exponential is drawn through its horizons."""
    rows = [{"query": "q/a.toml", "kind": "verify", "T": T, "process_s": 0.1 * 1.8 ** T, "encode_s": 0.01,
             "solve_s": 0.05 * 1.8 ** T, "verdict": "proved"} for T in (10, 15, 20)]
    fits = bench_growth(rows)
    fig = bench_figure(rows, fits)
    try:
        texts = _legend_texts(fig)
        assert "a (x1.80 per step of T)" in texts and "exponential fit of the process wall" in texts
        wide = [ln for ln in fig.axes[0].get_lines() if ln.get_linewidth() == 4]
        assert len(wide) == 1 and [float(y) for y in wide[0].get_ydata()] == pytest.approx(
            [r["process_s"] for r in rows])
    finally:
        _close(fig)
