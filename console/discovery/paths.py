"""Where host data lives: a root directory with proc/ sys/ etc/ ... or NFD's /host-* layout."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _pick(root: Path, host: str, plain: str) -> Path:
    h = root / host
    return h if h.exists() else root / plain


@dataclass(frozen=True)
class HostPaths:
    root: Path
    proc: Path
    sys: Path
    etc: Path
    boot: Path
    usr_lib: Path
    lib: Path
    usr_src: Path

    @classmethod
    def under(cls, root: str | os.PathLike[str] = "/") -> HostPaths:
        """`root/host-proc` etc. when present (the nfd-worker mounts), else `root/proc` etc."""
        r = Path(root)
        return cls(r, _pick(r, "host-proc", "proc"), _pick(r, "host-sys", "sys"), _pick(r, "host-etc", "etc"),
                   _pick(r, "host-boot", "boot"), _pick(r, "host-usr/lib", "usr/lib"), _pick(r, "host-lib", "lib"),
                   _pick(r, "host-usr/src", "usr/src"))


def read_text(p: Path) -> str | None:
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_attr(p: Path) -> str | None:
    t = read_text(p)
    return None if t is None else t.strip()
