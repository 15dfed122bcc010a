"""Backing VMs of nodes, read from OpenStack (openstacksdk): which server runs each node, and its size.

A node maps to a server by `spec.providerID` (`openstack:///<server id>`) or its systemUUID.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from console.kube.model import NodeInfo, Resources

GiB = 2**30


@dataclass(frozen=True)
class BackingVM:
    server_id: str
    name: str
    status: str
    flavor: str
    vcpus: int
    ram_mib: int

    def stale_for(self, capacity: Resources) -> bool:
        """The kubelet reports a different size than the VM has (beyond what the kernel keeps for itself)."""
        if not self.vcpus or not self.ram_mib:
            return False
        if capacity.cpu_m != self.vcpus * 1000:
            return True
        ram = self.ram_mib * 2**20
        overhead = max(ram * 8 // 100, 256 * 2**20)
        return not (ram - overhead <= capacity.memory <= ram)


def server_id_of(node: NodeInfo) -> str:
    if node.provider_id.startswith("openstack://"):
        return node.provider_id.rsplit("/", 1)[-1]
    return node.system_uuid.lower()


def match_nodes(nodes: Iterable[NodeInfo], servers: Mapping[str, BackingVM]) -> dict[str, BackingVM]:
    out = {}
    for n in nodes:
        vm = servers.get(server_id_of(n))
        if vm is not None:
            out[n.name] = vm
    return out


class OpenStackServers:
    """Lists servers (with their flavor sizes) in one call; blocking, so call it from a worker."""

    def __init__(self, cloud: str) -> None:
        self.cloud = cloud
        self._conn = None

    def list(self) -> dict[str, BackingVM]:
        import openstack

        if self._conn is None:
            self._conn = openstack.connect(cloud=self.cloud)
        out = {}
        for s in self._conn.compute.servers(details=True):
            flavor = s.flavor or {}
            get = flavor.get if isinstance(flavor, dict) else lambda k, d=None, f=flavor: getattr(f, k, d)
            out[s.id] = BackingVM(
                server_id=s.id,
                name=s.name or "",
                status=s.status or "",
                flavor=str(get("original_name") or get("name") or ""),
                vcpus=int(get("vcpus") or 0),
                ram_mib=int(get("ram") or 0),
            )
        return out

    def flavors(self) -> list[tuple[str, int, int]]:
        """(name, vcpus, ram MiB) of every flavor, smallest first."""
        import openstack

        if self._conn is None:
            self._conn = openstack.connect(cloud=self.cloud)
        return sorted(((f.name, f.vcpus, f.ram) for f in self._conn.compute.flavors()), key=lambda f: (f[1], f[2]))
