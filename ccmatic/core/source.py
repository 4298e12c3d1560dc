"""Spec-language text with its place in a file.

A :class:`Source` is a piece of source text, possibly embedded in a larger file (an
expression string in a TOML query), together with the rewrites the parser made to
it (``=>`` and holes, :mod:`ccmatic.spec.source`), so that an error column points into
the text the user wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ccmatic.core.errors import Loc


@dataclass
class Source:
    """``line0``/``col0`` give the (1-based) position of the text's first character in
    ``file``; ``edits`` records the rewrites, per line and in the order they were
    made, as (column, n) in the text right after that rewrite: n > 0 means n
    characters were inserted at that column, n < 0 that -n characters were removed
    just before it."""

    file: str
    text: str
    line0: int = 1
    col0: int = 1
    edits: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def loc(self, lineno: int | None, col_offset: int | None) -> Loc:
        """Map a (1-based line, 0-based column) of the *rewritten* text to a Loc."""
        if lineno is None:
            return Loc(self.file, self.line0)
        col = col_offset or 0
        # undo the rewrites latest first: each edit is in the coordinates of the
        # text as it was right after that edit
        for at, n in reversed(self.edits.get(lineno, [])):
            if n < 0:
                if col >= at:
                    col -= n
            elif col >= at + n:
                col -= n
            elif col >= at:
                col = at
        line = self.line0 + lineno - 1
        col = col + (self.col0 if lineno == 1 else 1)
        return Loc(self.file, line, col)

    def node_loc(self, node: object) -> Loc:
        """Where a parsed node (anything with ``lineno``/``col_offset``) starts."""
        return self.loc(getattr(node, "lineno", None), getattr(node, "col_offset", None))


@dataclass(frozen=True)
class Definition:
    """A named formula: ``name`` (no argument) or ``name(t)`` (a condition of one
    step, expanded with t bound where it is used)."""

    name: str
    params: tuple[str, ...]  # () or ("t",)
    source: Source
