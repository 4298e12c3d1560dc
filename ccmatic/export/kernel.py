"""The ``tcp_congestion_ops`` around the driver (:mod:`ccmatic.export.ctext`): the
socket's observations at each step boundary, the decisions written to
``sk_pacing_rate`` and ``snd_cwnd`` (docs/export.md says what maps to what)."""

from __future__ import annotations

import re
from typing import get_args

from ccmatic.export.ctext import program
from ccmatic.export.program import Generated, Settings, Steps
from ccmatic.export.trace import c_source

#: Linux's TCP_CA_NAME_MAX is 16 bytes with the terminating zero; a BPF object name too
NAME_MAX = 15

#: where the program's steps begin (:class:`~ccmatic.export.program.Settings`)
STEPS: tuple[str, ...] = get_args(Steps)

KERNEL_STATE = """\
	u64 step_start_us;     /* when the current step began (tp->tcp_mstamp) */
	u64 last_rtt_us;       /* the latest RTT sample */
	u64 step_rtt_min_us;   /* the smallest RTT sample of this step (0: none) */
	s64 step_rate_max;     /* the largest delivery-rate sample of this step (fixed point) */
	u64 rtprop_us;         /* the step length */
	u64 timeout_pending;   /* a retransmission timeout since the last boundary */
	u64 cwnd_pkts;         /* the decisions, re-applied on every ACK */
	u64 pacing_bps;
	u64 snap_us;           /* grid steps: the previous ACK, when, and the counters then */
	u64 snap_out;
	u64 snap_delivered;
	u64 snap_lost;
	u64 budget_end;        /* grid steps: data_segs_out at which the step's sending ends (0: none) */"""

