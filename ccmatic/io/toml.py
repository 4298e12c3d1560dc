"""TOML input files: a parsed document that can point at its keys and strings
(file:line:col), and the typed readers every loader uses."""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from collections.abc import Iterator
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

    def _find(self, pattern: str) -> int | None:
        """Offset of group 1 of the first match in the current table, else in the whole file."""
        pat = re.compile(pattern, re.MULTILINE)
        m = pat.search(self.text, self._start) or pat.search(self.text)
        return m.start(1) if m else None

    def _key_offset(self, key: str) -> int | None:
        k = re.escape(key)
        off = self._find(r"^[ \t]*(\"?" + k + r"\"?)[ \t]*=")
        return off if off is not None else self._find(r"^[ \t]*(\[+[ \t]*" + k + r"[ \t]*\]+)")

    @contextmanager
    def table(self, name: str, nth: int = 0) -> Iterator[None]:
        """Inside this block, keys are located in the nth ``[name]``/``[[name]]`` table first
        (so an error in the second [[objective]] points at that objective)."""
        headers = list(re.finditer(r"^[ \t]*\[\[?[ \t]*" + re.escape(name) + r"[ \t]*\]\]?", self.text, re.MULTILINE))
        old = self._start
        self._start = headers[nth].start() if nth < len(headers) else 0
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
