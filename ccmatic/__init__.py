"""ccmatic: SMT-based synthesis and verification of congestion control algorithms.

The engine is layered (see DESIGN.md):

* ``ccmatic.lang``      the spec language (parse with ``ast``, check units, compile to Z3)
* ``ccmatic.trace``     the symbolic trace (per-flow, per-step variables)
* ``ccmatic.network``   the model families (ideal, cbr_delay, ccac)
* ``ccmatic.beliefs``   belief bounds (thesis §4.1.1, §4.2.2.1)
* ``ccmatic.smt``       solver sessions and the three-state result
* ``ccmatic.verify``    bounded model checking of one CCA against a property
* ``ccmatic.cli``       the ``ccmatic`` command
"""

__version__ = "0.1.0"
