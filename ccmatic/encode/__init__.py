"""Scenarios as constraints (pure: :func:`ccmatic.encode.problem.build` returns every
constraint of a problem), through the one semantics over the Z3 domain."""
