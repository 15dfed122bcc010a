"""The one read model of a VM: what the hypervisor runs, what Nova believes, and which side is stale.

A VM's size has up to three witnesses that can disagree:
- the hypervisor (libvirt live vCPUs and balloon): what really runs — the truth wherever it can be read;
- Nova's flavor: what Nova will rebuild the domain from (hard reboot, resize, cold migration, evacuate,
  unshelve) and what placement counts;
- the kubelet's capacity: what the scheduler sees.
After a libvirt live scale-up of a Nova VM the hypervisor runs more than the flavor: Nova is out of date,
not the kubelet. The kubelet is stale when it reports less than the VM runs (vCPUs offline in the guest, a
kubelet that was not restarted). Sources: nova/virt/libvirt/driver.py `_hard_reboot` and `finish_migration`
call `_get_guest_xml` (regenerated from instance.flavor); nova/scheduler/utils.py `resources_from_flavor`.

`VmView` is built by the listers (console/infra/inventory.py) for the node table and by
`VmDescription.view` (console/infra/protocol.py) for the runbook, so every screen and the CLI say the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from console.infra.sizes import MiB, VmSize, fmt_mem
from console.kube.model import NodeInfo, Resources

# the guest kernel keeps some RAM for itself: MemTotal (the kubelet's memory capacity) is below the VM's RAM
KERNEL_OVERHEAD = 0.08
KERNEL_OVERHEAD_MIN = 256 * MiB

SIDES = ("nova", "kubelet")  # the order markers and legends list them in
LEGEND = {  # side: (marker, short text for status lines, long text for the help screen and README)
    "nova": ("*", "Nova flavor out of date",
             "Nova out of date: its flavor differs from what the hypervisor runs (a libvirt live scale-up); Nova "
             "regenerates the domain from the flavor on a hard reboot, resize, migration, evacuate or unshelve"),
    "kubelet": ("!", "kubelet stale",
                "kubelet stale: it reports another size than the VM runs (restart it, online the hot-added vCPUs)"),
}


@dataclass(frozen=True)
class Staleness:
    """Which witness disagrees with what the hypervisor runs."""

    kubelet: bool = False  # reports less (or more) than the VM runs
    nova: bool = False  # the flavor differs from what runs

    def __bool__(self) -> bool:
        return self.kubelet or self.nova

    @property
    def markers(self) -> str:
        """"*" (Nova) then "!" (kubelet), as the VM column shows them."""
        return "".join(LEGEND[side][0] for side in self.sides)

    @property
    def sides(self) -> tuple[str, ...]:
        return tuple(s for s in SIDES if getattr(self, s))

    def text(self) -> str:
        """Words for what is stale: "Nova flavor out of date", "kubelet stale", both, or ""."""
        return " · ".join(LEGEND[side][1] for side in self.sides)


def legend(sides: Iterable[str] = SIDES, *, long: bool = False) -> str:
    """The markers' legend: short for a status line, long for the help screen."""
    return " · ".join(f"{LEGEND[s][0]} {LEGEND[s][2 if long else 1]}" for s in SIDES if s in set(sides))


def short_size(size: VmSize) -> str:
    """12/16Gi: vCPUs / RAM, for narrow columns."""
    return f"{size.vcpus}/{fmt_mem(size.memory_mib * MiB)}"


