"""benchmarks/ns3_compare.py: ccmatic's simulator against ns-3 (issue 15, item 5).

The ns-3 comparison is slow (ns-3's import alone takes 10-100 s) and needs the
optional ``ns3`` package (``pip install -e '.[ns3]'``), so it is marked slow and
skipped without it.  The ccmatic side runs in the default suite, through the
script's own functions, so the script cannot rot unnoticed.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def compare() -> ModuleType:
    """benchmarks/ns3_compare.py (benchmarks/ is no package: the script imports its
    sibling ns3_dumbbell by name, so the directory goes on sys.path)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("ns3_compare")


def test_ccmatic_side_runs_without_ns3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nc = compare()
    sc = nc.Scenario(("newreno", "bbr"), (20.0, 40.0), buffer_bdp=2.0, duration=4.0, warmup=1.0)
    ccm, ns3 = nc.run_case(sc, with_ns3=False)
    assert ns3 is None
    assert 0.5 < ccm.utilization <= 1.0 and len(ccm.shares) == 2
    assert sum(ccm.shares) == pytest.approx(ccm.utilization)
    assert ccm.queue_mean_bdp >= 0 and 0 <= ccm.loss_rate < 1
    row = nc.format_row(sc, ccm, ns3)
    assert row.startswith("newreno+bbr R=20/40ms buf=2") and "| -" in row
    # the grids and the command line build valid scenarios
    assert len(nc.grid("default")) == 25 and len(nc.grid("quick")) == 3
    assert all(s.duration == 120 and s.warmup == 30 for s in nc.grid("default"))
    one = nc.scenario_from(nc.parse_args(["--cca", "bbr,cubic", "--R", "20,80", "--buffer", "0.5"]))
    assert one.ccas == ("bbr", "cubic") and one.R_ms == (20.0, 80.0) and one.buffer_bytes == pytest.approx(30_000)
    assert nc.scenario_from(nc.parse_args(["--flows", "3"])).ccas == ("newreno",) * 3
    out = tmp_path / "r.json"
    assert nc.main(["--no-ns3", "--duration", "3", "--warmup", "1", "--seeds", "2", "--json", str(out)]) == 0
    assert "newreno x1 R=40ms buf=1" in capsys.readouterr().out
    case = json.loads(out.read_text())["cases"][0]
    assert case["ns3"] is None and case["seeds"] == [0, 1] and len(case["ccmatic"]["details"]["runs"]) == 2
    with pytest.raises(ValueError, match="unknown CCA"):
        nc.Scenario(("vegas",), (40.0,))


@pytest.mark.slow
def test_quick_grid_agrees_with_ns3() -> None:
    """The quick grid in both simulators.  One NewReno flow on a 1-BDP buffer fills
    the link in both (utilization within 5 points); every case's figures are sane."""
    pytest.importorskip("ns", reason="ns-3 is optional: pip install -e '.[ns3]'")
    nc = compare()
    for sc in nc.grid("quick"):
        ccm, ns3 = nc.run_case(sc)
        assert ns3 is not None and ns3.details["other_drops"] == 0  # only the bottleneck drops
        assert 0.5 < ns3.utilization < 1.01 and len(ns3.shares) == len(sc.ccas)
        assert 0 <= ns3.queue_mean_bdp <= sc.buffer_bdp and 0 <= ns3.loss_rate < 0.2
        if sc.ccas == ("newreno",) and sc.buffer_bdp == 1:
            assert abs(ccm.utilization - ns3.utilization) <= 0.05, (ccm, ns3)
