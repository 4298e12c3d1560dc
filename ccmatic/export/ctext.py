"""The C program around the generated blocks: the fixed-point helpers, the socket's
state, and the step driver that mirrors the simulator's step grid
(:mod:`ccmatic.sim.fine`).  The same text builds for the kernel (with
:mod:`ccmatic.export.kernel`'s ``tcp_congestion_ops``) and for userspace (the
differential test's harness, :mod:`ccmatic.export.harness`)."""

from __future__ import annotations

from ccmatic.export.cdomain import SHIFT
from ccmatic.export.program import CCA_T, MEASURED, Generated, Settings

HELPERS = """\
#define CCM_SHIFT %(shift)d
#define CCM_ONE ((s64)1 << CCM_SHIFT)

static __always_inline u64 ccm_abs(s64 a) { return a < 0 ? (u64)0 - (u64)a : (u64)a; }
static __always_inline s64 ccm_signed(u64 m, int neg) { return neg ? -(s64)m : (s64)m; }
/* a * p / q for a constant ratio p/q (q > 0), truncated toward zero */
static __always_inline s64 ccm_mulc(s64 a, s64 p, s64 q)
{
	u64 ua = ccm_abs(a), up = ccm_abs(p), uq = (u64)q;
	return ccm_signed((ua / uq) * up + ((ua %% uq) * up) / uq, (a < 0) != (p < 0));
}
/* a * b in fixed point, truncated toward zero */
static __always_inline s64 ccm_mul(s64 a, s64 b)
{
	u64 ua = ccm_abs(a), ub = ccm_abs(b);
	return ccm_signed((ua >> CCM_SHIFT) * ub + (((ua & (CCM_ONE - 1)) * ub) >> CCM_SHIFT), (a < 0) != (b < 0));
}
/* a / b in fixed point, truncated toward zero; 0 for b = 0 (BPF's rule) */
static __always_inline s64 ccm_div(s64 a, s64 b)
{
	u64 ua = ccm_abs(a), ub = ccm_abs(b), q, r;
	if (ub == 0)
		return 0;
	q = ua / ub;
	r = ua %% ub;
	return ccm_signed((q << CCM_SHIFT) + (r << CCM_SHIFT) / ub, (a < 0) != (b < 0));
}
/* c ? a : b without a branch (c is 0 or 1) */
static __always_inline s64 ccm_sel(s64 c, s64 a, s64 b) { return b ^ ((a ^ b) & -c); }

#define CCM_SHIFT_REG(r, n) do { _Pragma("unroll") for (int i_ = (n) - 1; i_ > 0; i_--) (r)[i_] = (r)[i_ - 1]; } while (0)
"""

OBS = """\
/* one boundary's observations: bytes are whole bytes, the rest fixed point */
struct ccm_obs {
	s64 A, S, Ld;              /* cumulative bytes sent, delivered, detected lost */
	s64 timeout;               /* 1: a retransmission timeout since the last boundary */
	s64 have_rtt;              /* 1: an RTT sample has arrived (ever) */
	s64 rtt, rtt_min, srtt;    /* steps (RTprops), fixed point */
	s64 delivery_rate;         /* bytes per step, fixed point */
	s64 mss;                   /* bytes */
	s64 second;                /* one second in steps, fixed point */
};
"""


def state_struct(g: Generated, extra: str) -> str:
    """The socket's state: the registers, the belief bits, the outputs to be, the
    temporaries, and the kernel's own bookkeeping (``extra``)."""
    lines = ["struct ccm_state {", "\tu64 k;  /* boundaries so far */", "\tu64 en; /* the beliefs' step, k - 2 */",
             "\ts64 mss, second, bucket, have_rtt;"]
    lines += [f"\ts64 {name}[{depth}];" for name, depth in g.registers.items()]
    if g.bits:
        lines += [f"\ts64 bit_last[{g.bits}];", f"\ts64 bit_prev[{g.bits}];"]
    lines += [f"\ts64 nxt[{max(1, len(g.outputs))}];", f"\ts64 T[{max(1, g.temps)}];", extra, "};"]
    return "\n".join(lines) + "\n"


def _block(g: Generated, name: str, indent: str) -> str:
    return "".join(f"{indent}{line}\n" for line in g.blocks.get(name, []))


def _shift(name: str, g: Generated, indent: str) -> str:
    return f"{indent}CCM_SHIFT_REG(st->{name}, {g.registers[name]});\n"


