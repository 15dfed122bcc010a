"""Which Nova server runs a Kubernetes node: spec.providerID, then the node's systemUUID, then its name.

- providerID: cloud-provider-openstack writes `openstack:///<server id>` or
  `openstack://<region>/<server id>` and reads it back with
  `^openstack://([^/]*)/([^/]+)$`; one without a scheme gets `openstack://` prepended
  (kubernetes/kubernetes#85731, so `/<id>` works) — `instanceIDFromProviderID` in
  kubernetes/cloud-provider-openstack pkg/openstack/instances.go.
- systemUUID: on libvirt/KVM Nova sets the SMBIOS system UUID to the server id
  (`_get_guest_config_sysinfo` in nova/virt/libvirt/driver.py) and the kubelet
  reports it as status.nodeInfo.systemUUID — the way to a server when no cloud
  provider set a providerID (kubeadm clusters without CPO).
- name: CPO's `getServerByName` lists servers with the exact-match regex
  `^<name>$`; more than one match is an error, not a guess.

`find_server` takes the two lookups as callables, so the runbook (one API call
per lookup) and the node table (dicts built from one server list) share it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from console.infra.protocol import InfraError, NotMapped
from console.kube.model import NodeInfo

S = TypeVar("S")

_PROVIDER_ID = re.compile(r"^openstack://([^/]*)/([^/]+)$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def server_id_from_provider(provider_id: str) -> str | None:
    """openstack:///<id>, openstack://<region>/<id> or /<id> (no scheme) → id; else None."""
    if not provider_id:
        return None
    if "://" not in provider_id:
        provider_id = "openstack://" + provider_id
    m = _PROVIDER_ID.match(provider_id)
    return m.group(2) if m else None


def server_id_from_system_uuid(system_uuid: str) -> str | None:
    """The node's SMBIOS UUID as a Nova server id (lower case), when it is a UUID at all."""
    u = system_uuid.strip().lower()
    return u if _UUID.match(u) else None


@dataclass(frozen=True)
class Mapped(Generic[S]):
    server: S
    by: str  # "providerID" | "systemUUID" | "name"


def find_server(node: NodeInfo, by_id: Callable[[str], S | None],
                by_name: Callable[[str], Sequence[S]]) -> Mapped[S]:
    """The node's server by providerID, then systemUUID, then exact name.

    `by_id(id)` returns the server or None (not found); `by_name(name)` every server with exactly
    that name. A providerID naming a server that does not exist is reported, not skipped: the
    cloud provider said which server it is.
    """
    pid = server_id_from_provider(node.provider_id)
    if node.provider_id and pid is None and node.provider_id.startswith("openstack:"):
        raise NotMapped(f"node {node.name}: providerID {node.provider_id!r} is not openstack:///<server id>")
    if pid:
        server = by_id(pid)
        if server is None:
            raise NotMapped(f"node {node.name}: providerID {node.provider_id} names server {pid}, "
                            "which this cloud does not have (another project or region?)")
        return Mapped(server, "providerID")
    uuid = server_id_from_system_uuid(node.system_uuid)
    if uuid:
        server = by_id(uuid)
        if server is not None:
            return Mapped(server, "systemUUID")
    matches = list(by_name(node.name))
    if len(matches) > 1:
        raise InfraError(f"node {node.name}: {len(matches)} servers are named {node.name}; "
                         "set the node's spec.providerID to openstack:///<server id> to say which")
    if matches:
        return Mapped(matches[0], "name")
    raise NotMapped(f"no OpenStack server for node {node.name} (no providerID; no server with id = systemUUID "
                    f"{node.system_uuid or '-'}; no server named {node.name})")
