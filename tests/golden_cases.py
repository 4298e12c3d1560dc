"""Golden-semantics cases: CCA programs with HAND-COMPUTED expected traces.

Every expectation below was worked out by hand from docs/language.md, never by
running ccmatic; the comments show the arithmetic.  Conventions:

* ``inputs[name][k]`` is the observation ``name`` at step k (k = 0..T-1);
* ``warm[name][k]`` is rate/cwnd/state at warm-up step k (k = 0..warmup-1):
  initial conditions, given as inputs (a state with a declared initial value
  takes that value there);
* ``expected[name][i]`` is the output at step warmup + i;
* ``init`` is what the state declarations' initial values evaluate to;
* ``picks[t]`` lists, in call order, the choose() calls of step t as
  (label, pick): ``label`` names the choose() by a ``# label`` comment on its
  line, ``pick`` is the index of the option taken, or ``Any(v)`` for ``choose()``
  with no options (any value: v); ``init_picks`` the same for the initial values.

Visibility (docs/language.md "What a CCA may read"): plain A is A[t-1], S is
S[t-R], Ld and timeout are at t, c_lo/c_hi/qdel_lo/qdel_hi/c_lo_lambda at t-R,
q_hi at t-1, rate/cwnd/state read before assignment are the previous step's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction as F

Value = F | int | bool


@dataclass(frozen=True)
class Any:
    """The value a ``choose()`` without options takes."""

    value: F


Pick = tuple[str, "int | Any"]


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    R: int
    D: int
    T: int
    MSS: F
    warmup: int
    inputs: dict[str, list[Value]]
    warm: dict[str, list[Value]]
    expected: dict[str, list[Value]]
    init: dict[str, Value] = field(default_factory=dict)
    holes: dict[str, F] | None = None
    picks: dict[int, list[Pick]] = field(default_factory=dict)
    init_picks: list[Pick] = field(default_factory=list)


T_, F_ = True, False

CASES: list[Case] = []

# ---------------------------------------------------------------------------------
# 1. Every observation, plain (latest visible value), on R = D = 1 and R = D = 2.
#    Each read lands in its own state variable, so each lag is checked alone.
OBSERVATIONS = """\
a: bytes
s: bytes
ld: bytes
q: bytes
to: bool
lo: rate
hi: rate
lam: rate
dlo: seconds
dhi: seconds
a = A
s = S
ld = Ld
q = q_hi
to = timeout
lo = c_lo
hi = c_hi
lam = c_lo_lambda
dlo = qdel_lo
dhi = qdel_hi
cwnd = A + q_hi
rate = c_lo + c_hi
"""
OBS_INPUTS: dict[str, list[Value]] = {
    "A": [100, 110, 125, 145, 170],
    "S": [90, 95, 105, 120, 140],
    "Ld": [0, 0, 5, 5, 12],
    "timeout": [F_, T_, F_, F_, T_],
    "c_lo": [F(1, 2), 2, F(5, 2), 4, F(9, 2)],
    "c_hi": [10, 20, 30, 40, 50],
    "c_lo_lambda": [7, 8, 9, 11, 13],
    "qdel_lo": [0, 1, 1, 2, 0],
    "qdel_hi": [1, 2, 3, 3, 1],
    "q_hi": [40, 41, 43, 47, 53],
}
OBS_STATES = ["a", "s", "ld", "q", "to", "lo", "hi", "lam", "dlo", "dhi"]


def _warm_zero(names: list[str], n: int, bools: tuple[str, ...] = ()) -> dict[str, list[Value]]:
    return {k: [F_ if k in bools else 0] * n for k in names}


# R = D = 1: warm-up 1 (deepest read: lag 1), steps 1..4 read index t-1 for A, S,
# q_hi and the beliefs, index t for Ld and timeout.
CASES.append(Case(
    "observations_r1d1", OBSERVATIONS, R=1, D=1, T=5, MSS=F(1), warmup=1,
    inputs=OBS_INPUTS,
    warm=_warm_zero(["rate", "cwnd", *OBS_STATES], 1, ("to",)),
    expected={
        "a": [100, 110, 125, 145],          # A[t-1]
        "s": [90, 95, 105, 120],            # S[t-1]
        "ld": [0, 5, 5, 12],                # Ld[t]
        "q": [40, 41, 43, 47],              # q_hi[t-1]
        "to": [T_, F_, F_, T_],             # timeout[t]
        "lo": [F(1, 2), 2, F(5, 2), 4],     # c_lo[t-1]
        "hi": [10, 20, 30, 40],
        "lam": [7, 8, 9, 11],
        "dlo": [0, 1, 1, 2],
        "dhi": [1, 2, 3, 3],
        # A[t-1] + q_hi[t-1]: 100+40, 110+41, 125+43, 145+47
        "cwnd": [140, 151, 168, 192],
        # c_lo[t-1] + c_hi[t-1]: 1/2+10, 2+20, 5/2+30, 4+40
        "rate": [F(21, 2), 22, F(65, 2), 44],
    }))

# R = D = 2: warm-up 2 (S and the beliefs are read at t-2); A and q_hi still at t-1,
# Ld and timeout at t.
CASES.append(Case(
    "observations_r2d2", OBSERVATIONS, R=2, D=2, T=5, MSS=F(1), warmup=2,
    inputs=OBS_INPUTS,
    warm=_warm_zero(["rate", "cwnd", *OBS_STATES], 2, ("to",)),
    expected={
        "a": [110, 125, 145],               # A[t-1], t = 2..4
        "s": [90, 95, 105],                 # S[t-2]
        "ld": [5, 5, 12],                   # Ld[t]
        "q": [41, 43, 47],                  # q_hi[t-1]
        "to": [F_, F_, T_],                 # timeout[t]
        "lo": [F(1, 2), 2, F(5, 2)],        # c_lo[t-2]
        "hi": [10, 20, 30],
        "lam": [7, 8, 9],
        "dlo": [0, 1, 1],
        "dhi": [1, 2, 3],
        # A[t-1] + q_hi[t-1]: 110+41, 125+43, 145+47
        "cwnd": [151, 168, 192],
        # c_lo[t-2] + c_hi[t-2]: 1/2+10, 2+20, 5/2+30
        "rate": [F(21, 2), 22, F(65, 2)],
    }))

# ---------------------------------------------------------------------------------
# 2. Older reads X[t - k] whose index depends on R and D (S[t - R - D], ...).
OLDER = """\
old: bytes = 0
d = S - S[t - R - D]
old = old + A[t - 2 * D] - Ld[t - 1]
cwnd = d + q_hi[t - 2]
rate = c_lo[t - R - 1] + qdel_hi[t - R - D] * rate(3) / R + c_hi[t - 2 * R] / 2
"""
OLDER_INPUTS: dict[str, list[Value]] = {
    "A": [3, 8, 15, 24, 35, 48, 63],
    "S": [1, 4, 9, 16, 25, 36, 49],
    "Ld": [0, 1, 1, 2, 4, 4, 7],
    "q_hi": [5, 6, 8, 11, 15, 20, 26],
    "c_lo": [2, 3, 5, 7, 11, 13, 17],
    "c_hi": [20, 22, 24, 26, 28, 30, 32],
    "qdel_hi": [F(1, 2), 1, F(3, 2), 2, F(5, 2), 3, F(7, 2)],
}


def _cut(inputs: dict[str, list[Value]], T: int) -> dict[str, list[Value]]:
    return {k: v[:T] for k, v in inputs.items()}


# R = D = 1: d = S[t-1] - S[t-2]; old += A[t-2] - Ld[t-1]; cwnd = d + q_hi[t-2];
# rate = c_lo[t-2] + 3*qdel_hi[t-2] + c_hi[t-2]/2.  Deepest read 2: warm-up 2.
CASES.append(Case(
    "older_reads_r1d1", OLDER, R=1, D=1, T=5, MSS=F(1), warmup=2,
    inputs=_cut(OLDER_INPUTS, 5),
    warm={"old": [0, 0], "rate": [0, 0], "cwnd": [0, 0]},
    init={"old": 0},
    expected={
        # t=2: 4-1=3; t=3: 9-4=5; t=4: 16-9=7  (+ q_hi[t-2] = 5, 6, 8)
        "cwnd": [8, 11, 15],
        # t=2: 0+3-1=2; t=3: 2+8-1=9; t=4: 9+15-2=22
        "old": [2, 9, 22],
        # t=2: 2 + 3/2 + 10; t=3: 3 + 3 + 11; t=4: 5 + 9/2 + 12
        "rate": [F(27, 2), 17, F(43, 2)],
    }))

# R = D = 2: d = S[t-2] - S[t-4]; old += A[t-4] - Ld[t-1]; cwnd = d + q_hi[t-2];
# rate = c_lo[t-3] + qdel_hi[t-4]*3/2 + c_hi[t-4]/2.  Deepest read 4: warm-up 4.
CASES.append(Case(
    "older_reads_r2d2", OLDER, R=2, D=2, T=7, MSS=F(1), warmup=4,
    inputs=OLDER_INPUTS,
    warm={"old": [0] * 4, "rate": [0] * 4, "cwnd": [0] * 4},
    init={"old": 0},
    expected={
        # t=4: (9-1)+8=16; t=5: (16-4)+11=23; t=6: (25-9)+15=31
        "cwnd": [16, 23, 31],
        # t=4: 0+3-2=1; t=5: 1+8-4=5; t=6: 5+15-4=16
        "old": [1, 5, 16],
        # t=4: 3 + (1/2)(3)/2 + 20/2 = 55/4; t=5: 5 + 3/2 + 11 = 35/2;
        # t=6: 7 + (3/2)(3)/2 + 12 = 85/4
        "rate": [F(55, 4), F(35, 2), F(85, 4)],
    }))

# R = 2, D = 1 (tells R and D apart): d = S[t-2] - S[t-3]; old += A[t-2] - Ld[t-1];
# cwnd = d + q_hi[t-2]; rate = c_lo[t-3] + qdel_hi[t-3]*3/2 + c_hi[t-4]/2.  Warm-up 4.
CASES.append(Case(
    "older_reads_r2d1", OLDER, R=2, D=1, T=6, MSS=F(1), warmup=4,
    inputs=_cut(OLDER_INPUTS, 6),
    warm={"old": [0] * 4, "rate": [0] * 4, "cwnd": [0] * 4},
    init={"old": 0},
    expected={
        # t=4: (9-4)+8=13; t=5: (16-9)+11=18
        "cwnd": [13, 18],
        # t=4: 0+15-2=13; t=5: 13+24-4=33
        "old": [13, 33],
        # t=4: 3 + 1*3/2 + 20/2 = 29/2; t=5: 5 + (3/2)(3)/2 + 22/2 = 73/4
        "rate": [F(29, 2), F(73, 4)],
    }))

# ---------------------------------------------------------------------------------
# 3. Initial values reading MSS, R, D and T (the model's, not R = D = 1), count()
#    of a time, an exact literal, a condition.  x, y, w, b are never assigned: they
#    keep their initial value at every step.
INIT = """\
x: seconds = D
y: seconds = R + 2 * D + T
z: bytes = 3 * MSS / 2
w: count = count(T) - count(R) + 0.1
b: bool = D > R
k: seconds
k = x + y
z = z + bytes(1)
rate = MSS / R
"""

# R = D = 2, T = 6, MSS = 10: x = 2, y = 2+4+6 = 12, z = 15, w = 6-2+1/10 = 41/10,
# b = 2 > 2 = False.  k = 2+12 = 14; z = 15+1, 16+1, ...; rate = 10/2 = 5.
CASES.append(Case(
    "init_params_r2d2", INIT, R=2, D=2, T=6, MSS=F(10), warmup=1,
    inputs={},
    init={"x": 2, "y": 12, "z": 15, "w": F(41, 10), "b": F_},
    warm={"x": [2], "y": [12], "z": [15], "w": [F(41, 10)], "b": [F_], "k": [0], "rate": [0]},
    expected={
        "x": [2] * 5, "y": [12] * 5, "w": [F(41, 10)] * 5, "b": [F_] * 5,
        "k": [14] * 5,
        "z": [16, 17, 18, 19, 20],
        "rate": [5] * 5,
    }))

# R = D = 1, T = 4, MSS = 3/2: x = 1, y = 1+2+4 = 7, z = 9/4, w = 4-1+1/10 = 31/10,
# b = 1 > 1 = False.  k = 8; z = 13/4, 17/4, 21/4; rate = 3/2.
CASES.append(Case(
    "init_params_r1d1", INIT, R=1, D=1, T=4, MSS=F(3, 2), warmup=1,
    inputs={},
    init={"x": 1, "y": 7, "z": F(9, 4), "w": F(31, 10), "b": F_},
    warm={"x": [1], "y": [7], "z": [F(9, 4)], "w": [F(31, 10)], "b": [F_], "k": [0], "rate": [0]},
    expected={
        "x": [1] * 3, "y": [7] * 3, "w": [F(31, 10)] * 3, "b": [F_] * 3,
        "k": [8] * 3,
        "z": [F(13, 4), F(17, 4), F(21, 4)],
        "rate": [F(3, 2)] * 3,
    }))

# R = 1, D = 3, T = 5, MSS = 4: x = 3, y = 1+6+5 = 12, z = 6, w = 5-1+1/10 = 41/10,
# b = 3 > 1 = True.  k = 15; z = 7, 8, 9, 10; rate = 4/1 = 4.
CASES.append(Case(
    "init_params_r1d3", INIT, R=1, D=3, T=5, MSS=F(4), warmup=1,
    inputs={},
    init={"x": 3, "y": 12, "z": 6, "w": F(41, 10), "b": T_},
    warm={"x": [3], "y": [12], "z": [6], "w": [F(41, 10)], "b": [T_], "k": [0], "rate": [0]},
    expected={
        "x": [3] * 4, "y": [12] * 4, "w": [F(41, 10)] * 4, "b": [T_] * 4,
        "k": [15] * 4,
        "z": [7, 8, 9, 10],
        "rate": [4] * 4,
    }))

# ---------------------------------------------------------------------------------
# 4. Statements: if/elif/else, a nested if, persistent names assigned on some paths
#    only (they keep the previous step's value), a temporary overwritten in one
#    branch, an initial value reading MSS.
CONTROL = """\
mode: count = 1
acc: bytes = MSS * 2
gain = 2
if timeout:
    cwnd = MSS
    mode = 0
elif Ld > Ld[t - 1]:
    cwnd = max(MSS, cwnd / 2)
    mode = 2
    gain = 1
else:
    if cwnd < acc:
        cwnd = cwnd + gain * MSS
    else:
        cwnd = cwnd + MSS / 2
    acc = acc + A - S
rate = cwnd / R + bytes(gain) / R
"""
# MSS = 2, R = 1; A - S at step t is A[t-1] - S[t-1] = gaps [1, 0, 2, 0, 1, 3, 0].
# warm-up step 0: cwnd 3, acc 4 (= 2 MSS), mode 1.
CASES.append(Case(
    "control_flow_r1d1", CONTROL, R=1, D=1, T=8, MSS=F(2), warmup=1,
    inputs={
        "timeout": [F_, F_, F_, T_, F_, F_, F_, F_],
        "Ld": [0, 0, 3, 3, 3, 3, 6, 8],
        "S": [0, 2, 5, 9, 12, 20, 25, 26],
        "A": [1, 2, 7, 9, 13, 23, 25, 27],
    },
    init={"mode": 1, "acc": 4},
    warm={"cwnd": [3], "acc": [4], "mode": [1], "rate": [0]},
    expected={
        # t=1: else, 3 < 4: 3 + 2*2 = 7,  acc 4+1 = 5, mode kept 1, rate 7 + 2
        # t=2: Ld 3 > 0: max(2, 7/2) = 7/2, mode 2, gain 1, rate 7/2 + 1
        # t=3: timeout: cwnd = MSS = 2, mode 0, rate 2 + 2
        # t=4: else, 2 < 5: 2 + 4 = 6, acc 5+0 = 5, rate 6 + 2
        # t=5: else, 6 >= 5: 6 + 2/2 = 7, acc 5+1 = 6, rate 7 + 2
        # t=6: Ld 6 > 3: max(2, 7/2) = 7/2, mode 2, rate 7/2 + 1
        # t=7: Ld 8 > 6: max(2, 7/4) = 2, mode 2, rate 2 + 1
        "cwnd": [7, F(7, 2), 2, 6, 7, F(7, 2), 2],
        "mode": [1, 2, 0, 0, 0, 2, 2],
        "acc": [5, 5, 5, 5, 6, 6, 6],
        "rate": [9, F(9, 2), 4, 8, 9, F(9, 2), 3],
    }))

# A nested if on a condition state, rate kept when unassigned and read before and
# after the if, elif on timeout, q_hi and c_lo_lambda at their lags, initial
# values from T, D, R and MSS (hold: T > 2D + R; level: MSS * D as bytes).
NESTED = """\
hold: bool = T > 2 * D + R
level: bytes = MSS * count(D)
t0 = q_hi - level
if c_lo_lambda * R > q_hi:
    if hold:
        rate = rate / 2
    else:
        rate = c_lo_lambda
        t0 = bytes(0)
    hold = not hold