WRAPPER = """\
char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ccm_state);
} %(name)s_st SEC(".maps");
%(trace_def)s
static __always_inline u64 ccm_rtprop(struct tcp_sock *tp)
{
	u64 r = %(rtprop)dULL;

	if (!r) {  /* measured: the minimum RTT (Linux's windowed min filter) */
		r = tp->rtt_min.s[0].v;
		if (r == 0 || r == ~0U)
			r = tp->srtt_us >> 3;
		if (r == 0)
			r = 1000;
	}
	return r;
}

static __always_inline void ccm_apply(struct sock *sk, struct tcp_sock *tp, struct ccm_state *st)
{
	u64 clamp = tp->snd_cwnd_clamp, w;

	if (st->cwnd_pkts > clamp)
		st->cwnd_pkts = clamp;
	w = st->cwnd_pkts;
	if (%(grid)d && st->budget_end) {  /* the step's segments are out: send no more in it */
		s64 flight = (s64)tp->packets_out - tp->sacked_out - tp->lost_out + tp->retrans_out;
		s64 left = (s64)st->budget_end - tp->data_segs_out, most;

		most = (flight > 0 ? flight : 0) + (left > 0 ? left : 0);
		if (most < 1)
			most = 1;
		if ((u64)most < w)
			w = most;
	}
	tp->snd_cwnd = w;
	if (%(sets_rate)d) {
		u64 rate = st->pacing_bps;

		if (rate > sk->sk_max_pacing_rate)
			rate = sk->sk_max_pacing_rate;
		sk->sk_pacing_rate = rate;
	}
}

static __always_inline void ccm_step(struct sock *sk, struct tcp_sock *tp, struct ccm_state *st, u64 now, u64 at,
				     int first, s64 A, s64 S, s64 Ld)
{
	struct ccm_obs o = {};
	u64 mss = tp->mss_cache, r = ccm_rtprop(tp), last = st->last_rtt_us;
	s64 rate = 0, cwnd = 0;
%(trace_start)s
	st->rtprop_us = r;
	o.A = A;
	o.S = S;
	o.Ld = Ld;
	o.timeout = st->timeout_pending != 0;
	o.have_rtt = last != 0;
	o.rtt = (s64)((last << CCM_SHIFT) / r);
	o.rtt_min = st->step_rtt_min_us ? (s64)((st->step_rtt_min_us << CCM_SHIFT) / r) : o.rtt;
	o.srtt = (s64)((((u64)tp->srtt_us >> 3) << CCM_SHIFT) / r);
	o.delivery_rate = st->step_rate_max;
	o.mss = (s64)mss;
	o.second = (s64)((1000000ULL << CCM_SHIFT) / r);
	ccm_boundary(st, &o, first);
	st->step_start_us = at;
	st->step_rtt_min_us = 0;
	st->step_rate_max = 0;
	st->timeout_pending = 0;
	%(rate)s
	%(cwnd)s
	if (rate < 0)
		rate = 0;
	if (cwnd < 0)
		cwnd = 0;
	/* bytes per step to bytes per second: rate * 10^6 / rtprop_us, 10^6 = 15625 * 2^6 */
	st->pacing_bps = ((u64)rate * 15625 / r) >> (CCM_SHIFT - 6);
	st->cwnd_pkts = %(cwnd_pkts)s;
	if (st->cwnd_pkts < 1)
		st->cwnd_pkts = 1;
	ccm_apply(sk, tp, st);
%(trace_call)s}

/* A step on the socket's counters as they are now (the init step, and ACK-started steps) */
static __always_inline void ccm_step_now(struct sock *sk, struct tcp_sock *tp, struct ccm_state *st, u64 now, int first)
{
	u64 mss = tp->mss_cache;

	ccm_step(sk, tp, st, now, now, first, (s64)(tp->data_segs_out * mss), (s64)(tp->delivered * mss), (s64)(tp->lost * mss));
}

static __always_inline void ccm_snapshot(struct tcp_sock *tp, struct ccm_state *st, u64 now)
{
	st->snap_us = now;
	st->snap_out = tp->data_segs_out;
	st->snap_delivered = tp->delivered;
	st->snap_lost = tp->lost;
}

/* Steps on a fixed grid (--steps grid): the boundary b = step_start + RTprop.  The
 * step runs at the first send or ACK past it (the send path's hook below, and
 * cong_control), on the counters of the last ACK before b (what the sender knew at
 * b), with the bytes sent by b: what has been sent, when a send runs it (nothing was
 * sent since b without passing the hook first); at an ACK, what the pacing rate sent
 * from the last ACK to b (a paced sender sends between ACKs without a callback), at
 * most what has been sent by now.  Every boundary passed since gets its step, up to
 * CCM_CATCH_UP of them, on the same counters: a step skipped would stretch the CCA's
 * step over two RTprops.  A longer gap resumes the grid at the last boundary before now.
 *
 * A step sends what the CCA decided, rate x RTprop (whole segments, one more at most;
 * one at least, when a late step finds its bytes already sent), and no more: the
 * window stops sending once the step's segments are out (st->budget_end, in
 * data_segs_out), and the pacing rate spreads them over the rest of the step so that
 * the segment after them is due at the next boundary: Linux arms its pacing timer for
 * it, and the send it starts runs the next step on time.  A step that runs late sends
 * its segments faster, at most CCM_PACE_UP_Q4 quarters of the rate and one segment
 * per step more; what that cannot send by the step's end goes out after it, until the
 * next step runs. */
#define CCM_CATCH_UP 4
#define CCM_PACE_UP_Q4 5

/* The window lets a step send one TSO burst (Linux's tcp_tso_autosize: a millisecond
 * at the pacing rate, sk_pacing_shift 10) beyond its segments: those are due from b
 * on, so the step's own segments are never held back by the window, whose small
 * remainder Linux would defer for a bigger burst (tcp_tso_should_defer) until an ACK
 * comes, with no pacing timer to send at b. */
static __always_inline u64 ccm_burst(struct ccm_state *st, u64 mss)
{
	return (st->pacing_bps >> 10) / mss + 1;
}

static __always_inline int ccm_grid_step(struct sock *sk, struct tcp_sock *tp, struct ccm_state *st, u64 now,
					 int sending)
{
	u64 r = st->rtprop_us, b = st->step_start_us + r, mss = tp->mss_cache, pace = st->pacing_bps;
	u64 sent = (u64)tp->data_segs_out * mss, est = sent, plan, left, due;
	int i;

	if (!r || now < b)
		return 0;
	for (i = 0; i < CCM_CATCH_UP && b <= now; i++) {
		est = st->snap_out * mss + (b > st->snap_us ? pace * (b - st->snap_us) / 1000000 : 0);
		if (est > sent || sending)
			est = sent;
		ccm_step(sk, tp, st, st->snap_us, b, 0, (s64)est, (s64)(st->snap_delivered * mss), (s64)(st->snap_lost * mss));
		b += r;
	}
	if (b <= now) {  /* a gap of more than CCM_CATCH_UP steps: the step starts now */
		st->step_start_us = b + (now - b) / r * r;
		est = sent;
		b = st->step_start_us + r;
	}
	if (!%(sets_rate)d)
		return 1;
	plan = st->pacing_bps * r / 1000000;
	due = (est + plan) / mss + 1;
	if (due <= tp->data_segs_out)  /* one segment at least, so that a send comes at b */
		due = tp->data_segs_out + 1;
	left = (due - tp->data_segs_out) * mss;
	if (b > now) {  /* the step's segments spread so that the next one is due at b */
		u64 p = left * 1000000 / (b - now), top = st->pacing_bps * CCM_PACE_UP_Q4 / 4 + mss * 1000000 / r;

		st->pacing_bps = p < top ? p : top;
	}
	st->budget_end = due + ccm_burst(st, mss);
	return 1;
}
%(send_hook)s
SEC("struct_ops")
void BPF_PROG(%(name)s_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ccm_state *st = bpf_sk_storage_get(&%(name)s_st, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);

	if (!st)
		return;
	if (%(sets_rate)d)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	ccm_step_now(sk, tp, st, tp->tcp_mstamp, 1);
	if (%(grid)d)
		ccm_snapshot(tp, st, tp->tcp_mstamp);
}

SEC("struct_ops")
void BPF_PROG(%(name)s_cong_control, struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ccm_state *st = bpf_sk_storage_get(&%(name)s_st, sk, 0, 0);
	u64 now = tp->tcp_mstamp;

	if (!st)
		return;
	if (%(grid)d)  /* a boundary passed since the last ACK: its step, on what was known at it */
		ccm_grid_step(sk, tp, st, now, 0);
	if (rs->rtt_us > 0) {
		st->last_rtt_us = rs->rtt_us;
		if (!st->step_rtt_min_us || (u64)rs->rtt_us < st->step_rtt_min_us)
			st->step_rtt_min_us = rs->rtt_us;
	}
	if (rs->delivered > 0 && rs->interval_us > 0 && st->rtprop_us) {
		/* bytes per step: delivered * mss / interval * rtprop */
		s64 r = (s64)((((u64)rs->delivered * tp->mss_cache) << CCM_SHIFT) / (u64)rs->interval_us * st->rtprop_us);

		if (r > st->step_rate_max)
			st->step_rate_max = r;
	}
	if (%(grid)d)
		ccm_snapshot(tp, st, now);
	else if (now - st->step_start_us >= st->rtprop_us)
		ccm_step_now(sk, tp, st, now, 0);
	ccm_apply(sk, tp, st);
}

SEC("struct_ops")
void BPF_PROG(%(name)s_set_state, struct sock *sk, u8 new_state)
{
	struct ccm_state *st = bpf_sk_storage_get(&%(name)s_st, sk, 0, 0);

	if (st && new_state == TCP_CA_Loss)
		st->timeout_pending = 1;
}

SEC("struct_ops")
u32 BPF_PROG(%(name)s_ssthresh, struct sock *sk)
{
	return ((struct tcp_sock *)sk)->snd_ssthresh;
}

SEC("struct_ops")
u32 BPF_PROG(%(name)s_undo_cwnd, struct sock *sk)
{
	return ((struct tcp_sock *)sk)->snd_cwnd;
}

SEC(".struct_ops")
struct tcp_congestion_ops %(name)s = {
	.init = (void *)%(name)s_init,
	.cong_control = (void *)%(name)s_cong_control,
	.set_state = (void *)%(name)s_set_state,
	.ssthresh = (void *)%(name)s_ssthresh,
	.undo_cwnd = (void *)%(name)s_undo_cwnd,
%(send_op)s	.name = "%(name)s",
};
"""


