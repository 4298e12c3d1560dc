"""The fine mode's compiled code: numba's ``njit``, typed for mypy, cached on disk.

Every per-packet and per-tick function of the simulator (:mod:`ccmatic.sim.sampler`,
:mod:`ccmatic.sim.packets`, :mod:`ccmatic.sim.bottleneck`, :mod:`ccmatic.sim.ackpath`,
:mod:`ccmatic.sim.kernel`) is plain Python over numpy arrays and floats, compiled to
machine code on first use and cached on disk (``cache=True``), so that a later
process loads it instead of compiling again.  numba's decorator is untyped;
:func:`njit` gives the compiled function its Python signature back.

numba keys a cached function by its own file only: the loop in ``kernel.py`` would
keep a stale copy of a function of ``sampler.py`` after an edit there.  So the cache
lives in a folder named by a hash of all these modules' sources (:func:`cache_dir`):
any edit to one of them starts a fresh cache.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])

COMPILED = ("jit", "sampler", "packets", "bottleneck", "ackpath", "kernel")


def cache_dir() -> str:
    """Where the compiled functions are cached: under ``$NUMBA_CACHE_DIR`` if set,
    else next to the package (``__pycache__``) if writable, else in the user's cache
    folder; in a subfolder named by the sources' hash."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in COMPILED:
        digest.update((here / f"{name}.py").read_bytes())
    sub = f"numba-{digest.hexdigest()[:16]}"
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.path.join(os.environ["NUMBA_CACHE_DIR"], sub)
    local = here / "__pycache__"
    if os.access(local if local.exists() else here, os.W_OK):
        return str(local / sub)
    user = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(user, "ccmatic", sub)


numba.config.CACHE_DIR = cache_dir()  # type: ignore[attr-defined]  # numba.config sets its names at run time


def njit(fn: F) -> F:
    """``fn`` compiled in nopython mode, cached on disk; same signature."""
    return cast(F, numba.njit(cache=True, nogil=True)(fn))
