"""NfdSim on a bare lab Store (no servers, no VMs): taints, extended resources, hooks, config edits, gc, scale.

The store holds what NFD's manifests create (console/lab/nfd_deploy.py); each node's tree is a GuestRoot.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from console.lab import scenarios, seed
from console.lab.guestroot import GuestRoot
from console.lab.nfd_sim import NF_RESOURCE, NFR_RESOURCE, NfdSim
from console.lab.store import NotFound, Store

NS = "node-feature-discovery"
FNS = "feature.node.kubernetes.io"
FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"
SOURCE_D = "/etc/kubernetes/node-feature-discovery/source.d"


def make_store(sc: scenarios.Scenario) -> Store:
    st = Store()
    for ns in sc.namespaces:
        st.create("namespaces", seed.namespace(ns))
    for r, o in seed.nfd_objects(sc):
        st.create(r, o)
    for n in sc.nodes:
        st.create("nodes", seed.node_object(n, None))
    return st


def guest_roots(sc: scenarios.Scenario, root: Path) -> dict[str, GuestRoot]:
    out = {}
    for n in sc.nodes:
        out[n.name] = GuestRoot(root / n.name)
        seed.write_guest_files(n, out[n.name])
    return out


def master_args(st: Store, *args: str) -> None:
    def edit(d):
        d["spec"]["template"]["spec"]["containers"][0]["args"] = list(args)
    st.mutate("deployments.apps", NS, "nfd-master", edit)


@pytest.fixture
def world(tmp_path: Path):
    sc = scenarios.get("default")
    st = make_store(sc)
    master_args(st, "-enable-taints")
    sim = NfdSim(st, sc, tmp_path / "nfd", guest_roots=guest_roots(sc, tmp_path / "guests"), debounce=0.02)
    sim.start()
    yield st, sim
    sim.stop()


def meta(st: Store, name: str) -> dict:
    return st.get("nodes", None, name)["metadata"]


def settle(sim: NfdSim) -> None:
    assert sim.wait_idle(5.0)


GPU_RULE = {
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


def test_taints_and_extended_resources_follow_rules(world):
    st, sim = world
    st.create(NFR_RESOURCE, GPU_RULE)
    settle(sim)
    w3 = st.get("nodes", None, "kube-worker03")
    assert w3["metadata"]["labels"][f"{FNS}/gpu.present"] == "true"
    assert {"key": "example.com/gpu", "value": "true", "effect": "NoSchedule"} in w3["spec"]["taints"]
    assert w3["metadata"]["annotations"]["nfd.node.kubernetes.io/taints"] == "example.com/gpu=true:NoSchedule"
    assert w3["status"]["capacity"][f"{FNS}/vfio.slots"] == "2"
    assert w3["status"]["allocatable"][f"{FNS}/vfio.slots"] == "2"
    assert w3["metadata"]["annotations"]["nfd.node.kubernetes.io/extended-resources"] == "vfio.slots"
    assert f"{FNS}/vfio.slots" in st.get("nodes", None, "kube-worker02")["status"]["capacity"]
    assert "taints" not in st.get("nodes", None, "kube-worker02")["spec"]

    # a kubelet status post rewrites capacity without the ER: the master puts it back
    def kubelet_post(n):
        n["status"]["capacity"] = {"cpu": "8"}
        n["status"]["allocatable"] = {"cpu": "8"}
    st.mutate("nodes", None, "kube-worker03", kubelet_post)
    settle(sim)
    assert st.get("nodes", None, "kube-worker03")["status"]["capacity"][f"{FNS}/vfio.slots"] == "2"

    # a taint someone else set is kept when NFD's goes away
    st.mutate("nodes", None, "kube-worker03",
              lambda n: n["spec"]["taints"].append({"key": "other", "effect": "NoSchedule"}))
    st.delete(NFR_RESOURCE, None, "gpu")
    settle(sim)
    w3 = st.get("nodes", None, "kube-worker03")
    assert f"{FNS}/gpu.present" not in w3["metadata"]["labels"]
    assert w3["spec"]["taints"] == [{"key": "other", "effect": "NoSchedule"}]
    assert f"{FNS}/vfio.slots" not in w3["status"]["capacity"]
    for key in ("taints", "extended-resources"):
        assert f"nfd.node.kubernetes.io/{key}" not in w3["metadata"]["annotations"]


def test_invalid_rule_is_reported_and_others_still_apply(world):
    st, sim = world
    st.create(NFR_RESOURCE, {"metadata": {"name": "a-bad"}, "spec": {"rules": "not a list"}})
    st.create(NFR_RESOURCE, {"metadata": {"name": "b-good"}, "spec": {"rules": [
        {"name": "all", "labels": {"everyone": "yes"}}]}})
    settle(sim)
    assert all(meta(st, n.name)["labels"].get(f"{FNS}/everyone") == "yes" for n in sim.scenario.nodes)
    evs, _ = st.list("events", predicate=lambda e: e["reason"] == "InvalidRule")
    assert [e["involvedObject"]["name"] for e in evs] == ["a-bad"]
    assert "spec.rules must be a list" in evs[0]["message"]


def wait_for(predicate, timeout=10.0):
    t0 = time.monotonic()
    while not predicate():
        assert time.monotonic() - t0 < timeout, "not true in time"
        time.sleep(0.02)


def test_hooks_run_per_node_when_source_d_changes(tmp_path):
    """v0.8.2 runs source.d on every node the DaemonSet runs on; unchanged hooks are not re-run per event."""
    sc = scenarios.get("seed-resize")
    st = make_store(sc)
    roots = guest_roots(sc, tmp_path / "guests")
    sim = NfdSim(st, sc, tmp_path / "nfd", guest_roots=roots, debounce=0.02)
    sim.start()
    try:
        assert sim.stats["hook_runs"] == 3  # the cpuinfo hook on each of the three nodes
        assert not sim.running.api and st.list(NF_RESOURCE)[0] == []  # v0.8.2: gRPC, no NodeFeature objects
        st.mutate("nodes", None, "kube-worker01", lambda n: n["metadata"]["labels"].update(x="1"))
        st.create("configmaps", {"metadata": {"name": "other", "namespace": NS}, "data": {}})
        publishes = sim.stats["publishes"]
        # the DaemonSet controller's status writes are not a new DaemonSet: no restart, no re-run
        st.mutate("daemonsets.apps", NS, "nfd-worker", lambda d: d.setdefault("status", {}).update(numberReady=3))
        settle(sim)
        assert sim.stats["hook_runs"] == 3 and sim.stats["publishes"] == publishes
        hook = roots["kube-worker02"].path(SOURCE_D) / "whoami"
        hook.write_text('#!/bin/sh\necho "/lab.node=$NODE_NAME"\n')
        hook.chmod(0o755)
        wait_for(lambda: meta(st, "kube-worker02")["labels"].get(f"{FNS}/lab.node") == "kube-worker02")
        assert f"{FNS}/lab.node" not in meta(st, "kube-worker01")["labels"]  # another node's tree
        hook.unlink()
        wait_for(lambda: f"{FNS}/lab.node" not in meta(st, "kube-worker02")["labels"])
    finally:
        sim.stop()
    assert not (tmp_path / "nfd").exists()


def test_hooks_from_a_configmap_volume_need_an_executable_default_mode(tmp_path):
    """The article's ConfigMap alternative for source.d: the kubelet projects keys as 0644 unless the volume's
    defaultMode says otherwise (core/v1 ConfigMapVolumeSource), and nfd-worker cannot run a 0644 hook."""
    sc = scenarios.get("seed-resize")
    st = make_store(sc)
    st.create("configmaps", {"metadata": {"name": "nfd-hooks", "namespace": NS},
                             "data": {"cm-hook": "#!/bin/sh\necho /from.configmap=yes\n"}})

    def mount(mode):
        def edit(d):
            vols = d["spec"]["template"]["spec"]["volumes"]
            src = {"name": "nfd-hooks", **({"defaultMode": mode} if mode is not None else {})}
            vols[:] = [v if v["name"] != "source-d" else {"name": "source-d", "configMap": src} for v in vols]
        st.mutate("daemonsets.apps", NS, "nfd-worker", edit)

    mount(None)
    sim = NfdSim(st, sc, tmp_path / "nfd", guest_roots=guest_roots(sc, tmp_path / "guests"), debounce=0.02)
    sim.start()
    try:
        assert sim.running.mounts["hook"].config_map == "nfd-hooks"
        assert f"{FNS}/from.configmap" not in meta(st, "kube-worker01")["labels"]
        assert f"{FNS}/cpuinfo-family" not in meta(st, "kube-worker01")["labels"]  # the tree's source.d: unmounted
        mount(0o755)
        wait_for(lambda: meta(st, "kube-worker01")["labels"].get(f"{FNS}/from.configmap") == "yes")
        assert all(meta(st, n.name)["labels"].get(f"{FNS}/from.configmap") == "yes" for n in sc.nodes)
    finally:
        sim.stop()


def test_worker_config_edit_is_read_after_projection(world):
    """nfd-worker.conf's core.labelWhiteList (matched against the name without the namespace) applies once the
    kubelet projected the ConfigMap; removing it brings the labels back."""
    st, sim = world
    assert meta(st, "kube-worker02")["labels"][f"{FNS}/storage.tier"] == "ssd"
    conf = "core:\n  sleepInterval: 2s\n  labelWhiteList: '^cpu-'\n"
    st.mutate("configmaps", NS, "nfd-worker-conf", lambda c: c["data"].update({"nfd-worker.conf": conf}))
    wait_for(lambda: f"{FNS}/storage.tier" not in meta(st, "kube-worker02")["labels"])
    labels = meta(st, "kube-worker02")["labels"]
    assert labels[f"{FNS}/cpu-cpuid.AVX512F"] == "true" and f"{FNS}/kernel-version.full" not in labels
    assert sim.running.worker.label_whitelist == "^cpu-"

    def back() -> None:
        st.mutate("configmaps", NS, "nfd-worker-conf",
                  lambda c: c["data"].update({"nfd-worker.conf": scenarios.LAB_WORKER_CONF}))
        wait_for(lambda: meta(st, "kube-worker02")["labels"].get(f"{FNS}/storage.tier") == "ssd"
                 and f"{FNS}/kernel-version.full" in meta(st, "kube-worker02")["labels"])
    back()
    # core.labelSources: only the cpu and local sources label
    conf = "core:\n  sleepInterval: 2s\n  labelSources: [cpu, local]\n"
    st.mutate("configmaps", NS, "nfd-worker-conf", lambda c: c["data"].update({"nfd-worker.conf": conf}))
    wait_for(lambda: f"{FNS}/kernel-version.full" not in meta(st, "kube-worker02")["labels"])
    labels = meta(st, "kube-worker02")["labels"]
    assert labels[f"{FNS}/cpu-cpuid.AVX512F"] == "true" and labels[f"{FNS}/storage.tier"] == "ssd"
    assert not any(k.startswith((f"{FNS}/pci-", f"{FNS}/system-")) for k in labels)
    back()


def test_a_node_the_daemonset_does_not_tolerate_runs_no_worker(world):
    st, sim = world
    assert "kube-controlplane01" in sim._workers

    def no_tolerations(d):
        d["spec"]["template"]["spec"]["tolerations"] = []
    st.mutate("daemonsets.apps", NS, "nfd-worker", no_tolerations)
    settle(sim)
    assert "kube-controlplane01" not in sim._workers and "kube-worker01" in sim._workers


def test_deleted_node_is_garbage_collected_and_relabelled_when_it_returns(world):
    st, sim = world
    node = st.get("nodes", None, "kube-worker04")
    st.delete("nodes", None, "kube-worker04")
    settle(sim)
    with pytest.raises(NotFound):
        st.get(NF_RESOURCE, NS, "kube-worker04")  # nfd-gc (v0.14+)
    fresh = {"metadata": {"name": "kube-worker04", "labels": {}}, "spec": {}, "status": {}}
    st.create("nodes", fresh)
    settle(sim)
    assert st.get(NF_RESOURCE, NS, "kube-worker04")
    assert meta(st, "kube-worker04")["labels"][f"{FNS}/cpu-model.vendor_id"] == "AMD"
    assert node["metadata"]["labels"][f"{FNS}/cpu-model.vendor_id"] == "AMD"


def test_third_party_nodefeature_merges_in(world):
    st, sim = world
    st.create(NF_RESOURCE, {"metadata": {"name": "vendor-gpu-worker01", "namespace": "default",
                                         "labels": {"nfd.node.kubernetes.io/node-name": "kube-worker01"}},
                            "spec": {"labels": {"vendor.example.com/accelerator": "fpga"}}})
    settle(sim)
    assert meta(st, "kube-worker01")["labels"]["vendor.example.com/accelerator"] == "fpga"
    st.delete(NF_RESOURCE, "default", "vendor-gpu-worker01")
    settle(sim)
    assert "vendor.example.com/accelerator" not in meta(st, "kube-worker01")["labels"]


def test_scale_world_skips_synthetic_nodes_quickly(tmp_path):
    sc = scenarios.get("scale", nodes=5000, pods_per_node=0)
    st = Store()
    for ns in sc.namespaces:
        st.create("namespaces", seed.namespace(ns))
    for r, o in seed.nfd_objects(sc):
        st.create(r, o)
    nodes, _ = seed.scale_objects(sc)
    st.bulk_load("nodes", nodes)
    t0 = time.monotonic()
    sim = NfdSim(st, sc, tmp_path / "nfd")
    sim.start()
    took = time.monotonic() - t0
    try:
        print(f"\nNFD start on the 5000-node scale world: {took * 1000:.1f} ms")
        assert took < 0.5
        assert st.list(NF_RESOURCE)[0] == []
        assert st.list("daemonsets.apps")[0] == []  # only the CRDs: nothing runs nfd-worker there
        assert st.served(st.rtype(NFR_RESOURCE))
        st.create(NFR_RESOURCE, {"metadata": {"name": "r"}, "spec": {"rules": [{"name": "x", "labels": {"y": "1"}}]}})
        settle(sim)
        labels = st.get("nodes", None, "node-00003")["metadata"]["labels"]
        assert f"{FNS}/y" not in labels and labels[f"{FNS}/cpu-cpuid.AVX512F"] == "true"
    finally:
        sim.stop()
