"""Whose run a journal is: the cluster (API server URL + kube-system namespace UID) and the cloud/hypervisor.

A node name says nothing about which cluster it is in: `kube-worker02` exists in every lab and in many real
clusters, and a journal copied along with a home directory, or a kubeconfig switched to another context,
would resume a half-done run against the wrong machines. Kubernetes has no cluster id; the kube-system
namespace's metadata.uid is the "current best practice" stand-in (kubernetes/kubernetes#77487; OpenTelemetry's
k8s.cluster.uid semantic convention, open-telemetry/opentelemetry-specification#3267): it is created with the
cluster and cannot easily be deleted. A user who may not read kube-system (403) is matched on the API server
URL alone, and the journal says so (cluster.note).

The cloud is Keystone's auth URL and the token's project id (openstacksdk current_project_id); the
hypervisor is the set of libvirt URIs; both are compared for the run's method only. The VM (Nova server id
or libvirt domain) of a resumed run must be the one the node maps to now.
"""

from __future__ import annotations

from typing import Any


def cluster_identity(api: Any, server: str) -> dict[str, Any]:
    """{"server", "kube_system_uid", "note"} of the cluster `api` talks to (one GET of namespace kube-system)."""
    from kubernetes.client.exceptions import ApiException

    from console.kube import rest

    try:
        ns = rest.get(api, "/api/v1/namespaces/kube-system")
    except ApiException as e:
        if e.status not in (403, 404):
            raise
        why = "may not read namespace kube-system (403)" if e.status == 403 else "has no namespace kube-system"
        return {"server": server, "kube_system_uid": None,
                "note": f"the cluster is identified by its API server URL only: this user {why}"}
    return {"server": server, "kube_system_uid": (ns.get("metadata") or {}).get("uid"), "note": ""}


def _cluster_text(c: dict[str, Any]) -> str:
    uid = c.get("kube_system_uid")
    return f"API server {c.get('server') or '?'} (kube-system uid {uid or 'unknown'})"


def cluster_problem(recorded: dict[str, Any], current: dict[str, Any]) -> str | None:
    """Why a journal of cluster `recorded` is not this session's (`current`), None when it is."""
    same_server = recorded.get("server") == current.get("server")
    a, b = recorded.get("kube_system_uid"), current.get("kube_system_uid")
    if same_server and (a is None or b is None or a == b):
        return None
    return (f"belongs to another cluster: it was recorded on {_cluster_text(recorded)}, this session talks to "
            f"{_cluster_text(current)}; resume it with that cluster's kubeconfig context")


def infra_identity(method: str, openstack: Any, libvirt: Any, vm_ref: str) -> dict[str, Any]:
    """What the run acts on: the method, the cloud (method openstack), the libvirt URIs, the VM."""
    return {"method": method, "openstack": openstack.identity() if method == "openstack" and openstack else None,
            "libvirt": sorted(libvirt.uris) if libvirt is not None else [], "vm": vm_ref}


def _cloud_text(o: dict[str, Any] | None) -> str:
    if not o:
        return "no OpenStack cloud"
    # names are unique per domain only: the id (what is compared) tells two projects called `admin` apart
    name, pid = o.get("project"), o.get("project_id")
    project = f"{name} (id {pid})" if name and pid else (name or pid or "?")
    return f"OpenStack {o.get('auth_url') or '?'} project {project}"


def infra_problem(recorded: dict[str, Any], current: dict[str, Any]) -> str | None:
    """Why a journal's cloud/hypervisor/VM (`recorded`) is not what this session reaches (`current`)."""
    if not recorded:
        return None
    if recorded.get("method") == "openstack":
        a, b = recorded.get("openstack") or {}, current.get("openstack") or {}
        if not b or a.get("auth_url") != b.get("auth_url") or (
                a.get("project_id") and b.get("project_id") and a["project_id"] != b["project_id"]):
            return (f"was run on {_cloud_text(a)}; this session uses {_cloud_text(b)}: set the cloud of the run "
                    "(cloud in the config, OS_CLOUD or its openrc)")
    elif recorded.get("method") == "libvirt":
        a_uris, b_uris = sorted(recorded.get("libvirt") or []), sorted(current.get("libvirt") or [])
        if a_uris != b_uris:
            return (f"was run on libvirt {', '.join(a_uris) or '(none)'}; this session uses "
                    f"{', '.join(b_uris) or 'no libvirt URI'} (libvirt_uris / CONSOLE_LIBVIRT_URI)")
    if recorded.get("vm") and current.get("vm") and recorded["vm"] != current["vm"]:
        return f"acted on VM {recorded['vm']}, but the node's VM is now {current['vm']}"
    return None