def driver(g: Generated, s: Settings) -> str:
    """``ccm_boundary``: one step boundary, as the simulator's ``_observe`` and
    ``on_boundary`` (the CCA's outputs land in the registers ``o_*`` slot 0)."""
    t1, t2, t3 = "\t", "\t\t", "\t\t\t"
    out = [("/* first: a constant 1 for the socket's first boundary (the compiler drops the rest) */\n"
           "static __always_inline void ccm_boundary(struct ccm_state *st, const struct ccm_obs *o, int first)\n{\n"),
           (f"{t1}volatile s64 *T = st->T;  /* through memory: the stack holds 512 bytes */\n"
           f"{t1}u64 k = first ? 0 : st->k;\n\n"),
           f"{t1}(void)T;\n{t1}st->mss = o->mss << CCM_SHIFT;\n{t1}st->second = o->second;\n"]
    for name in MEASURED:
        scaled = name in ("A", "S", "Ld")
        out.append(_shift(name, g, t1))
        out.append(f"{t1}st->{name}[0] = o->{name}{' << CCM_SHIFT' if scaled else ''};\n")
    out.append(f"{t1}st->have_rtt = o->have_rtt;\n"
               f"{t1}st->bucket = o->have_rtt ? (o->rtt > CCM_ONE ? (o->rtt - CCM_ONE) >> CCM_SHIFT : 0) : -1;\n")
    out.append(f"{t1}if (k >= 2) {{\n{t2}st->en = k - 2;\n")
    out += [_shift("qdel_lo", g, t2), _shift("qdel_hi", g, t2), _block(g, "qdel", t2)]
    out += [_shift(n, g, t2) for n in ("c_lo", "c_hi", "c_lo_lambda")]
    out.append(f"{t2}if (k == 2) {{\n{t3}st->c_lo[0] = st->mss;\n{t3}st->c_hi[0] = st->mss * 1000000000LL;\n"
               f"{t3}st->c_lo_lambda[0] = st->mss;\n")
    if g.bits:
        out.append(f"{t3}st->bit_last[0] = 1;\n{t3}st->bit_prev[0] = 1;\n")
    out.append(f"{t2}}} else {{\n")
    out.append(_block(g, "rate", t3) if g.rate_beliefs else
               f"{t3}st->c_lo[0] = st->c_lo[1];\n{t3}st->c_hi[0] = st->c_hi[1];\n")
    if g.cbr_beliefs:
        out.append(f"{t3}if (st->en >= {1 + s.D}) {{\n{_block(g, 'cbr', t3 + t1)}{t3}}} else {{\n"
                   f"{t3}\tst->c_lo_lambda[0] = st->c_lo_lambda[1];\n{t3}}}\n")
    else:
        out.append(f"{t3}st->c_lo_lambda[0] = st->c_lo_lambda[1];\n")
    out.append(f"{t2}}}\n{t1}}}\n")
    out.append(f"{t1}if (k >= 1) {{\n{_shift('q_hi', g, t2)}{t2}if (k >= 2) {{\n")
    out.append(_block(g, "q_hi", t3) if g.cbr_beliefs else f"{t3}st->q_hi[0] = 0;\n")
    out.append(f"{t2}}} else {{\n{t3}st->q_hi[0] = 0;\n{t2}}}\n{t1}}}\n")
    out.append(_outputs(g, s))
    out.append(f"{t1}st->k = k + 1;\n}}\n")
    return "".join(out)


def _outputs(g: Generated, s: Settings) -> str:
    """Before the CCA's first step (its warm-up, as the simulator's), the first rate
    and window and the state's initial values (then kept); after, its step."""
    t1, t2 = "\t", "\t\t"
    warm = max(g.warmup, 1)
    out = [f"{t1}if (k < {warm}) {{\n"]
    for i, (name, _) in enumerate(g.outputs):
        if name == "rate":
            out.append(f"{t2}st->nxt[{i}] = st->mss * {s.init_rate_pkts};\n")
        elif name == "cwnd":
            out.append(f"{t2}st->nxt[{i}] = st->mss * {s.init_cwnd_pkts};\n")
        else:
            out.append(f"{t2}st->nxt[{i}] = st->o_{name}[0];\n")
    if any(n not in ("rate", "cwnd") for n, _ in g.outputs):
        out.append(f"{t2}if (k == 0) {{\n")
        out += [f"{t2}\tst->nxt[{i}] = 0;\n" for i, (n, _) in enumerate(g.outputs) if n not in ("rate", "cwnd")]
        out.append(_block(g, "init", t2 + t1))
        out.append(f"{t2}}}\n")
    out.append(f"{t1}}} else {{\n{_block(g, 'cca', t2)}{t1}}}\n")
    for i, (name, _) in enumerate(g.outputs):
        reg = f"o_{name}"
        if reg not in g.registers:
            g.registers[reg] = 1
        out.append(_shift(reg, g, t1))
        out.append(f"{t1}st->{reg}[0] = st->nxt[{i}];\n")
    return "".join(out)


def program(g: Generated, s: Settings, state_extra: str = "") -> str:
    """Helpers, observations, state and driver (for the kernel or userspace)."""
    body = driver(g, s)  # first: it may add output registers
    head = (f"/* generated by 'ccmatic export' from {g.name}.cca: the CCA step, beliefs and delay buckets\n"
            f" * of ccmatic's semantics in fixed point ({SHIFT} fraction bits); D = {s.D} steps,\n"
            f" * belief period {s.belief_period} steps, T = {CCA_T}. Do not edit: regenerate. */\n")
    return head + HELPERS % {"shift": SHIFT} + OBS + state_struct(g, state_extra) + body
