"""The symbolic trace: per-flow, per-step Z3 variables (thesis Table 2.1).

Cumulative curves (bytes): ``A`` sent, ``S`` serviced/ACKed, ``L`` lost, ``Ld`` loss
detected by the sender, ``W`` wasted tokens (shared).  Per step: ``rate``, ``cwnd``,
``timeout``.  Derived: the token curve ``tokens(t) = C0 + C·t − W(t)`` (Eq. A.2.4),
the in-network queue ``A − L − S`` and the bottleneck queue ``A − L − tokens``
(Eq. A.2.6).  Queueing-delay booleans and beliefs are created on first use by
:mod:`ccmatic.network.delay` and :mod:`ccmatic.beliefs`, which add their constraints
to :attr:`Trace.enc`.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import z3

from ccmatic.config import ModelConfig
from ccmatic.lang.expr import rat
from ccmatic.lang.units import Unit
from ccmatic.smt import Encoding


class Trace:
    def __init__(self, model: ModelConfig, T: int) -> None:
        self.model = model
        self.T = T
        self.N = model.N
        self.enc = Encoding()
        N, R = model.N, range(T)

        def reals(name: str) -> list[list[z3.ArithRef]]:
            return [[z3.Real(f"{name}_{f},{t}") for t in R] for f in range(N)]

        self.A_f = reals("A")
        self.S_f = reals("S")
        self.L_f = reals("L")
        self.Ld_f = reals("Ld")
        self.rate_f = reals("rate")
        self.cwnd_f = reals("cwnd")
        self.timeout_f = [[z3.Bool(f"timeout_{f},{t}") for t in R] for f in range(N)]
        self.W = [z3.Real(f"W_{t}") for t in R]
        self.C0 = z3.Real("C0")
        self.MSS = z3.Real("MSS")
        self.C = rat(model.C)
        b = model.buffer
        self.buffer: z3.ArithRef | None
        if b.mode == "infinite":
            self.buffer = None
        elif b.mode == "finite":
            assert b.k is not None
            self.buffer = rat(b.k * model.C * model.R)
        else:
            self.buffer = z3.Real("buffer")
        # which CCA outputs exist (set by the CCA compiler); None = not limited
        self.has_rate = [False] * N
        self.has_cwnd = [False] * N
        # CCA state variables per flow: name -> per-step vars
        self.state_f: list[dict[str, list[z3.ExprRef]]] = [{} for _ in range(N)]
        self.state_units: dict[str, Unit | None] = {}  # declared units (None: bool)
        self.extra_vars: list[z3.ExprRef] = []
        # lazily-built parts
        self._lazy: dict[str, object] = {}

    # -- aggregates ------------------------------------------------------------------
    def agg(self, per_flow: list[list[z3.ArithRef]], t: int) -> z3.ArithRef:
        if self.N == 1:
            return per_flow[0][t]
        return z3.Sum([per_flow[f][t] for f in range(self.N)])

    def A(self, t: int) -> z3.ArithRef:
        return self.agg(self.A_f, t)

    def S(self, t: int) -> z3.ArithRef:
        return self.agg(self.S_f, t)

    def L(self, t: int) -> z3.ArithRef:
        return self.agg(self.L_f, t)

    def Ld(self, t: int) -> z3.ArithRef:
        return self.agg(self.Ld_f, t)

    def tokens(self, t: int) -> z3.ArithRef:
        """Admitted-token curve T_A(t) = C0 + C·t − W(t) (Eq. A.2.4); for t < 0 the
        curve is extended with slope C and no waste (the most slack choice)."""
        if t < 0:
            return self.C0 + self.C * t - self.W[0]
        return self.C0 + self.C * t - self.W[t]

    def queue(self, t: int, f: int | None = None) -> z3.ArithRef:
        """Bytes in the network, A − L − S (inflight not yet ACKed at the bottleneck)."""
        if f is None:
            return self.A(t) - self.L(t) - self.S(t)
        return self.A_f[f][t] - self.L_f[f][t] - self.S_f[f][t]

    def bq(self, t: int) -> z3.ArithRef:
        """Bottleneck queue q(t) = A − L − T_A (Eq. A.2.6)."""
        return self.A(t) - self.L(t) - self.tokens(t)

    # -- lazily-built components ------------------------------------------------------
    def lazy(self, key: str, build: Callable[[], object]) -> object:
        if key not in self._lazy:
            self._lazy[key] = build()
        return self._lazy[key]

    def built(self, key: str) -> bool:
        return key in self._lazy

    @property
    def logic(self) -> str | None:
        """Every encoding is linear real arithmetic with booleans (no integers)."""
        return "QF_LRA"

    def const(self, x: Fraction) -> z3.ArithRef:
        return rat(x)
