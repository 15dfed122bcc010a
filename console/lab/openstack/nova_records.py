"""Nova's mutable records behind the snapshots it hands out: a server and its instance actions.

Only `Nova` (under its lock) and its transitions touch these; callers get the
immutable `ServerView` / `InstanceAction` from `view()`.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from console.lab.openstack.model import ActionEvent, InstanceAction, ServerFault, ServerView
from console.lab.vm import Flavor, VMSpec

POWER_RUNNING, POWER_SHUTDOWN = 1, 4


def now() -> datetime:
    return datetime.now(UTC)


def new_request_id() -> str:
    return f"req-{uuid.uuid4()}"


class ActionRecord:
    """One instance action (create, resize, reboot...) and its events."""

    def __init__(self, action: str, request_id: str, server_id: str, user_id: str | None, project_id: str | None):
        self.action, self.request_id, self.server_id = action, request_id, server_id
        self.user_id, self.project_id = user_id, project_id
        self.start_time = self.updated_at = now()
        self.message: str | None = None
        self.events: list[ActionEvent] = []

    def view(self) -> InstanceAction:
        return InstanceAction(self.action, self.request_id, self.server_id, self.user_id, self.project_id,
                              self.start_time, self.updated_at, self.message, tuple(self.events))


class ServerRecord:
    """One server's Nova state: vm/task/power state, flavors, migration, fault, actions."""

    def __init__(self, vm: VMSpec, project_id: str, user_id: str, address: str | None):
        self.vm = vm
        self.vm_state = "active"
        self.task_state: str | None = None
        self.power_state = POWER_RUNNING
        self.flavor = vm.flavor
        self.old_flavor: Flavor | None = None
        self.resize_claim: Flavor | None = None  # the flavor an in-flight resize claimed on the host
        self.old_vm_state = "active"
        self.migration_status: str | None = None
        self.migration_seq = 0
        self.progress = 0
        self.fault: ServerFault | None = None
        self.project_id, self.user_id = project_id, user_id
        self.created = self.updated = now()
        self.addresses = (address,) if address else ()
        self.actions: list[ActionRecord] = []

    def view(self) -> ServerView:
        vm = self.vm
        return ServerView(
            id=vm.server_id, name=vm.node_name, db_id=vm.db_id, instance_name=vm.instance_name,
            host=vm.compute_host, hypervisor_hostname=vm.compute_host, vm_state=self.vm_state,
            task_state=self.task_state, power_state=self.power_state, flavor=self.flavor,
            old_flavor=self.old_flavor, migration_status=self.migration_status, progress=self.progress,
            fault=self.fault, project_id=self.project_id, user_id=self.user_id, created=self.created,
            updated=self.updated, addresses=self.addresses,
        )
