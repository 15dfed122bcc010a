"""One VM behind one node, read from every backend that knows it: Nova's flavor, libvirt's running size.

The runbook plans from this (`prepare`), the scale-up screen shows it, and both verify with it, so the size they
show is what the hypervisor runs (libvirt live vCPUs / balloon) whenever the domain is reachable, with Nova's
flavor kept beside it (`VmDescription.flavor*`). Nova's server id is the libvirt domain UUID (the libvirt
driver's `_get_guest_config` sets `guest.uuid = instance.uuid`, nova/virt/libvirt/driver.py), so no
admin-only field (OS-EXT-SRV-ATTR:instance_name) is needed to find the domain.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from console.infra.inventory import nova_flavor
from console.infra.protocol import InfraError, VmDescription
from console.infra.sizes import VmSize
from console.kube.model import NodeInfo

LIVE_FIELDS = ("vcpus", "vcpus_max_live", "vcpus_config", "vcpus_max_config", "memory_mib", "memory_max_mib",
               "memory_max_config_mib")


@dataclass
class VmReading:
    vm: VmDescription
    nova_server_id: str | None = None  # Nova manages this VM (libvirt: restart through Nova, Nova regenerates it)
    notes: list[str] = field(default_factory=list)


def read_vm(node: NodeInfo, openstack: Any, libvirt: Any, *, method: str) -> VmReading:
    """The VM of `node` as the `method` backend addresses it ("openstack": ref = server id, host = compute host;
    "libvirt": ref = domain name, host = libvirt URI), its size what runs, Nova's flavor beside it.
    InfraError/NotMapped when the method's own backend cannot find it."""
    if method == "openstack":
        return _from_nova(node, openstack, libvirt)
    return _from_libvirt(node, openstack, libvirt)


def _from_nova(node: NodeInfo, openstack: Any, libvirt: Any) -> VmReading:
    d = openstack.describe(node)
    d = replace(d, flavor_vcpus=d.vcpus, flavor_memory_mib=d.memory_mib)
    reading = VmReading(d, d.ref)
    if libvirt is None:
        return reading
    try:
        found = libvirt.domain_by_uuid(d.ref)
        live = libvirt.describe_domain(*found) if found else None
    except InfraError as e:
        reading.notes.append(f"libvirt: {e}; the size shown is Nova's flavor, not read from the hypervisor")
        return reading
    if live is not None and live.from_hypervisor:
        reading.vm = replace(d, **{k: getattr(live, k) for k in LIVE_FIELDS}, from_hypervisor=True,
                             instance_name=d.instance_name or live.name)
    return reading


def _from_libvirt(node: NodeInfo, openstack: Any, libvirt: Any) -> VmReading:
    notes: list[str] = []
    st = None
    if openstack is not None:
        try:
            st = openstack.server(openstack.find_server_id(node))
        except InfraError as e:
            notes.append(f"no Nova server found ({e}); restarting through libvirt")
    found = libvirt.domain_by_uuid(st.id) if st is not None else None
    d = libvirt.describe_domain(*found) if found else libvirt.describe(node, st.instance_name if st else None)
    if st is not None and d.nova_server_id and d.nova_server_id.lower() == st.id.lower():
        d = replace(d, flavor=st.flavor, flavor_vcpus=st.vcpus, flavor_memory_mib=st.ram_mib)
        return VmReading(d, st.id, notes)
    if openstack is None:  # Nova may still have made the domain: its flavor is in the domain's metadata
        name, size = _metadata_flavor(libvirt, d)
        if size is not None:
            d = replace(d, flavor=name, flavor_vcpus=size.vcpus, flavor_memory_mib=size.memory_mib)
    return VmReading(d, None, notes)


def _metadata_flavor(libvirt: Any, d: VmDescription) -> tuple[str, VmSize | None]:
    try:
        return nova_flavor(libvirt.domain(d.host, d.ref))
    except InfraError:
        return "", None
