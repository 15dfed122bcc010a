"""DirectoryHookStore: source.d/features.d layout, atomic executable writes, content-hash conflicts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from console.audit import AuditLog
from console.config import Settings
from console.guard import Guard, ReadOnly
from console.kube.nfdstore import (
    DirectoryHookStore,
    NfdStoreError,
    StoreConflict,
    directory_layout,
    hook_store,
)


def test_layout_accepts_parent_or_either_subdir(tmp_path: Path) -> None:
    expect = (tmp_path / "source.d", tmp_path / "features.d")
    assert directory_layout(tmp_path) == expect
    assert directory_layout(tmp_path / "source.d") == expect
    assert directory_layout(tmp_path / "features.d") == expect


def test_save_list_conflict_delete(tmp_path: Path) -> None:
    store = DirectoryHookStore(tmp_path, guard=Guard(read_only=False, audit=AuditLog(tmp_path / "audit.log")))
    assert store.list() == []
    hook = store.save("hook", "probe.sh", "#!/bin/sh\necho A=1\n", expected_version="")
    assert os.access(tmp_path / "source.d" / "probe.sh", os.X_OK)
    feat = store.save("feature", "inventory", "RACK=r1\n", expected_version="")
    assert not os.access(tmp_path / "features.d" / "inventory", os.X_OK)
    assert [(f.kind, f.name) for f in store.list()] == [("hook", "probe.sh"), ("feature", "inventory")]
    assert not list((tmp_path / "source.d").glob(".*"))  # no temp files left behind

    (tmp_path / "features.d" / "inventory").write_text("RACK=r2\n")  # someone else edits it
    with pytest.raises(StoreConflict) as exc:
        store.save("feature", "inventory", "RACK=r3\n", expected_version=feat.version)
    assert exc.value.current.content == "RACK=r2\n"
    saved = store.save("feature", "inventory", "RACK=r3\n", expected_version=exc.value.current_version)
    assert (tmp_path / "features.d" / "inventory").read_text() == "RACK=r3\n"
    with pytest.raises(StoreConflict):
        store.save("hook", "probe.sh", "x", expected_version="")  # exists already
    store.delete("hook", "probe.sh", expected_version=hook.version)
    assert store.get("hook", "probe.sh") is None
    assert saved.version != feat.version


@pytest.mark.parametrize("name", ["", "../evil", "a/b", "sp ace", ".."])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(NfdStoreError):
        DirectoryHookStore(tmp_path, guard=Guard(read_only=False, audit=AuditLog(tmp_path / "a.log"))).save(
            "feature", name, "A=1\n", expected_version="")


def test_settings_choose_the_store(tmp_path: Path) -> None:
    store = hook_store(Settings(hook_store="directory", hook_dir=str(tmp_path / "source.d")))
    assert isinstance(store, DirectoryHookStore) and store.features_dir == tmp_path / "features.d"
    with pytest.raises(NfdStoreError, match="hook_dir"):
        hook_store(Settings(hook_store="directory"))
    # the default, `cluster`, is where nfd-worker reads (a FileTarget), not a local store
    with pytest.raises(NfdStoreError, match="hook_store: directory"):
        hook_store(Settings())


def test_a_store_without_a_guard_or_read_only_writes_nothing(tmp_path: Path) -> None:
    """Stores built without a Guard only read; a read-only Guard refuses before the file is touched."""
    for guard in (None, Guard(read_only=True, audit=AuditLog(tmp_path / "audit.log"))):
        store = DirectoryHookStore(tmp_path, guard=guard)
        with pytest.raises(ReadOnly):
            store.save("hook", "h.sh", "#!/bin/sh\n", expected_version="")
    assert not (tmp_path / "source.d").exists() and not (tmp_path / "audit.log").exists()
