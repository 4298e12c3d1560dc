"""The differential test: the generated C, built for userspace, against the exact
reference (:mod:`ccmatic.export.reference`) on random observation sequences.

The harness reads sequences from stdin (a line with the number of boundaries, then a
line of :class:`~ccmatic.export.reference.Obs` per boundary, fixed-point numbers as
integers) and prints, per boundary, the outputs it decided (rate, cwnd, state) as
integers; each sequence starts from a fresh socket state.
"""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ccmatic.export.cdomain import ONE
from ccmatic.export.ctext import program
from ccmatic.export.program import Generated, Settings
from ccmatic.export.reference import Obs, Reference, Value
from ccmatic.spec.cca import CcaProgram

MAIN = """\
#include <stdint.h>
#include <stdio.h>
#include <string.h>
typedef int64_t s64;
typedef uint64_t u64;
#define __always_inline inline __attribute__((always_inline))
%(program)s
static struct ccm_state st;

int main(void)
{
	long n;
	struct ccm_obs o;

	while (scanf("%%ld", &n) == 1) {
		memset(&st, 0, sizeof st);
		for (long i = 0; i < n; i++) {
			long long v[11];
			for (int j = 0; j < 11; j++)
				if (scanf("%%lld", &v[j]) != 1)
					return 2;
			o.A = v[0]; o.S = v[1]; o.Ld = v[2]; o.timeout = v[3]; o.have_rtt = v[4]; o.rtt = v[5];
			o.rtt_min = v[6]; o.srtt = v[7]; o.delivery_rate = v[8]; o.mss = v[9]; o.second = v[10];
			ccm_boundary(&st, &o, 0);
%(prints)s			printf("\\n");
		}
	}
	return 0;
}
"""


def harness_source(g: Generated, s: Settings) -> str:
    body = program(g, s)
    prints = "".join(f'\t\t\tprintf("%%lld ", (long long)st.o_{n}[0]);\n' for n, _ in g.outputs)
    return MAIN % {"program": body, "prints": prints.replace("%%", "%")}


def build_harness(g: Generated, s: Settings, out: Path, cc: str = "clang") -> Path:
    """Compile the harness (raises CalledProcessError with the compiler's message)."""
    src = out / f"{g.name}_harness.c"
    src.write_text(harness_source(g, s))
    exe = out / f"{g.name}_harness"
    subprocess.run([cc, "-O1", "-w", "-o", str(exe), str(src)], check=True, capture_output=True, text=True)
    return exe


def _fx(x: Fraction) -> int:
    return int(x * ONE)


def _q(x: Fraction) -> Fraction:
    """x as a multiple of 2^-16 (what the kernel program measures)."""
    return Fraction(_fx(x), ONE)


def random_sequence(rng: random.Random, n: int, mss: int = 1448) -> list[Obs]:
    """A plausible socket: whole packets sent, delivered and lost (S + Ld ≤ A), RTT
    samples of 0.5 to 4 RTprops from a random boundary on, rare timeouts; fixed-point
    numbers are multiples of 2^-16 (as the kernel program measures them)."""
    A = S = Ld = 0
    have = False
    seq = []
    for _ in range(n):
        A += rng.choice((0, 1, 2, 5, 10, 20, 40)) * mss
        inflight = (A - S - Ld) // mss
        d = rng.randint(0, inflight)
        lost = rng.randint(0, inflight - d) if rng.random() < 0.15 else 0
        S += d * mss
        Ld += lost * mss
        have = have or rng.random() < 0.5
        rtt = Fraction(rng.randint(ONE // 2, 4 * ONE), ONE) if have else Fraction(0)
        seq.append(Obs(A, S, Ld, rng.random() < 0.03, have, rtt, rtt if rng.random() < 0.5 else _q(rtt * 3 / 4),
                       Fraction(rng.randint(0, 4 * ONE), ONE), Fraction(rng.randint(0, 60 * mss * ONE), ONE), mss,
                       Fraction(rng.randint(ONE, 1000 * ONE), ONE)))
    return seq


def _line(o: Obs) -> str:
    return " ".join(str(v) for v in (o.A, o.S, o.Ld, int(o.timeout), int(o.have_rtt), _fx(o.rtt), _fx(o.rtt_min),
                                     _fx(o.srtt), _fx(o.delivery_rate), o.mss, _fx(o.second)))


#: the relative part of the allowed difference: a product or quotient of computed
#: values carries each factor's absolute error (2^-16) relative to the factor, which
#: persistent values carry on (docs/export.md, §Precision and limits)
RELATIVE = Fraction(1, 2 ** 12)


@dataclass
class Outcome:
    sequences: int
    steps: int
    mismatches: list[str]
    max_error: Fraction
    max_relative: Fraction


def differential(prog: CcaProgram, g: Generated, s: Settings, exe: Path, sequences: int, steps: int,
                 seed: int = 1, tolerance: Fraction = Fraction(1, 64), relative: Fraction = RELATIVE) -> Outcome:
    """Run ``sequences`` random sequences of ``steps`` boundaries through the harness
    and the exact reference; a numeric output may differ by ``tolerance`` (in its
    unit) plus ``relative`` of its size, a condition not at all."""
    rng = random.Random(seed)
    seqs = [random_sequence(rng, steps) for _ in range(sequences)]
    text = "".join(f"{len(q)}\n" + "".join(_line(o) + "\n" for o in q) for q in seqs)
    res = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    rows = iter(res.stdout.splitlines())
    bad: list[str] = []
    worst = worst_rel = Fraction(0)
    for i, q in enumerate(seqs):
        ref = Reference(prog, s, q[0].mss)
        for k, o in enumerate(q):
            want = ref.step(o)
            got = [int(x) for x in next(rows).split()]
            for (name, is_bool), c in zip(g.outputs, got, strict=True):
                err = _error(want[name], c, is_bool)
                if err is not None:
                    worst = max(worst, err)
                    worst_rel = max(worst_rel, err / abs(Fraction(want[name]))) if want[name] else worst_rel
                if err is None or err > tolerance + relative * abs(Fraction(want[name])):
                    bad.append(f"sequence {i} step {k}: {name} = {float(Fraction(c, 1 if is_bool else ONE)):.6g} "
                               f"in C, {float(want[name]):.6g} exact")
    return Outcome(sequences, sequences * steps, bad, worst, worst_rel)


def _error(want: Value, got: int, is_bool: bool) -> Fraction | None:
    if is_bool:
        return Fraction(0) if bool(got) == bool(want) else None
    return abs(Fraction(got, ONE) - Fraction(want))
