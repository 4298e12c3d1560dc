"""The symbolic trace: per-flow, per-step Z3 variables (thesis Table 2.1), and the
tagged constraint lists an encoding is made of.

Cumulative curves (bytes): ``A`` sent, ``S`` serviced/ACKed, ``L`` lost, ``Ld`` loss
detected by the sender, ``W`` wasted tokens (shared).  Per step: ``rate``, ``cwnd``,
``timeout`` and the CCA's state variables.  Derived quantities (the token curve,
queues) are terms over these; the delay buckets and beliefs are added by their
builders (:mod:`ccmatic.encode.derived`) before anything reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from ccmatic.core.errors import EngineError
from ccmatic.core.model import ModelConfig
from ccmatic.core.quantities import QUANTITIES, Family
from ccmatic.core.units import Unit
from ccmatic.semantics import network
from ccmatic.semantics.z3domain import Z3, rat

Tagged = tuple[str, z3.BoolRef]


@dataclass
class Constraints:
    """Tagged constraints; the tag names the equation a constraint encodes (e.g.
    'A.2.3'), so that an exact re-check can say which one a model violates."""

    items: list[Tagged] = field(default_factory=list)

    def add(self, tag: str, *cs: z3.BoolRef | bool) -> None:
        for c in cs:
            self.items.append((tag, z3.BoolVal(c) if isinstance(c, bool) else c))

    def extend(self, other: Constraints | list[Tagged]) -> None:
        self.items.extend(other.items if isinstance(other, Constraints) else other)

    def __len__(self) -> int:
        return len(self.items)


Series = list[list[z3.ExprRef]]  # [flow][step]


@dataclass
class Hop:
    """One bottleneck: its wasted tokens W and token offset C0 (Eq. A.2.4), the flows
    that cross it, and (with a FIFO split) each one's output from it."""

    W: list[z3.ArithRef]
    C0: z3.ArithRef
    flows: tuple[int, ...]
    O: dict[int, list[z3.ArithRef]]


