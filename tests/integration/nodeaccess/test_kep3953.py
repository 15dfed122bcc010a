"""KEP-3953 (InPlaceNodeResourceResize): a kubelet that re-reads capacity by itself is not restarted.

The gate is switched on the way an admin would: kube-worker02's /var/lib/kubelet/config.yaml edited over SSH,
then one kubelet restart so it starts with the gate; the console learns it from the kubelet's configz through
the API server (GET /api/v1/nodes/NODE/proxy/configz), as the test does with `kubectl get --raw`.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from labtools import lab_env, run, wait_for

pytestmark = pytest.mark.lab

NODE = "kube-worker02"
CONFIG = "/var/lib/kubelet/config.yaml"
GATE = "InPlaceNodeResourceResize"


def ssh(lab, script):
    return run(["ssh", "-F", str(lab.state.root / "ssh_config"), "-o", "BatchMode=yes", NODE, script],
               lab_env(lab), timeout=30).stdout


@pytest.fixture(scope="module")
def gated_lab(live_lab):
    cfg = ssh(live_lab, f"cat {CONFIG}")
    assert "featureGates: {}" in cfg
    new = cfg.replace("featureGates: {}", f"featureGates:\n  {GATE}: true")
    ssh(live_lab, f"printf '%s' {shlex.quote(new)} > {CONFIG} && systemctl restart kubelet")
    wait_for(lambda: configz(live_lab).get("featureGates", {}).get(GATE) is True, 20, what="the gate in configz")
    return live_lab


def configz(lab):
    """What the console reads: the running kubelet's config through the API server's node proxy."""
    proc = run(["kubectl", "get", "--raw", f"/api/v1/nodes/{NODE}/proxy/configz"], lab_env(lab), check=False)
    return json.loads(proc.stdout)["kubeletconfig"] if proc.returncode == 0 else {}


def test_in_place_resize_skips_the_kubelet_restart(gated_lab, tmp_path):
    lab = gated_lab
    restarts = lab.kubelets[NODE].restarts
    env = lab_env(lab) | {"XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "console", "scale-up", NODE, "--vcpus", "12", "--memory", "16Gi",
                           "--method", "libvirt", "--node-access", "ssh", "--yes", "-o", "json"], env=env,
                          capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    cap = lab.store.get("nodes", None, NODE)["status"]["capacity"]
    assert (cap["cpu"], cap["memory"]) == ("12", "16396200Ki")
    pod = lab.store.get("pods", "default", "nginx-large")
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == NODE
    step = {s["id"]: s for s in doc["steps"]}["restart-kubelet"]
    # the kubelet re-reads capacity as soon as the vCPUs are online, so the step usually finds the capacity
    # already right ("already in place"); if it gets there first, it sees the gate and only waits
    if step["status"] == "skipped":
        assert step["message"] == "already in place"
    else:
        assert step["status"] == "done" and step["data"]["in_place_resize"] is True, step
        assert "restart_exit" not in step["data"]
        assert f"{GATE}: waiting for it to re-read capacity, no restart" in proc.stderr
    # no restart: neither the journal, the audit log nor the kubelet saw one
    assert lab.kubelets[NODE].restarts == restarts
    journal = json.loads(Path(doc["journal"]).read_text())
    text = json.dumps(journal)
    assert "systemctl restart" not in text
    audit = (tmp_path / "console" / "audit.log").read_text()
    assert "systemctl restart" not in audit and "restart_exit" not in audit
