"""Scenario nodes -> NFD Features and built-in labels (console/lab/nfd_features.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.lab import nfd_features as NF
from console.lab import scenarios
from console.nfd.master import compute_node_outcome
from console.nfd.model import Features, make_node_feature

FNS = "feature.node.kubernetes.io"
DEFAULT = {n.name: n for n in scenarios.DEFAULT.nodes}
REPORT = {n.name: n for n in scenarios.SEED_RESIZE.nodes}


def labels(node, version="v0.19.0", host=scenarios.DEFAULT.host_os):
    return NF.builtin_labels(NF.node_features(node, host, version), version)


def test_avx512_only_on_skylake_and_icelake():
    have = {name for name, n in DEFAULT.items() if labels(n).get(f"{FNS}/cpu-cpuid.AVX512F") == "true"}
    assert have == {"kube-worker02", "kube-worker03"}
    assert f"{FNS}/cpu-cpuid.AVX512VNNI" in labels(DEFAULT["kube-worker03"])
    assert f"{FNS}/cpu-cpuid.AVX512VNNI" not in labels(DEFAULT["kube-worker02"])


def test_cpu_model_and_blacklist():
    zen = labels(DEFAULT["kube-worker04"])
    assert zen[f"{FNS}/cpu-model.vendor_id"] == "AMD"
    assert (zen[f"{FNS}/cpu-model.family"], zen[f"{FNS}/cpu-model.id"]) == ("25", "1")
    assert zen[f"{FNS}/cpu-model.hypervisor"] == "KVM"
    assert zen[f"{FNS}/cpu-hardware_multithreading"] == "false"
    # blacklisted by NFD's default cpuid config: present as features, never as labels
    f = NF.node_features(DEFAULT["kube-worker04"], scenarios.DEFAULT.host_os, "v0.19.0")
    assert {"SSE42", "POPCNT", "CX16"} <= f.flags["cpu.cpuid"]
    assert "CMPXCHG16B" not in f.flags["cpu.cpuid"]  # klauspost/cpuid calls it CX16
    assert not any(k.endswith((".SSE42", ".POPCNT", ".CX16", ".RDRAND")) for k in zen)


def test_version_gating():
    n = REPORT["kube-worker02"]
    old = labels(n, "v0.8.2", scenarios.FOCAL)
    assert not any(k.startswith(f"{FNS}/cpu-model.") for k in old)  # v0.11
    assert old[f"{FNS}/cpu-cpuid.AVX512F"] == "true"
    f18 = NF.node_features(n, scenarios.FOCAL, "v0.18.1")
    assert f18.attributes["cpu.model"]["hypervisor"] == "KVM"
    assert "hypervisor" not in NF.node_features(n, scenarios.FOCAL, "v0.17.0").attributes["cpu.model"]
    assert "kernel.enabledmodule" not in NF.node_features(n, scenarios.FOCAL, "v0.12.0").flags
    assert "kernel.enabledmodule" in NF.node_features(n, scenarios.FOCAL, "v0.13.0").flags
    # before v0.10 the worker published labels only
    feats, labs = NF.worker_publication(NF.node_features(n, scenarios.FOCAL, "v0.8.2"), NF.LocalOutput(), "v0.8.2")
    assert feats.to_api() == {} and labs[f"{FNS}/kernel-version.full"] == "5.4.0-165-generic"


def test_kernel_system_pci_facts():
    w3 = DEFAULT["kube-worker03"]
    f = NF.node_features(w3, scenarios.DEFAULT.host_os, "v0.19.0")
    assert f.attributes["kernel.version"] == {"full": "6.8.0-57-generic", "major": "6", "minor": "8",
                                              "revision": "0"}
    assert f.attributes["system.osrelease"]["VERSION_ID.minor"] == "04"
    assert f.attributes["memory.numa"]["is_numa"] == "false"
    assert {"class": "0200", "vendor": "1af4", "device": "1000", "subsystem_vendor": "1af4",
            "subsystem_device": "0001"} in f.instances["pci.device"]
    lab = labels(w3)
    assert lab[f"{FNS}/pci-0300_1234.present"] == "true" and lab[f"{FNS}/pci-0302_10de.present"] == "true"
    assert not any(k.startswith(f"{FNS}/pci-0200") for k in lab)  # class 02 is not whitelisted
    assert lab[f"{FNS}/kernel-config.NO_HZ"] == "true"
    assert lab[f"{FNS}/system-os_release.VERSION_ID"] == "22.04"
    focal = labels(REPORT["kube-worker01"], "v0.8.2", scenarios.FOCAL)
    assert focal[f"{FNS}/system-os_release.VERSION_ID"] == "20.04"


def test_loaded_modules_differ_per_node():
    def mods(name):
        return NF.node_features(DEFAULT[name], scenarios.DEFAULT.host_os, "v0.19.0").flags["kernel.loadedmodule"]
    both = {n for n in DEFAULT if {"vfio_pci", "vhost_net"} <= mods(n)}
    assert both == {"kube-worker02"}
    assert "vfio_pci" in mods("kube-worker03") and "vhost_net" in mods("kube-worker04")
    assert "overlay" in mods("kube-controlplane01")


@pytest.mark.parametrize("version", ["v0.8.2", "v0.13.0", "v0.19.0"])
def test_master_keeps_every_builtin_label(version):
    """The lab's built-in labels are exactly what the engine's master writes for them."""
    host = scenarios.DEFAULT.host_os
    for node in DEFAULT.values():
        feats, labs = NF.worker_publication(NF.node_features(node, host, version), NF.LocalOutput(), version)
        out = compute_node_outcome([make_node_feature(node.name, feats, labs)], (), version)
        assert out.labels == labs and not out.dropped


def test_local_output_v08_naming_and_v019_hooks_removed(tmp_path: Path):
    files, hooks = tmp_path / "features.d", tmp_path / "source.d"
    files.mkdir()
    hooks.mkdir()
    (files / "inventory").write_text("rack=r1\n/top=1\n")
    hook = hooks / "my-script"
    hook.write_text('#!/bin/sh\necho "kernel.x=1"\necho "node=$NODE_NAME"\n')
    hook.chmod(0o755)
    run = NF.run_source_d(hooks, "v0.8.2", node="kube-worker01", enabled=None, timeout=5)
    old = NF.local_output(files, run, "v0.8.2")
    assert old.labels == {"inventory-rack": "r1", "top": "1", "my-script-kernel.x": "1",
                          "my-script-node": "kube-worker01"}
    assert old.features == {}
    new = NF.local_output(files, NF.run_source_d(hooks, "v0.19.0", node="kube-worker01", enabled=True, timeout=5),
                          "v0.19.0")
    assert new.hooks_status == "removed" and "removed in v0.17.0" in new.hook_warnings[0]
    assert new.labels == {"rack": "r1"} and new.features["local.label"] == {"rack": "r1", "/top": "1"}
    assert [d[0] for d in new.dropped] == ["/top"]  # invalid without the v0.4-v0.9 prefix rule
    off = NF.local_output(None, NF.run_source_d(hooks, "v0.16.4", node="n", enabled=None, timeout=5), "v0.16.4")
    assert off.hooks_status == "disabled" and off.labels == {}
    on = NF.local_output(None, NF.run_source_d(hooks, "v0.16.4", node="n", enabled=True, timeout=5), "v0.16.4")
    assert on.labels == {"kernel.x": "1", "node": "n"}


def test_scenario_files_and_versions():
    """Field report 1's hook and inventory sit in the nodes' trees, where NFD's hostPath volumes point."""
    report = {n.name: dict(n.files) for n in scenarios.get("seed-live").nodes}
    hook = "/etc/kubernetes/node-feature-discovery/source.d/cpuinfo"
    assert all(hook in files for files in report.values())
    assert "/etc/kubernetes/node-feature-discovery/features.d/inventory" in report["kube-worker01"]
    assert scenarios.get("default").nfd_version == "v0.19.0"
    assert scenarios.get("seed-live").nfd_version == "v0.8.2"
    assert scenarios.get("nfd-configmap").nfd.features_configmap == "nfd-features"
    assert scenarios.get("nfd-gpu-operator").nfd.namespace == "gpu-operator"


def test_features_roundtrip_api():
    f = NF.node_features(DEFAULT["kube-worker02"], scenarios.DEFAULT.host_os, "v0.19.0")
    assert Features.from_api(f.to_api()).flags == f.flags
