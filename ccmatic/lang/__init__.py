"""The ccmatic spec language: one Python-looking language for CCAs, templates,
objectives and lemmas.  Parsed with :mod:`ast` (never ``eval``), unit checked,
restricted to linear arithmetic, and compiled to Z3 terms."""
