"""A flow's per-step series keep only their recent steps (sim/history.py): indexed by
absolute step, a forgotten step is an error, never another step's value."""

from __future__ import annotations

import pytest

from ccmatic.sim.history import History


def test_a_history_is_indexed_by_step_after_it_forgets() -> None:
    h = History([0.0])
    for k in range(1, 100):
        h.append(float(k))
        if k % 10 == 0:
            h.trim(5)
    assert len(h) == 100 and h[99] == 99.0 and h[96] == 96.0 and h[-1] == 99.0 and h[-2] == 98.0
    assert h.base == 86 and list.__len__(h) == 14  # trimmed at step 90 to 86..90, then 91..99
    with pytest.raises(IndexError, match="step 85 was forgotten"):
        _ = h[85]
    with pytest.raises(TypeError):
        _ = h[1:3]  # read one step at a time
    assert bool(History()) is False and bool(h) is True
