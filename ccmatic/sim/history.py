"""A flow's per-step series, indexed by absolute step, that keeps only its recent steps.

The simulator's CCA step and belief rules read a flow's observations at absolute
steps (``A[k - 2]``, a belief window ``S[en - 21 ...]``), but never further back
than the program's deepest read and the beliefs' window.  A :class:`History` is a
list whose index is the step: :meth:`History.trim` forgets all but the newest
entries, so a long run's series take memory for their window only, not its length.
Reading a forgotten step is an error (never a wrong value)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, SupportsIndex, overload


class History(list[Any]):
    """A list indexed by absolute step from :attr:`base` (see the module doc); a
    negative index counts from the newest entry, as a list's does."""

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__(items)
        self.base = 0  # the step of the oldest entry kept

    @overload
    def __getitem__(self, k: SupportsIndex) -> Any: ...

    @overload
    def __getitem__(self, k: slice) -> list[Any]: ...

    def __getitem__(self, k: SupportsIndex | slice) -> Any:
        # the belief rules read hundreds of entries a step: the common case first
        i = k - self.base  # type: ignore[operator]  # a slice fails here: read one step at a time
        if i >= 0:
            return super().__getitem__(i)
        if k < 0:  # type: ignore[operator]
            return super().__getitem__(k)
        raise IndexError(f"step {k} was forgotten (the series keeps steps from {self.base})")

    def __len__(self) -> int:
        return self.base + super().__len__()

    def trim(self, keep: int) -> None:
        """Forget all but the newest ``keep`` entries."""
        n = super().__len__() - keep
        if n > 0:
            super().__delitem__(slice(0, n))
            self.base += n
