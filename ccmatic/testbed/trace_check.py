"""Does an exported program read what the socket counts?  (``testbed --trace-cca``)

The program takes its observations from the socket at every step
(:mod:`ccmatic.export.kernel`: A from ``data_segs_out``, S from ``delivered``, in
segments of ``mss_cache`` bytes), and its step trace records them with the kernel's
clock (``tcp_mstamp``, CLOCK_MONOTONIC).  The sender samples the same socket's
``tcp_info`` (``tcpi_data_segs_out``, ``tcpi_delivered``) every R/20 on the same
clock.  Both counters only grow, so a step's values must lie between the samples
taken just before and just after it; a step outside that bracket means the program
reads something else than the socket's counts (a wrong field, a unit, a stale copy).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ccmatic.testbed.run import TestbedRun
from ccmatic.testbed.tcpinfo import SAMPLE

_SEGS, _DELIVERED, _MSS = (SAMPLE.index(c) for c in ("data_segs_out", "delivered", "snd_mss"))


@dataclass(frozen=True)
class ObservationCheck:
    """One flow: its steps with a sample on each side, and those whose A or S (in
    segments) lay outside the socket's counters of the two samples."""

    flow: int
    steps: int
    outside: int
    worst: float  # segments beyond the bracket, at worst (0: none outside)

    @property
    def ok(self) -> bool:
        return self.outside == 0


def check_observations(r: TestbedRun, flows: int) -> list[ObservationCheck]:
    """Per traced flow, its steps against its ``tcp_info`` samples (module doc)."""
    out = []
    for i, steps in r.steps_by_flow(flows).items():
        samples = r.samples[i]
        times = [r.samples_t0 + s[0] for s in samples]
        n = outside = 0
        worst = 0.0
        for row in steps:
            k = bisect.bisect_right(times, row["t_s"])
            if k == 0 or k == len(times):
                continue  # before the first sample or after the last
            before, after = samples[k - 1], samples[k]
            mss = before[_MSS]
            n += 1
            beyond = max(_beyond(row["A"] / mss, before[_SEGS], after[_SEGS]),
                         _beyond(row["S"] / mss, before[_DELIVERED], after[_DELIVERED]))
            if beyond > 0:
                outside += 1
                worst = max(worst, beyond)
        out.append(ObservationCheck(i, n, outside, worst))
    return out


def _beyond(x: float, lo: float, hi: float) -> float:
    return max(0.0, lo - x, x - hi)


def check_text(checks: list[ObservationCheck]) -> str:
    """One line: the flows' steps checked, and any outside the socket's counts."""
    steps = sum(c.steps for c in checks)
    bad = [c for c in checks if not c.ok]
    if not bad:
        return f"the programs' observations match the sockets' counters ({steps} steps, all within)"
    worst = ", ".join(f"flow {c.flow}: {c.outside} of {c.steps}, up to {c.worst:g} segments" for c in bad)
    return f"!!! the programs' observations leave the sockets' counters ({worst})"
