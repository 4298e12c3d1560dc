"""The kernel program's step trace: what each step observed and decided, for a look
from outside (``ccmatic testbed --trace-cca``, docs/testbed.md).

With a trace, the program keeps its last :data:`ENTRIES` steps (of all its sockets)
in an array map, a record per step: when its counters were read (``t_us``), the time
the step stands for (``at_us``: the same for steps started by an ACK, the grid's
boundary for ``--steps grid``, whose counters are the last ACK's before it), when the
program ran it and its decisions took effect (``ran_us``), how long the step had lasted,
the flow (its destination port), the observations A, S, Ld and the RTT sample, the
delay bounds and beliefs it derived, and the rate, window and pacing rate it set.
A second map counts the steps (an atomic add, which needs ``clang -mcpu=v3``).
:func:`read` takes both with ``bpftool map dump`` while the program is loaded.
"""

from __future__ import annotations

import json
import socket
import subprocess
from typing import Any

from ccmatic.export.cdomain import ONE

#: steps kept (of all the program's sockets): 2 minutes of 16 flows at 10 ms steps
ENTRIES = 1 << 16

#: the record's fields after t_us, port, k and step_us: fixed point (2^-16) of their unit
FIXED = ("A", "S", "Ld", "rtt", "qdel_lo", "qdel_hi", "c_lo", "c_hi", "c_lo_lambda", "q_hi", "rate")
PLAIN = ("cwnd_pkts", "pacing_bps")

C_SOURCE = """\
struct ccm_trace {
	u64 t_us, at_us, ran_us, port, k, step_us;
	s64 %(fixed)s;
	u64 %(plain)s;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, %(entries)d);
	__type(key, u32);
	__type(value, struct ccm_trace);
} %(records)s SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} %(count)s SEC(".maps");

static __always_inline void ccm_trace_step(struct sock *sk, struct ccm_state *st, u64 now, u64 at, u64 step_us,
					   s64 rate)
{
	u32 z = 0, i;
	u64 *n = bpf_map_lookup_elem(&%(count)s, &z);
	struct ccm_trace *e;

	if (!n)
		return;
	i = (u32)(__sync_fetch_and_add(n, 1) %% %(entries)d);
	e = bpf_map_lookup_elem(&%(records)s, &i);
	if (!e)
		return;
	e->t_us = now;
	e->at_us = at;
	e->ran_us = ((struct tcp_sock *)sk)->tcp_mstamp;
	e->port = sk->__sk_common.skc_dport;
	e->k = st->k;
	e->step_us = step_us;
%(stores)s	e->rate = rate;
	e->cwnd_pkts = st->cwnd_pkts;
	e->pacing_bps = st->pacing_bps;
}
"""


def map_names(tag: str) -> tuple[str, str]:
    """The records' and the count's map names (a map's name has at most 15 characters)."""
    names = f"tr{tag}", f"tn{tag}"
    if any(len(n) > 15 for n in names):
        raise ValueError(f"the trace tag {tag!r} is too long for a map's name")
    return names


def c_source(tag: str) -> str:
    records, count = map_names(tag)
    stores = "".join(f"\te->{f} = st->{f}[0];\n" for f in FIXED if f != "rate")
    return C_SOURCE % {"fixed": ", ".join(FIXED), "plain": ", ".join(PLAIN), "entries": ENTRIES,
                       "records": records, "count": count, "stores": stores}


def _dump(name: str) -> list[dict[str, Any]]:
    res = subprocess.run(["bpftool", "-j", "map", "dump", "name", name], check=False, capture_output=True, text=True)
    if res.returncode != 0:
        raise OSError(f"bpftool map dump name {name}: {(res.stderr or res.stdout).strip()}")
    out: list[dict[str, Any]] = json.loads(res.stdout or "[]")
    return out


def _value(entry: dict[str, Any]) -> Any:
    return entry.get("formatted", entry)["value"]


def read(tag: str) -> list[dict[str, float]]:
    """The steps traced so far, oldest first: times and step lengths in seconds, the
    fixed-point fields in their units (bytes, steps, bytes per step), the port in host
    order."""
    records, count = map_names(tag)
    n = int(_value(_dump(count)[0]))
    entries = [_value(e) for e in _dump(records)]
    kept = [entries[i % ENTRIES] for i in range(max(0, n - ENTRIES), n)]
    rows = []
    for e in kept:
        row = {"t_s": int(e["t_us"]) / 1e6, "at_s": int(e["at_us"]) / 1e6, "ran_s": int(e["ran_us"]) / 1e6,
               "port": socket.ntohs(int(e["port"]) & 0xFFFF), "k": int(e["k"]),
               "step_s": int(e["step_us"]) / 1e6}
        row |= {f: int(e[f]) / ONE for f in FIXED}
        row |= {f: int(e[f]) for f in PLAIN}
        rows.append(row)
    return rows