class SymbolicTrace:
    """The variables of one scenario.  ``families`` holds the derived quantities
    built for it: name -> per-flow series."""

    def __init__(self, model: ModelConfig, T: int, sets_rate: bool, sets_cwnd: bool,
                 states: dict[str, Unit | None]) -> None:
        self.model = model
        self.T = T
        self.N = model.N
        N, steps = model.N, range(T)

        def reals(name: str) -> list[list[z3.ArithRef]]:
            return [[z3.Real(f"{name}_{f},{t}") for t in steps] for f in range(N)]

        self.A_f = reals("A")
        self.S_f = reals("S")
        self.L_f = reals("L")
        self.Ld_f = reals("Ld")
        self.rate_f = reals("rate")
        self.cwnd_f = reals("cwnd")
        self.timeout_f = [[z3.Bool(f"timeout_{f},{t}") for t in steps] for f in range(N)]
        self.W = [z3.Real(f"W_{t}") for t in steps]
        #: each flow's output from its last bottleneck, before its jitter box (models
        #: that split the output per flow)
        self.O_f = reals("O") if model.split else []
        self.C0 = z3.Real("C0")
        self.MSS = z3.Real("MSS")
        self.C = rat(model.C)
        self.hops = [self._hop(h) for h in range(model.hops)]
        self.dupacks: z3.ArithRef | None = z3.Real("dupacks") if model.dupacks is None else None
        b = model.buffer
        self.buffer: z3.ArithRef | None
        if b.mode == "infinite":
            self.buffer = None
        elif b.mode == "finite":
            assert b.k is not None
            self.buffer = rat(b.k * model.C * model.R)
        else:
            self.buffer = z3.Real("buffer")
        self.sets_rate = sets_rate
        self.sets_cwnd = sets_cwnd
        self.state_units = dict(states)
        self.state_f: list[dict[str, list[z3.ExprRef]]] = [
            {n: [z3.Bool(f"{n}_{f},{t}") if u is None else z3.Real(f"{n}_{f},{t}") for t in steps]
             for n, u in states.items()} for f in range(N)]
        self.derived: dict[str, Series] = {}
        self.built: set[Family] = {"trace", "fifo"} if model.split else {"trace"}
        if model.hops > 1:
            self.built.add("hops")
        self.extra_vars: list[z3.ExprRef] = []
        #: atoms and the literals that replace them where the CCA and the formulas read
        #: them, each pair equivalent under the encoding's own constraints (the delay
        #: buckets: :func:`ccmatic.encode.derived.bucket_literals`)
        self.literals: list[tuple[z3.BoolRef, z3.BoolRef]] = []
        self._table: tuple[int, Any, Any] | None = None  # literals as Z3's argument arrays

    def _hop(self, h: int) -> Hop:
        """Bottleneck h's variables: the first one's are W and C0, the second's W2, C0_2;
        a flow's output from its last bottleneck is O, from an earlier one O{h}."""
        steps = range(self.T)
        routes = self.model.routes
        W = self.W if h == 0 else [z3.Real(f"W{h + 1}_{t}") for t in steps]
        C0 = self.C0 if h == 0 else z3.Real(f"C0_{h + 1}")
        flows = tuple(f for f in range(self.N) if h in routes[f])
        O = {f: self.O_f[f] if routes[f][-1] == h else [z3.Real(f"O{h + 1}_{f},{t}") for t in steps]
             for f in flows} if self.O_f else {}
        return Hop(W, C0, flows, O)

    def hop_tokens(self, h: int, t: int) -> z3.ArithRef:
        """Bottleneck h's token curve (Eq. A.2.4), extended before 0 as :meth:`tokens`."""
        hop = self.hops[h]
        return network.tokens(Z3, hop.C0, self.model.C, t, hop.W[max(t, 0)])

    def hop_input(self, h: int, f: int, t: int) -> z3.ArithRef:
        """Flow f's bytes that have reached bottleneck h by t: A − L at its first one,
        the previous one's output after that."""
        route = self.model.routes[f]
        outputs = {j: self.hops[j].O[f][t] for j in route if f in self.hops[j].O}
        return network.hop_input(route, h, self.arrived(t, f), outputs)

    def hop_arrived(self, h: int, t: int) -> z3.ArithRef:
        """Everything that has reached bottleneck h by t (A − L on a dumbbell)."""
        if self.model.hops == 1:
            return self.arrived(t)
        return z3.Sum([self.hop_input(h, f, t) for f in self.hops[h].flows])

    def hop_out(self, h: int, t: int) -> z3.ArithRef:
        """Bottleneck h's total output by t: its tokens, or (CCAC, where tokens may run
        ahead of an empty queue) what reached it if that is less (A.2.1, A.2.2)."""
        tok, arr = self.hop_tokens(h, t), self.hop_arrived(h, t)
        return tok if self.model.family != "ccac" else z3.If(tok <= arr, tok, arr)

    # -- aggregates and derived terms --------------------------------------------------
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
        """T_A(t) (Eq. A.2.4) of the first bottleneck; before step 0 extended with slope C
        and no waste."""
        return self.hop_tokens(0, t)

    def queue(self, t: int, f: int | None = None) -> z3.ArithRef:
        """Bytes in the network, A − L − S (of one flow, or of all)."""
        if f is None:
            return network.in_network(Z3, self.A(t), self.L(t), self.S(t))
        return network.in_network(Z3, self.A_f[f][t], self.L_f[f][t], self.S_f[f][t])

    def arrived(self, t: int, f: int | None = None) -> z3.ArithRef:
        """Bytes admitted to the bottleneck by t, A − L (of one flow, or of all)."""
        if f is None:
            return self.A(t) - self.L(t)
        return self.A_f[f][t] - self.L_f[f][t]

    def bq(self, t: int, h: int = 0) -> z3.ArithRef:
        """The bottleneck queue A − L − T_A (Eq. A.2.6); of bottleneck h, what reached it
        less its tokens."""
        if self.model.hops == 1:
            return network.bottleneck_queue(Z3, self.A(t), self.L(t), self.tokens(t))
        return self.hop_arrived(h, t) - self.hop_tokens(h, t)

    # -- the registry's quantities ------------------------------------------------------
    def series(self, name: str, f: int) -> list[z3.ExprRef]:
        """The per-step terms of a per-flow quantity or state variable of flow f."""
        direct = {"A": self.A_f, "S": self.S_f, "L": self.L_f, "Ld": self.Ld_f, "timeout": self.timeout_f,
                  "rate": self.rate_f, "cwnd": self.cwnd_f}
        if self.O_f:
            direct["O"] = self.O_f
        if name == "O1" and len(self.hops) > 1:
            return [self.hops[self.model.routes[f][0]].O[f][t] for t in range(self.T)]
        if name in direct:
            return list(direct[name][f])
        if name == "queue":
            return [self.queue(t, f) for t in range(self.T)]
        if name in self.state_f[f]:
            return self.state_f[f][name]
        if name in self.derived:
            return self.derived[name][f]
        raise EngineError(f"'{name}' was not built for this scenario (families built: {sorted(self.built)})")

    def term(self, name: str, flow: int | None, step: int) -> z3.ExprRef:
        """A quantity at a step: of one flow, or the aggregate (shared quantities and
        sums over flows)."""
        shared: dict[str, Callable[[int], z3.ExprRef]] = {
            "W": lambda t: self.W[t], "tokens": self.tokens, "bq": self.bq,
            "tokens_lo": lambda t: self.tokens(t - self.model.net_D)}
        if len(self.hops) > 1:
            shared |= {"W2": lambda t: self.hops[1].W[t], "tokens2": lambda t: self.hop_tokens(1, t),
                       "bq2": lambda t: self.bq(t, 1)}
        if name in shared:
            return shared[name](step)
        if flow is None:
            q = QUANTITIES[name]
            if not q.summable:
                raise EngineError(f"'{name}' has no aggregate")
            if name == "queue":
                return self.queue(step)
            return self.agg([self.series(name, f) for f in range(self.N)], step)
        return self.series(name, flow)[step]

    def recorded(self, name: str) -> bool:
        """Whether a counterexample records this per-flow quantity: built for the
        scenario, set by the CCA (rate, cwnd), possible in the model (timeouts)."""
        q = QUANTITIES[name]
        if q.family not in self.built:
            return False
        if name in ("rate", "cwnd"):
            return self.sets_rate if name == "rate" else self.sets_cwnd
        if name == "timeout":
            return self.model.timeouts
        return True

    def rewrite(self, cs: list[z3.ExprRef]) -> list[z3.ExprRef]:
        """``cs`` with every atom of :attr:`literals` replaced by its literal (one pass
        over all of them: Z3's substitution shares the work between constraints)."""
        if not self.literals or not cs:
            return cs
        if len(cs) == 1:
            return [self._substitute(cs[0])]
        out = self._substitute(z3.And(*cs))
        if out.num_args() != len(cs):
            raise EngineError("rewriting the delay buckets' atoms changed the constraints' number")
        return [out.arg(i) for i in range(len(cs))]

    def _substitute(self, e: z3.ExprRef) -> z3.ExprRef:
        """``z3.substitute(e, *literals)``, its argument arrays made once (a formula is
        rewritten each time it is compiled, and the table has 2·T² pairs per flow)."""
        n = len(self.literals)
        if self._table is None or self._table[0] != n:
            froms = (z3.Ast * n)(*[a.as_ast() for a, _b in self.literals])
            tos = (z3.Ast * n)(*[b.as_ast() for _a, b in self.literals])
            self._table = (n, froms, tos)
        _n, froms, tos = self._table
        return z3.z3._to_expr_ref(z3.Z3_substitute(e.ctx_ref(), e.as_ast(), n, froms, tos), e.ctx)

    def param(self, name: str) -> z3.ExprRef:
        if name == "MSS":
            return self.MSS
        if name == "C0":
            return self.C0
        if name == "C0_2" and len(self.hops) > 1:
            return self.hops[1].C0
        if name == "buffer" and self.buffer is not None:
            return self.buffer
        raise EngineError(f"parameter '{name}' is not available")

    def const(self, x: Fraction) -> z3.ArithRef:
        return rat(x)
