"""The kubelet's unit from node info, its config from configz, and the debug pod's manifest from settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.config import ConfigError, load
from console.kube.kubeletinfo import KubeletConfig, KubeletInfoError, kubelet_unit
from console.kube.nodeaccess import DEBUG_LABELS, ExecResult, node_access


def _node(version: str, **labels: str) -> dict:
    return {"metadata": {"labels": labels}, "status": {"nodeInfo": {"kubeletVersion": version}}}


@pytest.mark.parametrize(("version", "labels", "unit"), [
    ("v1.30.4", {}, "kubelet"),  # kubeadm
    ("v1.30.4+k3s1", {"node-role.kubernetes.io/control-plane": "true"}, "k3s"),
    ("v1.30.4+k3s1", {}, "k3s-agent"),
    ("v1.31.2+rke2r1", {"node-role.kubernetes.io/etcd": "true"}, "rke2-server"),
    ("v1.31.2+rke2r1", {}, "rke2-agent"),
])
def test_unit_from_the_distribution(version, labels, unit):
    assert kubelet_unit(_node(version, **labels)) == unit


def test_unit_setting_wins():
    assert kubelet_unit(_node("v1.30.4+k3s1"), "my-kubelet") == "my-kubelet"


def test_config_from_configz():
    cfg = KubeletConfig.from_configz({"kubeletconfig": {"featureGates": {"InPlaceNodeResourceResize": True},
                                                        "cpuManagerPolicy": "static",
                                                        "memoryManagerPolicy": "Static"}})
    assert cfg.in_place_resize and cfg.cpu_manager_policy == "static" and cfg.memory_manager_policy == "Static"
    plain = KubeletConfig.from_configz({"kubeletconfig": {}})
    assert not plain.in_place_resize and plain.cpu_manager_policy == "none"
    assert not KubeletConfig.from_configz({"kubeletconfig": {"featureGates": {"InPlaceNodeResourceResize": False}}}
                                          ).in_place_resize
    with pytest.raises(KubeletInfoError):
        KubeletConfig.from_configz({"componentconfig": {}})


def test_debug_pod_from_settings(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("node_debug_namespace: ops\nimage_pull_secrets: [regcred]\n"
                   "node_debug_tolerations:\n  - {key: dedicated, operator: Equal, value: infra, effect: NoSchedule}\n")
    s = load({"node_debug_image": "mirror.example/busybox:1.37.0"}, path=cfg, env={})
    pod = node_access("debug-pod", None, s).pod_manifest("w1", "true", "p")  # type: ignore[attr-defined]
    assert pod["metadata"]["namespace"] == "ops"
    assert pod["metadata"]["labels"] == DEBUG_LABELS
    assert DEBUG_LABELS["app.kubernetes.io/managed-by"] == "console"  # the drain skips the console's pods by it
    spec = pod["spec"]
    assert spec["containers"][0]["image"] == "mirror.example/busybox:1.37.0"
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert spec["tolerations"] == [{"operator": "Exists"}, {"key": "dedicated", "operator": "Equal",
                                                             "value": "infra", "effect": "NoSchedule"}]
    default = load(path=Path("/nonexistent"), env={})
    assert default.node_debug_image == "busybox:1.37.0" and default.node_debug_namespace == "default"
    assert "registry.lab" not in default.node_debug_image


def test_bad_tolerations_are_refused():
    with pytest.raises(ConfigError, match="node_debug_tolerations"):
        load(path=Path("/nonexistent"), env={"CONSOLE_NODE_DEBUG_TOLERATIONS": "[{key: a, operator: Maybe}]"})
    with pytest.raises(ConfigError, match="unknown field"):
        load(path=Path("/nonexistent"), env={"CONSOLE_NODE_DEBUG_TOLERATIONS": "[{kee: a}]"})


def test_exec_result_tail():
    assert ExecResult(5, "", stderr="Failed to restart x.service: Unit x.service not found.\n").tail() == \
        "Failed to restart x.service: Unit x.service not found."
    assert ExecResult(1, "").tail() == "no output"


def test_rbac_refusal_quotes_the_server():
    """An RBAC 403 (the API server's text names verb, resource and namespace) is quoted, with what is needed."""
    import json

    from kubernetes.client.exceptions import ApiException

    from console.kube.nodeaccess import DebugPodAccess

    e = ApiException(status=403, reason="Forbidden")
    e.body = json.dumps({"kind": "Status", "code": 403, "reason": "Forbidden", "message":
                         'pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the '
                         'namespace "default"'})
    msg = str(DebugPodAccess(None)._refused(e, "create", "pods"))
    assert msg.startswith('the cluster refused to create pods in namespace default: pods is forbidden: User "alice" '
                          'cannot create resource "pods" in API group "" in the namespace "default". ')
    assert "create, get, list, watch and delete pods and get pods/log" in msg
