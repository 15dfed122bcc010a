"""Backing VMs of nodes, for the node table: which VM runs each node, and its size.

Read from OpenStack (openstacksdk, one server list) when a cloud is configured, else from libvirt
(libvirt-python, one domain-stats call per URI). A node maps to a VM by `spec.providerID`
(`openstack:///<server id>`) or its systemUUID (Nova's server id is the domain UUID), else by name.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    by_name = {vm.name: vm for vm in servers.values() if vm.name}
    out = {}
    for n in nodes:
        vm = servers.get(server_id_of(n)) or by_name.get(n.name)
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


NOVA_NS = "http://openstack.org/xmlns/libvirt/nova/1.1"


class VmListError(Exception):
    """The VMs could not be listed; the message names the URI and what to check."""


class LibvirtDomains:
    """Lists the domains behind libvirt URIs (no cloud configured); blocking, so call it from a worker.

    The size is the live one (current vCPUs, balloon), so vCPUs hot-added but not yet seen by the
    kubelet show as stale capacity; the flavor is Nova's, from the domain metadata, when Nova made it.
    """

    def __init__(self, uris: Sequence[str]) -> None:
        self.uris = list(uris)
        self._conns: dict[str, Any] = {}

    def _conn(self, uri: str) -> Any:
        import libvirt

        if uri not in self._conns:
            libvirt.registerErrorHandler(lambda _ctx, _err: None, None)  # errors arrive as exceptions
            try:
                self._conns[uri] = libvirt.open(uri)
            except libvirt.libvirtError as e:
                raise VmListError(f"cannot connect to libvirt at {uri}: {e.get_error_message()}; "
                                  "check libvirt_uris in the config or CONSOLE_LIBVIRT_URI") from e
        return self._conns[uri]

    def list(self) -> dict[str, BackingVM]:
        import libvirt

        want = libvirt.VIR_DOMAIN_STATS_STATE | libvirt.VIR_DOMAIN_STATS_VCPU | libvirt.VIR_DOMAIN_STATS_BALLOON
        out: dict[str, BackingVM] = {}
        for uri in self.uris:
            conn = self._conn(uri)
            try:
                stats = conn.getAllDomainStats(want)
            except libvirt.libvirtError as e:
                self._conns.pop(uri, None)  # reconnect next time (libvirtd restarted, say)
                raise VmListError(f"listing domains at {uri}: {e.get_error_message()}; "
                                  "the VM column shows the last list until it works again") from e
            for dom, st in stats:
                running = st.get("state.state") == libvirt.VIR_DOMAIN_RUNNING
                uuid = dom.UUIDString().lower()
                out[uuid] = BackingVM(
                    server_id=uuid,
                    name=dom.name(),
                    status="running" if running else "shut off",
                    flavor=_nova_flavor(dom),
                    vcpus=int(st.get("vcpu.current", 0)) if running else 0,
                    ram_mib=int(st.get("balloon.current", 0)) // 1024 if running else 0,
                )
        return out

    def flavors(self) -> list[tuple[str, int, int]]:
        return []  # libvirt has no flavors


def _nova_flavor(dom: Any) -> str:
    """Nova's flavor name from the domain metadata; "" for a domain Nova did not create."""
    import libvirt

    try:
        meta = dom.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, NOVA_NS)
    except libvirt.libvirtError:
        return ""
    root = ET.fromstring(meta)
    # libvirt hands the element back without its namespace; accept it either way
    flavor = root.find("flavor")
    if flavor is None:
        flavor = root.find(f"{{{NOVA_NS}}}flavor")
    return flavor.get("name", "") if flavor is not None else ""


def vm_lister(cloud: str | None, uris: Sequence[str]) -> OpenStackServers | LibvirtDomains | None:
    """What fills the VM column: OpenStack when a cloud is configured, else libvirt, else nothing."""
    if cloud:
        return OpenStackServers(cloud)
    if uris:
        return LibvirtDomains(uris)
    return None
