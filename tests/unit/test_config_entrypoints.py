"""A bad settings file at every entry point that reads it: exit 2, one line `console: FILE:LINE: KEY: …` on
stderr, no traceback, no screen; with -o json the error object on stdout (the issue 9 fault contract)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ENTRY_POINTS = {
    "tui": [],
    "tui-lab": ["--lab"],  # refused before the lab starts
    "scale-up": ["scale-up", "kube-worker02", "--flavor", "m1.xlarge", "--yes"],
    "scale-up-dry-run": ["scale-up", "kube-worker02", "--flavor", "m1.xlarge", "--dry-run"],
    "scale-up-resume": ["scale-up", "kube-worker02", "--resume", "r1"],
    "revert": ["scale-up", "kube-worker02", "--revert", "--yes"],
    "get": ["get", "node", "kube-worker02"],
}
JSON_CAPABLE = [k for k in ENTRY_POINTS if k.startswith(("scale-up", "revert", "get"))]


def _run(tmp_path: Path, args: list[str], config: str, **env: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "cfg" / "console" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(config)
    full = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLE_")}
    full |= {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "state"),
             "XDG_DATA_HOME": str(tmp_path / "data"), "KUBECONFIG": str(tmp_path / "no-kubeconfig"), **env}
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, env=full,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_bad_config_is_exit_2_and_one_line(tmp_path: Path, entry: str) -> None:
    out = _run(tmp_path, ENTRY_POINTS[entry], "theme: dark\nread_only: ture\n")
    assert out.returncode == 2, out.stderr
    assert out.stderr == f"console: {tmp_path}/cfg/console/config.yaml:2: read_only: expected true or false, " \
                         "not 'ture'\n"
    assert out.stdout == ""  # no screen, no lab, nothing else


@pytest.mark.parametrize("entry", JSON_CAPABLE)
def test_bad_config_with_json_output(tmp_path: Path, entry: str) -> None:
    out = _run(tmp_path, [*ENTRY_POINTS[entry], "-o", "json"], "libvirt_uris: 5\n")
    assert out.returncode == 2
    doc = json.loads(out.stdout)
    assert doc["status"] == "error" and doc["error"] == "bad-config" and doc["exit_code"] == 2
    assert doc["message"].endswith("config.yaml:1: libvirt_uris: expected a list of libvirt URIs, "
                                   "e.g. [qemu+ssh://cmp001/system], not 5")
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1


def test_bad_environment_value_is_exit_2_naming_the_variable(tmp_path: Path) -> None:
    out = _run(tmp_path, [*ENTRY_POINTS["scale-up"], "-o", "json"], "", CONSOLE_READ_ONLY="maybe")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert json.loads(out.stdout)["message"] == ("environment CONSOLE_READ_ONLY: read_only: expected true or "
                                                 "false, not 'maybe'")


def test_global_read_only_reaches_the_scale_up_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`console --read-only scale-up …` (and --revert) resolve read_only=True: the flag reached config.load.
    (The refusal itself happens at the mutation, console/guard.py.) The real load runs; it is only observed."""
    from console import cli, config

    seen: list[Any] = []
    real = config.load

    def observed(flags: Any = None, **kw: Any) -> Any:
        seen.append(real(flags, **kw))
        return seen[-1]

    monkeypatch.setattr(config, "load", observed)
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var))
    for var in [v for v in os.environ if v.startswith("CONSOLE_")]:
        monkeypatch.delenv(var)
    missing = str(tmp_path / "no-kubeconfig")
    for args in (ENTRY_POINTS["scale-up"], ENTRY_POINTS["revert"]):
        seen.clear()
        assert cli.main(["--read-only", "--kubeconfig", missing, *args]) == 2  # then: no kubeconfig
        assert [s.read_only for s in seen] == [True]
        seen.clear()
        assert cli.main(["--kubeconfig", missing, *args]) == 2
        assert [s.read_only for s in seen] == [False]
