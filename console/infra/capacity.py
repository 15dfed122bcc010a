"""What the capacity planner needs from the cloud and the hypervisors: each node's VM with the sizes it can go to,
free room per compute host, and the project quota (console/planner/inputs.py reads the cluster side).

- VMs: the inventory's one list per backend (console/infra/inventory.py), joined to nodes as the VM column joins
  them (console/infra/vms.match_nodes); Nova servers once more for their compute host and root disk
  (`OS-EXT-SRV-ATTR:hypervisor_hostname`, admin-only: "" for a member) and the flavors, with extra_specs where
  a price is read from one (`GET /flavors/detail`, extra_specs in the body from microversion 2.61, else
  `GET /flavors/{id}/os-extra_specs`).
- Nova limits: `GET /limits` (openstacksdk compute.get_limits()).
- Placement: every resource provider's inventories and usages (placement.resource_providers(),
  resource_provider_inventories(rp), fetch_resource_provider_usages(rp)); a compute node's provider is named
  after its hypervisor_hostname (nova/compute/resource_tracker.py `_update_to_placement`), which is how a
  server's host is matched to it. Placement's default policy is admin-only: a refusal is a note, not an error.
- libvirt: virNodeGetInfo (memory MiB, CPUs) and virNodeGetFreeMemory per URI, and the running domains'
  vCPUs and maximum memory (virDomainGetInfo): what is left for a live scale-up on that host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.infra.inventory import VmInventory
from console.infra.protocol import InfraError
from console.infra.vms import VmView, match_nodes
from console.planner.model import LIBVIRT, OPENSTACK, HostFree, Limits, Quota, Size, SizeOption, Vm

PLACEMENT_UNKNOWN = ("free capacity per compute host is unknown (Placement is admin-only by default): the plan "
                     "does not bound it, and a resize may still fail with NoValidHost")


def quota_from_limits(absolute: Mapping[str, Any]) -> Quota:
    """What the project may still add, from Nova's absolute limits (-1 or missing: unlimited → None)."""
    def left(limit: str, used: str) -> int | None:
        cap = absolute.get(limit)
        if cap is None or int(cap) < 0:
            return None
        return max(0, int(cap) - int(absolute.get(used) or 0))

    return Quota(cores=left("maxTotalCores", "totalCoresUsed"), ram_mib=left("maxTotalRAMSize", "totalRAMUsed"))


def host_free(inventories: Mapping[str, Mapping[str, Any]], usages: Mapping[str, Any]) -> HostFree:
    """One resource provider's room: (total − reserved) × allocation_ratio − used per class (Placement's capacity
    rule, placement/objects/allocation.py _check_capacity_exceeded), max_unit the most one allocation may take."""
    def free(rc: str) -> tuple[int | None, int | None]:
        inv = inventories.get(rc)
        if not inv:
            return None, None
        cap = (int(inv.get("total") or 0) - int(inv.get("reserved") or 0)) * float(inv.get("allocation_ratio") or 1.0)
        return max(0, int(cap) - int(usages.get(rc) or 0)), inv.get("max_unit")

    vcpus, max_vcpus = free("VCPU")
    mem, max_mem = free("MEMORY_MB")
    return HostFree(vcpus=vcpus, memory_mib=mem, max_vcpus=max_vcpus, max_memory_mib=max_mem)


@dataclass(frozen=True)
class Flavor:
    name: str
    vcpus: int
    ram_mib: int
    disk_gb: int = 0
    extra_specs: Mapping[str, str] = field(default_factory=dict)


def flavor_price(flavor: Flavor, prices: Mapping[str, float], extra_spec: str | None) -> float | None:
    """The flavor's price: the settings' `flavor_prices`, else its extra_spec `price_extra_spec` (a number)."""
    if flavor.name in prices:
        return float(prices[flavor.name])
    if extra_spec and extra_spec in flavor.extra_specs:
        try:
            return float(flavor.extra_specs[extra_spec])
        except (TypeError, ValueError):
            return None
    return None


