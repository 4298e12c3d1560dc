"""Fine-mode links: how long the ACK of a byte the bottleneck delivered at time τ
takes to reach its sender (thesis §2.3, Appendix B.6).

* ``ideal``: R (FIFO at rate C, no jitter);
* ``cbr_delay``: R plus a uniform random delay in [0, D] drawn per delivery, kept
  FIFO per flow (a later byte is never ACKed before an earlier one);
* ``ack_agg``: ACK aggregation as in B.6: delivered bytes are held and released
  in batches; batch k is released agg_k after batch k−1, agg_k uniform in [0, D),
  i.e. about C·agg_k bytes at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np


LinkKind = Literal["ideal", "cbr_delay", "ack_agg"]
LINK_KINDS: tuple[LinkKind, ...] = ("ideal", "cbr_delay", "ack_agg")


@dataclass(frozen=True)
class Link:
    """A bottleneck: rate C (bytes/s), jitter bound D (s), drop-tail buffer (bytes,
    None: infinite)."""

    kind: LinkKind
    C: float
    D: float
    buffer: float | None


class AckDelay:
    """Draws the extra ACK delay (beyond R) of bytes delivered at a time τ."""

    BATCH = 4096  # uniform draws taken from the generator at a time

    def __init__(self, link: Link, n_flows: int, rng: np.random.Generator) -> None:
        self.link = link
        self.rng = rng
        self.last_ack = [0.0] * n_flows
        self.next_release = 0.0
        self._draws: list[float] = []

    def _uniform(self) -> float:
        """Uniform in [0, D)."""
        if not self._draws:
            self._draws = (self.rng.random(self.BATCH) * self.link.D).tolist()
            self._draws.reverse()
        return self._draws.pop()

    def ack_time(self, flow: int, delivered_at: float, R: float) -> float:
        kind, D = self.link.kind, self.link.D
        if kind == "ideal" or D <= 0:
            t = delivered_at + R
        elif kind == "cbr_delay":
            t = delivered_at + R + self._uniform()
        else:
            while self.next_release < delivered_at:
                self.next_release += self._uniform()
            t = self.next_release + R
        t = max(t, self.last_ack[flow])  # cumulative ACKs: FIFO per flow
        self.last_ack[flow] = t
        return t
