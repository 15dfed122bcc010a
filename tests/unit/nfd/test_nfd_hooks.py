"""Hooks: NFD's run rules, plus the safety net NFD lacks (timeout, output cap)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from console.nfd.hooks import run_hook, run_hooks
from console.nfd.local import local_source


def hook(d: Path, name: str, body: str, mode: int = 0o755) -> Path:
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(mode)
    return p


def test_legacy_naming_v08(tmp_path: Path) -> None:
    hook(tmp_path, "my-hook.sh", "echo FOO\necho /BAR=2\necho vendor.io/baz=3\n")
    r = run_hooks(tmp_path, "v0.8.0")
    assert r.status == "ran"
    assert r.labels == {"my-hook.sh-FOO": "true", "BAR": "2", "vendor.io/baz": "3"}


def test_current_naming_v012(tmp_path: Path) -> None:
    hook(tmp_path, "my-hook.sh", "echo FOO\necho /BAR=2\n")
    r = run_hooks(tmp_path, "v0.12.0")
    assert r.labels == {"FOO": "true", "/BAR": "2"}
    assert any("DEPRECATED" in w for w in r.warnings)


def test_later_hooks_override_earlier(tmp_path: Path) -> None:
    hook(tmp_path, "a", "echo k=a\n")
    hook(tmp_path, "b", "echo k=b\n")
    assert run_hooks(tmp_path, "v0.12.0").labels == {"k": "b"}


def test_nonzero_exit_discards_all_output_keeps_stderr(tmp_path: Path) -> None:
    hook(tmp_path, "fails", "echo good=1\necho oops >&2\nexit 3\n")
    r = run_hooks(tmp_path, "v0.12.0")
    assert r.labels == {}
    res = r.results[0]
    assert res.exit_code == 3 and res.stderr == "oops\n" and "discards all of its output" in res.error


def test_hook_that_never_exits(tmp_path: Path) -> None:
    hook(tmp_path, "hangs", "echo early=1\nsleep 60\n")
    hook(tmp_path, "after", "echo after=1\n")
    start = time.monotonic()
    r = run_hooks(tmp_path, "v0.12.0", timeout=0.5)
    assert time.monotonic() - start < 10
    res = {x.name: x for x in r.results}
    assert res["hangs"].timed_out and "would hang its whole discovery loop" in res["hangs"].error
    assert r.labels == {"after": "1"}


def test_hook_that_prints_10mb(tmp_path: Path) -> None:
    hook(tmp_path, "chatty", "yes x | head -c 10485760\n")
    r = run_hooks(tmp_path, "v0.12.0")
    res = r.results[0]
    assert res.output_capped and len(res.stdout) == 1024 * 1024 and "no limit" in res.error
    assert r.labels == {}
    big = run_hooks(tmp_path, "v0.12.0", max_output=16 * 1024 * 1024)
    assert big.results[0].ok and big.labels == {"x": "true"}


def test_binary_output_is_dropped_with_reasons(tmp_path: Path) -> None:
    hook(tmp_path, "bin", r"printf '\377\376\000=1\nok=1\nbad val=1\n'" + "\n")
    res = local_source(None, tmp_path, "v0.12.0")
    assert res.labels == {"feature.node.kubernetes.io/ok": "1"}
    assert len(res.dropped) == 2 and all("invalid label name" in d.reason for d in res.dropped)


def test_not_executable_and_no_shebang(tmp_path: Path) -> None:
    hook(tmp_path, "noexec", "echo a=1\n", mode=0o644)
    p = tmp_path / "noshebang"
    p.write_text("echo b=1\n")
    p.chmod(0o755)
    (tmp_path / "conf").mkdir()
    r = run_hooks(tmp_path, "v0.12.0")
    errs = {x.name: x.error for x in r.results}
    assert "not executable" in errs["noexec"] and "exec format error" in errs["noshebang"]
    assert "conf" not in errs and r.labels == {}


def test_dotfiles_skipped_from_v015(tmp_path: Path) -> None:
    hook(tmp_path, ".hidden", "echo h=1\n")
    assert run_hooks(tmp_path, "v0.12.0").labels == {"h": "1"}
    assert run_hooks(tmp_path, "v0.16.0", enabled=True).labels == {}


@pytest.mark.parametrize(("version", "enabled", "status"), [
    ("v0.13.0", None, "ran"), ("v0.13.0", False, "disabled"), ("v0.14.0", None, "disabled"),
    ("v0.16.0", True, "ran"), ("v0.17.0", True, "removed"), ("v0.19.0", None, "removed"),
])
def test_hook_availability_by_version(tmp_path: Path, version: str, enabled: bool | None, status: str) -> None:
    hook(tmp_path, "h", "echo k=1\n")
    r = run_hooks(tmp_path, version, enabled=enabled)
    assert r.status == status
    if status != "ran":
        assert r.results == [] and r.labels == {} and r.warnings


def test_v0150_bug_hooks_give_no_labels(tmp_path: Path) -> None:
    hook(tmp_path, "h", "echo k=1\n")
    assert run_hooks(tmp_path, "v0.15.0", enabled=True).labels == {}
    assert run_hooks(tmp_path, "v0.15.0", enabled=True).features == {"k": "1"}
    assert run_hooks(tmp_path, "v0.15.2", enabled=True).labels == {"k": "1"}


def test_hooks_override_feature_files(tmp_path: Path) -> None:
    fd, hd = tmp_path / "f", tmp_path / "h"
    fd.mkdir()
    hd.mkdir()
    (fd / "file").write_text("k=file\n")
    hook(hd, "h", "echo k=hook\n")
    res = local_source(fd, hd, "v0.12.0")
    assert res.labels == {"feature.node.kubernetes.io/k": "hook"}
    assert res.features == {"local.label": {"k": "hook"}}


def test_run_hook_env(tmp_path: Path) -> None:
    p = hook(tmp_path, "env", 'echo "v=$MYVAR"\n')
    assert run_hook(p, env={"MYVAR": "abc", "PATH": "/usr/bin:/bin"}).stdout == "v=abc\n"
