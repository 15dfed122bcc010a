"""`nfd status -o json` on every lab scenario names the namespace, version and master flags that
`kubectl get deploy,ds -A -o yaml` shows (issue 11 acceptance), or says there is no NFD when kubectl shows none.

Each scenario's lab runs on libvirt's test driver (no QEMU guests: only the Kubernetes API is read). Scenarios
the lab adds later are checked too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from labtools import lab_env

from console.lab import scenarios
from console.lab.world import Lab

pytestmark = pytest.mark.lab


def kubectl_nfd(env: dict[str, str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """program -> (namespace, container) for the nfd-master / nfd-worker containers kubectl shows."""
    p = subprocess.run(["kubectl", "get", "deploy,ds", "-A", "-o", "yaml"], env=env, capture_output=True, text=True,
                       timeout=60, check=True)
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for obj in yaml.safe_load(p.stdout)["items"]:
        for c in obj["spec"]["template"]["spec"]["containers"]:
            prog = (c.get("command") or c.get("args") or [""])[0].rsplit("/", 1)[-1]
            if prog in ("nfd-master", "nfd-worker"):
                out.setdefault(prog, (obj["metadata"]["namespace"], c))
    return out


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_status_agrees_with_kubectl(name: str, tmp_path: Path) -> None:
    lab = Lab(scenarios.get(name), tmp_path / "lab", libvirt="test", wait_usage=False)
    try:
        lab.start()
        env = lab_env(lab) | {"XDG_STATE_HOME": str(tmp_path / "state")}
        shown = kubectl_nfd(env)
        p = subprocess.run([sys.executable, "-m", "console", "nfd", "status", "-o", "json"], env=env,
                           capture_output=True, text=True, timeout=120)
    finally:
        lab.stop()
    assert "Traceback" not in p.stderr, p.stderr
    doc = json.loads(p.stdout)
    if not shown:
        assert (p.returncode, doc["status"]) == (3, "not-found"), p.stderr
        return
    assert p.returncode == 0, p.stderr
    ns, master = shown.get("nfd-master") or shown["nfd-worker"]
    assert doc["namespace"] == ns
    tag = master["image"].split("@")[0].rsplit(":", 1)[-1]
    assert doc["version"] == f"v{tag.lstrip('v').split('-')[0]}"
    assert doc["version"] == scenarios.get(name).nfd_version
    for prog, role in (("nfd-master", "master"), ("nfd-worker", "worker")):
        if prog in shown:
            c = shown[prog][1]
            expected = [*(c.get("command") or [])[1:], *(c.get("args") or [])]
            assert doc[role]["image"] == c["image"] and doc[role]["args"] == expected