elif timeout:
    level = q_hi
else:
    level = level + t0 / 2
cwnd = level + t0 + rate * D
"""
# R = D = 2, T = 6, MSS = 3: hold = 6 > 6 = False, level = 3*2 = 6.  Warm-up 2
# (c_lo_lambda at t-2).  q_hi read at t-1, c_lo_lambda at t-2.
CASES.append(Case(
    "nested_if_r2d2", NESTED, R=2, D=2, T=6, MSS=F(3), warmup=2,
    inputs={
        "q_hi": [10, 8, 20, 5, 9, 0],
        "c_lo_lambda": [1, 4, 3, 5, 0, 0],
        "timeout": [F_, F_, T_, F_, F_, F_],
    },
    init={"hold": F_, "level": 6},
    warm={"hold": [F_, F_], "level": [6, 6], "rate": [0, 4], "cwnd": [0, 0]},
    expected={
        # t=2: t0 = 8-6 = 2; 1*2 > 8 no; timeout: level = 8; cwnd = 8+2+4*2 = 18
        # t=3: t0 = 20-8 = 12; 4*2 > 20 no; else: level = 8+6 = 14; cwnd = 14+12+8 = 34
        # t=4: t0 = 5-14 = -9; 3*2 > 5 yes, hold F: rate = 3, t0 = 0, hold = T;
        #      cwnd = 14+0+3*2 = 20
        # t=5: t0 = 9-14 = -5; 5*2 > 9 yes, hold T: rate = 3/2, hold = F;
        #      cwnd = 14-5+(3/2)*2 = 12
        "rate": [4, 4, 3, F(3, 2)],
        "cwnd": [18, 34, 20, 12],
        "level": [8, 14, 14, 14],
        "hold": [F_, F_, T_, F_],
    }))

# R = D = 1, T = 4, MSS = 3: hold = 4 > 3 = True, level = 3.  Warm-up 1.
CASES.append(Case(
    "nested_if_r1d1", NESTED, R=1, D=1, T=4, MSS=F(3), warmup=1,
    inputs={
        "q_hi": [5, 2, 7, 0],
        "c_lo_lambda": [6, 1, 4, 0],
        "timeout": [F_, F_, F_, T_],
    },
    init={"hold": T_, "level": 3},
    warm={"hold": [T_], "level": [3], "rate": [2], "cwnd": [0]},
    expected={
        # t=1: t0 = 5-3 = 2; 6 > 5 yes, hold T: rate = 2/2 = 1, hold = F;
        #      cwnd = 3+2+1 = 6
        # t=2: t0 = 2-3 = -1; 1 > 2 no; no timeout: level = 3 - 1/2 = 5/2;
        #      cwnd = 5/2 - 1 + 1 = 5/2
        # t=3: t0 = 7-5/2 = 9/2; 4 > 7 no; timeout: level = 7; cwnd = 7+9/2+1 = 25/2
        "rate": [1, 1, 1],
        "cwnd": [6, F(5, 2), F(25, 2)],
        "level": [3, F(5, 2), 7],
        "hold": [F_, F_, F_],
    }))

# ---------------------------------------------------------------------------------
# 5. Expressions: if-expression, and/or/not, =>, a comparison chain, abs, the unit
#    casts bytes()/seconds()/count(), the exact literal 0.1, unary minus, rate read
#    after its assignment in the same step, != between conditions.
EXPRS = """\
flag: bool = False
hits: count = 0
gap = S - A
up = c_lo < c_hi and not timeout
rate = (c_hi if up else c_lo) + 0.1 * abs(gap) / R
cwnd = rate * R + bytes(2) - -MSS
ok = (qdel_lo > 0 => qdel_hi >= 2 * qdel_lo) or flag
mid = seconds(0) <= qdel_lo < qdel_hi <= 3 * R
flag = ok != mid
hits = hits + (1 if ok and mid else count(0)) + count(R) * 0.5
"""
# R = 1, MSS = 4: everything read at t-1 except timeout (t).
CASES.append(Case(
    "expressions_r1d1", EXPRS, R=1, D=1, T=6, MSS=F(4), warmup=1,
    inputs={
        "A": [10, 20, 30, 40, 50, 60],
        "S": [13, 18, 30, 35, 57, 60],
        "c_lo": [5, 8, 6, 10, 1, 1],
        "c_hi": [9, 7, 12, 20, 2, 1],
        "timeout": [F_, F_, F_, T_, F_, F_],
        "qdel_lo": [1, 0, 2, F(1, 2), 1, 0],
        "qdel_hi": [3, 1, 3, 4, 1, 0],
    },
    init={"flag": F_, "hits": 0},
    warm={"flag": [F_], "hits": [0], "rate": [0], "cwnd": [0]},
    expected={
        # t=1: gap 13-10 = 3; up: 5 < 9, no timeout -> c_hi 9 + 3/10 = 93/10
        # t=2: gap 18-20 = -2; up: 8 < 7 no -> c_lo 8 + 2/10 = 41/5
        # t=3: gap 0; up: 6 < 12 but timeout -> c_lo 6 + 0 = 6
        # t=4: gap 35-40 = -5; up -> c_hi 20 + 5/10 = 41/2
        # t=5: gap 57-50 = 7; up: 1 < 2 -> c_hi 2 + 7/10 = 27/10
        "rate": [F(93, 10), F(41, 5), 6, F(41, 2), F(27, 10)],
        # rate*1 + 2 + 4
        "cwnd": [F(153, 10), F(71, 5), 12, F(53, 2), F(87, 10)],
        # ok / mid / flag = ok != mid:
        # t=1: 1>0 => 3>=2: T; 0<=1<3<=3: T; F
        # t=2: 0>0 false => ...: T; 0<=0<1<=3: T; F
        # t=3: 2>0 => 3>=4: F, or flag F: F; 0<=2<3<=3: T; T
        # t=4: 1/2>0 => 4>=1: T; 0<=1/2<4<=3: F; T
        # t=5: 1>0 => 1>=2: F, or flag T: T; 0<=1<1: F; T
        "flag": [F_, F_, T_, T_, T_],
        # hits + (1 if ok and mid) + 1/2: 0+1+1/2, +1+1/2, +0+1/2, +0+1/2, +0+1/2
        "hits": [F(3, 2), 3, F(7, 2), 4, F(9, 2)],
    }))

# '=>' is right-associative and weaker than every other operator:
# r = a => (b => c) (left-associative would give F at t=1), and
# p = (timeout or qdel_lo > 0) => (Ld > 0 and not timeout).
IMPLIES = """\
r: bool
p: bool
r = qdel_lo > 0 => qdel_hi > 0 => timeout
p = timeout or qdel_lo > 0 => Ld > 0 and not timeout
rate = c_lo if r else c_lo / 2
"""
CASES.append(Case(
    "implication_r1d1", IMPLIES, R=1, D=1, T=5, MSS=F(1), warmup=1,
    inputs={
        "qdel_lo": [0, 1, 1, 2, 0],
        "qdel_hi": [1, 1, 0, 3, 0],
        "timeout": [F_, F_, T_, F_, F_],
        "Ld": [0, 2, 0, 0, 1],
        "c_lo": [4, 6, 8, 10, 12],
    },
    warm={"r": [F_], "p": [F_], "rate": [0]},
    expected={
        # t=1: a = 0>0 F -> r T;  t=2: T => (T => T) = T;  t=3: T => (F => F) = T;
        # t=4: T => (T => F) = F
        "r": [T_, T_, T_, F_],
        # t=1: (F or F) => ... = T;  t=2: (T or T) => (0>0 ...) = F;
        # t=3: (F or T) => (0>0 ...) = F;  t=4: (F or T) => (1>0 and T) = T
        "p": [T_, F_, F_, T_],
        # c_lo[t-1] = 4, 6, 8 (r T), 10/2 = 5 (r F)
        "rate": [4, 6, 8, 5],
    }))

# ---------------------------------------------------------------------------------
# 6. min/max/sum/all/any over arguments and over comprehensions with constant
#    filters (one depends on R), a 3-argument range, bounds from D.
COMPREHENSIONS = """\
best: rate
lo = min(c_lo[t - R - i] for i in range(0, 3) if i != R - 1)
hi = max(c_hi, c_hi[t - R - 1], rate(6))
tot = sum(S[t - R - i] - S[t - R - i - 1] for i in range(0, 4, 2))
avg = sum(A[t - 1], A[t - 2], -A[t - 3])
grow = all(S[t - R - j] > S[t - R - j - 1] for j in range(0, D + 1) if j < D)
spike = any(qdel_hi[t - R - k] >= D for k in range(1, D + 1))
best = max(best, lo)
if grow and not spike:
    rate = min(hi, lo + tot / R)
