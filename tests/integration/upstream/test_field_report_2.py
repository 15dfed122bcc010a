"""Field report 2 (shared reference field-reports.md) on upstream's control plane: the Pending pod, the resize or
the live scale-up with a kubelet restart, the node's capacity growing, and kube-scheduler — not the lab — placing
the pod, shown by real kubectl. The console reaches the real API server with its own client, as on a cluster."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from labstart import start_lab

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


def _env(lab: Any) -> dict[str, str]:
    env = dict(os.environ)
    for line in lab.state.env.read_text().splitlines():
        key, _, value = line.partition("=")
        env[key] = value.strip("'")
    return env


def _kubectl_json(lab: Any, *args: str) -> Any:
    done = subprocess.run(["kubectl", "get", *args, "-o", "json"], env=_env(lab), capture_output=True, text=True,
                          timeout=60, check=True)
    return json.loads(done.stdout)


def _scale_up(lab: Any, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**_env(lab), "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    return subprocess.run([sys.executable, "-m", "console", "scale-up", "kube-worker02", *args, "--yes"], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(("scenario", "pod", "args", "capacity"), [
    # offline: Nova resize to m1.large reboots the VM; the kubelet reads 8 CPUs / 12268324Ki at its start
    ("seed-resize", "nginx", ("--flavor", "m1.large"), {"cpu": "8", "memory": "12268324Ki"}),
    # online: raise the maxima, soft reboot, hot-add, online the CPUs, restart the kubelet
    ("seed-live", "nginx-large", ("--vcpus", "12", "--memory", "16Gi", "--method", "libvirt"),
     {"cpu": "12", "memory": "16396200Ki"}),
], ids=["resize", "live"])
def test_the_pending_pod_runs_after_the_scale_up(scenario: str, pod: str, args: tuple[str, ...],
                                                 capacity: dict[str, str], tmp_path: Path) -> None:
    for lab in start_lab(scenario, tmp_path / "lab"):
        assert _kubectl_json(lab, "pod", pod)["status"]["phase"] == "Pending"
        events = _kubectl_json(lab, "events", f"--field-selector=involvedObject.name={pod},reason=FailedScheduling")
        assert "Insufficient cpu" in events["items"][-1]["message"]  # kube-scheduler's own reason
        done = _scale_up(lab, tmp_path, *args)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "scale-up done" in done.stdout
        node = _kubectl_json(lab, "node", "kube-worker02")
        assert {k: node["status"]["capacity"][k] for k in capacity} == capacity
        assert not node["spec"].get("unschedulable")
        running = _kubectl_json(lab, "pod", pod)
        assert running["status"]["phase"] == "Running" and running["spec"]["nodeName"] == "kube-worker02"
        scheduled = _kubectl_json(lab, "events", f"--field-selector=involvedObject.name={pod},reason=Scheduled")
        assert scheduled["items"][-1]["reportingComponent"] == "default-scheduler"
