"""Concrete runs of CCA files (thesis §4.2.4, Appendix B.6), through the one semantics
(:mod:`ccmatic.semantics`) the SMT encoding uses.

* exact mode (:mod:`ccmatic.sim.replay`): over exact rationals; :func:`replay`
  re-executes a counterexample with its network choices (the adversarial-replay link)
  and checks every per-step value;
* fine mode (:mod:`ccmatic.sim.fine`): over floats, a small-time-step simulation with
  ideal, CBR-delay and ACK-aggregation links, drop-tail buffers and several flows (its
  inputs and records in :mod:`ccmatic.sim.records`; its packets and per-tick work run
  compiled, :mod:`ccmatic.sim.kernel`); :mod:`ccmatic.sim.metrics`
  summarises a run, :mod:`ccmatic.sim.grid` runs one point of the B.6 grid and checks
  proved bounds.
"""
