"""The kubelet of a node as it runs: its configuration from configz, its systemd unit from the distribution.

configz: the kubelet serves its running KubeletConfiguration at /configz as
`{"kubeletconfig": {...}}` (kubelet.config.k8s.io/v1beta1 field names;
cmd/kubelet/app/server.go `configz.New("kubeletconfig")`, component-base/configz),
reached through the API server's node proxy `GET /api/v1/nodes/NAME/proxy/configz`
(RBAC: `get` on `nodes/proxy`).

The unit: kubeadm (and most packages) run `kubelet.service`; k3s embeds the
kubelet in `k3s` on servers and `k3s-agent` on agents, RKE2 in `rke2-server` /
`rke2-agent`; both mark it in `status.nodeInfo.kubeletVersion` (`v1.30.4+k3s1`,
`v1.30.4+rke2r1`) and label servers `node-role.kubernetes.io/control-plane`
(https://docs.k3s.io/installation/uninstall, https://docs.rke2.io/install/linux_uninstall).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# KEP-3953 in-place node resource resize: the kubelet re-reads capacity by itself
# (shared/reference/scale-up.md 5.5: renamed from NodeResourceHotPlug on 2026-02-11)
RESIZE_GATES = ("InPlaceNodeResourceResize", "NodeResourceHotPlug")
SERVER_ROLES = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master",
                "node-role.kubernetes.io/etcd")


class KubeletInfoError(Exception):
    """The kubelet's configuration could not be read; the message says why and what to do."""


@dataclass(frozen=True)
class KubeletConfig:
    feature_gates: dict[str, bool] = field(default_factory=dict)
    cpu_manager_policy: str = "none"
    memory_manager_policy: str = "None"

    @property
    def in_place_resize(self) -> bool:
        return any(self.feature_gates.get(g) for g in RESIZE_GATES)

    @classmethod
    def from_configz(cls, doc: dict[str, Any]) -> KubeletConfig:
        cfg = doc.get("kubeletconfig") if isinstance(doc, dict) else None
        if not isinstance(cfg, dict):
            raise KubeletInfoError("the node's configz has no kubeletconfig")
        return cls.from_config(cfg)

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> KubeletConfig:
        gates = cfg.get("featureGates") or {}
        return cls({str(k): bool(v) for k, v in gates.items()} if isinstance(gates, dict) else {},
                   str(cfg.get("cpuManagerPolicy") or "none"), str(cfg.get("memoryManagerPolicy") or "None"))


def read_configz(api_client: Any, node: str) -> KubeletConfig:
    """GET /api/v1/nodes/NODE/proxy/configz."""
    from kubernetes.client.exceptions import ApiException

    from console.kube import rest

    try:
        doc = rest.get(api_client, "/api/v1/nodes/{name}/proxy/{path}", params={"name": node, "path": "configz"})
    except ApiException as e:
        hint = (" (needs RBAC get on nodes/proxy)" if e.status in (401, 403) else "")
        raise KubeletInfoError(f"GET /api/v1/nodes/{node}/proxy/configz: {e.status} {e.reason}{hint}") from e
    except ValueError as e:
        raise KubeletInfoError(f"GET /api/v1/nodes/{node}/proxy/configz: not JSON ({e})") from e
    return KubeletConfig.from_configz(doc)


def kubelet_unit(node: dict[str, Any], configured: str | None = None) -> str:
    """The systemd unit that runs the node's kubelet: the setting, else from the distribution."""
    if configured:
        return configured
    version = (((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion") or "").lower()
    labels = (node.get("metadata") or {}).get("labels") or {}
    server = any(labels.get(r) not in (None, "false") for r in SERVER_ROLES)
    if "+k3s" in version:
        return "k3s" if server else "k3s-agent"
    if "+rke2" in version:
        return "rke2-server" if server else "rke2-agent"
    return "kubelet"
