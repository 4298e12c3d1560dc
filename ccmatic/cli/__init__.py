"""The ``ccmatic`` command: one module per command (:mod:`ccmatic.cli.main` dispatches)."""
