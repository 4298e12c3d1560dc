"""The one meaning of CCA files, belief updates and network rules, written once over
a domain (Z3 terms, exact rationals, floats; :mod:`ccmatic.semantics.domain`)."""
