"""Finding models, CCA files and queries by name.

Search order: directories given with ``--lib`` (each holding models/, templates/,
queries/, proofs/, objectives/), then ``$CCMATIC_LIB`` (os.pathsep-separated), then the checkout
this package lives in, then the copy installed with the package
(``<prefix>/share/ccmatic``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

KINDS = {"models": ".toml", "templates": ".cca", "queries": ".toml", "proofs": ".toml", "objectives": ".toml"}


@dataclass(frozen=True)
class Library:
    roots: tuple[Path, ...]

    @staticmethod
    def default(extra: list[str] | None = None) -> Library:
        roots: list[Path] = [Path(p) for p in (extra or [])]
        env = os.environ.get("CCMATIC_LIB")
        if env:
            roots += [Path(p) for p in env.split(os.pathsep) if p]
        checkout = Path(__file__).resolve().parents[2]
        if (checkout / "models").is_dir():
            roots.append(checkout)
        installed = Path(sys.prefix) / "share" / "ccmatic"
        if installed.is_dir():
            roots.append(installed)
        return Library(tuple(dict.fromkeys(roots)))

    def find(self, kind: str, name: str, relative_to: Path | None = None) -> Path | None:
        """Resolve ``name`` (a path, or a bare name looked up in ``kind``)."""
        ext = KINDS[kind]
        cand = Path(name)
        tries = []
        if relative_to is not None:
            tries += [relative_to / cand, relative_to / (name + ext)]
        tries += [cand, Path(name + ext)]
        for p in tries:
            if p.is_file():
                return p
        if cand.exists() and not cand.is_dir():  # a FIFO or a device: the reader refuses it by name
            return cand
        for root in self.roots:
            for p in (root / kind / name, root / kind / (name + ext)):
                if p.is_file():
                    return p
            if kind == "queries":
                hits = sorted((root / kind).glob(f"*/{name}{ext}")) if (root / kind).is_dir() else []
                if hits:
                    return hits[0]
        return None

    def listing(self, kind: str) -> list[Path]:
        ext = KINDS[kind]
        seen: dict[str, Path] = {}
        for root in self.roots:
            d = root / kind
            if d.is_dir():
                for p in sorted(d.rglob(f"*{ext}")):
                    key = str(p.relative_to(d))
                    seen.setdefault(key, p)
        return list(seen.values())
