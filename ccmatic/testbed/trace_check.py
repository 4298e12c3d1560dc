"""Does an exported program read what the socket counts?  (``testbed --trace-cca``)

The program takes its observations from the socket at every step
(:mod:`ccmatic.export.kernel`: A from ``data_segs_out``, S from ``delivered``, in
segments of ``mss_cache`` bytes), and its step trace records them with the kernel's
clock (``tcp_mstamp``, CLOCK_MONOTONIC).  The sender samples the same socket's
``tcp_info`` (``tcpi_data_segs_out``, ``tcpi_delivered``) every R/20 on the same
clock.  Both counters only grow, so a step's values must lie between the samples
taken just before and just after it; a step outside that bracket means the program
reads something else than the socket's counts (a wrong field, a unit, a stale copy).

With grid steps (``--steps grid``) a step is stamped with the ACK before its boundary,
whose S the step read; its A is the bytes sent by the boundary, estimated from the
pacing rate and at most what had been sent when the step ran, so only A's lower end
is checked.

"Before" and "after" are exact, not up to a tolerance.  A sample's clock is read
just before ``tcp_info`` (``t``) and just after it (``t_read``); the sender can be
preempted in between, so the bracket's lower end is the last sample whose read had
ended by the step's stamp (``t_read``).  The stamp is ``tcp_mstamp``, refreshed when
the ACK's processing began, so the program's read came at or after it; the upper end
is the first sample whose clock was read after the stamp (``t``): its read came
after the stamp too, and the socket's lock orders it after the ACK's processing.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ccmatic.testbed.run import TestbedRun
from ccmatic.testbed.tcpinfo import SAMPLE

_SEGS, _DELIVERED, _MSS, _T_READ = (SAMPLE.index(c) for c in ("data_segs_out", "delivered", "snd_mss", "t_read"))


@dataclass(frozen=True)
class ObservationCheck:
    """One flow: its steps with a sample on each side, and those whose A or S (in
    segments) lay outside the socket's counters of the two samples (``below``: under
    the sample before, the rest over the sample after)."""

    flow: int
    steps: int
    outside: int
    below: int
    worst: float  # segments beyond the bracket, at worst (0: none outside)

    @property
    def ok(self) -> bool:
        return self.outside == 0


def check_observations(r: TestbedRun, flows: int, a_upper: bool = True) -> list[ObservationCheck]:
    """Per traced flow, its steps against its ``tcp_info`` samples (module doc);
    ``a_upper`` False: A's upper end is not checked (grid steps)."""
    out = []
    for i, steps in r.steps_by_flow(flows).items():
        samples = r.samples[i]
        began = [r.samples_t0 + s[0] for s in samples]
        ended = [r.samples_t0 + s[_T_READ] for s in samples]
        n = outside = below = 0
        worst = 0.0
        for row in steps:
            lo = bisect.bisect_right(ended, row["t_s"]) - 1
            hi = bisect.bisect_right(began, row["t_s"])
            if lo < 0 or hi == len(samples):
                continue  # before the first sample or after the last
            before, after = samples[lo], samples[hi]
            mss = before[_MSS]
            n += 1
            a, s = row["A"] / mss, row["S"] / mss
            under = max(0.0, before[_SEGS] - a, before[_DELIVERED] - s)
            beyond = max(under, a - after[_SEGS] if a_upper else 0.0, s - after[_DELIVERED])
            if beyond > 0:
                outside += 1
                below += under > 0
                worst = max(worst, beyond)
        out.append(ObservationCheck(i, n, outside, below, worst))
    return out


def check_text(checks: list[ObservationCheck]) -> str:
    """One line: the flows' steps checked, and any outside the socket's counts."""
    steps = sum(c.steps for c in checks)
    bad = [c for c in checks if not c.ok]
    if not bad:
        return f"the programs' observations match the sockets' counters ({steps} steps, all within)"
    worst = ", ".join(f"flow {c.flow}: {c.outside} of {c.steps} ({c.below} below the sample before, "
                      f"{c.outside - c.below} above the one after), up to {c.worst:g} segments" for c in bad)
    return f"!!! the programs' observations leave the sockets' counters ({worst})"
