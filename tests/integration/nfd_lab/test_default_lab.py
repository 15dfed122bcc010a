"""NFD in the `default` lab (NFD v0.19.0, deployed as its deployment/overlays/default does), driven through the
Kubernetes API with the real clients; feature files written into the nodes' trees, where nfd-worker's hostPath
volume reads them (github:kubernetes-sigs/node-feature-discovery v0.19.0
deployment/components/common/worker-mounts.yaml).
"""

from __future__ import annotations

import json
import time

import pytest
import yaml
from labtools import lab_env, run

from console.nfd.versions import CURRENT

pytestmark = pytest.mark.lab

NS = "node-feature-discovery"
FNS = "feature.node.kubernetes.io"
GROUP, VERSION = "nfd.k8s-sigs.io", "v1alpha1"
NODES = ("kube-controlplane01", "kube-worker01", "kube-worker02", "kube-worker03", "kube-worker04")
WORKERS = NODES[1:]
# Rules relabel at once; files wait for the worker's next pass (core.sleepInterval 2s in the lab's
# nfd-worker.conf). How fast is measured by benchmarks/nfd_relabel.py, not asserted (timed assertions flake
# on a loaded CI machine); the bound here is generous.
SETTLE = 15.0
FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d/"


def labels_of(kube, node):
    from kubernetes import client

    return client.CoreV1Api(kube).read_node(node).metadata.labels or {}


def poll(predicate, timeout, interval=0.01):
    """(value, seconds) once predicate() is truthy; fails after `timeout` seconds."""
    t0 = time.monotonic()
    while True:
        value = predicate()
        if value:
            return value, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"not true after {timeout}s; last value {value!r}")
        time.sleep(interval)


def worker_log(kube, node):
    """The log of the nfd-worker pod on `node`."""
    from kubernetes import client

    core = client.CoreV1Api(kube)
    pod = next(p for p in core.list_namespaced_pod(NS, field_selector=f"spec.nodeName={node}").items
               if p.metadata.name.startswith("nfd-worker-"))
    return core.read_namespaced_pod_log(pod.metadata.name, NS)


def test_version(default_lab, kube):
    assert default_lab.scenario.nfd_version == str(CURRENT) == "v0.19.0"
    from kubernetes import client

    # v0.15+ masters keep version annotations off Nodes; the worker's NodeFeature carries it
    for node in NODES:
        ann = client.CoreV1Api(kube).read_node(node).metadata.annotations or {}
        assert "nfd.node.kubernetes.io/worker.version" not in ann
        assert "nfd.node.kubernetes.io/master.version" not in ann


