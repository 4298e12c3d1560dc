"""One step of a CCA, and its state variables' initial values, over any domain.

The SMT encoding (:mod:`ccmatic.encode.cca`), the exact replay
(:mod:`ccmatic.sim.replay`) and the simulator (:mod:`ccmatic.sim.fine`) all run a
CCA file through :func:`run_step`.
"""

from __future__ import annotations

from collections.abc import Callable

from ccmatic.semantics.domain import Domain, V
from ccmatic.semantics.evaluate import Context, run, value
from ccmatic.spec import ir
from ccmatic.spec.step import StepCode

Chooser = Callable[[list[V], ir.Choose], V]


def run_step(code: StepCode, d: Domain[V], fetch: Callable[[str, int], V], param: Callable[[str], V],
             choose: Chooser[V], hole: Callable[[str], V] | None = None) -> dict[str, V]:
    """Run the program's body once (one step of one flow).  ``fetch(name, lag)`` gives
    an observation, output or state variable ``lag`` steps back.  Returns the value at
    this step of every persistent name (``code.outputs``): a name the step does not
    assign keeps ``fetch(name, 1)``."""
    cx: Context[V] = Context(d, fetch=fetch, param=param, choose=choose)
    if hole is not None:
        cx.hole = hole
    run(code.body, cx)
    return {n: cx.env[n] if n in cx.env else fetch(n, 1) for n, _ in code.outputs}


def initial_values(code: StepCode, d: Domain[V], param: Callable[[str], V],
                   choose: Chooser[V]) -> dict[str, V]:
    """The initial value of every state variable that declares one
    (``phase: count = choose(0, 1, 2, 3)``)."""
    cx: Context[V] = Context(d, param=param, choose=choose)
    return {name: value(e, cx) for name, e in code.init.items()}
