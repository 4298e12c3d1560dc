"""Errors.

Every problem with user input is raised as :class:`SpecError`, which renders as a
single line ``file:line:col: error: what is wrong (hint: what to do)``.  The CLI turns
it into exit code 2 without a traceback (unless ``--debug``).  :class:`EngineError`
is a broken internal invariant (a bug in ccmatic, never the user's input).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A source location; ``line`` and ``col`` are 1-based (0 means unknown)."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        if self.col <= 0:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.col}"


class SpecError(Exception):
    """Bad user input: one clear line, exit code 2."""

    def __init__(self, loc: Loc | None, message: str, hint: str | None = None) -> None:
        self.loc = loc
        self.message = message
        self.hint = hint
        super().__init__(self.render())

    def __reduce__(self) -> tuple[type[SpecError], tuple[Loc | None, str, str | None]]:
        # picklable, so that an input error raised in a worker process reaches the CLI
        return (SpecError, (self.loc, self.message, self.hint))

    def render(self) -> str:
        where = f"{self.loc}: " if self.loc is not None else ""
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{where}error: {self.message}{hint}"


@dataclass(frozen=True)
class SpecWarning:
    """Valid but suspicious input: one line ``file:line:col: warning: what (hint: ...)``
    on stderr; it never stops a command nor changes its exit code."""

    loc: Loc
    message: str
    hint: str | None = None

    def render(self) -> str:
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{self.loc}: warning: {self.message}{hint}"


class EngineError(RuntimeError):
    """An internal invariant of the engine does not hold (a bug, not bad input)."""
