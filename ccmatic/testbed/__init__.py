"""``ccmatic testbed``: real Linux TCP flows on an emulated dumbbell (docs/testbed.md)."""
