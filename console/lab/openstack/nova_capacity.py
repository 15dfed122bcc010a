"""Nova's quota and its hosts' room: `GET /limits`, the quota check of a resize, the scheduler's host check
and what Placement reports per compute host (mixed into `Nova`).

Sources (openstack/nova 00a0304, openstack/placement 7ad9ef0):
- nova/api/openstack/compute/limits.py + views/limits.py: `absolute` = every quota's limit under its
  display name plus totalCoresUsed / totalRAMUsed / totalInstancesUsed ...; microversions 2.36 drop the
  network proxies' limits, 2.39 maxImageMeta, 2.57 the personality ones. Defaults: nova/conf/quota.py.
- nova/compute/api.py `_check_quota_for_upsize` + compute/utils.py `upsize_quota_delta`,
  `get_over_quota_detail`: only an upsize is checked, cores and ram deltas against limit - usage (usage
  counted from the instances' current flavors); over → nova.exception.TooManyInstances, which
  servers.py `_resize` turns into 403 "Quota exceeded for cores: Requested 6, but already used 30 of 36
  cores" (several resources: "cores, ram: Requested 6, 8192, but already used ...").
- A resize to the same host (the lab always resizes in place) moves the old flavor's allocation to the
  migration and claims the new flavor for the instance on the same provider (nova/conductor/tasks/migrate.py
  `replace_allocation_with_migration`), so the host needs the whole new flavor free, and holds both until
  confirmResize (drops the old) or revertResize (drops the new). No room → the scheduler's NoValidHost.
- placement/handlers/inventory.py, usage.py: inventories {total, reserved, min_unit, max_unit, step_size,
  allocation_ratio} per resource class, usages = the sum of the allocations against the provider.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any

from console.lab.openstack.faults import Forbidden
from console.lab.openstack.model import RESIZE_TASKS
from console.lab.openstack.nova_records import ServerRecord
from console.lab.vm import ROOMY_HOST, ComputeHost, Flavor, Quota

_RP_NS = uuid.UUID("3c0f5d2e-9a41-4b7e-8f60-5e2b1c7d9a33")
RESOURCE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")

# nova/conf/quota.py defaults for the limits the lab does not model
_OTHER_LIMITS = {"maxServerMeta": 128, "maxImageMeta": 128, "maxPersonality": 5, "maxPersonalitySize": 10240,
                 "maxTotalKeypairs": 100, "maxServerGroups": 10, "maxServerGroupMembers": 10,
                 "maxTotalFloatingIps": 10, "maxSecurityGroups": 10, "maxSecurityGroupRules": 20}
_OTHER_USED = {"totalServerGroupsUsed": 0, "totalFloatingIpsUsed": 0, "totalSecurityGroupsUsed": 0}
_DROPPED_236 = ("maxTotalFloatingIps", "totalFloatingIpsUsed", "maxSecurityGroups", "totalSecurityGroupsUsed",
                "maxSecurityGroupRules")
_DROPPED_257 = ("maxPersonality", "maxPersonalitySize")


def provider_uuid(host: str) -> str:
    """The compute node's resource provider UUID, stable per host name."""
    return str(uuid.uuid5(_RP_NS, host))


@dataclass(frozen=True)
class Provider:
    uuid: str
    name: str
    generation: int


def _amounts(f: Flavor) -> tuple[int, int, int]:
    return f.vcpus, f.ram_mb, f.disk_gb


