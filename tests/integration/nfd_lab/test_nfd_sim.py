"""The lab's NFD (console/lab/nfd_sim.py) in the `default` lab on upstream's control plane: taints and extended
resources from NodeFeatureRules, nfd-worker.conf edits read once the kubelet projected them, nfd-worker only
where its DaemonSet runs, each changed as an admin would with kubectl and put back afterwards; a deleted node's
NodeFeature collected.
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
    (an `@feature` value that is not an attribute is dropped); kept against a status post without them; gone, with
    NFD's annotations, when the rule goes, and a taint someone else set stays."""
    lab = default_lab
    add = [{"op": "add", "path": "/spec/template/spec/containers/0/args", "value": ["-enable-taints"]}]
    kubectl(lab, "-n", NS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(add))
    try:
        kubectl(lab, "apply", "-f", "-", stdin=json.dumps(GPU_RULE))
        wait_for(lambda: node(lab, "kube-worker03")["metadata"]["labels"].get(f"{FNS}/gpu.present") == "true"
                 and f"{FNS}/vfio.slots" in node(lab, "kube-worker03")["status"]["capacity"], SETTLE,
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

        # a status post that rewrites capacity without the extended resource: the master puts it back
        def without_er(n: dict[str, Any]) -> None:
            for key in ("capacity", "allocatable"):
                n["status"][key] = {k: v for k, v in n["status"][key].items() if k != f"{FNS}/vfio.slots"}

        lab.store.mutate("nodes", None, "kube-worker03", without_er)
        wait_for(lambda: node(lab, "kube-worker03")["status"]["capacity"].get(f"{FNS}/vfio.slots") == "2", SETTLE,
                 what="vfio.slots back in kube-worker03's capacity")

        # a taint someone else set is kept when NFD's goes away
        kubectl(lab, "taint", "node", "kube-worker03", "other:NoSchedule")
        kubectl(lab, "delete", "nodefeaturerule", "gpu")
        wait_for(lambda: f"{FNS}/gpu.present" not in node(lab, "kube-worker03")["metadata"]["labels"]
                 and f"{FNS}/vfio.slots" not in node(lab, "kube-worker03")["status"]["capacity"], SETTLE,
                 what="the rule's label and resource gone")
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


def test_worker_config_edit_is_read_after_projection(default_lab: Lab) -> None:
    """nfd-worker.conf's core.labelWhiteList (matched against the name without the namespace) applies once the
    kubelet projected the ConfigMap; core.labelSources keeps only those sources' labels; the lab's config back
    brings the labels back."""
    lab = default_lab

    def labels() -> dict[str, str]:
        return dict(node(lab, "kube-worker02")["metadata"]["labels"])

    def conf(text: str) -> None:
        patch = {"data": {"nfd-worker.conf": text}}
        kubectl(lab, "-n", NS, "patch", "configmap", "nfd-worker-conf", "--type=merge", "-p", json.dumps(patch))

    def back() -> None:
        conf(scenarios.LAB_WORKER_CONF)
        wait_for(lambda: labels().get(f"{FNS}/storage.tier") == "ssd" and f"{FNS}/kernel-version.full" in labels(),
                 SETTLE, what="the labels back")

    assert labels()[f"{FNS}/storage.tier"] == "ssd"
    try:
        conf("core:\n  sleepInterval: 2s\n  labelWhiteList: '^cpu-'\n")
        wait_for(lambda: f"{FNS}/storage.tier" not in labels(), SETTLE, what="storage.tier dropped")
        assert labels()[f"{FNS}/cpu-cpuid.AVX512F"] == "true" and f"{FNS}/kernel-version.full" not in labels()
        assert lab.nfd.running.worker.label_whitelist == "^cpu-"
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
    """Without the DaemonSet's tolerations the control plane's taint keeps nfd-worker off it (the DaemonSet
    controller's NodeShouldRunDaemonPod); with them back it runs there again."""
    lab = default_lab
    assert "kube-controlplane01" in lab.nfd._workers
    ds = json.loads(kubectl(lab, "-n", NS, "get", "daemonset", "nfd-worker", "-o", "json"))
    tolerations = ds["spec"]["template"]["spec"]["tolerations"]
    patch = [{"op": "replace", "path": "/spec/template/spec/tolerations", "value": []}]
    kubectl(lab, "-n", NS, "patch", "daemonset", "nfd-worker", "--type=json", "-p", json.dumps(patch))
    try:
        wait_for(lambda: "kube-controlplane01" not in lab.nfd._workers, SETTLE, what="no worker on the control plane")
        assert "kube-worker01" in lab.nfd._workers
    finally:
        patch = [{"op": "replace", "path": "/spec/template/spec/tolerations", "value": tolerations}]
        kubectl(lab, "-n", NS, "patch", "daemonset", "nfd-worker", "--type=json", "-p", json.dumps(patch))
    wait_for(lambda: "kube-controlplane01" in lab.nfd._workers, SETTLE, what="the worker back on the control plane")


def test_deleted_node_is_garbage_collected_and_relabelled_when_it_returns(default_lab: Lab) -> None:
    """nfd-gc (v0.14+) deletes a deleted node's NodeFeature; the node's kubelet registers it again (its next status
    post finds no Node object), and nfd-worker and nfd-master label it again."""
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
    wait_for(lambda: _labels(lab, name).get(f"{FNS}/cpu-model.vendor_id") == vendor, 60,
             what=f"{name} registered and labelled again")
    assert lab.store.fetch(NF_RESOURCE, NS, name)["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == name


def _labels(lab: Lab, name: str) -> dict[str, str]:
    try:
        return dict(node(lab, name)["metadata"].get("labels") or {})
    except NotFound:
        return {}
