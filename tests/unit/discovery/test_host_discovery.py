"""Host discovery on fixture trees (plain and nfd-worker `/host-*` layouts)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from console.discovery import discover, discovery_labels
from console.discovery.devices import parse_os_release
from console.discovery.kernel import parse_kconfig, parse_kernel_version
from console.nfd.master import compute_node_outcome
from console.nfd.model import NodeFeatureSpec, make_node_feature

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "nfd" / "host"
FNS = "feature.node.kubernetes.io"


@pytest.fixture(scope="module")
def found():
    return discover(ROOT)


def test_labels(found) -> None:
    labels = discovery_labels(found)
    expect = {
        "cpu-cpuid.AVX512F": "true", "cpu-cpuid.FMA3": "true", "cpu-cpuid.AESNI": "true",
        "cpu-model.vendor_id": "Intel", "cpu-model.family": "6", "cpu-model.id": "85",
        "cpu-hardware_multithreading": "true",
        "kernel-version.full": "5.15.0-76-generic", "kernel-version.major": "5", "kernel-version.minor": "15",
        "kernel-version.revision": "0", "kernel-config.NO_HZ": "true", "kernel-config.NO_HZ_IDLE": "true",
        "memory-numa": "true", "memory-swap": "true", "network-sriov.capable": "true",
        "pci-0300_10de.present": "true", "pci-1200_1da3.present": "true", "storage-nonrotationaldisk": "true",
        "system-os_release.ID": "ubuntu", "system-os_release.VERSION_ID": "22.04",
        "system-os_release.VERSION_ID.major": "22", "system-os_release.VERSION_ID.minor": "04",
        "usb-0e_046d_0825.present": "true", "usb-ff_0781_5567.present": "true", "rack": "r12",
    }
    for k, v in expect.items():
        assert labels[f"{FNS}/{k}"] == v, k
    assert f"{FNS}/cpu-cpuid.SSE42" not in labels  # default blacklist
    assert f"{FNS}/pci-0200_8086.present" not in labels  # class not whitelisted
    assert f"{FNS}/kernel-config.NO_HZ_FULL" not in labels  # not set
    assert f"{FNS}/secret.feature" not in labels  # "# +no-label"
    assert "network-sriov.configured" not in str(labels)


def test_features(found) -> None:
    f = found.features
    assert "SSE42" in f.flags["cpu.cpuid"]  # features are not blacklist-filtered
    assert f.attributes["kernel.config"]["HZ"] == "250" and f.attributes["kernel.config"]["LOCALVERSION"] == ""
    assert {"kvm", "ib_uverbs"} <= f.flags["kernel.loadedmodule"]
    pci = {d["vendor"]: d for d in f.instances["pci.device"]}
    assert pci["8086"] == {"class": "0200", "vendor": "8086", "device": "1572", "subsystem_vendor": "1234",
                           "subsystem_device": "0001", "sriov_totalvfs": "64"}
    assert len(pci) == 4  # the device without mandatory attributes is skipped
    assert {"class": "ff", "vendor": "0781", "device": "5567", "serial": ""} in f.instances["usb.device"]
    assert f.attributes["local.feature"] == {"secret.feature": "42", "rack": "r12"}
    assert [d["name"] for d in f.instances["network.virtual"]] == ["lo"]


def test_host_prefixed_layout(tmp_path: Path) -> None:
    for src, dst in (("proc", "host-proc"), ("sys", "host-sys"), ("etc", "host-etc"), ("boot", "host-boot")):
        shutil.copytree(ROOT / src, tmp_path / dst, symlinks=True)
    d = discover(tmp_path)
    assert discovery_labels(d)[f"{FNS}/system-os_release.ID"] == "ubuntu"
    assert d.features.attributes["cpu.model"]["id"] == "85"


def test_empty_root_warns_without_crashing(tmp_path: Path) -> None:
    d = discover(tmp_path)
    assert any("cpuinfo" in w for w in d.warnings) and any("os-release" in w for w in d.warnings)
    assert discovery_labels(d) == {}


def test_nodefeature_roundtrip_through_master(found) -> None:
    nf = make_node_feature("w1", found.features, discovery_labels(found))
    spec = NodeFeatureSpec.from_object(nf)
    assert spec.features.instances["pci.device"] == found.features.instances["pci.device"]
    rule = {"kind": "NodeFeatureRule", "metadata": {"name": "r"}, "spec": {"rules": [
        {"name": "rdma", "labels": {"rdma.available": "true"}, "matchFeatures": [
            {"feature": "kernel.loadedmodule", "matchExpressions": {"ib_uverbs": {"op": "Exists"},
                                                                    "rdma_ucm": {"op": "Exists"}}}]}]}}
    out = compute_node_outcome([nf], [rule])
    assert out.labels[f"{FNS}/rdma.available"] == "true"
    assert out.labels[f"{FNS}/pci-0300_10de.present"] == "true"


def test_parsers() -> None:
    assert parse_kernel_version("6.8.0-rc1+ #1 SMP") == {"full": "6.8.0-rc1___1_SMP", "major": "6", "minor": "8",
                                                         "revision": "0"}
    assert parse_kernel_version("5.10") == {"full": "5.10", "major": "5", "minor": "10", "revision": ""}
    assert parse_kconfig('CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C="x y"\n') == {"A": "y", "C": "x y"}
    assert parse_os_release('ID="rhel"\nVERSION_ID="9"\n') == {"ID": "rhel", "VERSION_ID": "9",
                                                              "VERSION_ID.major": "9"}