#: grid steps on the send path as well (``min_tso_segs``), so that a boundary
#: passed while the sender sends gets its step at the next send, not at the next ACK
SEND_HOOK = """
/* Grid steps on the send path: tcp_write_xmit asks for the smallest TSO burst before
 * it sends anything (on every paced send, and after every ACK), with tcp_mstamp just
 * refreshed.  A boundary passed since the last send or ACK gets its step here, at
 * most a pacing gap late rather than an ACK gap, with A what has been sent: nothing
 * was sent since the boundary without passing here first (retransmissions aside).
 * The answer, 1 (Linux's default is net.ipv4.tcp_min_tso_segs = 2), lets a slow step
 * send single segments, as BBR does below 1.2 Mbit/s: a window of one segment would
 * otherwise be deferred. */
SEC("struct_ops")
u32 BPF_PROG(%(name)s_min_tso_segs, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ccm_state *st = bpf_sk_storage_get(&%(name)s_st, sk, 0, 0);
	u64 now = tp->tcp_mstamp, b;

	if (!st)
		return 1;
	if (ccm_grid_step(sk, tp, st, now, 1)) {
		ccm_apply(sk, tp, st);
		return 1;
	}
	b = st->step_start_us + st->rtprop_us;
	if (%(sets_rate)d && st->budget_end && tp->data_segs_out >= st->budget_end && st->rtprop_us && b > now) {
		/* Linux sent the step's last segment early (its pacing shortens the gap after a
		 * late send by up to half), so its timer fired before b: one segment more,
		 * paced so that the send after it, due at b, runs the step */
		st->pacing_bps = (u64)tp->mss_cache * 1000000 / (b - now) + 1;
		st->budget_end = tp->data_segs_out + 1 + ccm_burst(st, tp->mss_cache);
		ccm_apply(sk, tp, st);
	}
	return 1;
}
"""


