"""NFD v0.8.2 in the field report's world: hook naming, gRPC-era annotations, rules ignored, bad hooks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

NS = "node-feature-discovery"
FNS = "feature.node.kubernetes.io"
GROUP, VERSION = "nfd.k8s-sigs.io", "v1alpha1"
WORKERS = ("kube-worker01", "kube-worker02")
# NFD relabels within ~0.1 s here; how fast is measured by benchmarks/nfd_relabel.py, not asserted
# (timed assertions flake on a loaded CI machine). The tests check that it happens.
SETTLE = 10.0


@pytest.fixture(scope="module")
def kube(seed_resize_lab):
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(seed_resize_lab.state.kubeconfig))
    yield client
    client.close()


def node(kube, name):
    from kubernetes import client

    return client.CoreV1Api(kube).read_node(name).metadata


def poll(predicate, timeout, interval=0.02):
    t0 = time.monotonic()
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"not true after {timeout}s; last value {value!r}")
        time.sleep(interval)


def warnings_for(kube, name, reason, namespace=NS):
    from kubernetes import client

    evs = client.CoreV1Api(kube).list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
    return [e.message for e in evs.items if e.reason == reason and e.type == "Warning"]


def test_v08_hook_and_feature_file_naming(seed_resize_lab, kube):
    assert seed_resize_lab.scenario.nfd_version == "v0.8.2"
    pid_max = Path("/proc/sys/kernel/pid_max").read_text().strip()
    for w in WORKERS:
        labels = node(kube, w).labels
        # field report 1: hook `my-script` printing kernel.x=1 -> feature.node.kubernetes.io/my-script-kernel.x
        assert labels[f"{FNS}/my-script-kernel.pid_max"] == pid_max
        assert labels[f"{FNS}/inventory-rack"] == "r1"  # feature file `inventory`, line rack=r1
        assert labels[f"{FNS}/lab.inventory"] == "true"  # `/lab.inventory` drops the file-name prefix
        assert labels[f"{FNS}/kernel-version.full"] == "5.4.0-165-generic"
        assert labels[f"{FNS}/system-os_release.VERSION_ID"] == "20.04"
        assert not any(k.startswith(f"{FNS}/cpu-model.") for k in labels)  # cpu-model.* came with v0.11
    assert node(kube, "kube-worker02").labels[f"{FNS}/cpu-cpuid.AVX512F"] == "true"
    assert f"{FNS}/cpu-cpuid.AVX512F" not in node(kube, "kube-worker01").labels


def test_v08_version_annotations_and_grpc_record(kube):
    from kubernetes import client

    for name in ("kube-controlplane01", *WORKERS):
        ann = node(kube, name).annotations
        assert ann["nfd.node.kubernetes.io/worker.version"] == "v0.8.2"
        assert "my-script-kernel.pid_max" in ann["nfd.node.kubernetes.io/feature-labels"].split(",")
    assert node(kube, "kube-controlplane01").annotations["nfd.node.kubernetes.io/master.version"] == "v0.8.2"
    assert "nfd.node.kubernetes.io/master.version" not in node(kube, "kube-worker01").annotations
    nf = client.CustomObjectsApi(kube).get_namespaced_custom_object(GROUP, VERSION, NS, "nodefeatures",
                                                                    "kube-worker01")
    assert nf["metadata"]["annotations"]["console.lab/nfd-transport"] == "grpc"
    assert not nf["spec"].get("features")  # v0.8 workers sent labels only
    assert nf["spec"]["labels"][f"{FNS}/cpu-cpuid.AVX2"] == "true"


def test_v08_ignores_node_feature_rules(kube):
    from kubernetes import client

    api = client.CustomObjectsApi(kube)
    rule = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeFeatureRule", "metadata": {"name": "lab-v08-rule"},
            "spec": {"rules": [{"name": "always", "labels": {"always": "true"}}]}}
    api.create_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", rule)
    try:
        msgs = poll(lambda: warnings_for(kube, "lab-v08-rule", "RuleIgnored", namespace="default"), SETTLE)
        assert "v0.10.0" in msgs[0]
        assert f"{FNS}/always" not in node(kube, "kube-worker01").labels
    finally:
        api.delete_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", "lab-v08-rule")


HANG = "#!/bin/sh\nsleep 30\necho never=1\n"
NOISY = "#!/bin/sh\necho 'this is not a label'\nprintf 'bin\\001\\002ary=x\\n'\necho ok.value=1\n"
BROKEN = "#!/bin/sh\necho lost=1\nexit 3\n"


def test_bad_hooks_are_discarded_and_reported(seed_resize_lab, kube):
    from kubernetes import client

    core = client.CoreV1Api(kube)
    t0 = time.monotonic()
    core.patch_namespaced_config_map("nfd-hooks-workers", NS, {"data": {"hang": HANG, "noisy": NOISY,
                                                                        "broken": BROKEN}})
    try:
        poll(lambda: node(kube, "kube-worker01").labels.get(f"{FNS}/noisy-ok.value") == "1", 6.0)
        print(f"\nbad hooks (one hangs until the {seed_resize_lab.nfd.hook_timeout:g}s timeout): labels after "
              f"{time.monotonic() - t0:.2f}s")
        labels = node(kube, "kube-worker01").labels
        assert f"{FNS}/my-script-kernel.pid_max" in labels  # the good hook still labels
        assert not any(k.startswith((f"{FNS}/hang-", f"{FNS}/broken-")) for k in labels)
        failed = warnings_for(kube, "nfd-hooks-workers", "HookFailed")
        assert any("hang" in m and "did not exit within" in m for m in failed)
        assert any("broken" in m and "exited with status 3" in m for m in failed)
        dropped = warnings_for(kube, "nfd-hooks-workers", "LabelDropped")
        assert any("noisy-this is not a label" in m for m in dropped)
    finally:
        core.patch_namespaced_config_map("nfd-hooks-workers", NS, {"data": {"hang": None, "noisy": None,
                                                                            "broken": None}})
    poll(lambda: f"{FNS}/noisy-ok.value" not in node(kube, "kube-worker01").labels, SETTLE)


def test_hooks_reading_node_name_run_per_node(seed_resize_lab, kube):
    from kubernetes import client

    core = client.CoreV1Api(kube)
    runs = seed_resize_lab.nfd.stats["hook_runs"]
    core.patch_namespaced_config_map("nfd-hooks-workers", NS,
                                     {"data": {"whoami": '#!/bin/sh\necho "/lab.node=$NODE_NAME"\n'}})
    try:
        for w in WORKERS:
            poll(lambda w=w: node(kube, w).labels.get(f"{FNS}/lab.node") == w, SETTLE)
        assert seed_resize_lab.nfd.stats["hook_runs"] - runs == len(WORKERS)  # once per node, not per event
        # the control plane is another group: its hooks ConfigMap did not change
        assert f"{FNS}/lab.node" not in node(kube, "kube-controlplane01").labels
    finally:
        core.patch_namespaced_config_map("nfd-hooks-workers", NS, {"data": {"whoami": None}})
    poll(lambda: all(f"{FNS}/lab.node" not in node(kube, w).labels for w in WORKERS), SETTLE)