def test_upstream_nfd_runs_in_its_pods_and_each_worker_publishes_its_nodes_features(default_lab):
    """Issue 22's acceptance on the newest release: `kubectl -n node-feature-discovery get pods -o wide` shows
    nfd-master, nfd-gc and one nfd-worker per node Running, and `kubectl get nodefeatures -A` one per node, written
    by that node's nfd-worker (v0.19's owner references: its pod and DaemonSet; its version annotation)."""
    env = lab_env(default_lab)
    rows = [line.split() for line in run(["kubectl", "-n", NS, "get", "pods", "-o", "wide", "--no-headers"],
                                         env).stdout.splitlines()]
    running = [(r[0], r[6]) for r in rows if r[2] == "Running" and r[1] == "1/1"]
    assert sorted(node for name, node in running if name.startswith("nfd-worker-")) == sorted(NODES)
    assert sum(name.startswith("nfd-master-") for name, _ in running) == 1
    assert sum(name.startswith("nfd-gc-") for name, _ in running) == 1
    listed = json.loads(run(["kubectl", "get", "nodefeatures", "-A", "-o", "json"], env).stdout)["items"]
    mine = {nf["metadata"]["name"]: nf for nf in listed if nf["metadata"]["namespace"] == NS}
    assert sorted(mine) == sorted(NODES)
    for node, nf in mine.items():
        assert nf["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == node
        assert {o["kind"] for o in nf["metadata"]["ownerReferences"]} == {"Pod", "DaemonSet"}
        assert nf["metadata"]["annotations"]["nfd.node.kubernetes.io/worker.version"] == "v0.19.0"
        assert "cpu.cpuid" in nf["spec"]["features"]["flags"]


def test_nfd_objects_as_its_manifests_create_them(default_lab):
    """`kubectl get deploy,ds -A -o yaml` shows nfd-master and nfd-worker as v0.19.0's kustomize deployment has
    them: registry.k8s.io image, no master args, hostPath features.d and no source.d (hooks removed in v0.17)."""
    env = lab_env(default_lab)
    docs = yaml.safe_load(run(["kubectl", "get", "deploy,ds", "-A", "-o", "yaml"], env).stdout)["items"]
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs if d["metadata"]["namespace"] == NS}
    master = by[("Deployment", "nfd-master")]["spec"]["template"]["spec"]["containers"][0]
    assert master["image"] == "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"
    assert master["command"] == ["nfd-master"] and "args" not in master
    ds = by[("DaemonSet", "nfd-worker")]
    vols = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    assert vols["features-d"]["hostPath"]["path"] == FEATURES_D
    cm = vols["nfd-worker-conf"]["configMap"]["name"]
    assert cm.startswith("nfd-worker-conf-")  # kustomize's configMapGenerator: the name with its content's hash
    assert "source-d" not in vols
    assert {"host-boot", "host-sys", "host-usr-lib", "host-lib", "host-os-release"} <= set(vols)
    conf = json.loads(run(["kubectl", "-n", NS, "get", "configmap", cm, "-o", "json"], env).stdout)
    assert yaml.safe_load(conf["data"]["nfd-worker.conf"])["core"]["sleepInterval"] == "2s"
    crds = run(["kubectl", "get", "crd", "-o", "name"], env).stdout.split()
    assert {f"customresourcedefinition.apiextensions.k8s.io/{r}.{GROUP}" for r in ("nodefeatures",
                                                                                   "nodefeaturerules")} <= set(crds)
    # the DaemonSet controller runs a worker pod on every node (the lab's overlay gives the worker the control
    # plane's tolerations); nfd-master's preferred node affinity puts it on the control plane (kube-scheduler's
    # NodeAffinity score), which the overlay lets it tolerate as NFD's Helm chart does
    assert by[("DaemonSet", "nfd-worker")]["status"]["desiredNumberScheduled"] == len(NODES)

    def pods():
        out = json.loads(run(["kubectl", "-n", NS, "get", "pods", "-o", "json"], env).stdout)["items"]
        return [(next(k for k in ("nfd-master", "nfd-gc", "nfd-worker") if p["metadata"]["name"].startswith(k)),
                 p["spec"].get("nodeName")) for p in out if p["spec"].get("nodeName")]
    placed, _ = poll(lambda: (lambda ps: ps if len(ps) == len(NODES) + 2 else None)(pods()), SETTLE, 0.2)
    assert ("nfd-master", "kube-controlplane01") in placed and ("nfd-gc", "kube-controlplane01") in placed
    assert sorted(n for k, n in placed if k == "nfd-worker") == sorted(NODES)


def test_avx512_label_only_on_skylake_and_icelake(default_lab, kube):
    with_avx512 = {n for n in NODES if labels_of(kube, n).get(f"{FNS}/cpu-cpuid.AVX512F") == "true"}
    assert with_avx512 == {"kube-worker02", "kube-worker03"}
    zen = labels_of(kube, "kube-worker04")
    assert zen[f"{FNS}/cpu-model.vendor_id"] == "AMD" and zen[f"{FNS}/cpu-model.family"] == "25"
    assert zen[f"{FNS}/cpu-cpuid.AVX2"] == "true"
    w3 = labels_of(kube, "kube-worker03")
    assert w3[f"{FNS}/pci-0302_10de.present"] == "true"  # the passed-through GPU
    assert w3[f"{FNS}/kernel-version.full"] == "6.8.0-57-generic"
    assert w3[f"{FNS}/system-os_release.VERSION_ID"] == "22.04"
    assert all(f"{FNS}/pci-0302_10de.present" not in labels_of(kube, n) for n in NODES if n != "kube-worker03")
    # the same selection through kubectl's label selector
    out = run(["kubectl", "get", "nodes", "-l", f"{FNS}/cpu-cpuid.AVX512F=true", "-o", "name"],
              lab_env(default_lab)).stdout
    assert sorted(out.split()) == ["node/kube-worker02", "node/kube-worker03"]