def flavor_options(current: Size, disk_gb: int, flavors: Sequence[Flavor], prices: Mapping[str, float],
                   extra_spec: str | None) -> tuple[SizeOption, ...]:
    """The flavors a server can be resized to: no smaller in vCPUs, memory or root disk (disk_refusal in
    console/infra/openstack.py), larger in vCPUs or memory, never the current flavor; smallest first."""
    out = [SizeOption(Size(f.vcpus, f.ram_mib, f.name), OPENSTACK, flavor_price(f, prices, extra_spec))
           for f in flavors
           if f.name != current.flavor and f.vcpus >= current.vcpus and f.ram_mib >= current.memory_mib
           and (f.vcpus > current.vcpus or f.ram_mib > current.memory_mib) and not (disk_gb and f.disk_gb < disk_gb)]
    return tuple(sorted(out, key=lambda o: (o.size.vcpus, o.size.memory_mib, o.size.flavor)))


def _sdk_errors() -> tuple[type[BaseException], ...]:
    from keystoneauth1.exceptions import ClientException
    from openstack.exceptions import SDKException

    return SDKException, ClientException


def _why(e: BaseException) -> str:
    from console.faults import describe

    if "not present in the service catalog" in str(e) or "EndpointNotFound" in type(e).__name__:
        return "no endpoint in the service catalog"
    status = getattr(e, "status_code", None) or getattr(e, "http_status", None)
    text = str(getattr(e, "details", None) or e).strip().splitlines()[0][:160] if str(e) else describe(e)
    return f"{status} {text}" if status and str(status) not in text else text


def read_capacity(inventory: VmInventory, nodes: Sequence[Any], plan: Any) -> tuple[dict[str, Vm], Limits, list[str]]:
    """Node name → Vm, the Limits, notes. VmListError when no backend lists its VMs (the caller's fault path)."""
    listing = inventory.list()
    notes = list(listing.problems)
    matched = match_nodes(nodes, listing.vms)
    openstack, libvirt = inventory.openstack, inventory.libvirt
    servers: dict[str, tuple[str, int]] = {}
    flavors: list[Flavor] = []
    hosts: dict[str, HostFree] = {}
    quota = Quota()
    if openstack is not None and matched:
        servers = _servers(openstack)
    nova_nodes = {n: v for n, v in matched.items() if v.server_id in servers}
    if nova_nodes:
        flavors = _flavors(openstack, plan)
        quota, note = _quota(openstack)
        notes += [note] if note else []
        placement, note = _placement(openstack)
        hosts.update(placement)
        notes += [note] if note else []
    domains: dict[str, tuple[str, str]] = {}
    if libvirt is not None and len(nova_nodes) < len(matched):
        domains, room, more = _libvirt_hosts(libvirt)
        hosts.update(room)
        notes += more
    vms: dict[str, Vm] = {}
    for node, view in matched.items():
        if node in nova_nodes:
            host, disk = servers[view.server_id]
            vms[node] = _nova_vm(view, host, disk, flavors, plan)
        elif view.server_id in domains:
            uri, name = domains[view.server_id]
            vms[node] = _libvirt_vm(view, uri, name, hosts.get(uri))
    return vms, Limits(hosts=hosts, quota=quota), notes


def _nova_vm(view: VmView, host: str, disk_gb: int, flavors: Sequence[Flavor], plan: Any) -> Vm:
    size = view.size
    current = Size(size.vcpus if size else 0, size.memory_mib if size else 0, view.flavor)
    mine = next((f for f in flavors if f.name == view.flavor), None)
    return Vm(ref=view.server_id, method=OPENSTACK, host=host, current=current,
              options=flavor_options(current, disk_gb, flavors, plan.flavor_prices, plan.price_extra_spec),
              price=flavor_price(mine, plan.flavor_prices, plan.price_extra_spec) if mine else None)


def _libvirt_vm(view: VmView, uri: str, name: str, room: HostFree | None) -> Vm:
    size = view.size
    current = Size(size.vcpus if size else 0, size.memory_mib if size else 0)
    top = None
    if room is not None and room.max_vcpus and room.max_memory_mib:
        top = Size(max(current.vcpus, room.max_vcpus), max(current.memory_mib, room.max_memory_mib))
    return Vm(ref=name, method=LIBVIRT, host=uri, current=current,
              max_size=top if top is not None and top != current else None)


