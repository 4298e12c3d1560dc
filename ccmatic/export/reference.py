"""The exact reference of the exported program: the simulator's step grid
(:mod:`ccmatic.sim.fine`: ``_observe`` and ``on_boundary``) over exact rationals,
fed one boundary's observations at a time, through the one semantics
(:func:`~ccmatic.semantics.cca.run_step`, :mod:`~ccmatic.semantics.beliefs`,
:func:`~ccmatic.semantics.qdel.bounds` over :data:`~ccmatic.semantics.domain.EXACT`).

The differential test (:mod:`ccmatic.export.harness`) compares the generated C,
built for userspace, with this on random observation sequences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ccmatic.core.model import BeliefTimeouts
from ccmatic.core.quantities import ACK_CLOCKED, QUANTITIES
from ccmatic.export.cdomain import ONE
from ccmatic.export.program import CCA_T, Settings
from ccmatic.semantics import beliefs, qdel
from ccmatic.semantics.cca import initial_values, run_step
from ccmatic.semantics.domain import EXACT
from ccmatic.spec import ir
from ccmatic.spec.cca import CcaProgram

Value = Fraction | bool


@dataclass(frozen=True)
class Obs:
    """One boundary's observations (the harness's input line): bytes, and fixed-point
    numbers given as exact fractions."""

    A: int
    S: int
    Ld: int
    timeout: bool
    have_rtt: bool
    rtt: Fraction
    rtt_min: Fraction
    srtt: Fraction
    delivery_rate: Fraction
    mss: int
    second: Fraction


def _no_choice(opts: list[Value], node: ir.Choose) -> Value:
    raise AssertionError("the export refuses choose() before the reference runs")


def kept(v: Value) -> Value:
    """A persistent value as the socket keeps it, a multiple of 2^-16 (rounded toward
    zero): the next step starts from what the program stored, and exact rationals
    of a nonlinear CCA (Reno's MSS · acked / cwnd) do not double their length every
    step."""
    if isinstance(v, bool):
        return v
    return Fraction(int(v * ONE), ONE)


class Reference:
    """One flow's CCA on the step grid, over exact rationals."""

    def __init__(self, prog: CcaProgram, s: Settings, mss: int) -> None:
        self.code = prog.code(1, s.D, CCA_T)
        self.prog, self.s, self.k = prog, s, 0
        fam = {QUANTITIES[n].family for n in self.code.lags if n in QUANTITIES}
        self.rate, self.cbr = "rate_beliefs" in fam, "cbr_beliefs" in fam
        self.ser: dict[str, list[Value]] = {n: [] for n in (
            "A", "S", "Ld", "timeout", "rtt", "rtt_min", "srtt", "delivery_rate", "qdel_lo", "qdel_hi",
            "c_lo", "c_hi", "c_lo_lambda", "q_hi", *(n for n, _ in self.code.outputs))}
        self.L: list[Fraction] = []
        P = max(1, s.belief_period)
        self.rule = beliefs.RateRule(s.D, Fraction(0), False, False, s.upper,
                                     BeliefTimeouts(period=P, guard=None, invalid=True, max_expand=Fraction(2)),
                                     window=s.window)
        ser = self.ser
        self.series = beliefs.FlowSeries(ser["A"], ser["S"], self.L, ser["Ld"])
        lo0 = Fraction(mss)
        self.state: beliefs.RateState[Fraction] = beliefs.RateState([lo0], [lo0 * 10 ** 9], [k == 0 for k in range(P)])
        self.cl: list[Fraction] = [lo0]
        self.qh: list[Fraction] = [Fraction(0)]
        self.names = beliefs.Values()
        self.params: dict[str, Fraction] = {"R": Fraction(1), "D": Fraction(s.D), "T": Fraction(CCA_T)}

    def _param(self, name: str) -> Value:
        return self.params[name]

    def _beliefs(self, en: int) -> None:
        st, D = self.state, self.s.D
        if en > 0:
            if self.rate:
                beliefs.rate_step(EXACT, self.names, self.rule, self.series, st, en, 0)
            else:
                st.c_lo.append(st.c_lo[-1])
                st.c_hi.append(st.c_hi[-1])
            if self.cbr:
                beliefs.cbr_lambda_step(EXACT, self.names, self.series, self.cl, en, 1, D, 0)
            else:
                self.cl.append(self.cl[-1])
        self.ser["c_lo"].append(st.c_lo[en])
        self.ser["c_hi"].append(st.c_hi[en])
        self.ser["c_lo_lambda"].append(self.cl[en])

    def step(self, o: Obs) -> dict[str, Value]:
        """One boundary: the observations, then the CCA's outputs (its step, or before
        its warm-up the first rate and window and the state's initial values)."""
        k, ser = self.k, self.ser
        self.params["MSS"] = Fraction(o.mss)
        self.params["SECOND"] = o.second
        ser["Ld"].append(Fraction(o.Ld))
        ser["timeout"].append(o.timeout)
        if k >= 1:
            ser["A"].append(Fraction(o.A))
            self.L.append(Fraction(o.Ld))
        if k >= 2:
            ser["S"].append(Fraction(o.S))
            bucket = math.floor(max(Fraction(0), o.rtt - 1)) if o.have_rtt else -1
            lo, hi = qdel.bounds(EXACT, [d == bucket for d in range(CCA_T)], self.s.D) if o.have_rtt \
                else (Fraction(0), Fraction(1))
            ser["qdel_lo"].append(lo)
            ser["qdel_hi"].append(hi)
            self._beliefs(k - 2)
            for name in ("rtt", "rtt_min", "srtt", "delivery_rate"):
                ser[name].append(getattr(o, name))
        if k >= 1:
            t = k - 1
            if t > 0 and self.cbr:
                beliefs.q_hi_step(EXACT, self.names, self.series, self.cl, self.qh, t, 1, 0)
            elif t > 0:
                self.qh.append(Fraction(0))
            ser["q_hi"].append(self.qh[t])
        out = self._outputs(k, Fraction(o.mss))
        for n, _ in self.code.outputs:
            ser[n].append(kept(out[n]))
        self.k += 1
        return out

    def _outputs(self, k: int, mss: Fraction) -> dict[str, Value]:
        warm = max(self.code.warmup + 1, 1)
        ser = self.ser
        if k >= warm:
            def fetch(name: str, lag: int) -> Value:
                return ser[name][k - lag - (1 if name in ACK_CLOCKED else 0)]
            return run_step(self.code, EXACT, fetch, self._param, _no_choice)
        out: dict[str, Value] = {"rate": mss * self.s.init_rate_pkts, "cwnd": mss * self.s.init_cwnd_pkts}
        states = [n for n, _ in self.code.outputs if n not in ("rate", "cwnd")]
        if k == 0:
            init = initial_values(self.code, EXACT, self._param, _no_choice)
            for n, is_bool in self.code.outputs:
                if n in states:
                    out[n] = init.get(n, False if is_bool else Fraction(0))
        else:
            for n in states:
                out[n] = ser[n][k - 1]
        return {n: out[n] for n, _ in self.code.outputs}