elif any(Ld > x * MSS for x in range(2, 4)) or all(timeout, grow):
    rate = lo / 2
else:
    rate = best
cwnd = max(avg - bytes(20), min(bytes(0), A - S - bytes(11))) + tot
"""
COMP_INPUTS: dict[str, list[Value]] = {
    "c_lo": [4, 6, 3, 5, 8, 2, 7, 9],
    "c_hi": [10, 12, 9, 14, 11, 13, 15, 16],
    "S": [0, 3, 5, 5, 9, 14, 20, 21],
    "A": [2, 6, 9, 12, 15, 22, 26, 30],
    "Ld": [0, 0, 0, 1, 1, 2, 5, 5],
    "timeout": [F_] * 8,
    "qdel_hi": [0, 1, 2, 1, 1, 0, 1, 1],
}
# R = D = 2: lo over i in {0, 2}: c_lo[t-2], c_lo[t-4]; hi: c_hi[t-2], c_hi[t-3], 6;
# tot over i in {0, 2}: (S[t-2]-S[t-3]) + (S[t-4]-S[t-5]); avg: A[t-1]+A[t-2]-A[t-3];
# grow over j in {0, 1}: S[t-2]>S[t-3] and S[t-3]>S[t-4];
# spike over k in {1, 2}: qdel_hi[t-3] >= 2 or qdel_hi[t-4] >= 2;
# A - S = A[t-1] - S[t-2].  Deepest read S[t-5]: warm-up 5.
CASES.append(Case(
    "comprehensions_r2d2", COMPREHENSIONS, R=2, D=2, T=8, MSS=F(1), warmup=5,
    inputs=COMP_INPUTS,
    warm={"best": [0, 0, 0, 0, 4], "rate": [0] * 5, "cwnd": [0] * 5},
    expected={
        # t=5: lo min(5, 6) = 5; hi max(14, 9, 6) = 14; tot (5-5)+(3-0) = 3;
        #      avg 15+12-9 = 18; grow 5>5 F; spike 2>=2 T; best max(4, 5) = 5;
        #      elif: 2>2, 2>3 F; all(F, F) F -> else: rate = best = 5;
        #      cwnd = max(18-20, min(0, 15-5-11)) + 3 = max(-2, -1) + 3 = 2
        # t=6: lo min(8, 3) = 3; hi max(11, 14, 6) = 14; tot (9-5)+(5-3) = 6;
        #      avg 22+15-12 = 25; grow 9>5, 5>5 F; spike 1>=2 F, 2>=2 T; best 5;
        #      elif: 5 > 2 T -> rate = 3/2;
        #      cwnd = max(5, min(0, 22-9-11 = 2)) + 6 = 11
        # t=7: lo min(2, 5) = 2; hi max(13, 11, 6) = 13; tot (14-9)+(5-5) = 5;
        #      avg 26+22-15 = 33; grow 14>9, 9>5 T; spike 1>=2, 1>=2 F; best 5;
        #      rate = min(13, 2 + 5/2) = 9/2;
        #      cwnd = max(13, min(0, 26-14-11 = 1)) + 5 = 18
        "rate": [5, F(3, 2), F(9, 2)],
        "cwnd": [2, 11, 18],
        "best": [5, 5, 5],
    }))

# R = D = 1: lo over i in {1, 2}: c_lo[t-2], c_lo[t-3]; hi: c_hi[t-1], c_hi[t-2], 6;
# tot over i in {0, 2}: (S[t-1]-S[t-2]) + (S[t-3]-S[t-4]); grow over j in {0}:
# S[t-1] > S[t-2]; spike over k in {1}: qdel_hi[t-2] >= 1; A - S = A[t-1] - S[t-1].
# Deepest read S[t-4]: warm-up 4.
CASES.append(Case(
    "comprehensions_r1d1", COMPREHENSIONS, R=1, D=1, T=7, MSS=F(1), warmup=4,
    inputs=_cut(COMP_INPUTS, 7),
    warm={"best": [0, 0, 0, 4], "rate": [0] * 4, "cwnd": [0] * 4},
    expected={
        # t=4: lo min(3, 6) = 3; hi max(14, 9, 6) = 14; tot (5-5)+(3-0) = 3;
        #      avg 12+9-6 = 15; grow 5>5 F; spike 2>=1 T; best max(4, 3) = 4;
        #      elif: 1>2, 1>3 F; all(F, F) F -> rate = 4;
        #      cwnd = max(15-20, min(0, 12-5-11)) + 3 = max(-5, -4) + 3 = -1
        # t=5: lo min(5, 3) = 3; tot (9-5)+(5-3) = 6; avg 15+12-9 = 18; grow 9>5 T;
        #      spike 1>=1 T; best 4; elif: 2>2, 2>3 F; all(F, T) F -> rate = 4;
        #      cwnd = max(-2, min(0, 15-9-11 = -5)) + 6 = 4
        # t=6: lo min(8, 5) = 5; tot (14-9)+(5-5) = 5; avg 22+15-12 = 25; grow T;
        #      spike 1>=1 T; best max(4, 5) = 5; elif: 5>2 T -> rate = 5/2;
        #      cwnd = max(5, min(0, 22-14-11 = -3)) + 5 = 10
        "rate": [4, 4, F(5, 2)],
        "cwnd": [-1, 4, 10],
        "best": [4, 4, 5],
    }))

# Nested comprehension (two 'for' clauses, a filter over both variables), a
# comprehension bound R, a loop variable as a factor.
NESTED_COMP = """\
cwnd = max(S[t - R - i - j] - S[t - R - i - j - 1] for i in range(2) for j in range(2) if i <= j)
rate = sum(c_hi[t - R - k] for k in range(R)) / count(R) + min(c_lo[t - R - k] * k for k in range(1, 3))
"""
NC_INPUTS: dict[str, list[Value]] = {
    "S": [0, 1, 5, 6, 12, 13, 20],
    "c_hi": [9, 7, 5, 3, 11, 1, 0],
    "c_lo": [1, 2, 3, 4, 5, 6, 7],
}
# R = D = 2: (i, j) in {(0,0), (0,1), (1,1)}: offsets 0, 1, 2:
# cwnd = max over s of S[t-2-s] - S[t-3-s]; rate = (c_hi[t-2] + c_hi[t-3]) / 2 +
# min(c_lo[t-3], 2 c_lo[t-4]).  Deepest read S[t-5]: warm-up 5.
CASES.append(Case(
    "nested_comprehension_r2d2", NESTED_COMP, R=2, D=2, T=7, MSS=F(1), warmup=5,
    inputs=NC_INPUTS,
    warm={"rate": [0] * 5, "cwnd": [0] * 5},
    expected={
        # t=5: diffs 6-5, 5-1, 1-0 -> 4; t=6: 12-6, 6-5, 5-1 -> 6
        "cwnd": [4, 6],
        # t=5: (3+5)/2 + min(3, 2*2) = 7; t=6: (11+3)/2 + min(4, 2*3) = 11
        "rate": [7, 11],
    }))

# R = D = 1: cwnd = max over s of S[t-1-s] - S[t-2-s]; rate = c_hi[t-1] +
# min(c_lo[t-2], 2 c_lo[t-3]).  Deepest read S[t-4]: warm-up 4.
CASES.append(Case(
    "nested_comprehension_r1d1", NESTED_COMP, R=1, D=1, T=6, MSS=F(1), warmup=4,
    inputs=_cut(NC_INPUTS, 6),
    warm={"rate": [0] * 4, "cwnd": [0] * 4},
    expected={
        # t=4: diffs 6-5, 5-1, 1-0 -> 4; t=5: 12-6, 6-5, 5-1 -> 6
        "cwnd": [4, 6],
        # t=4: 3 + min(3, 2*2) = 6; t=5: 11 + min(4, 2*3) = 15
        "rate": [6, 15],
    }))

# ---------------------------------------------------------------------------------
# 7. choose(): several options (numbers, conditions, an observation-dependent one),
#    choose() without options, choose() in initial values, a choose() in a branch
#    and one behind a short-circuiting 'or' (only called when reached).
CHOOSE = """\
phase: count = choose(0, count(D), count(T))  # i_phase
mark: bool = choose(True, False)  # i_mark
step = choose(MSS, 2 * MSS, A - S)  # c_step
if phase > 0:
    cwnd = cwnd + step
    phase = phase - 1