@dataclass(frozen=True)
class VmView:
    """One VM as the console shows it. `running` is None where the hypervisor was not read (no libvirt URI
    for its host, or the domain is shut off); `flavor`/`flavor_size` are empty where Nova does not manage it."""

    server_id: str  # Nova server id = libvirt domain UUID (lower case), or the domain UUID alone
    name: str  # Nova server name, else the libvirt domain name
    status: str  # Nova status (ACTIVE, VERIFY_RESIZE, …) or the libvirt state
    running: VmSize | None = None
    flavor: str = ""
    flavor_size: VmSize | None = None
    domain: str = ""  # libvirt domain name (instance-0000xxxx for Nova), when libvirt was read
    # the compute host it runs on: Nova's OS-EXT-SRV-ATTR:host (admins see it), else the host of the libvirt URI
    # where its domain runs; a resize moves it (Nova resizes on another host unless allow_resize_to_same_host)
    host: str = ""

    @property
    def size(self) -> VmSize | None:
        """The size to show: what runs where known, else the flavor's."""
        return self.running or self.flavor_size

    @property
    def vcpus(self) -> int:
        return self.size.vcpus if self.size else 0

    @property
    def ram_mib(self) -> int:
        return self.size.memory_mib if self.size else 0

    @property
    def flavor_differs(self) -> bool:
        """Nova's flavor is not what the hypervisor runs (both known)."""
        return self.running is not None and self.flavor_size is not None and self.running != self.flavor_size

    def staleness(self, capacity: Resources | None = None) -> Staleness:
        """Which side is stale, given the kubelet's capacity (None: the kubelet is not compared).

        Running size known: the kubelet is stale when its capacity differs from it, Nova when its flavor does.
        Only Nova's flavor known: a kubelet reporting less than the flavor is stale; one reporting more shows
        that the VM runs more than the flavor — then it is Nova that is out of date."""
        nova = self.flavor_differs
        kubelet = False
        size = self.size
        if capacity is not None and size is not None and size.vcpus and size.memory_mib:
            less, more = _compare(capacity, size)
            if self.running is not None:
                kubelet = less or more
            else:
                kubelet = less and not more
                nova = nova or (more and not less and self.flavor_size is not None)
        return Staleness(kubelet=kubelet, nova=nova)

    def size_text(self) -> str:
        """"Nova: m1.large · running: 12 vCPU / 16Gi" when they differ, else "m1.large (8 vCPU / 12Gi)"."""
        if self.flavor_differs:
            return f"Nova: {self.flavor} · running: {self.running}"
        size = self.size
        if self.flavor:
            return f"{self.flavor} ({size})" if size else self.flavor
        return str(size) if size else "size unknown"

    def cell(self, stale: Staleness, wide: bool) -> str:
        """The VM column's text (markers excluded): the flavor when it is what runs, else the running size —
        and beside it (wide) the flavor the `*` marks as out of date."""
        if stale.nova and self.running is not None:
            if wide:
                return f"{short_size(self.running)} {self.flavor}".strip()
            return short_size(self.running)
        if stale.nova and self.flavor:  # running unknown, the kubelet shows more than the flavor
            return self.flavor
        return self.flavor or self.name


def _compare(capacity: Resources, size: VmSize) -> tuple[bool, bool]:
    """(the kubelet reports less than `size`, it reports more) — memory within the guest kernel's overhead."""
    ram = size.memory_mib * MiB
    overhead = max(int(ram * KERNEL_OVERHEAD), KERNEL_OVERHEAD_MIN)
    cpu = size.vcpus * 1000
    less = capacity.cpu_m < cpu or capacity.memory < ram - overhead
    more = capacity.cpu_m > cpu or capacity.memory > ram
    return less, more


def server_id_of(node: NodeInfo) -> str:
    if node.provider_id.startswith("openstack://"):
        return node.provider_id.rsplit("/", 1)[-1]
    return node.system_uuid.lower()


def match_nodes(nodes: Iterable[NodeInfo], vms: Mapping[str, VmView]) -> dict[str, VmView]:
    """Node name → its VM: by providerID (openstack:///<server id>), then systemUUID (= the server id / domain
    UUID), then name (the Nova server's or the domain's)."""
    by_name = {vm.domain: vm for vm in vms.values() if vm.domain}
    by_name.update({vm.name: vm for vm in vms.values() if vm.name})  # the server's name wins over a domain's
    out = {}
    for n in nodes:
        vm = vms.get(server_id_of(n)) or by_name.get(n.name)
        if vm is not None:
            out[n.name] = vm
    return out
