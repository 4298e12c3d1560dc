"""ccmatic: SMT-based synthesis and verification of congestion control algorithms.

The engine is layered; each layer imports only those before it (docs/architecture.md):

* ``ccmatic.core``       errors, units, the registry of quantities, models, scenarios, results
* ``ccmatic.spec``       the spec language: parse, resolve, units, linearity -> a checked tree
* ``ccmatic.semantics``  its one meaning, with the beliefs and network rules, over a domain
* ``ccmatic.encode``     a scenario as constraints (Z3), pure
* ``ccmatic.sim``        exact replay of counterexamples, the fine-mode simulator
* ``ccmatic.engine``     sessions, verify, re-check, CEGIS, proofs, search, executors
* ``ccmatic.io``         loaders, library, reports, plots
* ``ccmatic.cli``        the ``ccmatic`` command
"""

__version__ = "0.1.0"
