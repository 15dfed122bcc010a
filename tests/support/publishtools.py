"""`python -m console nfd publish` run against a lab as a subprocess, with its own XDG dirs and audit log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from labtools import lab_env

from console.lab.world import Lab


def xdg(tmp_path: Path, config: str = "") -> dict[str, str]:
    state, cfg = tmp_path / "state", tmp_path / "config"
    (state / "console").mkdir(parents=True, exist_ok=True)
    (cfg / "console").mkdir(parents=True, exist_ok=True)
    if config:
        (cfg / "console" / "config.yaml").write_text(config)
    return {"XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(cfg)}


def publish(lab: Lab, env: dict[str, str], *args: str) -> tuple[int, dict[str, Any], str]:
    """`python -m console nfd publish ARGS -o json`: (exit code, JSON, stderr); never a traceback."""
    proc = subprocess.run([sys.executable, "-m", "console", "nfd", "publish", *args, "-o", "json"],
                          env=lab_env(lab) | env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def audit(env: dict[str, str]) -> list[dict[str, Any]]:
    p = Path(env["XDG_STATE_HOME"]) / "console" / "audit.log"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []
