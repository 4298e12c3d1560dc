"""One simulated flow's beliefs on its step grid (:mod:`ccmatic.sim.fine`), by the
models' rules (:mod:`ccmatic.semantics.beliefs`, over floats): the families its CCA
reads, and nothing else (computing the others would only cost time)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ccmatic.core.model import BeliefTimeouts
from ccmatic.core.quantities import QUANTITIES
from ccmatic.semantics import beliefs
from ccmatic.semantics.domain import FLOAT
from ccmatic.sim.records import SimConfig
from ccmatic.spec.cca import CcaProgram


class FlowBeliefs:
    """One flow's beliefs; ``Series`` is the kind of list its series are kept in
    (:class:`~ccmatic.sim.history.History` in a streamed run)."""

    def __init__(self, prog: CcaProgram, cfg: SimConfig, D: int, multi_flow: bool,
                 series: beliefs.FlowSeries[float], Series: type[list[Any]]) -> None:
        reads = prog.reads
        fam = {QUANTITIES[n].family for n in reads if n in QUANTITIES}
        self.rate = "rate_beliefs" in fam
        self.cbr = "cbr_beliefs" in fam
        P = max(1, cfg.belief_period)
        self.window = 2 * P + 1  # the belief windows' longest, in steps
        self.rule = beliefs.RateRule(D, Fraction(0), cfg.link.buffer is not None, False, not multi_flow,
                                     BeliefTimeouts(period=P, guard=None, invalid=True, max_expand=Fraction(2)),
                                     window=self.window)
        self.series = series
        self.D = D
        lo0, hi0 = cfg.mss, 1e9 * cfg.mss
        self.state: beliefs.RateState[float] = beliefs.RateState(
            Series([lo0]), Series([hi0]), [k == 0 for k in range(P)], Series([False]), Series([{}]), Series([{}]))
        self.cl: list[float] = Series([lo0])
        self.qh: list[float] = Series([0.0])
        self.names = beliefs.Values()

    def lists(self) -> list[list[Any]]:
        """Every per-step list it keeps (of the kind ``Series``)."""
        st = self.state
        return [st.c_lo, st.c_hi, st.timeout, st.after_last, st.after_prev, self.cl, self.qh]

    def step(self, en: int) -> tuple[float, float, float]:
        """c_lo, c_hi, c_lo_lambda at step en (S known up to en)."""
        if en > 0:
            if self.rate:
                beliefs.rate_step(FLOAT, self.names, self.rule, self.series, self.state, en, 0)
            else:
                self.state.c_lo.append(self.state.c_lo[-1])
                self.state.c_hi.append(self.state.c_hi[-1])
            if self.cbr:
                beliefs.cbr_lambda_step(FLOAT, self.names, self.series, self.cl, en, 1, self.D, 0)
            else:
                self.cl.append(self.cl[-1])
        return self.state.c_lo[en], self.state.c_hi[en], self.cl[en]

    def q_hi(self, t: int) -> float:
        """q_hi at step t (A known up to t, c_lo_lambda up to t - 1); 0 when the CCA
        reads no CBR belief (then nothing reads it)."""
        if not self.cbr:
            return 0.0
        if t > 0:
            beliefs.q_hi_step(FLOAT, self.names, self.series, self.cl, self.qh, t, 1, 0)
        return self.qh[t]
