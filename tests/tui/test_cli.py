"""The console's command line: --help documents options and the config file; bad kubeconfig exits 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "data"), **env}
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, env=full,
                          timeout=60)


def test_help_documents_options_and_config(tmp_path: Path) -> None:
    out = _run(["--help"], tmp_path)
    assert out.returncode == 0
    for opt in ("--kubeconfig", "--context", "--theme", "--read-only", "--nfd-version", "--lab", "--scenario"):
        assert opt in out.stdout
    assert str(tmp_path / "cfg" / "console" / "config.yaml") in out.stdout
    assert "contexts:" in out.stdout and "key_overrides" in out.stdout


def test_missing_kubeconfig_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    out = _run(["--kubeconfig", str(tmp_path / "nope")], tmp_path)
    assert out.returncode == 2  # a bad kubeconfig (README: exit codes)
    assert "no kubeconfig at" in out.stderr and "--kubeconfig" in out.stderr
    assert "lab" not in out.stderr.replace(str(tmp_path), "")  # product code never tells a user to try the lab
    assert "Traceback" not in out.stderr


def test_invalid_kubeconfig_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    out = _run(["--kubeconfig", str(bad)], tmp_path)
    assert out.returncode == 2
    assert "console:" in out.stderr and str(bad) in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_config_file_exits_2(tmp_path: Path) -> None:
    """Issue 9: a bad settings file is exit 2 (usage/bad config), one line naming file, line and key."""
    cfg = tmp_path / "cfg" / "console"
    cfg.mkdir(parents=True)
    (cfg / "config.yaml").write_text("hook_store: sideways\n")
    out = _run(["--kubeconfig", str(tmp_path / "nope")], tmp_path)
    assert out.returncode == 2
    assert "config.yaml:1: hook_store: expected one of cluster, directory, not 'sideways'" in out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
