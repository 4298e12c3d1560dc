"""The spec language: one Python-looking language for CCA files, templates,
objectives, assumptions and lemmas, parsed with :mod:`ast` (never ``eval``) and
checked (names, units, linearity) into :mod:`ccmatic.spec.ir`.  No solver here."""
