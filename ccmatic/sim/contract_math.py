"""Contract functions and their fits (thesis §5.2.1, Table 5.1).

A contract is ``rate = f(s)`` for an aggregate statistic s, decreasing in s.  Three
families are fitted to measured fixed points (s_i, r_i):

* ``power``:   r = a·s^−p            (log-log least squares);
* ``shifted``: r = a·(s − c)^−p      (least squares at each shift c below min s, the
  best c by a grid then a golden-section search on log(min s − c));
* ``linear``:  r = a − b·s           (least squares in r).

Every fit is scored by the mean squared error of log r (the thesis picks "the
statistic and fit that minimizes mean squared error").  Units are the caller's: the
rate of f and the statistic s as given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

Family = Literal["power", "shifted", "linear"]
FAMILIES: tuple[Family, ...] = ("power", "shifted", "linear")
#: the shifted family has one parameter more than the power law: it is chosen over it
#: only if it lowers the error by more than this factor (else any data prefer it)
SHIFT_GAIN = 0.9
_GRID = 241       # shifts tried per fit (log-spaced distances below min s)
_GOLDEN = 100     # golden-section iterations refining the best shift


@dataclass(frozen=True)
class Contract:
    """``rate = f(s)``: a·(s − c)^−p (power: c = 0), or a − b·s (linear)."""

    family: Family
    a: float
    p: float = 0.0
    c: float = 0.0
    b: float = 0.0

    def f(self, s: float) -> float:
        """The rate at statistic s (infinite at or below a power law's pole)."""
        if self.family == "linear":
            return self.a - self.b * s
        x = s - self.c
        if x <= 0:
            return math.inf
        try:
            return float(self.a * x ** -self.p)
        except OverflowError:
            return math.inf

    def inverse(self, r: float) -> float:
        """The statistic at which the rate is r > 0."""
        if self.family == "linear":
            return (self.a - r) / self.b
        return float(self.c + (self.a / r) ** (1 / self.p))

    def pole(self) -> float:
        """Where a power law's rate is infinite (−inf for a line)."""
        return -math.inf if self.family == "linear" else self.c

    def text(self, stat: str) -> str:
        if self.family == "linear":
            return f"{self.a:.4g} − {self.b:.4g}·{stat}"
        base = stat if self.family == "power" else f"({stat} {'−' if self.c >= 0 else '+'} {abs(self.c):.4g})"
        return f"{self.a:.4g}·{base}^−{self.p:.3g}"

    def json(self) -> dict[str, float | str]:
        return {"family": self.family, "a": self.a, "p": self.p, "c": self.c, "b": self.b}


@dataclass(frozen=True)
class Fit:
    contract: Contract
    mse: float       # mean squared error of log rate
    points: int


def mse_log(con: Contract, s: np.ndarray, r: np.ndarray) -> float:
    """Mean squared error of log r; infinite if the contract predicts a rate ≤ 0."""
    import numpy as np

    pred = np.array([con.f(float(x)) for x in s])
    if not np.all(np.isfinite(pred)) or np.any(pred <= 0):
        return math.inf
    return float(np.mean((np.log(r) - np.log(pred)) ** 2))


def _loglog(x: np.ndarray, r: np.ndarray) -> tuple[float, float]:
    """(a, p) of the least-squares line log r = log a − p·log x."""
    import numpy as np

    slope, icept = np.polyfit(np.log(x), np.log(r), 1)
    return (math.exp(icept) if icept < 700 else math.inf), float(-slope)


def fit_power(s: np.ndarray, r: np.ndarray) -> Fit | None:
    """r = a·s^−p; None unless every s > 0 and two values differ."""
    import numpy as np

    if len(np.unique(s)) < 2 or np.any(s <= 0):
        return None
    a, p = _loglog(s, r)
    con = Contract("power", a, p)
    return Fit(con, mse_log(con, s, r), len(s))


def _shift_error(s: np.ndarray, r: np.ndarray, c: float) -> tuple[float, Contract]:
    a, p = _loglog(s - c, r)
    con = Contract("shifted", a, p, c)
    return mse_log(con, s, r), con


def fit_shifted(s: np.ndarray, r: np.ndarray) -> Fit | None:
    """r = a·(s − c)^−p with c < min s; None with fewer than three distinct s."""
    import numpy as np

    if len(np.unique(s)) < 3:
        return None
    lo, hi = float(s.min()), float(s.max())
    width = hi - lo
    logd = np.linspace(math.log(1e-3 * width), math.log(1e3 * width), _GRID)
    errs = [_shift_error(s, r, lo - math.exp(x))[0] for x in logd]
    i = int(np.argmin(errs))
    x0, x1 = float(logd[max(0, i - 1)]), float(logd[min(_GRID - 1, i + 1)])
    g = (math.sqrt(5) - 1) / 2
    for _ in range(_GOLDEN):
        m0, m1 = x1 - g * (x1 - x0), x0 + g * (x1 - x0)
        if _shift_error(s, r, lo - math.exp(m0))[0] <= _shift_error(s, r, lo - math.exp(m1))[0]:
            x1 = m1
        else:
            x0 = m0
    err, con = _shift_error(s, r, lo - math.exp((x0 + x1) / 2))
    if errs[i] < err:
        err, con = _shift_error(s, r, lo - math.exp(float(logd[i])))
    return Fit(con, err, len(s))


def fit_linear(s: np.ndarray, r: np.ndarray) -> Fit | None:
    """r = a − b·s by least squares in r; None unless two values of s differ."""
    import numpy as np

    if len(np.unique(s)) < 2:
        return None
    slope, icept = np.polyfit(s, r, 1)
    con = Contract("linear", float(icept), b=float(-slope))
    return Fit(con, mse_log(con, s, r), len(s))


def fit_all(s: np.ndarray, r: np.ndarray) -> dict[Family, Fit | None]:
    return {"power": fit_power(s, r), "shifted": fit_shifted(s, r), "linear": fit_linear(s, r)}


def best(fits: dict[Family, Fit | None]) -> Fit | None:
    """The fit of least error, among decreasing contracts (b > 0, p > 0); the shifted
    power law wins over the plain one only by a margin (:data:`SHIFT_GAIN`)."""
    def ok(f: Fit | None) -> bool:
        return f is not None and math.isfinite(f.mse) and (
            f.contract.b > 0 if f.contract.family == "linear" else f.contract.p > 0)

    cands = {k: f for k, f in fits.items() if ok(f) and f is not None}
    pw, sh = cands.get("power"), cands.get("shifted")
    if pw is not None and sh is not None and sh.mse > SHIFT_GAIN * pw.mse - 1e-12:
        del cands["shifted"]
    return min(cands.values(), key=lambda f: f.mse, default=None)