def test_nodefeature_objects(kube):
    from kubernetes import client

    api = client.CustomObjectsApi(kube)
    items = api.list_namespaced_custom_object(GROUP, VERSION, NS, "nodefeatures")["items"]
    assert sorted(i["metadata"]["name"] for i in items) == sorted(NODES)
    by = {i["metadata"]["name"]: i for i in items}
    for name, nf in by.items():
        assert nf["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == name
        assert nf["metadata"]["annotations"]["nfd.node.kubernetes.io/worker.version"] == "v0.19.0"
    w2 = by["kube-worker02"]["spec"]
    assert "AVX512F" in w2["features"]["flags"]["cpu.cpuid"]["elements"]
    assert {"vfio_pci", "vhost_net"} <= set(w2["features"]["flags"]["kernel.loadedmodule"]["elements"])
    assert w2["features"]["attributes"]["system.osrelease"]["elements"]["VERSION_ID"] == "22.04"
    assert w2["features"]["attributes"]["local.label"]["elements"]["storage.tier"] == "ssd"
    assert w2["features"]["attributes"]["local.feature"]["elements"]["inventory.serial"] == "LAB-0001"
    assert w2["labels"][f"{FNS}/cpu-cpuid.AVX512F"] == "true"
    assert "AVX512F" not in by["kube-worker04"]["spec"]["features"]["flags"]["cpu.cpuid"]["elements"]
    assert "vhost_net" not in by["kube-worker03"]["spec"]["features"]["flags"]["kernel.loadedmodule"]["elements"]


RULE = {
    "apiVersion": f"{GROUP}/{VERSION}",
    "kind": "NodeFeatureRule",
    "metadata": {"name": "lab-kernel-modules"},
    "spec": {"rules": [{
        "name": "vfio and vhost loaded",
        "labels": {"my.kernel.feature": "true"},
        "matchFeatures": [{"feature": "kernel.loadedmodule",
                           "matchExpressions": {"vfio_pci": {"op": "Exists"}, "vhost_net": {"op": "Exists"}}}],
    }]},
}
KEY = f"{FNS}/my.kernel.feature"


def test_rule_labels_nodes_within_a_second_and_delete_removes(kube):
    from kubernetes import client

    api = client.CustomObjectsApi(kube)
    t0 = time.monotonic()
    api.create_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", RULE)
    poll(lambda: labels_of(kube, "kube-worker02").get(KEY) == "true", SETTLE)
    added = time.monotonic() - t0
    try:
        assert all(KEY not in labels_of(kube, n) for n in NODES if n != "kube-worker02")
        ann = client.CoreV1Api(kube).read_node("kube-worker02").metadata.annotations
        assert "my.kernel.feature" in ann["nfd.node.kubernetes.io/feature-labels"].split(",")

        # edit: vfio_pci alone now suffices
        rule = api.get_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", "lab-kernel-modules")
        del rule["spec"]["rules"][0]["matchFeatures"][0]["matchExpressions"]["vhost_net"]
        t1 = time.monotonic()
        api.replace_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", "lab-kernel-modules", rule)
        poll(lambda: labels_of(kube, "kube-worker03").get(KEY) == "true", SETTLE)
        edited = time.monotonic() - t1
        assert {n for n in NODES if KEY in labels_of(kube, n)} == {"kube-worker02", "kube-worker03"}
    finally:
        t2 = time.monotonic()
        api.delete_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", "lab-kernel-modules")
    poll(lambda: all(KEY not in labels_of(kube, n) for n in ("kube-worker02", "kube-worker03")), SETTLE)
    removed = time.monotonic() - t2
    print(f"\nrule latency through the API: create {added * 1000:.0f} ms, edit {edited * 1000:.0f} ms, "
          f"delete {removed * 1000:.0f} ms")
    assert "my.kernel.feature" not in client.CoreV1Api(kube).read_node("kube-worker02").metadata.annotations[
        "nfd.node.kubernetes.io/feature-labels"]


def test_feature_file_in_one_nodes_tree_labels_only_that_node(default_lab, kube):
    """A file in kube-worker01's features.d (its GuestRoot, what node access writes) labels kube-worker01 within the
    worker's interval and no other node; removing it removes the label (stale NFD labels are pruned)."""
    path = default_lab.guest_roots["kube-worker01"].path(FEATURES_D + "rack.feature")
    path.write_text("rack=r42\n")
    try:
        _, took = poll(lambda: labels_of(kube, "kube-worker01").get(f"{FNS}/rack") == "r42", SETTLE, 0.05)
        print(f"\nfeature file -> label on kube-worker01: {took:.2f}s (sleepInterval 2s)")
        assert all(f"{FNS}/rack" not in labels_of(kube, n) for n in NODES if n != "kube-worker01")
        assert labels_of(kube, "kube-worker01")[f"{FNS}/storage.tier"] == "ssd"  # the inventory file still labels
    finally:
        path.unlink()
    poll(lambda: f"{FNS}/rack" not in labels_of(kube, "kube-worker01"), SETTLE, 0.05)


def test_garbage_feature_file_is_dropped_with_a_warning(default_lab, kube):
    garbage = "good.key=yes\nbad key with spaces=1\n\u00ff\u0000=\ntoo.long=" + "x" * 100 + "\n"
    path = default_lab.guest_roots["kube-worker01"].path(FEATURES_D + "zz-garbage")
    path.write_text(garbage)
    try:
        poll(lambda: labels_of(kube, "kube-worker01").get(f"{FNS}/good.key") == "yes", SETTLE, 0.05)
        # nfd-worker logs what it drops (pkg/nfd-worker/nfd-worker.go: "ignoring label with invalid name|value")
        lines = worker_log(kube, "kube-worker01").splitlines()
        assert any("ignoring label with invalid name" in line and "bad key with spaces" in line for line in lines)
        assert any("ignoring label with invalid value" in line and "too.long" in line for line in lines)
        assert "bad key with spaces" not in " ".join(labels_of(kube, "kube-worker01"))
        assert labels_of(kube, "kube-worker01")[f"{FNS}/storage.tier"] == "ssd"  # the good file still labels
    finally:
        path.unlink()
    poll(lambda: f"{FNS}/good.key" not in labels_of(kube, "kube-worker01"), SETTLE, 0.05)


def test_leftover_hook_is_not_run_by_v019(default_lab, kube):
    """The workers still have field report 1's hook in source.d, but v0.19's DaemonSet does not mount source.d."""
    assert default_lab.guest_roots["kube-worker01"].path(
        "/etc/kubernetes/node-feature-discovery/source.d/my-script").exists()
    assert not any(k.startswith(f"{FNS}/my-script") or "pid_max" in k for k in labels_of(kube, "kube-worker01"))
    assert "hook" not in worker_log(kube, "kube-worker01")


def test_third_party_nodefeature_in_another_namespace_labels(kube):
    """v0.14+ masters merge NodeFeatures from any namespace targeting the node (nfd.node.kubernetes.io/node-name);
    docs/usage/customization-guide.md "NodeFeature custom resource"."""
    from kubernetes import client

    core, api = client.CoreV1Api(kube), client.CustomObjectsApi(kube)
    core.create_namespace({"metadata": {"name": "vendor-agent"}})
    nf = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeFeature",
          "metadata": {"name": "vendor-features-worker03", "namespace": "vendor-agent",
                       "labels": {"nfd.node.kubernetes.io/node-name": "kube-worker03"}},
          "spec": {"labels": {"vendor.example.com/accelerator": "a100"}}}
    api.create_namespaced_custom_object(GROUP, VERSION, "vendor-agent", "nodefeatures", nf)
    try:
        poll(lambda: labels_of(kube, "kube-worker03").get("vendor.example.com/accelerator") == "a100", SETTLE)
        assert all("vendor.example.com/accelerator" not in labels_of(kube, n) for n in NODES if n != "kube-worker03")
    finally:
        api.delete_namespaced_custom_object(GROUP, VERSION, "vendor-agent", "nodefeatures", "vendor-features-worker03")
    poll(lambda: "vendor.example.com/accelerator" not in labels_of(kube, "kube-worker03"), SETTLE)


def test_master_args_patch_changes_labels(default_lab, kube):
    """`-deny-label-ns=example.com` on nfd-master (cmd/nfd-master/main.go) drops the inventory's example.com/rack;
    taking the flag away brings it back."""
    env = lab_env(default_lab)
    assert all(labels_of(kube, n).get("example.com/rack") == "r1" for n in WORKERS)
    add = [{"op": "add", "path": "/spec/template/spec/containers/0/args", "value": ["-deny-label-ns=example.com"]}]
    run(["kubectl", "-n", NS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(add)], env)
    try:
        poll(lambda: all("example.com/rack" not in labels_of(kube, n) for n in WORKERS), SETTLE)
        assert labels_of(kube, "kube-worker01")[f"{FNS}/storage.tier"] == "ssd"  # other namespaces unaffected
    finally:
        remove = [{"op": "remove", "path": "/spec/template/spec/containers/0/args"}]
        run(["kubectl", "-n", NS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(remove)], env)
    poll(lambda: all(labels_of(kube, n).get("example.com/rack") == "r1" for n in WORKERS), SETTLE)
