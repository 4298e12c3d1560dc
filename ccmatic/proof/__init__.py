"""Performance proofs: lemma checking, stitching, the transition graph and constant
search (thesis §4.1.2, §4.2.3, Appendix B.4)."""
