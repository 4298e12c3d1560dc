"""Losses reach a simulated sender one RTprop after they happen (docs/simulation.md,
"The CCA's step"), whenever the flow started (issue 28: a flow that starts late, or
whose step grid starts at a random tick, learned of its losses late by that much,
until the loss history was read from the tick one RTprop back)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ccmatic.sim.fine import simulate
from ccmatic.sim.links import Link
from ccmatic.sim.records import Flow, SimConfig
from ccmatic.spec.cca import load_cca

ROOT = Path(__file__).resolve().parent.parent
@pytest.mark.parametrize("starts", [(0.0,), (1.0,), (0.0, 0.0), (0.0, 0.5, 1.3)])
def test_losses_are_detected_one_rtprop_after_they_happen(starts: tuple[float, ...]) -> None:
    reno = load_cca(ROOT / "templates" / "reno.cca")
    c, r = 10e6 / 8, 0.02
    cfg = SimConfig(Link("ideal", c, 0.0, 0.5 * c * r), tuple(Flow(reno, r, start=s) for s in starts), 4.0)
    res = simulate(cfg)
    per = round(r / res.dt)
    for f, rec in enumerate(res.flows):
        lost = np.cumsum(res.lost[:, f])
        ticks = np.rint(np.array(rec.time) / res.dt).astype(int)
        expected = [float(lost[k - per]) if k >= per else 0.0 for k in ticks]
        assert lost[-1] > 0
        assert rec.Ld == pytest.approx(expected)