def _servers(openstack: Any) -> dict[str, tuple[str, int]]:
    """Server id (lower case) → (compute host: the hypervisor_hostname Placement names it by, root disk GB)."""
    out = {}
    for s in openstack.servers():
        flavor = s.flavor or {}
        disk = flavor.get("disk") if isinstance(flavor, dict) else getattr(flavor, "disk", 0)
        host = getattr(s, "hypervisor_hostname", None) or getattr(s, "compute_host", None) or ""
        out[str(s.id).lower()] = (str(host), int(disk or 0))
    return out


def _flavors(openstack: Any, plan: Any) -> list[Flavor]:
    conn = openstack.conn
    items = openstack._call("listing flavors", lambda: list(conn.compute.flavors(details=True)))
    out = []
    for f in items:
        specs: Mapping[str, str] = dict(getattr(f, "extra_specs", None) or {})
        spec = plan.price_extra_spec
        if spec and spec not in specs and f.name not in plan.flavor_prices:
            # below microversion 2.61 the flavor list carries no extra_specs: ask for this one's
            specs = dict(openstack._call(f"reading the extra_specs of flavor {f.name}",
                                         conn.compute.fetch_flavor_extra_specs, f).extra_specs or {})
        out.append(Flavor(f.name, int(f.vcpus), int(f.ram), int(f.disk or 0), specs))
    return out


def _quota(openstack: Any) -> tuple[Quota, str]:
    try:
        a = openstack.conn.compute.get_limits().absolute
    except _sdk_errors() as e:
        return Quota(), f"Nova limits not read ({_why(e)}): the project quota is not bounded in the plan"
    return quota_from_limits({"maxTotalCores": a.total_cores, "totalCoresUsed": a.total_cores_used,
                              "maxTotalRAMSize": a.total_ram, "totalRAMUsed": a.total_ram_used}), ""


def _placement(openstack: Any) -> tuple[dict[str, HostFree], str]:
    """Free room per resource provider (by name = compute host), or a note saying why it is unknown."""
    out: dict[str, HostFree] = {}
    try:
        placement = openstack.conn.placement
        for rp in placement.resource_providers():
            inventories = {i.resource_class: {"total": i.total, "reserved": i.reserved,
                                              "allocation_ratio": i.allocation_ratio, "max_unit": i.max_unit}
                           for i in placement.resource_provider_inventories(rp)}
            if "VCPU" not in inventories and "MEMORY_MB" not in inventories:
                continue  # a nested provider (a GPU, a NUMA cell): not where a server's vCPUs are counted
            usages = placement.fetch_resource_provider_usages(rp).usages or {}
            out[rp.name] = host_free(inventories, usages)
    except _sdk_errors() as e:
        return {}, f"Placement not read ({_why(e)}): {PLACEMENT_UNKNOWN}"
    return out, ""


def _libvirt_hosts(libvirt: Any) -> tuple[dict[str, tuple[str, str]], dict[str, HostFree], list[str]]:
    """Domain UUID → (URI, name); per URI the room left; notes for a host that could not be read."""
    import libvirt as lv

    domains: dict[str, tuple[str, str]] = {}
    room: dict[str, HostFree] = {}
    notes = []
    for uri in libvirt.uris:
        try:
            conn = libvirt.connection(uri)
            _model, mem_mib, cpus, *_ = conn.getInfo()
            free_mib = conn.getFreeMemory() // 2**20
            used_cpus = used_mib = 0
            for dom in conn.listAllDomains():
                domains[dom.UUIDString().lower()] = (uri, dom.name())
                if dom.isActive():
                    _state, max_kib, _cur, vcpus, _t = dom.info()
                    used_cpus += vcpus
                    used_mib += max_kib // 1024
        except lv.libvirtError as e:
            notes.append(f"libvirt at {uri}: {e.get_error_message()}; its free capacity is unknown")
            continue
        except InfraError as e:  # from connection(): the URI and libvirt's words
            notes.append(f"{e}; its free capacity is unknown")
            continue
        room[uri] = HostFree(vcpus=max(0, int(cpus) - used_cpus),
                             memory_mib=max(0, min(int(free_mib), int(mem_mib) - used_mib)),
                             max_vcpus=int(cpus), max_memory_mib=int(mem_mib))
    return domains, room, notes