def ca_name(stem: str) -> str:
    """The congestion control's name (what TCP_CONGESTION selects): ``ccm_`` and the
    file's name, in C identifier characters, at most 15 of them."""
    return ("ccm_" + re.sub(r"[^A-Za-z0-9_]", "_", stem))[:NAME_MAX]


def bpf_source(g: Generated, s: Settings, name: str, rtprop_us: int | None, trace: str | None = None) -> str:
    """The kernel program: ``rtprop_us`` None measures the RTprop as the minimum RTT;
    ``trace``: keep a step trace in maps tagged so (:mod:`ccmatic.export.trace`)."""
    outs = [n for n, _ in g.outputs]
    rate = "rate = st->o_rate[0];" if "rate" in outs else ""
    cwnd = "cwnd = st->o_cwnd[0];" if "cwnd" in outs else ""
    mss_fx = "((s64)mss << CCM_SHIFT)"
    # without a window the rate alone limits sending: two steps' worth of packets, and 4;
    # on the grid the step's budget alone (ccm_apply), as in the model: a window from the
    # rate of a step would hold back its few segments behind a faster step's flight
    cwnd_pkts = (f"(u64)(cwnd / {mss_fx})" if "cwnd" in outs else
                 "(u64)tp->snd_cwnd_clamp" if s.steps == "grid" else f"(u64)(2 * rate / {mss_fx}) + 4")
    head = ("#include \"vmlinux.h\"\n#include <bpf/bpf_helpers.h>\n#include <bpf/bpf_tracing.h>\n\n"
            "")
    body = program(g, s, KERNEL_STATE)
    traced = {"trace_def": "", "trace_start": "", "trace_call": ""} if trace is None else {
        "trace_def": "\n" + c_source(trace),
        "trace_start": f"\tu64 step_us = {'r' if s.steps == 'grid' else 'now - st->step_start_us'};\n",
        "trace_call": "\tccm_trace_step(sk, st, now, at, step_us, rate);\n"}
    if s.steps not in STEPS:
        raise ValueError(f"steps must be one of {', '.join(STEPS)}, not {s.steps!r}")
    grid = s.steps == "grid"
    hooks = {"send_hook": SEND_HOOK % {"name": name, "sets_rate": int(g.sets_rate)} if grid else "",
             "send_op": f"\t.min_tso_segs = (void *){name}_min_tso_segs,\n" if grid else ""}
    return head + body + "\n" + WRAPPER % {"name": name, "rtprop": rtprop_us or 0, "sets_rate": int(g.sets_rate),
                                           "grid": int(grid), "rate": rate, "cwnd": cwnd,
                                           "cwnd_pkts": cwnd_pkts, **traced, **hooks}
