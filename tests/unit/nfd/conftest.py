"""Shared builders for NFD unit tests."""

from __future__ import annotations

from typing import Any

import pytest

from console.nfd.model import Features, make_node_feature


def node_features() -> Features:
    f = Features()
    f.flags["cpu.cpuid"] = {"AVX", "AVX2", "AVX512F", "SSE42", "FMA3"}
    f.attributes["cpu.cpuid"] = {"AVX10_VERSION": "1"}
    f.attributes["cpu.model"] = {"vendor_id": "Intel", "family": "6", "id": "85"}
    f.flags["kernel.loadedmodule"] = {"dummy", "kvm", "ib_uverbs", "rdma_ucm"}
    f.attributes["kernel.config"] = {"X86": "y", "NO_HZ": "y", "HZ": "250", "LOCALVERSION": ""}
    f.attributes["kernel.version"] = {"major": "5", "minor": "15", "revision": "0", "full": "5.15.0-76-generic"}
    f.attributes["system.osrelease"] = {"ID": "opensuse-leap", "VERSION_ID": "15.5", "VERSION_ID.major": "15",
                                        "VERSION_ID.minor": "5"}
    f.instances["pci.device"] = [
        {"vendor": "8086", "class": "0200", "device": "1572", "sriov_totalvfs": "64"},
        {"vendor": "10de", "class": "0300", "device": "1eb8"},
    ]
    return f


@pytest.fixture
def features() -> Features:
    return node_features()


def nodefeature(name: str = "worker-1", **kw: Any) -> dict[str, Any]:
    return make_node_feature(name, kw.pop("features", None) or node_features(), **kw)


def nfr(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": name},
            "spec": {"rules": list(rules)}}
