"""The services' empty databases, made once per installed version by their own tools and copied into each lab.

`keystone-manage db_sync`, `nova-manage api_db sync`, `cell_v2 map_cell0`, `cell_v2 create_cell --transport-url
fake://`, `nova-manage db sync` and `placement-manage db sync` (DevStack's order) take 30-70 s on a loaded 2-core
machine; a copy takes milliseconds. The cells' database URLs are relative (`sqlite:///nova_cell1.sqlite`), so the
copy works in whichever directory the services run. Builds lock one another out (flock); a failed build leaves
nothing behind."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from console.lab.cloud.confs import DATABASES, CloudConf, Ports, Secrets

Progress = Callable[[str], None]
# what the template holds; bump it when the build below changes
LAYOUT = "1"


class TemplateError(Exception):
    """A manage command failed; the message names it and ends with its output."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "console" / "openstack"


def key() -> str:
    versions = [f"{d}=={importlib.metadata.version(d)}" for d in ("nova", "keystone", "openstack-placement")]
    return hashlib.sha256(" ".join([*versions, LAYOUT]).encode()).hexdigest()[:16]


def template(progress: Progress = lambda _m: None) -> Path:
    """The directory holding the empty databases for the installed services, built first when missing."""
    target = cache_root() / f"databases-{key()}"
    if target.exists():
        return target
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / f"{target.name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("waiting for another process making OpenStack's databases")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():  # the other process may have built it meanwhile
            _build(target, progress)
    return target


def install(into: Path, progress: Progress = lambda _m: None) -> None:
    """Copy the empty databases into `into` (the services' working directory), in WAL mode: the Nova process's
    threads write concurrently (Nova's own threading-mode tests do the same, with DatabaseWriteLock)."""
    source = template(progress)
    into.mkdir(parents=True, exist_ok=True)
    for name in DATABASES:
        shutil.copyfile(source / name, into / name)
        with sqlite3.connect(into / name) as db:
            db.execute("PRAGMA journal_mode=WAL")


def _build(target: Path, progress: Progress) -> None:
    progress("making OpenStack's empty databases (once per version; about a minute)")
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        conf = CloudConf(work, Ports(1, 1, 1, 1), Secrets("unused", "unused"))
        conf.write()
        bindir = Path(sys.executable).parent
        nova = [str(bindir / "nova-manage"), "--config-file", str(work / "nova.conf")]
        steps = [
            [str(bindir / "keystone-manage"), "--config-file", str(work / "keystone" / "keystone.conf"), "db_sync"],
            [*nova, "api_db", "sync"],
            [*nova, "cell_v2", "map_cell0", "--database_connection", "sqlite:///nova_cell0.sqlite"],
            [
                *nova,
                "cell_v2",
                "create_cell",
                "--name",
                "cell1",
                "--transport-url",
                "fake://",
                "--database_connection",
                "sqlite:///nova_cell1.sqlite",
            ],
            [*nova, "db", "sync"],
            [
                str(bindir / "placement-manage"),
                "--config-file",
                str(work / "placement" / "placement.conf"),
                "db",
                "sync",
            ],
        ]
        for cmd in steps:
            done = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                raise TemplateError(
                    f"{Path(cmd[0]).name} {' '.join(cmd[3:])} failed ({done.returncode}): "
                    f"{(done.stderr or done.stdout).strip()[-2000:]}"
                )
        final = Path(tempfile.mkdtemp(prefix=f".{target.name}-final-", dir=target.parent))
        for name in DATABASES:
            shutil.copyfile(work / name, final / name)
        final.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
