"""Finding models, CCA files, queries, proofs and objective libraries by name.

A library folder holds ``models/``, ``templates/``, ``queries/``, ``proofs/`` and
``objectives/``.  A bare name is looked up where the user stands first:

1. the current directory (``./queries``, ``./templates``, ...);
2. the folders given with ``--lib DIR`` (in the order given);
3. ``$CCMATIC_LIB`` (``os.pathsep``-separated);
4. the copy that ships with the package: the checkout it was installed from, then
   ``<prefix>/share/ccmatic``.

A name written *inside* a query or proof file (``cca = "mycca"``, ``model =
"ccac"``) is looked up first beside the file (a path relative to its folder), then in
the file's own library (the folder that holds its ``queries/`` or ``proofs/``), then
in the order above: a query and the CCA and model it names travel together, so a
user's ``./queries/q.toml`` naming ``cca = "mycca"`` finds ``./templates/mycca.cca``,
and a shipped query runs the shipped CCA even where the current directory has a file
of the same name (``verify --cca`` swaps the CCA).
"""

from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ccmatic.core.errors import Loc, SpecError

KINDS = {"models": ".toml", "templates": ".cca", "queries": ".toml", "proofs": ".toml", "objectives": ".toml"}
#: what a file of each kind is called in an error line
NOUNS = {"models": "model", "templates": "CCA", "queries": "query", "proofs": "proof", "objectives": "objective library"}
PACKAGED = "packaged"
PATH_GIVEN = "path given"  # the origin of a file outside every library folder


def _cwd() -> Path | None:
    try:
        return Path.cwd()
    except OSError:  # the current directory was removed
        return None


def packaged_roots() -> list[Path]:
    """The library that ships with the package: its checkout (an editable install or
    a run from the source tree), then ``<prefix>/share/ccmatic``."""
    roots = []
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "models").is_dir():
        roots.append(checkout)
    installed = Path(sys.prefix) / "share" / "ccmatic"
    if installed.is_dir():
        roots.append(installed)
    return roots


@dataclass(frozen=True)
class Library:
    roots: tuple[Path, ...]
    #: where each root comes from ("current directory", "--lib folder", "$CCMATIC_LIB", "packaged")
    origins: tuple[str, ...] = ()

    @staticmethod
    def default(extra: list[str] | None = None, cwd: Path | None = None) -> Library:
        found: dict[Path, str] = {}
        here = cwd if cwd is not None else _cwd()
        if here is not None:
            found.setdefault(here.resolve(), "current directory")
        for p in extra or []:
            found.setdefault(Path(p).resolve(), "--lib folder")
        for p in (os.environ.get("CCMATIC_LIB") or "").split(os.pathsep):
            if p:
                found.setdefault(Path(p).resolve(), "$CCMATIC_LIB")
        for root in packaged_roots():
            found[root] = PACKAGED  # the shipped copy says so, even from its own checkout
        return Library(tuple(found), tuple(found.values()))

    def origin(self, path: Path) -> str:
        """Where a file found by :meth:`find` or :meth:`listing` comes from."""
        p = path.resolve()
        for root, why in zip(self.roots, self.origins, strict=False):
            if any(p.is_relative_to(root.resolve() / kind) for kind in KINDS):
                return why
        return PATH_GIVEN

    def find(self, kind: str, name: str, relative_to: Path | None = None) -> Path | None:
        """Resolve ``name`` (a path, or a bare name looked up in ``kind``); with
        ``relative_to`` (the folder of the file that names it), beside that file
        and in its own library first."""
        ext = KINDS[kind]
        cand = Path(name)
        tries: list[Path] = []
        if relative_to is not None:
            tries += [relative_to / cand, relative_to / (name + ext)]
            own = own_library(relative_to)
            if own is not None:
                tries += [own / kind / name, own / kind / (name + ext)]
        tries += [cand, Path(name + ext)]
        for p in tries:
            if p.is_file():
                return p
        if cand.exists() and not cand.is_dir():  # a FIFO or a device: the reader refuses it by name
            return cand
        for root in self.roots:
            hit = _in_root(root, kind, name)
            if hit is not None:
                return hit
        return None

    def listing(self, kind: str) -> list[Path]:
        """Every file of ``kind`` (a name found twice: the first, as :meth:`find` would)."""
        ext = KINDS[kind]
        seen: dict[str, Path] = {}
        for root in self.roots:
            d = root / kind
            if d.is_dir():
                for p in sorted(d.rglob(f"*{ext}")):
                    key = str(p.relative_to(d))
                    seen.setdefault(key, p)
        return list(seen.values())

    def suggest(self, kind: str, name: str) -> str | None:
        """A "did you mean" hint: the names of ``kind`` closest to ``name``."""
        names = sorted({p.stem for p in self.listing(kind)})
        close = difflib.get_close_matches(Path(name).stem, names, n=3, cutoff=0.6)
        if not close:
            return None
        return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"

    def not_found_hint(self, kind: str, name: str) -> str:
        """The hint of a "not found" error: did you mean, else where to look."""
        return self.suggest(kind, name) or "give a path, or a name from 'ccmatic list'"

    def require(self, kind: str, name: str) -> Path:
        """:meth:`find`, or the one-line error a command gives for a name on its
        command line ("CCA file not found (hint: did you mean ...)")."""
        found = self.find(kind, name)
        if found is None:
            raise SpecError(Loc(name), f"{NOUNS[kind]} file not found", self.not_found_hint(kind, name))
        return found


def _in_root(root: Path, kind: str, name: str) -> Path | None:
    ext = KINDS[kind]
    for p in (root / kind / name, root / kind / (name + ext)):
        if p.is_file():
            return p
    if kind == "queries" and (root / kind).is_dir():
        hits = sorted((root / kind).glob(f"*/{name}{ext}"))
        if hits:
            return hits[0]
    return None


def own_library(folder: Path) -> Path | None:
    """The library folder that holds ``folder`` (``folder`` is ``<lib>/queries`` or
    ``<lib>/queries/<group>``, or the same under ``proofs/``, ...), or None."""
    for d in (folder, folder.parent):  # queries/q.toml or queries/<group>/q.toml
        if d.name in KINDS:
            return d.parent
    return None
