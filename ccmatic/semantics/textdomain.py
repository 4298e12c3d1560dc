"""What the code-generating domains share: straight-line code, one line per operation.

Over a :class:`TextDomain` the one semantics evaluates nothing but constants: each
operation appends one line assigning a fresh temporary, and its value is the
temporary's name.  Conditions that are constants are decided (so only the branch
taken is generated); every other condition has both branches generated and joined
by a select.  Two languages derive from it: Python for the simulator
(:mod:`ccmatic.semantics.pycode`) and fixed-point C for the kernel
(:mod:`ccmatic.export.cdomain`); each says how a line, a select and a conjunction or
disjunction are written, and what a constant is.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar


class Text(Protocol):
    """A generated value: an expression and, for a constant, its value."""

    @property
    def expr(self) -> str: ...

    @property
    def const(self) -> Any: ...


T = TypeVar("T", bound=Text)


class TextDomain(Generic[T]):
    """Lines, temporaries, and the logic every code-generating domain writes alike."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    # -- what each language says --------------------------------------------------
    def temporary(self, k: int) -> str:
        """The name of the k-th temporary."""
        raise NotImplementedError

    def line(self, target: str, expr: str) -> str:
        """An assignment."""
        raise NotImplementedError

    def value(self, expr: str) -> T:
        """A computed (non-constant) value."""
        raise NotImplementedError

    def boolean(self, b: bool) -> T:
        raise NotImplementedError

    def join(self, kept: list[T], absorbing: bool) -> str:
        """The disjunction (``absorbing``) or conjunction of two or more conditions."""
        raise NotImplementedError

    def select(self, c: T, a: T, b: T) -> str:
        """``a`` where ``c`` holds, else ``b``."""
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------
    def emit(self, expr: str) -> T:
        name = self.temporary(self.count)
        self.count += 1
        self.lines.append(self.line(name, expr))
        return self.value(name)

    def _v(self, a: T | bool) -> T:
        return self.boolean(a) if isinstance(a, bool) else a

    def decide(self, c: T | bool) -> bool | None:
        if isinstance(c, bool):
            return c
        return None if c.const is None else bool(c.const)

    def _logic(self, items: list[T | bool], absorbing: bool) -> T:
        kept: list[T] = []
        for it in items:
            known = self.decide(it)
            if known is None:
                assert not isinstance(it, bool)
                kept.append(it)
            elif known == absorbing:
                return self.boolean(absorbing)
        if not kept:
            return self.boolean(not absorbing)
        if len(kept) == 1:
            return kept[0]
        return self.emit(self.join(kept, absorbing))

    def and_(self, items: list[T | bool]) -> T:
        return self._logic(items, False)

    def or_(self, items: list[T | bool]) -> T:
        return self._logic(items, True)

    def ite(self, c: T | bool, a: T | bool, b: T | bool) -> T:
        known = self.decide(c)
        if known is not None:
            return self._v(a) if known else self._v(b)
        av, bv = self._v(a), self._v(b)
        if av.expr == bv.expr:
            return av
        assert not isinstance(c, bool)
        return self.emit(self.select(c, av, bv))
