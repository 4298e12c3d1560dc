"""``ccmatic export``: a CCA file as a Linux ``tcp_congestion_ops`` eBPF program
(docs/export.md), generated through the one semantics over a C-emitting domain."""
