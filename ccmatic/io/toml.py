"""TOML input files: a parsed document that can point at its keys and strings
(file:line:col), and the typed readers every loader uses."""

from __future__ import annotations

import bisect
import difflib
import itertools
import math
import re
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.source import Source
from ccmatic.spec.source import read_source


class TomlDoc:
    """A parsed TOML file that can locate keys and strings in its raw text."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.text = read_source(path)
        self._start = 0  # where key look-ups start: the table being read (see table())
        self._line_index: list[tuple[int, str]] | None = None
        try:
            self.data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as e:
            m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
            msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
            loc = Loc(str(path), int(m.group(1)), int(m.group(2))) if m else Loc(str(path))
            raise SpecError(loc, f"invalid TOML: {msg}", "see https://toml.io for the syntax") from None
        except (ValueError, RecursionError, MemoryError) as e:  # e.g. Python's int digit limit
            why = str(e).split(";")[0] or type(e).__name__
            raise SpecError(Loc(str(path)), f"cannot read this TOML: {why}",
                            "numbers are limited to 4,300 digits; nesting to a few thousand levels") from None

    def _pos(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def _lines(self) -> list[tuple[int, str]]:
        """Every line of the text with its offset (made once)."""
        if self._line_index is None:
            self._line_index, at = [], 0
            for line in self.text.split("\n"):
                self._line_index.append((at, line))
                at += len(line) + 1
        return self._line_index

    def _find(self, at: Callable[[str], int | None]) -> int | None:
        """Offset of ``at``'s first hit on a line of the current table, else of the
        whole file (``at`` gives where in its line, or None)."""
        lines = self._lines()
        first = bisect.bisect_left(lines, self._start, key=lambda ln: ln[0])
        for off, line in itertools.chain(lines[first:], lines):
            col = at(line)
            if col is not None:
                return off + col
        return None

    def _key_offset(self, key: str) -> int | None:
        off = self._find(lambda line: _key_at(line, key))
        return off if off is not None else self._find(lambda line: _header_at(line, key, None))

    @contextmanager
    def table(self, name: str, nth: int = 0) -> Iterator[None]:
        """Inside this block, keys are located in the nth ``[name]``/``[[name]]`` table first
        (so an error in the second [[objective]] points at that objective)."""
        headers = [off for off, line in self._lines() if _header_at(line, name, 2) is not None]
        old = self._start
        self._start = headers[nth] if nth < len(headers) else 0
        try:
            yield
        finally:
            self._start = old

    def key_loc(self, key: str) -> Loc:
        off = self._key_offset(key)
        if off is None:
            return Loc(str(self.path))
        return Loc(str(self.path), *self._pos(off))

    def string_source(self, value: str, key: str) -> Source:
        """A Source for an expression string, positioned where it appears in the file:
        the first quoted occurrence after ``key`` (not, e.g., a mention in a comment)."""
        start = self._key_offset(key)
        start = self._start if start is None else start
        for q in ('"', "'"):
            idx = self.text.find(q + value + q, start)
            if idx >= 0:
                idx += 1
                break
        else:
            idx = self.text.find(value, start)
        if idx < 0:
            kl = self.key_loc(key)
            return Source(str(self.path), value, max(kl.line, 1), 1)
        return Source(str(self.path), value, *self._pos(idx))

    def err(self, key: str, msg: str, hint: str | None = None) -> SpecError:
        return SpecError(self.key_loc(key), msg, hint)


# Where a key or a table header is written.  Plain string tests, not a pattern made
# per key: a loader locates every key it reads (for errors pointing at file:line:col),
# and compiling a pattern for each was most of the time of loading the objective
# library.  Each test means what the pattern in its docstring matches at a line's start.

def _key_at(line: str, key: str) -> int | None:
    """Where ``[ \\t]*("?KEY"?)[ \\t]*=`` starts its group in ``line`` (``key = ...``,
    the key bare or quoted), else None."""
    i = len(line) - len(line.lstrip(" \t"))
    for j in ((i + 1, i) if line.startswith('"', i) else (i,)):
        if line.startswith(key, j):
            rest = line[j + len(key):]
            if rest.lstrip(" \t").startswith("=") or (rest.startswith('"') and rest[1:].lstrip(" \t").startswith("=")):
                return i
    return None


def _header_at(line: str, name: str, most: int | None) -> int | None:
    """Where a table header ``[ \\t]*(\\[+[ \\t]*NAME[ \\t]*\\])`` starts in ``line``
    (``[name]``, ``[[name]]``), at most ``most`` opening brackets (None: any number),
    else None."""
    i = len(line) - len(line.lstrip(" \t"))
    opening = len(line) - i - len(line[i:].lstrip("["))
    for b in range(min(opening, most or opening), 0, -1):
        rest = line[i + b:].lstrip(" \t")
        if rest.startswith(name) and rest[len(name):].lstrip(" \t").startswith("]"):
            return i
    return None


def read_frac(doc: TomlDoc, key: str, v: Any) -> Fraction:
    if isinstance(v, bool):
        raise doc.err(key, f"'{key}' must be a number, not a boolean")
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise doc.err(key, f"'{key}' must be a finite number, got {v!r}")
        return Fraction(repr(v))
    if isinstance(v, str):
        try:
            return Fraction(v.strip())
        except (ValueError, ZeroDivisionError):
            pass
    raise doc.err(key, f"'{key}' must be a number (e.g. 2, 0.5 or \"1/2\"), got {v!r}")


def read_int(doc: TomlDoc, key: str, v: Any, lo: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise doc.err(key, f"'{key}' must be a whole number, got {v!r}")
    if lo is not None and v < lo:
        raise doc.err(key, f"'{key}' must be at least {lo}, got {v}")
    return v


def read_bool(doc: TomlDoc, key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise doc.err(key, f"'{key}' must be true or false, got {v!r}")
    return v


def read_str(doc: TomlDoc, key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise doc.err(key, f"'{key}' must be a string, got {v!r}")
    return v


def check_keys(doc: TomlDoc, table: dict[str, Any], allowed: set[str], where: str, at: Loc | None = None) -> None:
    """Unknown keys, with the nearest known key as hint; an unknown key of an inline
    table (not on a line of its own) is reported ``at`` the table, when given."""
    for k in table:
        if k not in allowed:
            close = difflib.get_close_matches(k, sorted(allowed), n=1)
            loc = doc.key_loc(k)
            raise SpecError(at if at is not None and loc.line <= 0 else loc, f"unknown key '{k}' in {where}",
                            f"did you mean '{close[0]}'?" if close else f"allowed: {', '.join(sorted(allowed))}")




def read_choice(doc: TomlDoc, key: str, v: Any, choices: tuple[str, ...]) -> str:
    if v not in choices:
        raise doc.err(key, f"unknown {key} {v!r}", "use " + " or ".join(f'"{c}"' for c in choices))
    return str(v)


def read_table(doc: TomlDoc, key: str, v: Any, what: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise doc.err(key, f"{key} must be a table", what)
    return v


def read_str_list(doc: TomlDoc, key: str, v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise doc.err(key, f"'{key}' must be a string or a list of strings")
    return list(v)
