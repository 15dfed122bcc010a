"""Every VM at once, for the node table: one list call per backend, joined into `VmView`s.

- Nova (openstacksdk, through `OpenStackBackend`'s connection): one `GET /servers/detail` — name, status, and
  the flavor with its size (embedded in the server from microversion 2.47).
- libvirt (libvirt-python, through `LibvirtBackend`'s connections): one `getAllDomainStats` per URI — the live
  vCPUs and balloon of each running domain, i.e. what the hypervisor runs.
Both configured: a server and a domain are the same VM when the server id is the domain UUID (Nova's libvirt
driver sets the domain UUID to the instance UUID: `_get_guest_config` in nova/virt/libvirt/driver.py). Only
libvirt configured: a Nova-made domain's flavor comes from the Nova metadata Nova writes into its XML (one
metadata read per domain; with Nova configured none is needed).
"""

from __future__ import annotations

import builtins
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from console.infra.protocol import InfraError
from console.infra.sizes import FlavorInfo, VmSize
from console.infra.vms import VmView

NOVA_NS = "http://openstack.org/xmlns/libvirt/nova/1.1"


class VmListError(Exception):
    """The VMs could not be listed; the message names the backend and what to check."""


@dataclass
class VmListing:
    vms: dict[str, VmView]  # by server id / domain UUID (lower case)
    problems: list[str] = field(default_factory=list)  # a backend that failed while another answered


class VmInventory:
    """Lists every VM from Nova and/or libvirt; blocking, so call it from a worker."""

    def __init__(self, openstack: Any = None, libvirt: Any = None) -> None:
        self.openstack = openstack  # console.infra.openstack.OpenStackBackend
        self.libvirt = libvirt  # console.infra.libvirt.LibvirtBackend

    def list(self) -> VmListing:
        servers: dict[str, VmView] | None = None
        problems: list[str] = []
        if self.openstack is not None:
            try:
                servers = self._servers()
            except InfraError as e:
                if self.libvirt is None:
                    raise VmListError(f"listing Nova servers: {e}; check clouds.yaml / OS_CLOUD") from e
                problems.append(f"listing Nova servers: {e}; the VM column shows libvirt's view only")
        if self.libvirt is None:
            return VmListing(servers or {}, problems)
        try:
            domains = self._domains(with_flavor=servers is None)
        except VmListError as e:
            if servers is None:
                raise
            problems.append(f"{e}; sizes shown are Nova's flavors, not what runs")
            return VmListing(servers, problems)
        if servers is None:
            return VmListing(domains, problems)
        out = dict(servers)
        for uuid, dom in domains.items():
            server = out.get(uuid)
            out[uuid] = dom if server is None else replace(server, running=dom.running, domain=dom.domain,
                                                           host=server.host or dom.host)
        return VmListing(out, problems)

    def flavors(self) -> builtins.list[FlavorInfo]:
        """Nova's flavors, smallest first (none without Nova: libvirt has no flavors)."""
        if self.openstack is None:
            return []
        try:
            flavors = self.openstack.flavors()
        except InfraError as e:
            raise VmListError(f"listing flavors: {e}") from e
        return sorted(flavors, key=lambda f: (f.vcpus, f.ram_mib, f.name))

    # -- Nova ---------------------------------------------------------------------------------------------
    def _servers(self) -> dict[str, VmView]:
        out = {}
        for s in self.openstack.servers():
            flavor = s.flavor or {}
            get = flavor.get if isinstance(flavor, dict) else lambda k, d=None, f=flavor: getattr(f, k, d)
            vcpus, ram = int(get("vcpus") or 0), int(get("ram") or 0)
            sid = str(s.id).lower()
            out[sid] = VmView(
                server_id=sid, name=s.name or "", status=s.status or "",
                flavor=str(get("original_name") or get("name") or ""),
                flavor_size=VmSize(vcpus, ram) if vcpus and ram else None,
                host=str(getattr(s, "compute_host", "") or ""),
            )
        return out

    # -- libvirt ------------------------------------------------------------------------------------------
    def _domains(self, *, with_flavor: bool) -> dict[str, VmView]:
        import libvirt

        want = libvirt.VIR_DOMAIN_STATS_STATE | libvirt.VIR_DOMAIN_STATS_VCPU | libvirt.VIR_DOMAIN_STATS_BALLOON
        out: dict[str, VmView] = {}
        for uri in self.libvirt.uris:
            try:
                conn = self.libvirt.connection(uri)
            except InfraError as e:
                raise VmListError(f"{e}; check libvirt_uris in the config or CONSOLE_LIBVIRT_URI") from e
            try:
                stats = conn.getAllDomainStats(want)
            except libvirt.libvirtError as e:
                self.libvirt.forget(uri)  # reconnect next time (libvirtd restarted, say)
                raise VmListError(f"listing domains at {uri}: {e.get_error_message()}; "
                                  "the VM column shows the last list until it works again") from e
            for dom, st in stats:
                running = st.get("state.state") == libvirt.VIR_DOMAIN_RUNNING
                vcpus, kib = int(st.get("vcpu.current", 0)), int(st.get("balloon.current", 0))
                uuid = dom.UUIDString().lower()
                if uuid in out and out[uuid].status == "running" and not running:
                    # a resized Nova server stays defined, shut off, on its source host until the resize is
                    # confirmed or reverted: the VM is the domain that runs
                    continue
                flavor, flavor_size = nova_flavor(dom) if with_flavor else ("", None)
                out[uuid] = VmView(
                    server_id=uuid, name=dom.name(), status="running" if running else "shut off",
                    running=VmSize(vcpus, kib // 1024) if running and vcpus and kib else None,
                    flavor=flavor, flavor_size=flavor_size, domain=dom.name(), host=uri_host(uri),
                )
        return out


def uri_host(uri: str) -> str:
    """The host a libvirt URI reaches (`qemu+ssh://cmp001/system` → cmp001); "" for a local one."""
    from urllib.parse import urlsplit

    return urlsplit(uri).hostname or ""


def nova_flavor(dom: Any) -> tuple[str, VmSize | None]:
    """Nova's flavor (name, size) from the domain metadata; ("", None) for a domain Nova did not create."""
    import libvirt

    try:
        meta = dom.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, NOVA_NS)
    except libvirt.libvirtError:
        return "", None
    return nova_flavor_from_metadata(meta)


