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
Topology = Literal["dumbbell", "parking_lot"]

#: The parts of the network model a scenario assumes (``model_parts``; default:
#: all); docs/language.md "Model-only questions" says what each contains and which
#: CCAC function it corresponds to, and :func:`ccmatic.encode.network.encode_network`
#: builds them.  Omitting a part removes its constraints: a proof then holds for more
#: traces (so for the whole model too), but a trace found may not be one of it.
MODEL_PARTS: tuple[str, ...] = ("monotone", "initial", "service", "loss", "loss_detection", "sender")
ALL_PARTS: frozenset[str] = frozenset(MODEL_PARTS)


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
    #: what c_lo_lambda divides a send window's bytes by: ``text``, R + D (Eq. 4.2.2);
    #: ``reference``, R + D + 1, the Table 4.1 tool's (a weaker lower bound on C;
    #: docs/semantics.md, Table 4.1 settings)
    c_lo_lambda_divisor: Literal["text", "reference"] = "text"
    qdel_growth: Literal["fresh", "always"] = "fresh"
    loss_detection: Literal["dupack", "oracle"] = "dupack"
    belief_timeouts: BeliefTimeouts | None = None
    #: the network's non-congestive delay per flow, in steps (thesis Fig. 7.11's
    #: jitter boxes); None: D for every flow.  D stays what the CCA assumes.
    jitter: tuple[int, ...] | None = None
    #: with several flows (or per-flow jitter), split the bottleneck's output among
    #: the flows first-in first-out (docs/multiflow.md); False: only the aggregate
    #: service is constrained (CCAC's single-flow model, summed)
    fifo: bool = True
    #: ``dumbbell``: one bottleneck shared by every flow; ``parking_lot`` (thesis
    #: Fig. 6.1, 7.15): two bottlenecks of rate C in a row, flow 0 crosses both,
    #: flow 1 only the first and flow 2 only the second
    topology: Topology = "dumbbell"
    #: each flow's propagation delay (RTprop), in steps (thesis Fig. 2.1: 10, 20 and
    #: 30 ms); None: R for every flow.  A CCA's R is its own flow's.
    rtprop: tuple[int, ...] | None = None

    @property
    def lambda_extra(self) -> int:
        """Steps c_lo_lambda's divisor adds to R + D (0, or 1 for the tool's)."""
        return 1 if self.c_lo_lambda_divisor == "reference" else 0

    @property
    def bdp(self) -> Fraction:
        return self.C * self.R

    def flow_jitter(self, f: int) -> int:
        """The jitter bound of flow f's delay box, in steps."""
        return self.D if self.jitter is None else self.jitter[f]

    def flow_R(self, f: int) -> int:
        """Flow f's RTprop, in steps."""
        return self.R if self.rtprop is None else self.rtprop[f]

    @property
    def max_R(self) -> int:
        """The largest RTprop of any flow, in steps."""
        return self.R if self.rtprop is None else max(self.rtprop)

    @property
    def net_D(self) -> int:
        """The network's largest jitter, in steps: the aggregate service bound A.2.3
        lags by this much (D unless ``jitter`` says otherwise)."""
        return self.D if self.jitter is None else max(self.jitter)

    @property
    def split(self) -> bool:
        """Whether the encoding splits the bottleneck's output per flow (FIFO)."""
        return self.jitter is not None or (self.N > 1 and self.fifo) or self.topology != "dumbbell"

    @property
    def hops(self) -> int:
        """The number of bottlenecks."""
        return 2 if self.topology == "parking_lot" else 1

    @property
    def routes(self) -> tuple[tuple[int, ...], ...]:
        """The bottlenecks each flow crosses, in order."""
        if self.topology == "parking_lot":
            return ((0, 1), (0,), (1,))
        return tuple((0,) for _ in range(self.N))

    def summary(self) -> str:
        """One line: family, composition, parameters, buffer and loss rule."""
        parts: list[str] = [self.family]
        if self.topology != "dumbbell":
            parts.append("parking lot (2 bottlenecks)")
        if self.family == "ccac":
            parts.append("composing" if self.compose else "non-composing")
        parts.append(f"C={self.C} R={self.R} D={self.D} N={self.N}")
        if self.rtprop is not None:
            parts.append("rtprop [" + ", ".join(map(str, self.rtprop)) + "]")
        if self.jitter is not None:
            parts.append("jitter [" + ", ".join(map(str, self.jitter)) + "]")
        if self.N > 1:
            parts.append("FIFO" if self.fifo else "no FIFO")
        parts.append(f"buffer {self.buffer.describe()}")
        parts.append(f"loss {self.loss}")
        return ", ".join(parts)
