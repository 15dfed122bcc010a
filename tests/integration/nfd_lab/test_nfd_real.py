"""Upstream NFD v0.19.0 in the `default` lab (its release's manifests, its pods run by the lab's node agent) on
upstream's control plane: taints and extended resources from NodeFeatureRules, nfd-worker.conf edits read once the
kubelet projected them, nfd-worker only where its DaemonSet runs, each changed as an admin would with kubectl and
put back afterwards; a deleted node's NodeFeature collected.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from labtools import lab_env, run, wait_for

from console.lab import scenarios
from console.lab.store import NotFound
from console.lab.world import Lab

pytestmark = pytest.mark.lab

NS = "node-feature-discovery"
NF_RESOURCE = "nodefeatures.nfd.k8s-sigs.io"
FNS = "feature.node.kubernetes.io"
SETTLE = 15.0  # seconds: rules relabel at once, worker config at the worker's next pass (sleepInterval 2s)

GPU_RULE = {
    "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
    "metadata": {"name": "gpu"},
    "spec": {"rules": [{
        "name": "nvidia",
        "labels": {"gpu.present": "true"},
        "extendedResources": {"gpu.slots": "@pci.device.vendor"},  # not an attribute: dropped
        "taints": [{"key": "example.com/gpu", "value": "true", "effect": "NoSchedule"}],
        "matchFeatures": [{"feature": "pci.device", "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}}}],
    }, {
        "name": "slots",
        "extendedResources": {"vfio.slots": "2"},
        "matchFeatures": [{"feature": "kernel.loadedmodule", "matchExpressions": {"vfio_pci": {"op": "Exists"}}}],
    }]},
}


def node(lab: Lab, name: str) -> dict[str, Any]:
    return dict(lab.store.fetch("nodes", None, name))


def kubectl(lab: Lab, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["kubectl", *args], env=lab_env(lab), input=stdin, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def test_taints_and_extended_resources_follow_rules(default_lab: Lab) -> None:
    """nfd-master -enable-taints: a rule's taints on the nodes it matches, its extendedResources in their capacity
    (an `@feature` value that is not an attribute is dropped) and, once the kubelet posts its status, allocatable
    (pkg/kubelet/nodestatus/setters.go MachineInfo); gone, with NFD's annotations, when the rule goes, and a taint
    someone else set stays."""
    lab = default_lab
    add = [{"op": "add", "path": "/spec/template/spec/containers/0/args", "value": ["-enable-taints"]}]
    kubectl(lab, "-n", NS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(add))
    try:
        kubectl(lab, "apply", "-f", "-", stdin=json.dumps(GPU_RULE))
        # the patched Deployment rolls out a new nfd-master pod; the old one labels until it goes, without taints
        wait_for(lambda: node(lab, "kube-worker03")["metadata"]["labels"].get(f"{FNS}/gpu.present") == "true"
                 and f"{FNS}/vfio.slots" in node(lab, "kube-worker03")["status"]["allocatable"]
                 and node(lab, "kube-worker03")["spec"].get("taints"), 60,
                 what="kube-worker03 labelled, tainted and given vfio.slots")
        w3 = node(lab, "kube-worker03")
        assert {"key": "example.com/gpu", "value": "true", "effect": "NoSchedule"} in w3["spec"]["taints"]
        assert w3["metadata"]["annotations"]["nfd.node.kubernetes.io/taints"] == "example.com/gpu=true:NoSchedule"
        assert w3["status"]["capacity"][f"{FNS}/vfio.slots"] == "2"
        assert w3["status"]["allocatable"][f"{FNS}/vfio.slots"] == "2"
        assert w3["metadata"]["annotations"]["nfd.node.kubernetes.io/extended-resources"] == "vfio.slots"
        wait_for(lambda: f"{FNS}/vfio.slots" in node(lab, "kube-worker02")["status"]["capacity"], SETTLE,
                 what="kube-worker02's vfio.slots")
        assert not node(lab, "kube-worker02")["spec"].get("taints")

        # a taint someone else set is kept when NFD's goes away
        kubectl(lab, "taint", "node", "kube-worker03", "other:NoSchedule")
        kubectl(lab, "delete", "nodefeaturerule", "gpu")
        # nfd-master patches the taints and its annotation of them apart: wait for both
        wait_for(lambda: f"{FNS}/gpu.present" not in node(lab, "kube-worker03")["metadata"]["labels"]
                 and f"{FNS}/vfio.slots" not in node(lab, "kube-worker03")["status"]["allocatable"]
                 and all(t["key"] != "example.com/gpu" for t in node(lab, "kube-worker03")["spec"]["taints"])
                 and not {f"nfd.node.kubernetes.io/{k}" for k in ("taints", "extended-resources")}
                 & set(node(lab, "kube-worker03")["metadata"]["annotations"]),
                 SETTLE, what="the rule's label, resource, taint and NFD's annotations of them gone")
        w3 = node(lab, "kube-worker03")
        assert [{k: t[k] for k in ("key", "effect")} for t in w3["spec"]["taints"]] == [
            {"key": "other", "effect": "NoSchedule"}]
        for key in ("taints", "extended-resources"):
            assert f"nfd.node.kubernetes.io/{key}" not in w3["metadata"]["annotations"]
    finally:
        run(["kubectl", "delete", "nodefeaturerule", "gpu", "--ignore-not-found"], lab_env(lab))
        run(["kubectl", "taint", "node", "kube-worker03", "other:NoSchedule-"], lab_env(lab), check=False)
        remove = [{"op": "remove", "path": "/spec/template/spec/containers/0/args"}]
        kubectl(lab, "-n", NS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(remove))


def test_worker_config_edit_takes_effect_when_the_worker_pod_restarts(default_lab: Lab) -> None:
    """nfd-worker v0.17+ reads nfd-worker.conf at start only ("dynamic run-time reconfiguration was dropped in NFD
    v0.17. Re-configuration is handled by pod restarts", docs/usage/nfd-worker.md): after an edit of the ConfigMap
    the DaemonSet mounts, the node's worker pod deleted and made again by the DaemonSet controller reads it.
    core.labelWhiteList (matched against the name without the namespace) keeps only the labels it matches;
    core.labelSources only those sources' labels; the lab's config back brings the labels back."""
    lab = default_lab
    name = "kube-worker02"

    def labels() -> dict[str, str]:
        return dict(node(lab, name)["metadata"]["labels"])

    # the ConfigMap the DaemonSet mounts (kustomize's configMapGenerator hashes its name)
    ds = json.loads(kubectl(lab, "-n", NS, "get", "daemonset", "nfd-worker", "-o", "json"))
    cm = next(v["configMap"]["name"] for v in ds["spec"]["template"]["spec"]["volumes"] if "configMap" in v)

    def conf(text: str) -> None:
        patch = {"data": {"nfd-worker.conf": text}}
        kubectl(lab, "-n", NS, "patch", "configmap", cm, "--type=merge", "-p", json.dumps(patch))
        old = _worker_pod(lab, name)
        kubectl(lab, "-n", NS, "delete", "pod", old, "--grace-period=1", "--wait=false")
        wait_for(lambda: _worker_pod(lab, name) not in ("", old), 60, what=f"a new nfd-worker pod on {name}")

    def back() -> None:
        conf(scenarios.LAB_WORKER_CONF)
        wait_for(lambda: labels().get(f"{FNS}/storage.tier") == "ssd" and f"{FNS}/kernel-version.full" in labels(),
                 SETTLE, what="the labels back")

    assert labels()[f"{FNS}/storage.tier"] == "ssd"
    try:
        conf("core:\n  sleepInterval: 2s\n  labelWhiteList: '^cpu-'\n")
        wait_for(lambda: f"{FNS}/storage.tier" not in labels(), SETTLE, what="storage.tier dropped")
        assert labels()[f"{FNS}/cpu-cpuid.AVX512F"] == "true" and f"{FNS}/kernel-version.full" not in labels()
        back()
        # core.labelSources: only the cpu and local sources label
        conf("core:\n  sleepInterval: 2s\n  labelSources: [cpu, local]\n")
        wait_for(lambda: f"{FNS}/kernel-version.full" not in labels(), SETTLE, what="kernel labels dropped")
        now = labels()
        assert now[f"{FNS}/cpu-cpuid.AVX512F"] == "true" and now[f"{FNS}/storage.tier"] == "ssd"
        assert not any(k.startswith((f"{FNS}/pci-", f"{FNS}/system-")) for k in now)
    finally:
        back()


def test_a_node_the_daemonset_does_not_tolerate_runs_no_worker(default_lab: Lab) -> None:
    """Without the DaemonSet's tolerations the control plane no longer should run nfd-worker: the DaemonSet
    controller's rolling update replaces the old pods, each stopped by SIGTERM, and makes no new one where the taint
    is not tolerated (NodeShouldRunDaemonPod); with the tolerations back it makes one there again."""
    lab = default_lab
    assert "kube-controlplane01" in _worker_nodes(lab)
    ds = json.loads(kubectl(lab, "-n", NS, "get", "daemonset", "nfd-worker", "-o", "json"))
    tolerations = ds["spec"]["template"]["spec"]["tolerations"]

    def status() -> dict[str, Any]:
        return dict(lab.store.fetch("daemonsets.apps", NS, "nfd-worker").get("status") or {})

    patch = [{"op": "replace", "path": "/spec/template/spec/tolerations", "value": []}]
    kubectl(lab, "-n", NS, "patch", "daemonset", "nfd-worker", "--type=json", "-p", json.dumps(patch))
    try:
        # the rollout's end: a new pod on each worker, none on the control plane
        workers = {"kube-worker01", "kube-worker02", "kube-worker03", "kube-worker04"}
        wait_for(lambda: _worker_nodes(lab) == workers and status().get("numberMisscheduled") == 0
                 and status().get("desiredNumberScheduled") == status().get("updatedNumberScheduled") == 4, 90,
                 what="the rollout done, no worker on the control plane")
    finally:
        patch = [{"op": "replace", "path": "/spec/template/spec/tolerations", "value": tolerations}]
        kubectl(lab, "-n", NS, "patch", "daemonset", "nfd-worker", "--type=json", "-p", json.dumps(patch))
    wait_for(lambda: "kube-controlplane01" in _worker_nodes(lab), 60, what="the worker back on the control plane")


def test_deleted_node_is_garbage_collected_and_relabelled_when_it_returns(default_lab: Lab) -> None:
    """nfd-gc (v0.14+) deletes a deleted node's NodeFeature; the node's kubelet registers it again (its next status
    post finds no Node object) and nfd-worker publishes a new NodeFeature at its next pass. The master labels the
    node from it, unless the NodeFeature came before the Node: then it skips it ("node not found, skip update",
    pkg/nfd-master/updater-pool.go) and the unchanged NodeFeature is not written again, so the node waits for the
    master's next full update (its resync, an hour by default, or its restart, which an admin does)."""
    lab = default_lab
    name = "kube-worker04"
    vendor = node(lab, name)["metadata"]["labels"][f"{FNS}/cpu-model.vendor_id"]
    assert vendor == "AMD"  # Zen 3
    gone: list[str] = []

    def on_nodefeature(ev: Any) -> None:
        meta = ev.object["metadata"]
        if ev.type == "DELETED" and meta.get("namespace") == NS and meta["name"] == name:
            gone.append(meta["name"])

    unsubscribe = lab.store.subscribe(NF_RESOURCE, on_nodefeature)
    try:
        kubectl(lab, "delete", "node", name)
        wait_for(lambda: gone, SETTLE, what=f"{name}'s NodeFeature deleted")
    finally:
        unsubscribe()
    wait_for(lambda: _labels(lab, name) and _nodefeature(lab, name), 60, what=f"{name} and its NodeFeature back")
    if _labels(lab, name).get(f"{FNS}/cpu-model.vendor_id") != vendor:
        kubectl(lab, "-n", NS, "rollout", "restart", "deployment", "nfd-master")
    wait_for(lambda: _labels(lab, name).get(f"{FNS}/cpu-model.vendor_id") == vendor, 60,
             what=f"{name} labelled again")
    assert lab.store.fetch(NF_RESOURCE, NS, name)["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == name


def _nodefeature(lab: Lab, name: str) -> bool:
    try:
        lab.store.fetch(NF_RESOURCE, NS, name)
    except NotFound:
        return False
    return True


def _worker_pod(lab: Lab, node_name: str) -> str:
    """The name of the running nfd-worker pod on the node, "" if none."""
    pods, _ = lab.store.list("pods", NS)
    return next((p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == node_name
                 and (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
                 and p["metadata"]["name"].startswith("nfd-worker-")), "")


def _worker_nodes(lab: Lab) -> set[str]:
    """The nodes with a running nfd-worker pod."""
    pods, _ = lab.store.list("pods", NS)
    return {p["spec"].get("nodeName") for p in pods if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp") and p["metadata"]["name"].startswith("nfd-worker-")}


def _labels(lab: Lab, name: str) -> dict[str, str]:
    try:
        return dict(node(lab, name)["metadata"].get("labels") or {})
    except NotFound:
        return {}