else:
    cwnd = choose(cwnd / 2, MSS)  # c_cwnd
    phase = choose(1, 2)  # c_phase
mark = not mark or choose(False, True)  # c_mark
rate = choose()  # c_rate
"""
# R = D = 1, T = 5, MSS = 2: initial phase = choose(0, 1, 5) pick 1 -> 1; mark pick 0
# -> True.  A - S = A[t-1] - S[t-1]: 3, 5, 6, 8 at t = 1..4.
CASES.append(Case(
    "choose_r1d1", CHOOSE, R=1, D=1, T=5, MSS=F(2), warmup=1,
    inputs={"A": [5, 9, 14, 20, 27], "S": [2, 4, 8, 12, 20]},
    init={"phase": 1, "mark": T_},
    init_picks=[("i_phase", 1), ("i_mark", 0)],
    warm={"phase": [1], "mark": [T_], "cwnd": [10], "rate": [0]},
    picks={
        # step = A-S = 3; phase 1 > 0: cwnd 10+3 = 13, phase 0;
        # not T = F, so choose(F, T) -> T; rate 7
        1: [("c_step", 2), ("c_mark", 1), ("c_rate", Any(F(7)))],
        # step 2 (unused); phase 0: cwnd = 13/2, phase = 2; not T = F -> choose F; rate 3/2
        2: [("c_step", 0), ("c_cwnd", 0), ("c_phase", 1), ("c_mark", 0), ("c_rate", Any(F(3, 2)))],
        # step 4; phase 2: cwnd 13/2+4 = 21/2, phase 1; not F = T: no choose; rate 5
        3: [("c_step", 1), ("c_rate", Any(F(5)))],
        # step 8; phase 1: cwnd 21/2+8 = 37/2, phase 0; not T = F -> choose F; rate 1/3
        4: [("c_step", 2), ("c_mark", 0), ("c_rate", Any(F(1, 3)))],
    },
    expected={
        "cwnd": [13, F(13, 2), F(21, 2), F(37, 2)],
        "phase": [0, 2, 1, 0],
        "mark": [T_, F_, T_, F_],
        "rate": [7, F(3, 2), 5, F(1, 3)],
    }))

# R = D = 2, T = 6, MSS = 2: initial phase = choose(0, 2, 6) pick 1 -> 2 (D); mark
# pick 1 -> False.  A - S = A[t-1] - S[t-2]: 9-2 = 7, 14-4 = 10, 20-8 = 12, 27-12 = 15.
CASES.append(Case(
    "choose_r2d2", CHOOSE, R=2, D=2, T=6, MSS=F(2), warmup=2,
    inputs={"A": [5, 9, 14, 20, 27, 35], "S": [2, 4, 8, 12, 20, 30]},
    init={"phase": 2, "mark": F_},
    init_picks=[("i_phase", 1), ("i_mark", 1)],
    warm={"phase": [2, 2], "mark": [F_, F_], "cwnd": [0, 8], "rate": [0, 0]},
    picks={
        # step 7; phase 2: cwnd 8+7 = 15, phase 1; not F = T: mark T; rate 2
        2: [("c_step", 2), ("c_rate", Any(F(2)))],
        # step 2; phase 1: cwnd 17, phase 0; not T = F -> choose T; rate 9/4
        3: [("c_step", 0), ("c_mark", 1), ("c_rate", Any(F(9, 4)))],
        # step 4 (unused); phase 0: cwnd = choose(17/2, 2) -> 2, phase = 1;
        # not T = F -> choose F; rate 0
        4: [("c_step", 1), ("c_cwnd", 1), ("c_phase", 0), ("c_mark", 0), ("c_rate", Any(F(0)))],
        # step 4; phase 1: cwnd 2+4 = 6, phase 0; not F = T: mark T; rate 11
        5: [("c_step", 1), ("c_rate", Any(F(11)))],
    },
    expected={
        "cwnd": [15, 17, 2, 6],
        "phase": [1, 0, 1, 0],
        "mark": [T_, T_, F_, T_],
        "rate": [2, F(9, 4), 0, 11],
    }))

# ---------------------------------------------------------------------------------
# 8. A template: holes with declared domains, filled with values.
TEMPLATE = """\
?a = {-1, 0, 1, 2}
?b = {0, 1/2, 1}
?k = {-1, 0, 1}
if ?a * c_lo + ?k * MSS / R > c_hi / 2:
    rate = ?b * c_lo + ?k * MSS / R
