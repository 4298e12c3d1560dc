"""Concrete simulation of CCA files (thesis §4.2.4, Appendix B.6).

* exact mode (:mod:`ccmatic.sim.exact`): the SMT models' step semantics on exact
  rationals; :func:`replay` re-executes a counterexample with its network choices
  (the adversarial-replay link) and checks every per-step value;
* fine mode (:mod:`ccmatic.sim.fine`): a small-time-step simulation with ideal,
  CBR-delay and ACK-aggregation links, drop-tail buffers and several flows;
  :mod:`ccmatic.sim.metrics` summarises a run, :mod:`ccmatic.sim.evaluate` runs
  the B.6 grid.

Both run the same CCA files verify and synth use, through the concrete interpreter
:mod:`ccmatic.lang.interp`.
"""
