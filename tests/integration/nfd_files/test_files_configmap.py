"""`console nfd files push` where the nfd-worker DaemonSet mounts features.d from a ConfigMap volume (the NFD
article's alternative to the hostPath), in the lab's `nfd-configmap` scenario (NFD v0.16.4): the push edits that
ConfigMap — named as the DaemonSet's volume names it — and every node the DaemonSet runs on gets the label, even
when one node was asked for (the plan says so: "also_reached").

Needs the issue-11 merge: cmfiles (ConfigMapTarget), labnfd (the scenario, the kubelet's projection), discovery.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
from kubernetes import client
from labstart import start_lab
from labtools import lab_env
from ptycli import answer_after

from console.lab.world import Lab

pytestmark = pytest.mark.lab

FNS = "feature.node.kubernetes.io"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("nfd-configmap", tmp_path_factory.mktemp("lab-nfd-files-cm"))


def test_push_edits_the_mounted_configmap_and_every_node_gets_the_label(lab, api, cli, tmp_path):
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    (ds,) = [d for d in apps.list_daemon_set_for_all_namespaces().items if d.metadata.name == "nfd-worker"]
    mount = next(m for m in ds.spec.template.spec.containers[0].volume_mounts if "features.d" in m.mount_path)
    volume = next(v for v in ds.spec.template.spec.volumes if v.name == mount.name)
    ns, cm_name = ds.metadata.namespace, volume.config_map.name
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    f = tmp_path / "rack.feature"
    f.write_text("rack=r42\n")
    code, doc, err = cli(env, "nfd", "files", "push", str(f), "--kind", "feature", "--node", "kube-worker01", "--yes")
    assert (code, doc["status"]) == (0, "done"), err
    assert cm_name in doc["target"]
    nodes = {r["node"] for r in doc["nodes"]}
    assert "kube-worker01" in nodes and set(doc["also_reached"]) == nodes - {"kube-worker01"} != set()
    assert core.read_namespaced_config_map(cm_name, ns).data["rack.feature"] == "rack=r42\n"
    for r in doc["nodes"]:
        assert r["relabelled"], r
        assert (core.read_node(r["node"]).metadata.labels or {})[f"{FNS}/rack"] == "r42"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_push_meets_a_configmap_patched_since_its_preview(lab, api, cli, tmp_path):
    """Issue 20, point 1 (ConfigMap): admin A's push of `inventory` previews and waits at its question; admin B
    `kubectl patch`es that key of nfd-features; A answers y: exit 1, JSON "error": "conflict", nothing sent (the
    ConfigMap keeps B's content and resourceVersion), and the message names the resourceVersions."""
    core = client.CoreV1Api(api)
    (ds,) = [d for d in client.AppsV1Api(api).list_daemon_set_for_all_namespaces().items
             if d.metadata.name == "nfd-worker"]
    ns = ds.metadata.namespace
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    mine = tmp_path / "inventory"
    mine.write_text("example.com/rack=mine\n")
    shown = core.read_namespaced_config_map("nfd-features", ns).metadata.resource_version
    patched: list[str] = []

    def b_patches(_asked: str) -> None:
        subprocess.run(["kubectl", "patch", "configmap", "nfd-features", "-n", ns, "--type", "merge", "-p",
                        json.dumps({"data": {"inventory": "example.com/rack=theirs\n"}})],
                       env=lab_env(lab), check=True, capture_output=True, timeout=30)
        patched.append(core.read_namespaced_config_map("nfd-features", ns).metadata.resource_version)

    code, out, err = answer_after([sys.executable, "-m", "console", "nfd", "files", "push", str(mine), "--kind",
                                   "feature", "--node", "kube-worker01", "--no-wait", "-o", "json"],
                                  lab_env(lab) | env, b_patches)
    doc = json.loads(out)
    assert (code, doc["status"], doc.get("error"), doc["exit_code"]) == (1, "error", "conflict", 1), err
    assert f"resourceVersion {shown} → {patched[0]}" in doc["message"] and "Traceback" not in err
    assert doc["done"] == [] and "kube-worker01" in doc["conflicts"]
    after = core.read_namespaced_config_map("nfd-features", ns)
    assert after.data["inventory"] == "example.com/rack=theirs\n" and after.metadata.resource_version == patched[0]