def nova_flavor_from_metadata(meta: str) -> tuple[str, VmSize | None]:
    """`<instance><flavor name=…><memory>MiB</memory><vcpus>N</vcpus></flavor></instance>` (Nova's
    `LibvirtConfigGuestMetaNovaFlavor` in nova/virt/libvirt/config.py) → (name, size)."""
    root = ET.fromstring(meta)
    # libvirt hands the element back without its namespace; accept it either way
    flavor = root.find("flavor")
    if flavor is None:
        flavor = root.find(f"{{{NOVA_NS}}}flavor")
    if flavor is None:
        return "", None

    def num(tag: str) -> int:
        text = flavor.findtext(tag) or flavor.findtext(f"{{{NOVA_NS}}}{tag}") or "0"
        return int(text) if text.strip().isdigit() else 0

    vcpus, mem = num("vcpus"), num("memory")
    return flavor.get("name", ""), VmSize(vcpus, mem) if vcpus and mem else None


def vm_inventory(cloud: str | None, uris: Sequence[str]) -> VmInventory | None:
    """What fills the VM column: Nova and libvirt joined where both are configured, either alone, or nothing."""
    from console.infra.libvirt import LibvirtBackend
    from console.infra.openstack import OpenStackBackend

    if not cloud and not uris:
        return None
    return VmInventory(OpenStackBackend(cloud) if cloud else None, LibvirtBackend(uris) if uris else None)