else:
    rate = max(?b * c_hi, MSS / R)
cwnd = ?a * rate * R + ?k * (S - S[t - R - 1])
"""
# a = 2, b = 1/2, k = -1, MSS = 4, R = 1: cond 2 c_lo - 4 > c_hi/2;
# then rate = c_lo/2 - 4, else max(c_hi/2, 4); cwnd = 2 rate - (S[t-1] - S[t-2]).
CASES.append(Case(
    "template_r1d1", TEMPLATE, R=1, D=1, T=6, MSS=F(4), warmup=2,
    holes={"a": F(2), "b": F(1, 2), "k": F(-1)},
    inputs={
        "c_lo": [3, 5, 2, 6, 1, 0],
        "c_hi": [10, 8, 12, 6, 6, 0],
        "S": [0, 4, 6, 13, 14, 20],
    },
    warm={"rate": [0, 0], "cwnd": [0, 0]},
    expected={
        # t=2: 10-4 = 6 > 4: rate 5/2-4 = -3/2; cwnd -3 - (4-0) = -7
        # t=3: 4-4 = 0 > 6 no: rate max(6, 4) = 6; cwnd 12 - (6-4) = 10
        # t=4: 12-4 = 8 > 3: rate 3-4 = -1; cwnd -2 - (13-6) = -9
        # t=5: 2-4 = -2 > 3 no: rate max(3, 4) = 4; cwnd 8 - (14-13) = 7
        "rate": [F(-3, 2), 6, -1, 4],
        "cwnd": [-7, 10, -9, 7],
    }))

# a = b = k = 1, MSS = 4, R = 2: cond c_lo + 2 > c_hi/2; then rate = c_lo + 2, else
# max(c_hi, 2); cwnd = 2 rate + (S[t-2] - S[t-3]).  Warm-up 3.
CASES.append(Case(
    "template_r2d2", TEMPLATE, R=2, D=2, T=7, MSS=F(4), warmup=3,
    holes={"a": F(1), "b": F(1), "k": F(1)},
    inputs={
        "c_lo": [3, 5, 2, 6, 1, 0, 0],
        "c_hi": [10, 8, 12, 6, 6, 1, 0],
        "S": [0, 4, 6, 13, 14, 20, 22],
    },
    warm={"rate": [0] * 3, "cwnd": [0] * 3},
    expected={
        # t=3: 5+2 = 7 > 4: rate 7; cwnd 14 + (4-0) = 18
        # t=4: 2+2 = 4 > 6 no: rate max(12, 2) = 12; cwnd 24 + (6-4) = 26
        # t=5: 6+2 = 8 > 3: rate 8; cwnd 16 + (13-6) = 23
        # t=6: 1+2 = 3 > 3 no: rate max(6, 2) = 6; cwnd 12 + (14-13) = 13
        "rate": [7, 12, 8, 6],
        "cwnd": [18, 26, 23, 13],
    }))

# ---------------------------------------------------------------------------------
# The latest RTT sample (rtt, in steps) on R = 2, D = 1: read at t - R, compared at a
# threshold R + 3/2 = 7/2 (a value a sample can take exactly: the comparison's
# boundary).  Warm-up 2 (deepest read: lag R = 2).
RTT = """\
x: seconds
x = rtt
slow = rtt >= R + 3 / 2
if slow:
    cwnd = MSS
else:
    cwnd = 4 * MSS
"""
CASES.append(Case(
    "rtt_r2d1", RTT, R=2, D=1, T=5, MSS=F(1), warmup=2,
    inputs={"rtt": [2, F(7, 2), F(13, 4), 4, 3]},
    warm={"x": [0, 0], "cwnd": [0, 0]},
    expected={
        "x": [2, F(7, 2), F(13, 4)],        # rtt[t-2]
        # t=2: 2 >= 7/2 no: 4; t=3: 7/2 >= 7/2: 1; t=4: 13/4 >= 7/2 no: 4
        "cwnd": [4, 1, 4],
    }))
