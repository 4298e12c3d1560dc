"""Network model configuration (thesis §2.3, Appendix A.2; CCAC).

The dataclasses hold the defaults; :mod:`ccmatic.io.models` fills them from model
files and a query's ``[model_params]``; the encoder (:mod:`ccmatic.encode`) and the
replay read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

Family = Literal["ideal", "cbr_delay", "ccac"]
BufferMode = Literal["infinite", "finite", "arbitrary", "small", "large"]
LossMode = Literal["droptail", "ccac"]


@dataclass(frozen=True)
class Buffer:
    """Bottleneck buffer β.

    * ``infinite``: no congestive loss;
    * ``finite``: β = k·C·R (k BDPs);
    * ``arbitrary``: the solver picks any constant β ≥ 0;
    * ``small`` / ``large``: β ≤ k·C·(R+D) / β ≥ k·C·(R+D), β otherwise free.
    """

    mode: BufferMode = "infinite"
    k: Fraction | None = None

    def describe(self) -> str:
        if self.mode == "infinite":
            return "infinite"
        if self.mode == "finite":
            return f"{self.k} BDP"
        if self.mode == "arbitrary":
            return "arbitrary (solver picks β ≥ 0)"
        op = "≤" if self.mode == "small" else "≥"
        return f"{self.mode} (β {op} {self.k}·C·(R+D))"


@dataclass(frozen=True)
class BeliefTimeouts:
    """Belief timeouts (thesis §4.1.1.2).

    ``period``: periodic timeouts every ``period`` steps at a phase the solver picks;
    ``guard``: only time out when c_hi ≤ guard·c_lo (None: always);
    ``invalid``: also time out when the beliefs are empty (c_hi < c_lo);
    ``max_expand``: on a timeout the beliefs may widen by at most this factor.
    """

    period: int | None = None
    guard: Fraction | None = None
    invalid: bool = True
    max_expand: Fraction = Fraction(2)


@dataclass(frozen=True)
class ModelConfig:
    name: str = "ccac"
    family: Family = "ccac"
    description: str = ""
    C: Fraction = Fraction(1)
    R: int = 1
    D: int = 1
    N: int = 1
    compose: bool = True
    epsilon: Fraction = Fraction(0)
    buffer: Buffer = field(default_factory=Buffer)
    loss: LossMode = "ccac"
    #: dupack threshold in MSS; None: any non-negative number of bytes, the solver's
    #: choice (CCAC's default)
    dupacks: Fraction | None = Fraction(3)
    timeouts: bool = False
    mss_max_bdp: Fraction | None = None
    qdel_prehistory: Literal["free", "hidden"] = "hidden"
    belief_evidence: Literal["sound", "reference"] = "sound"
    qdel_growth: Literal["fresh", "always"] = "fresh"
    loss_detection: Literal["dupack", "oracle"] = "dupack"
    belief_timeouts: BeliefTimeouts | None = None

    @property
    def bdp(self) -> Fraction:
        return self.C * self.R

    def summary(self) -> str:
        """One line: family, composition, parameters, buffer and loss rule."""
        parts: list[str] = [self.family]
        if self.family == "ccac":
            parts.append("composing" if self.compose else "non-composing")
        parts.append(f"C={self.C} R={self.R} D={self.D} N={self.N}")
        parts.append(f"buffer {self.buffer.describe()}")
        parts.append(f"loss {self.loss}")
        return ", ".join(parts)
