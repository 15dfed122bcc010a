"""The lab's Nova virt driver: a ComputeDriver on the lab's real libvirtd, one libvirt connection per compute host
(each host's own daemon and URI, as `qemu+ssh://cmpNNN/system` is on a real cloud).

Nova loads it as it loads any driver (`compute_driver = lab.LabDriver` → `nova.virt.lab`, registered by
`nova_main`). It writes the lab's diskless guest the way Nova's libvirt driver names and describes it
(console/lab/domain_xml.py: domain `instance-XXXXXXXX`, UUID = server id, Nova's SMBIOS and CPU topology, the
flavor's vCPUs and memory) and follows nova/virt/libvirt/driver.py where it acts:

- spawn defines the domain from the flavor and starts it;
- power_on is a hard reboot (`power_on` calls `_hard_reboot`): the definition is written again from the flavor,
  so edits made with virsh are lost, as on a real compute host;
- a SOFT reboot starts the existing persistent definition again (the lab's guest honours ACPI at once);
- a resize is a cold migration: migrate_disk_and_power_off stops the domain on the source and leaves it defined,
  finish_migration defines and starts it on the destination from the new flavor, confirm_migration undefines it
  on the source (`_cleanup_resize`, other host only), finish_revert_migration defines and starts it on the source
  from the old flavor after the destination's destroy;
- the host's size is what get_available_resource and update_provider_tree report, so Placement's inventories,
  NoValidHost and quota are Nova's own.

Domain lifecycle events reach Nova as they do from the libvirt driver (nova/virt/libvirt/host.py
`_event_lifecycle_callback`, `_event_emit_delayed`): STOPPED after 15 s unless another event for the domain comes
first (a reboot), the others at once; so a domain stopped behind Nova's back (`virsh destroy`) makes Nova stop the
server (ComputeManager.handle_lifecycle_event → `_sync_instance_power_state`).

Everything else (volumes, interfaces, consoles) is Nova's own fake driver's: the lab's guests have none.

A hypervisor can misbehave: `faults.json` beside hosts.json maps a server id to what the lab's hypervisor does
on that server's next resize ("error": the destination refuses the domain; "stuck": the source never finishes
powering it off; "slow:N": the power-off takes N s), written by the lab (`stack.Cloud.inject_fault`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import libvirt
from nova import exception
from nova.compute import power_state
from nova.virt import event as virtevent
from nova.virt import fake

from console.lab.cloud.hosts import FAULTS_FILE, HOSTS_ENV, HostSpec, load_hosts, node_uuid
from console.lab.domain_xml import nova_domain_xml
from console.lab.libvirt_daemon import ensure_event_loop
from console.lab.vm import Flavor, VMSpec

# nova/virt/libvirt/guest.py LIBVIRT_POWER_STATE
_POWER = {
    libvirt.VIR_DOMAIN_NOSTATE: power_state.NOSTATE,
    libvirt.VIR_DOMAIN_RUNNING: power_state.RUNNING,
    libvirt.VIR_DOMAIN_BLOCKED: power_state.RUNNING,
    libvirt.VIR_DOMAIN_PAUSED: power_state.PAUSED,
    libvirt.VIR_DOMAIN_SHUTDOWN: power_state.SHUTDOWN,
    libvirt.VIR_DOMAIN_SHUTOFF: power_state.SHUTDOWN,
    libvirt.VIR_DOMAIN_CRASHED: power_state.CRASHED,
    libvirt.VIR_DOMAIN_PMSUSPENDED: power_state.SUSPENDED,
}
# nova/virt/libvirt/host.py _event_lifecycle_callback
_TRANSITION = {
    libvirt.VIR_DOMAIN_EVENT_STOPPED: virtevent.EVENT_LIFECYCLE_STOPPED,
    libvirt.VIR_DOMAIN_EVENT_STARTED: virtevent.EVENT_LIFECYCLE_STARTED,
    libvirt.VIR_DOMAIN_EVENT_SUSPENDED: virtevent.EVENT_LIFECYCLE_PAUSED,
    libvirt.VIR_DOMAIN_EVENT_RESUMED: virtevent.EVENT_LIFECYCLE_RESUMED,
}
STOPPED_EVENT_DELAY = 15.0  # host.py: StaticallyDelayingCancellableTaskExecutorWrapper(delay=15)


class LabDriver(fake.FakeDriver):
    # as LibvirtDriver's: a resize stays on its host where allow_resize_to_same_host says so
    capabilities: ClassVar[dict[str, bool]] = {**fake.FakeDriver.capabilities, "supports_migrate_to_same_host": True}

    def __init__(self, virtapi: Any, read_only: bool = False) -> None:
        super().__init__(virtapi, read_only)
        self._spec: HostSpec | None = None
        self._conn: Any = None
        self._lock = threading.Lock()
        self._delayed: dict[str, threading.Timer] = {}

    # -- the host ---------------------------------------------------------------------------------------
    def init_host(self, host: str) -> None:
        super().init_host(host)
        spec = load_hosts(os.environ[HOSTS_ENV]).get(host)
        if spec is None:
            raise exception.NovaException(f"no lab compute host {host!r} in {os.environ[HOSTS_ENV]}")
        self._spec = spec
        ensure_event_loop()  # before the connection that wants events
        self._conn = libvirt.open(spec.uri)
        self._conn.domainEventRegisterAny(None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._on_lifecycle, None)
        self.vcpus, self.memory_mb, self.local_gb = spec.vcpus, spec.memory_mb, spec.disk_gb

    def cleanup_host(self, host: str) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _on_lifecycle(self, conn: Any, dom: Any, event: int, detail: int, opaque: object) -> None:
        # libvirt's event thread: no libvirt calls and no Nova work here, only hand the event over
        transition = _TRANSITION.get(event)
        if transition is None:
            return
        uuid = dom.UUIDString()
        lifecycle = virtevent.LifecycleEvent(uuid, transition)
        with self._lock:
            pending = self._delayed.pop(uuid, None)
            if pending is not None:
                pending.cancel()  # a STOPPED followed by another event: a reboot, not a stop
            delay = STOPPED_EVENT_DELAY if transition == virtevent.EVENT_LIFECYCLE_STOPPED else 0.0
            timer = threading.Timer(delay, self._emit, (uuid, lifecycle))
            timer.daemon = True
            if delay:
                self._delayed[uuid] = timer
            timer.start()

    def _emit(self, uuid: str, lifecycle: Any) -> None:
        with self._lock:
            if self._delayed.get(uuid) is threading.current_thread():  # this delayed STOPPED is due now
                del self._delayed[uuid]
        self.emit_event(lifecycle)

    def _fault(self, instance: Any) -> str:
        path = Path(os.environ[HOSTS_ENV]).with_name(FAULTS_FILE)
        try:
            return str(json.loads(path.read_text()).get(instance.uuid, ""))
        except (OSError, ValueError):
            return ""

    @property
    def spec(self) -> HostSpec:
        assert self._spec is not None, "init_host first"
        return self._spec

    def get_host_ip_addr(self) -> str:
        return "127.0.0.1"

    def get_available_resource(self, nodename: str) -> dict[str, Any]:
        res: dict[str, Any] = super().get_available_resource(nodename)
        if res:
            # the resource tracker counts what the instances use; the driver says what the host has
            res.update(
                vcpus=self.vcpus,
                memory_mb=self.memory_mb,
                local_gb=self.local_gb,
                vcpus_used=0,
                memory_mb_used=0,
                local_gb_used=0,
                hypervisor_type="QEMU",
                uuid=node_uuid(nodename),
            )
        return res

    def get_nodenames_by_uuid(self, refresh: bool = False) -> dict[str, str]:
        return {node_uuid(n): n for n in self.get_available_nodes()}

    def update_provider_tree(self, provider_tree: Any, nodename: str, allocations: Any = None) -> None:
        s = self.spec
        provider_tree.update_inventory(
            nodename,
            {
                "VCPU": {
                    "total": s.vcpus,
                    "min_unit": 1,
                    "max_unit": s.vcpus,
                    "step_size": 1,
                    "allocation_ratio": s.cpu_allocation_ratio,
                    "reserved": s.reserved_vcpus,
                },
                "MEMORY_MB": {
                    "total": s.memory_mb,
                    "min_unit": 1,
                    "max_unit": s.memory_mb,
                    "step_size": 1,
                    "allocation_ratio": s.ram_allocation_ratio,
                    "reserved": s.reserved_memory_mb,
                },
                "DISK_GB": {
                    "total": s.disk_gb,
                    "min_unit": 1,
                    "max_unit": s.disk_gb,
                    "step_size": 1,
                    "allocation_ratio": 1.0,
                    "reserved": 0,
                },
            },
        )

    # -- what runs here ---------------------------------------------------------------------------------
    def _domains(self) -> list[Any]:
        return list(self._conn.listAllDomains())

    def list_instances(self) -> list[str]:
        return [d.name() for d in self._domains()]

    def list_instance_uuids(self) -> list[str]:
        return [d.UUIDString() for d in self._domains()]

    def instance_exists(self, instance: Any) -> bool:
        return self._lookup(instance) is not None

    def _lookup(self, instance: Any) -> Any:
        try:
            return self._conn.lookupByUUIDString(instance.uuid)
        except libvirt.libvirtError as e:
            if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise

    def get_info(self, instance: Any, use_cache: bool = True) -> Any:
        from nova.virt import hardware

        dom = self._lookup(instance)
        if dom is None:
            raise exception.InstanceNotFound(instance_id=instance.uuid)
        state, *_ = dom.info()
        return hardware.InstanceInfo(state=_POWER.get(state, power_state.NOSTATE), internal_id=dom.ID())

    # -- lifecycle --------------------------------------------------------------------------------------
    def _define(self, instance: Any) -> Any:
        """The persistent definition from the instance's flavor (`_get_guest_xml`), replacing one there."""
        f = instance.flavor
        vm = VMSpec(
            server_id=instance.uuid,
            db_id=instance.id,
            node_name=instance.display_name,
            compute_host=self.spec.name,
            flavor=Flavor(str(f.flavorid), f.name, f.vcpus, f.memory_mb, f.root_gb),
        )
        xml = nova_domain_xml(vm, vm.flavor, domain_type=self.spec.domain_type)  # type: ignore[arg-type]
        with self._lock:
            dom = self._lookup(instance)
            if dom is not None and dom.isActive():
                dom.destroy()
            return self._conn.defineXML(xml)

    def _from_flavor(self, instance: Any, power_on: bool) -> None:
        """The domain written from the flavor, started unless Nova asks for it powered off."""
        dom = self._define(instance)
        if power_on:
            dom.create()

    def spawn(
        self,
        context: Any,
        instance: Any,
        image_meta: Any,
        injected_files: Any,
        admin_password: Any,
        allocations: Any,
        network_info: Any = None,
        block_device_info: Any = None,
        power_on: bool = True,
        accel_info: Any = None,
    ) -> None:
        self._from_flavor(instance, power_on)

    def destroy(
        self,
        context: Any,
        instance: Any,
        network_info: Any,
        block_device_info: Any = None,
        destroy_disks: bool = True,
        destroy_secrets: bool = True,
    ) -> None:
        with self._lock:
            dom = self._lookup(instance)
            if dom is None:
                return
            if dom.isActive():
                dom.destroy()
            dom.undefine()

    def cleanup(self, *args: Any, **kwargs: Any) -> None:
        pass  # destroy undefined the domain already

    def power_off(self, instance: Any, timeout: int = 0, retry_interval: int = 0) -> None:
        dom = self._lookup(instance)
        if dom is None:
            raise exception.InstanceNotFound(instance_id=instance.uuid)
        if dom.isActive():
            dom.destroy()

    def power_on(
        self,
        context: Any,
        instance: Any,
        network_info: Any,
        block_device_info: Any = None,
        accel_info: Any = None,
        share_info: Any = None,
    ) -> None:
        self._define(instance).create()  # `_hard_reboot`

    def reboot(
        self,
        context: Any,
        instance: Any,
        network_info: Any,
        reboot_type: str,
        block_device_info: Any = None,
        bad_volumes_callback: Any = None,
        accel_info: Any = None,
        share_info: Any = None,
    ) -> None:
        dom = self._lookup(instance)
        if reboot_type.upper() == "SOFT" and dom is not None:
            if dom.isActive():
                dom.destroy()
            dom.create()  # the same persistent definition, a new QEMU process
            return
        self._define(instance).create()

    def migrate_disk_and_power_off(
        self,
        context: Any,
        instance: Any,
        dest: str,
        flavor: Any,
        network_info: Any,
        block_device_info: Any = None,
        timeout: int = 0,
        retry_interval: int = 0,
    ) -> str:
        fault = self._fault(instance)
        if fault.startswith("slow:"):
            time.sleep(float(fault.partition(":")[2]))
        while self._fault(instance) == "stuck":  # until the lab clears it
            time.sleep(0.2)
        dom = self._lookup(instance)
        if dom is not None and dom.isActive():
            dom.destroy()
        return "[]"  # no disks to move: the lab's guests are diskless

    def finish_migration(
        self,
        context: Any,
        migration: Any,
        instance: Any,
        disk_info: Any,
        network_info: Any,
        image_meta: Any,
        resize_instance: bool,
        allocations: Any,
        block_device_info: Any = None,
        power_on: bool = True,
        share_info: Any = None,
    ) -> None:
        if self._fault(instance) == "error":
            raise exception.NovaException(f"libvirt on {self.spec.name} refused the domain of {instance.uuid}")
        self._from_flavor(instance, power_on)

    def confirm_migration(self, context: Any, migration: Any, instance: Any, network_info: Any) -> None:
        if migration.source_compute != migration.dest_compute:
            self.destroy(context, instance, network_info)

    def finish_revert_migration(
        self,
        context: Any,
        instance: Any,
        network_info: Any,
        migration: Any,
        block_device_info: Any = None,
        power_on: bool = True,
        share_info: Any = None,
    ) -> None:
        self._from_flavor(instance, power_on)

    def get_instance_disk_info(self, instance: Any, block_device_info: Any = None) -> str:
        return "[]"
