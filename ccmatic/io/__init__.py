"""Files in and out: schema-driven loaders (models, queries, proofs, the objective
library), library lookup, reports and plots."""
