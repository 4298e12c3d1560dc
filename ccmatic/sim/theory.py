"""Published models the simulator is checked against (docs/simulation.md, "Results").

* Mathis et al. 1997: Reno's throughput 1.22 · MSS / (RTT · √p).
* Scherrer et al., the BBR fluid model ("Model-Based Insights on the Performance,
  Fairness, and Stability of BBR", IMC 2022), for N BBRv1 flows with equal
  RTprops: with a deep buffer the equilibrium queueing delay equals the propagation
  delay (Theorem 1), so RTT = 2 RTprop; with a shallow buffer each flow's bandwidth
  estimate is 5C / (4N + 1) (Theorem 3), so the flows send 5NC / (4N + 1) and lose
  the excess, (N − 1) / 5N of what they send.
* Mishra et al. 2022, one BBR flow against one CUBIC flow with equal RTprops on a
  drop-tail buffer of B ≥ 1 BDP: BBR's bandwidth share from their Eqs. 18–20.

All quantities are normalized where the papers normalize them (buffers in BDPs,
rates as shares of C).
"""

from __future__ import annotations

import math


def mathis_throughput(mss: float, rtt: float, p: float) -> float:
    """Mathis et al.'s Reno throughput (bytes/s) for loss probability p > 0, with their
    constant √(3/2) ≈ 1.22 (periodic losses, an ACK per packet)."""
    return math.sqrt(1.5) * mss / (rtt * math.sqrt(p))


def bbr_deep_buffer_rtt_ratio() -> float:
    """RTT / RTprop of N ≥ 2 BBRv1 flows in the deep-buffer equilibrium (Theorem 1)."""
    return 2.0


def bbr_shallow_buffer_estimate(n: int) -> float:
    """Each of N BBRv1 flows' bandwidth estimate, as a share of C (Theorem 3)."""
    return 5 / (4 * n + 1)


def bbr_shallow_buffer_loss(n: int) -> float:
    """The loss rate of N BBRv1 flows on a shallow buffer: the excess of their
    aggregate rate 5N/(4N + 1) · C over C, as a share of what they send."""
    return (n - 1) / (5 * n)


def bbr_vs_cubic_share(buffer_bdp: float) -> float:
    """One BBR flow's share of C against one CUBIC flow (Mishra et al. 2022): b_b,
    BBR's buffer occupancy in BDPs, solves their Eq. 18 with C·RTT = 1,

        x + x / (x + b_b) = 0.7 · (B − b_b + (B − b_b) / B),   x = (B − 1) / 2,

    (x is CUBIC's minimum occupancy b_cmin, from Eq. 10), and CUBIC's share is
    λ_c = (2x + 1 − b_b) / (1 + 2x) (Eq. 19), BBR's 1 − λ_c (Eq. 20).  Valid for
    B > 1 (the model assumes both flows keep packets queued)."""
    if buffer_bdp <= 1:
        raise ValueError("the model holds for buffers above 1 BDP")
    B = buffer_bdp
    x = (B - 1) / 2

    def gap(bb: float) -> float:
        return x + x / (x + bb) - 0.7 * (B - bb + (B - bb) / B)

    lo, hi = 0.0, B  # gap rises with bb: gap(0) < 0 < gap(B) for B > 1
    for _ in range(100):
        mid = (lo + hi) / 2
        if gap(mid) < 0:
            lo = mid
        else:
            hi = mid
    bb = (lo + hi) / 2
    return 1 - (2 * x + 1 - bb) / (1 + 2 * x)
