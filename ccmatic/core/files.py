"""Files ccmatic writes: checked before any long work starts, written atomically.

:func:`output_dir` and :func:`output_file` turn every way an output path can be
unusable (under a regular file, in an unwritable or missing place, a folder where a
file is meant) into one :class:`SpecError` line naming the option, before a search
or proof begins.  :func:`atomic_write` leaves the old file or the new one, never a
part: a SIGKILL mid-write keeps the previous checkpoint or cache entry.
"""

from __future__ import annotations

import os
from pathlib import Path

from ccmatic.core.errors import Loc, SpecError

PLOT_SUFFIXES = (".png", ".pdf", ".svg")
_WRITABLE = "give a folder you can write to"


def _unusable(flag: str, path: Path, why: str, hint: str | None = None) -> SpecError:
    return SpecError(Loc(flag), f"cannot write '{path}': {why}", hint)


def _blocking_file(path: Path) -> Path | None:
    """The first existing non-folder among ``path``'s ancestors."""
    for parent in [*reversed(path.parents)]:
        if parent.exists() and not parent.is_dir():
            return parent
    return None


def output_dir(flag: str, text: str) -> Path:
    """A folder to write into, created if missing."""
    p = Path(text)
    if p.exists() and not p.is_dir():
        raise _unusable(flag, p, "it is a file, not a folder", "give a folder (it is created if missing)")
    blocker = _blocking_file(p)
    if blocker is not None:
        raise _unusable(flag, p, f"'{blocker}' is a file, not a folder", "give another path")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _unusable(flag, p, e.strerror or str(e), _WRITABLE) from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise _unusable(flag, p, "the folder is not writable", _WRITABLE)
    _probe(flag, p)
    return p


def _probe(flag: str, folder: Path) -> None:
    """Create and remove a file in ``folder``: permissions alone do not tell (root,
    read-only mounts, /proc)."""
    probe = folder / f".ccmatic-probe.{os.getpid()}"
    try:
        probe.touch()
        probe.unlink()
    except OSError as e:
        raise _unusable(flag, folder, f"cannot create a file in it ({e.strerror or e})", _WRITABLE) from None


def output_file(flag: str, text: str, suffixes: tuple[str, ...] = ()) -> Path:
    """A file to (over)write; its folder is created if missing."""
    p = Path(text)
    if suffixes and p.suffix.lower() not in suffixes:
        raise SpecError(Loc(flag), f"'{p}' must end in {', '.join(suffixes)}")
    if p.is_dir():
        raise _unusable(flag, p, "it is a folder", "give a file name")
    output_dir(flag, str(p.parent) if str(p.parent) else ".")
    if p.exists() and not os.access(p, os.W_OK):
        raise _unusable(flag, p, "the file is not writable")
    return p


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader, or a crash, sees the old file or
    the new one, never a part of either (a synced temporary file renamed over it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)  # the rename itself
    except OSError:
        pass
    finally:
        os.close(fd)
