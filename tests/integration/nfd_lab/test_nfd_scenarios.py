"""The other ways clusters run NFD, as the lab's scenarios deploy them, through kubectl and the kubernetes client.

Both run upstream's NFD v0.16.6 (built by console/lab/upstream/nfd-v0.16.6) from its own kustomize manifests:

- `nfd-configmap`: nfd-worker's DaemonSet mounts features.d from the ConfigMap `nfd-features` (the NFD article's
  alternative to hostPath: field report 1); hooks stay off until nfd-worker.conf sets sources.local.hooksEnabled
  (github:kubernetes-sigs/node-feature-discovery v0.16.6 source/local/local.go: without it the worker runs no hook
  and says nothing). v0.16's worker and master re-read their config files when the ConfigMaps change (fsnotify).
- `nfd-gpu-operator`: NFD in namespace gpu-operator, nfd-master run with -extra-label-ns=nvidia.com (the GPU
  operator's node-feature-discovery subchart values, master.extraLabelNs; gpu-operator v24.9.0 ships NFD v0.16.6).
  Since v0.14 a vendor namespace such as nvidia.com is allowed by itself; extraLabelNs lets a namespace through
  that is not allowed or is denied (denyLabelNs) (v0.16.6 pkg/nfd-master/nfd-master.go filterFeatureLabel).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from labtools import lab_env, run

from console.lab import scenarios
from console.lab.world import Lab

pytestmark = pytest.mark.lab

FNS = "feature.node.kubernetes.io"
GROUP, VERSION = "nfd.k8s-sigs.io", "v1alpha1"
NODES = ("kube-controlplane01", "kube-worker01", "kube-worker02")
SETTLE = 15.0  # generous: files wait for the worker's pass (sleepInterval 2s) and the kubelet's projection


def _start(name: str, root: Path) -> Iterator[Lab]:
    lab = Lab(scenarios.get(name), root, wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def cm_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _start("nfd-configmap", tmp_path_factory.mktemp("lab-nfd-configmap"))


@pytest.fixture(scope="module")
def gpu_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _start("nfd-gpu-operator", tmp_path_factory.mktemp("lab-nfd-gpu-operator"))


def client_for(lab: Lab):
    from kubernetes import config

    return config.new_client_from_config(config_file=str(lab.state.kubeconfig))


def labels(lab: Lab, node: str) -> dict[str, str]:
    from kubernetes import client

    with client_for(lab) as api:
        return client.CoreV1Api(api).read_node(node).metadata.labels or {}


def poll(predicate, timeout=SETTLE):
    t0 = time.monotonic()
    while not (value := predicate()):
        assert time.monotonic() - t0 < timeout, f"not true after {timeout}s"
        time.sleep(0.05)
    return value


def workloads(lab: Lab) -> dict[tuple[str, str, str], dict]:
    docs = yaml.safe_load(run(["kubectl", "get", "deploy,ds", "-A", "-o", "yaml"], lab_env(lab)).stdout)["items"]
    return {(d["metadata"]["namespace"], d["kind"], d["metadata"]["name"]): d for d in docs}


# -- nfd-configmap ------------------------------------------------------------------------------------------------

NS = "node-feature-discovery"


def test_configmap_scenario_objects(cm_lab):
    ds = workloads(cm_lab)[(NS, "DaemonSet", "nfd-worker")]
    vols = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    assert vols["features-d"]["configMap"]["name"] == "nfd-features"
    assert vols["source-d"]["hostPath"]["path"] == "/etc/kubernetes/node-feature-discovery/source.d/"
    c = ds["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "registry.k8s.io/nfd/node-feature-discovery:v0.16.6"
    assert c["args"] == ["-server=nfd-master:8080"]  # v0.16's manifest still names it; NodeFeature API in use
    cms = run(["kubectl", "-n", NS, "get", "cm", "-o", "name"], lab_env(cm_lab)).stdout.split()
    assert {"configmap/nfd-worker-conf", "configmap/nfd-master-conf", "configmap/nfd-features"} <= set(cms)
    # every node the DaemonSet runs on reads the same files: the ConfigMap's data
    assert all(labels(cm_lab, n).get("example.com/rack") == "r7" for n in NODES)
    assert all(labels(cm_lab, n).get(f"{FNS}/storage.tier") == "ssd" for n in NODES)


def test_configmap_volume_edit_labels_every_node(cm_lab):
    from kubernetes import client

    with client_for(cm_lab) as api:
        core = client.CoreV1Api(api)
        core.patch_namespaced_config_map("nfd-features", NS, {"data": {"zone": "zone=z9\n"}})
        try:
            poll(lambda: all(labels(cm_lab, n).get(f"{FNS}/zone") == "z9" for n in NODES))
        finally:
            core.patch_namespaced_config_map("nfd-features", NS, {"data": {"zone": None}})
        poll(lambda: all(f"{FNS}/zone" not in labels(cm_lab, n) for n in NODES))


def discoveries(lab: Lab, node: str) -> int:
    """How many discovery passes nfd-worker on `node` has finished (its log says so after each)."""
    env = lab_env(lab)
    pod = run(["kubectl", "-n", NS, "get", "pods", "-l", "app=nfd-worker", "--field-selector",
               f"spec.nodeName={node}", "-o", "name"], env).stdout.split()[0]
    return run(["kubectl", "-n", NS, "logs", pod], env).stdout.count("feature discovery completed")


def test_hostpath_file_is_not_read_when_features_d_is_a_configmap(cm_lab):
    path = cm_lab.guest_roots["kube-worker01"].path("/etc/kubernetes/node-feature-discovery/features.d/local")
    path.write_text("hostpath.only=yes\n")
    try:
        passes = discoveries(cm_lab, "kube-worker01")
        poll(lambda: discoveries(cm_lab, "kube-worker01") >= passes + 2)  # two worker passes since the write
        assert f"{FNS}/hostpath.only" not in labels(cm_lab, "kube-worker01")
    finally:
        path.unlink()


def test_hooks_are_off_until_the_worker_config_enables_them(cm_lab):
    """v0.16: hooks run only with sources.local.hooksEnabled: true; the hook-name prefix is gone since v0.10."""
    from kubernetes import client

    pid = f"{FNS}/kernel.pid_max"
    assert pid not in labels(cm_lab, "kube-worker01")
    with client_for(cm_lab) as api:
        core = client.CoreV1Api(api)
        conf = core.read_namespaced_config_map("nfd-worker-conf", NS).data["nfd-worker.conf"]
        on = conf + "sources:\n  local:\n    hooksEnabled: true\n"
        core.patch_namespaced_config_map("nfd-worker-conf", NS, {"data": {"nfd-worker.conf": on}})
        try:
            poll(lambda: pid in labels(cm_lab, "kube-worker01") and pid in labels(cm_lab, "kube-worker02"))
            assert pid not in labels(cm_lab, "kube-controlplane01")  # its tree has no hook
        finally:
            core.patch_namespaced_config_map("nfd-worker-conf", NS, {"data": {"nfd-worker.conf": conf}})
        poll(lambda: pid not in labels(cm_lab, "kube-worker01"))


def test_master_config_file_edit_changes_labels(cm_lab):
    """nfd-master.conf (ConfigMap nfd-master-conf, v0.13+) denyLabelNs drops example.com/rack everywhere."""
    from kubernetes import client

    with client_for(cm_lab) as api:
        core = client.CoreV1Api(api)
        core.patch_namespaced_config_map("nfd-master-conf", NS, {"data": {"nfd-master.conf":
                                                                          "denyLabelNs: [example.com]\n"}})
        try:
            poll(lambda: all("example.com/rack" not in labels(cm_lab, n) for n in NODES))
            assert labels(cm_lab, "kube-worker01")[f"{FNS}/storage.tier"] == "ssd"
        finally:
            core.patch_namespaced_config_map("nfd-master-conf", NS, {"data": {"nfd-master.conf": ""}})
        poll(lambda: all(labels(cm_lab, n).get("example.com/rack") == "r7" for n in NODES))


def test_configmap_scenario_serves_nodefeatures(cm_lab):
    from kubernetes import client

    with client_for(cm_lab) as api:
        items = client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, NS, "nodefeatures")
    assert sorted(i["metadata"]["name"] for i in items["items"]) == sorted(NODES)


# -- nfd-gpu-operator ---------------------------------------------------------------------------------------------

GNS = "gpu-operator"


def test_gpu_operator_objects_live_in_its_namespace(gpu_lab):
    found = workloads(gpu_lab)
    master = found[(GNS, "Deployment", "nfd-master")]["spec"]["template"]["spec"]["containers"][0]
    assert master["image"] == "registry.k8s.io/nfd/node-feature-discovery:v0.16.6"
    assert master["args"] == ["-extra-label-ns=nvidia.com"]
    assert (GNS, "DaemonSet", "nfd-worker") in found
    assert not any(ns == "node-feature-discovery" for ns, _, _ in found)
    env = lab_env(gpu_lab)
    resources = run(["kubectl", "api-resources", f"--api-group={GROUP}", "-o", "name"], env).stdout.split()
    assert sorted(resources) == [f"nodefeaturegroups.{GROUP}", f"nodefeaturerules.{GROUP}", f"nodefeatures.{GROUP}"]
    pods = run(["kubectl", "-n", GNS, "get", "pods", "-o", "name"], env).stdout.split()
    assert sum(p.startswith("pod/nfd-worker-") for p in pods) == len(NODES)


def test_extra_label_ns_lets_nvidia_labels_through(gpu_lab):
    """gpu-feature-discovery's features.d file on kube-worker02: nvidia.com labels there only; with nvidia.com
    denied in nfd-master.conf they stay while -extra-label-ns=nvidia.com is given, and go without it."""
    from kubernetes import client

    w2 = labels(gpu_lab, "kube-worker02")
    assert w2["nvidia.com/gpu.present"] == "true" and w2["nvidia.com/gpu.product"] == "NVIDIA-A100-PCIE-40GB"
    assert all("nvidia.com/gpu.present" not in labels(gpu_lab, n) for n in NODES if n != "kube-worker02")
    env = lab_env(gpu_lab)
    with client_for(gpu_lab) as api:
        core = client.CoreV1Api(api)
        core.patch_namespaced_config_map("nfd-master-conf", GNS, {"data": {"nfd-master.conf":
                                                                           "denyLabelNs: [nvidia.com]\n"}})
        drop = [{"op": "remove", "path": "/spec/template/spec/containers/0/args"}]
        back = [{"op": "add", "path": "/spec/template/spec/containers/0/args", "value": ["-extra-label-ns=nvidia.com"]}]
        try:
            run(["kubectl", "-n", GNS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(drop)], env)
            poll(lambda: "nvidia.com/gpu.present" not in labels(gpu_lab, "kube-worker02"), 60)
            assert labels(gpu_lab, "kube-worker02")[f"{FNS}/pci-0302_10de.present"] == "true"  # NFD's own stay
            run(["kubectl", "-n", GNS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(back)], env)
            poll(lambda: labels(gpu_lab, "kube-worker02").get("nvidia.com/gpu.present") == "true", 60)
        finally:
            core.patch_namespaced_config_map("nfd-master-conf", GNS, {"data": {"nfd-master.conf": ""}})
            got = run(["kubectl", "-n", GNS, "get", "deployment", "nfd-master", "-o", "json"], env)
            master = json.loads(got.stdout)
            if not master["spec"]["template"]["spec"]["containers"][0].get("args"):
                run(["kubectl", "-n", GNS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(back)],
                    env)
    poll(lambda: labels(gpu_lab, "kube-worker02").get("nvidia.com/gpu.present") == "true")
