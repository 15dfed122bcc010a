"""`console nfd files push` where the nfd-worker DaemonSet mounts features.d from a ConfigMap volume (the NFD
article's alternative to the hostPath), in the lab's `nfd-configmap` scenario (NFD v0.16.4): the push edits that
ConfigMap — named as the DaemonSet's volume names it — and every node the DaemonSet runs on gets the label, even
when one node was asked for (the plan says so: "also_reached").

Needs the issue-11 merge: cmfiles (ConfigMapTarget), labnfd (the scenario, the kubelet's projection), discovery.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client
from labstart import start_lab

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
