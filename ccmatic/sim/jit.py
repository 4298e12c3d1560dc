"""The fine mode's compiled code: numba's ``njit``, typed for mypy.

Every per-packet and per-tick function of the simulator (:mod:`ccmatic.sim.sampler`,
:mod:`ccmatic.sim.bottleneck`, :mod:`ccmatic.sim.ackpath`, :mod:`ccmatic.sim.kernel`)
is plain Python over numpy arrays and floats, compiled to machine code on first use
and cached on disk (``cache=True``: numba's ``__pycache__`` next to the module), so
a later process loads it instead of compiling again.  numba's decorator is untyped;
:func:`njit` gives the compiled function its Python signature back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])


def njit(fn: F) -> F:
    """``fn`` compiled in nopython mode, cached on disk; same signature."""
    return cast(F, numba.njit(cache=True, fastmath=False, nogil=True)(fn))
