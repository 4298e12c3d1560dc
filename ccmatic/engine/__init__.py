"""The algorithms: solver sessions, verification with exact re-check and replay,
CEGIS, proof checking, constant search, executors."""