class NovaCapacity:
    """The quota/host half of `Nova` (console/lab/openstack/nova.py mixes it in)."""

    _lock: threading.RLock
    _servers: dict[str, ServerRecord]
    hosts: dict[str, ComputeHost]
    quota: Quota

    def _init_capacity(self, hosts: list[ComputeHost], quota: Quota) -> None:
        self.hosts = {h.name: h for h in hosts}
        self.quota = quota
        self._generations: dict[str, tuple[int, tuple[int, ...]]] = {}

    # ---- quota -----------------------------------------------------------------------------------------

    def _quota_usage(self) -> dict[str, int]:
        """Counted as Nova counts it: the instances' current flavors."""
        servers = list(self._servers.values())
        return {"cores": sum(s.flavor.vcpus for s in servers), "ram": sum(s.flavor.ram_mb for s in servers),
                "instances": len(servers)}

    def limits(self, microversion: tuple[int, int] = (2, 1)) -> dict[str, Any]:
        """The `absolute` object of GET /limits at this microversion."""
        with self._lock:
            used = self._quota_usage()
        q = self.quota
        out: dict[str, Any] = {**_OTHER_LIMITS, "maxTotalCores": q.cores, "maxTotalRAMSize": q.ram_mb,
                               "maxTotalInstances": q.instances, "totalCoresUsed": used["cores"],
                               "totalRAMUsed": used["ram"], "totalInstancesUsed": used["instances"], **_OTHER_USED}
        dropped: tuple[str, ...] = ()
        if microversion >= (2, 36):
            dropped += _DROPPED_236
        if microversion >= (2, 39):
            dropped += ("maxImageMeta",)
        if microversion >= (2, 57):
            dropped += _DROPPED_257
        return {k: v for k, v in out.items() if k not in dropped}

    def _check_quota_for_upsize(self, s: ServerRecord, flavor: Flavor) -> None:
        """Nova's upsize check; the caller holds the lock."""
        deltas = {"cores": flavor.vcpus - s.flavor.vcpus, "ram": flavor.ram_mb - s.flavor.ram_mb}
        deltas = {k: v for k, v in deltas.items() if v > 0}
        limits = {"cores": self.quota.cores, "ram": self.quota.ram_mb}
        used = self._quota_usage()
        overs = sorted(k for k, d in deltas.items() if limits[k] >= 0 and used[k] + d > limits[k])
        if overs:
            def join(values: list[object]) -> str:
                return ", ".join(str(v) for v in values)

            names = join(list(overs))
            raise Forbidden(f"Quota exceeded for {names}: Requested {join([deltas[k] for k in overs])}, but already "
                            f"used {join([used[k] for k in overs])} of {join([limits[k] for k in overs])} {names}")

    # ---- hosts -------------------------------------------------------------------------------------------

    def _host(self, name: str) -> ComputeHost:
        return self.hosts.get(name) or ComputeHost(name, ROOMY_HOST.vcpus, ROOMY_HOST.memory_mb)

    def _allocations(self, s: ServerRecord) -> list[Flavor]:
        """The flavors a server holds on its host: its own, the old one until confirm/revert, the new one an
        in-flight resize has claimed."""
        held = [s.flavor]
        if s.old_flavor is not None:
            held.append(s.old_flavor)
        claim = s.resize_claim
        if claim is not None and s.task_state in RESIZE_TASKS and claim != s.flavor:
            held.append(claim)
        return held

    def _host_usage(self, host: str) -> tuple[int, int, int]:
        totals = [0, 0, 0]
        for s in self._servers.values():
            if s.vm.compute_host == host:
                for f in self._allocations(s):
                    for i, amount in enumerate(_amounts(f)):
                        totals[i] += amount
        return totals[0], totals[1], totals[2]

    def _host_has_room(self, s: ServerRecord, flavor: Flavor) -> bool:
        """The scheduler's question for a same-host resize: is the whole new flavor free beside what is held?"""
        h = self._host(s.vm.compute_host)
        cpus, ram = h.capacity()
        used = self._host_usage(s.vm.compute_host)
        return (used[0] + flavor.vcpus <= cpus and used[1] + flavor.ram_mb <= ram
                and used[2] + flavor.disk_gb <= h.disk_gb)

    # ---- Placement ---------------------------------------------------------------------------------------

    def _host_names(self) -> list[str]:
        names = list(self.hosts)
        return names + sorted({s.vm.compute_host for s in self._servers.values()} - set(names))

    def _generation(self, host: str, usage: tuple[int, ...]) -> int:
        """Placement bumps a provider's generation whenever its allocations change."""
        gen, seen = self._generations.get(host, (1, usage))
        if seen != usage:
            gen += 1
        self._generations[host] = (gen, usage)
        return gen

    def providers(self) -> list[Provider]:
        with self._lock:
            return [Provider(provider_uuid(h), h, self._generation(h, self._host_usage(h)))
                    for h in self._host_names()]

    def provider(self, rp_uuid: str) -> Provider | None:
        return next((p for p in self.providers() if p.uuid == rp_uuid), None)

    def inventories(self, host: str) -> dict[str, dict[str, Any]]:
        """What nova-compute's libvirt driver reports (update_provider_tree): max_unit = total."""
        h = self._host(host)
        return {
            "VCPU": {"total": h.vcpus, "reserved": h.reserved_vcpus, "min_unit": 1, "max_unit": h.vcpus,
                     "step_size": 1, "allocation_ratio": h.cpu_allocation_ratio},
            "MEMORY_MB": {"total": h.memory_mb, "reserved": h.reserved_memory_mb, "min_unit": 1,
                          "max_unit": h.memory_mb, "step_size": 1, "allocation_ratio": h.ram_allocation_ratio},
            "DISK_GB": {"total": h.disk_gb, "reserved": 0, "min_unit": 1, "max_unit": h.disk_gb, "step_size": 1,
                        "allocation_ratio": 1.0},
        }

    def usages(self, host: str) -> dict[str, int]:
        with self._lock:
            return dict(zip(RESOURCE_CLASSES, self._host_usage(host), strict=True))
