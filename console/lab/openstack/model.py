"""What the lab's Nova exposes: timing, snapshots of servers and instance actions, status mapping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from console.lab.vm import Flavor

RESIZE_TASKS = ("resize_prep", "resize_migrating", "resize_migrated", "resize_finish")
REBOOT_TASKS = ("rebooting", "reboot_pending", "reboot_started")
HARD_REBOOT_TASKS = ("rebooting_hard", "reboot_pending_hard", "reboot_started_hard")


@dataclass(frozen=True)
class NovaTiming:
    """Seconds spent in each phase. Defaults keep a whole resize under a second for tests."""

    resize_prep: float = 0.1
    resize_migrating: float = 0.1
    resize_migrated: float = 0.05
    resize_finish: float = 0.1
    confirm: float = 0.05
    revert: float = 0.2
    reboot: float = 0.2
    power: float = 0.1  # os-start / os-stop
    power_sync: float = 0.2  # Nova delays the libvirt STOPPED event by 15 s
    resize_confirm_window: float = 0.0  # auto-confirm VERIFY_RESIZE after this long; 0 = off


@dataclass(frozen=True)
class ServerFault:
    code: int
    message: str
    details: str
    created: datetime


@dataclass(frozen=True)
class ActionEvent:
    event: str
    start_time: datetime
    finish_time: datetime | None
    result: str | None  # "Success" / "Error" / None while running
    traceback: str | None
    host: str
    details: str | None


@dataclass(frozen=True)
class InstanceAction:
    action: str
    request_id: str
    server_id: str
    user_id: str | None
    project_id: str | None
    start_time: datetime
    updated_at: datetime
    message: str | None
    events: tuple[ActionEvent, ...]


@dataclass(frozen=True)
class ServerView:
    """A consistent snapshot of one server, as the API renders it."""

    id: str
    name: str
    db_id: int
    instance_name: str
    host: str
    hypervisor_hostname: str
    vm_state: str
    task_state: str | None
    power_state: int
    flavor: Flavor
    old_flavor: Flavor | None
    migration_status: str | None
    progress: int
    fault: ServerFault | None
    project_id: str
    user_id: str
    created: datetime
    updated: datetime
    addresses: tuple[str, ...]

    @property
    def status(self) -> str:
        return status_of(self.vm_state, self.task_state)


def status_of(vm_state: str, task_state: str | None) -> str:
    """Nova's `_STATE_MAP` (nova/api/openstack/common.py) for the states the lab uses."""
    if vm_state == "error":
        return "ERROR"
    if task_state in RESIZE_TASKS:
        return "RESIZE"
    if task_state == "resize_reverting":
        return "REVERT_RESIZE"
    if task_state in REBOOT_TASKS:
        return "REBOOT"
    if task_state in HARD_REBOOT_TASKS:
        return "HARD_REBOOT"
    return {"active": "ACTIVE", "stopped": "SHUTOFF", "resized": "VERIFY_RESIZE"}.get(vm_state, vm_state.upper())
