"""Nova's server lifecycle as a thread-safe state machine (no HTTP).

Follows shared/reference/scale-up.md §1 and §3.9: resize is a cold migration
(stop → redefine from the new flavor → start → VERIFY_RESIZE), confirm/revert,
SOFT reboot keeps the persistent definition, HARD reboot and start regenerate it
from the flavor, and the power-state sync stops a server whose guest was shut
down outside Nova. Work runs in daemon threads because `Hypervisor` calls block.
The workers are in `nova_transitions`, the mutable server/action records in
`nova_records`.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

from console.lab.openstack.faults import (
    FAULT_KINDS,
    NO_VALID_HOST,
    BadRequest,
    Conflict,
    FaultKind,
    NotFound,
)
from console.lab.openstack.model import (
    REBOOT_TASKS,
    ActionEvent,
    InstanceAction,
    NovaTiming,
    ServerFault,
    ServerView,
    status_of,
)
from console.lab.openstack.nova_capacity import NovaCapacity
from console.lab.openstack.nova_records import (
    POWER_RUNNING,
    POWER_SHUTDOWN,
    ActionRecord,
    ServerRecord,
    new_request_id,
    now,
)
from console.lab.openstack.nova_transitions import SYNC_STOP_MESSAGE, NovaTransitions
from console.lab.vm import ComputeHost, Flavor, Hypervisor, Quota, VMSpec

log = logging.getLogger(__name__)

__all__ = [
    "FAULT_KINDS",
    "NO_VALID_HOST",
    "POWER_RUNNING",
    "POWER_SHUTDOWN",
    "SYNC_STOP_MESSAGE",
    "ActionEvent",
    "BadRequest",
    "Conflict",
    "FaultKind",
    "InstanceAction",
    "NotFound",
    "Nova",
    "NovaTiming",
    "ServerFault",
    "ServerView",
    "new_request_id",
    "status_of",
]


class Nova(NovaTransitions, NovaCapacity):
    """Servers, flavors and instance actions of the lab cloud.

    Public methods validate synchronously (raising BadRequest / NotFound /
    Conflict with Nova's messages) and return at once; the transition runs in a
    daemon thread that calls the hypervisor.
    """

    def __init__(
        self,
        flavors: Iterable[Flavor],
        servers: Iterable[VMSpec],
        hypervisor: Hypervisor,
        timing: NovaTiming | None = None,
        *,
        project_id: str = "0d3c1f6a8b2e4c7d9e5f1a2b3c4d5e6f",
        user_id: str = "5a1e2b3c4d6f47a8b9c0d1e2f3a4b5c6",
        addresses: Mapping[str, str] | None = None,
        hosts: Iterable[ComputeHost] = (),
        quota: Quota | None = None,
    ) -> None:
        self.timing = timing or NovaTiming()
        self.project_id, self.user_id = project_id, user_id
        self._hv = hypervisor
        self._lock = threading.RLock()
        self._changed_cond = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._threads: set[threading.Thread] = set()
        self._subscribers: list[Callable[[ServerView], None]] = []
        self._notifications: queue.SimpleQueue[ServerView | None] = queue.SimpleQueue()
        self._notifier: threading.Thread | None = None
        self._faults: dict[str, FaultKind] = {}
        self._confirm_races: set[str] = set()  # servers whose next user confirm loses to the auto-confirm
        self._flavors: dict[str, Flavor] = {f.id: f for f in flavors}
        self._init_capacity(list(hosts), quota or Quota())
        self._servers: dict[str, ServerRecord] = {}
        for vm in servers:
            s = ServerRecord(vm, project_id, user_id, (addresses or {}).get(vm.server_id))
            create = ActionRecord("create", new_request_id(), vm.server_id, user_id, project_id)
            create.events.append(ActionEvent("compute__do_build_and_run_instance", s.created, s.created,
                                             "Success", None, vm.compute_host, None))
            s.actions.append(create)
            self._servers[vm.server_id] = s
        hypervisor.on_stopped_outside(self._on_stopped_outside)

    # ---- reading ---------------------------------------------------------------------------------

    def flavors(self) -> list[Flavor]:
        with self._lock:
            return list(self._flavors.values())

    def flavor(self, flavor_id: str) -> Flavor:
        with self._lock:
            if flavor_id not in self._flavors:
                raise NotFound(f"Flavor {flavor_id} could not be found.")
            return self._flavors[flavor_id]

    def servers(self) -> list[ServerView]:
        with self._lock:
            return [s.view() for s in self._servers.values()]

    def server(self, server_id: str) -> ServerView:
        with self._lock:
            return self._get(server_id).view()

    def actions(self, server_id: str) -> list[InstanceAction]:
        """Instance actions, newest first (as Nova lists them)."""
        with self._lock:
            return [a.view() for a in reversed(self._get(server_id).actions)]

    def action(self, server_id: str, request_id: str) -> InstanceAction:
        with self._lock:
            for a in self._get(server_id).actions:
                if a.request_id == request_id:
                    return a.view()
        raise NotFound(f"Action for request_id {request_id} on instance {server_id} not found")

    def subscribe(self, callback: Callable[[ServerView], None]) -> Callable[[], None]:
        """Call back with a snapshot after every state change; returns unsubscribe.

        Callbacks run in order on one notifier thread, never under Nova's lock, so they may
        call back into Nova; a slow callback delays only later notifications.
        """
        with self._lock:
            self._subscribers.append(callback)
            if self._notifier is None:
                self._notifier = threading.Thread(target=self._notify_loop, name="nova-notifier", daemon=True)
                self._notifier.start()

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def wait_for(self, server_id: str, predicate: Callable[[ServerView], bool], timeout: float = 10.0) -> ServerView:
        """Block until predicate(snapshot) holds; TimeoutError with the last snapshot otherwise."""
        with self._changed_cond:
            ok = self._changed_cond.wait_for(lambda: predicate(self._get(server_id).view()), timeout)
            view = self._get(server_id).view()
        if not ok:
            raise TimeoutError(f"server {server_id} still {view.status}/{view.task_state}")
        return view

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until no transition, power sync or auto-confirm timer is running; False on timeout."""
        with self._changed_cond:
            return self._changed_cond.wait_for(lambda: not self._threads, timeout)

    # ---- test hooks --------------------------------------------------------------------------------

    def inject_fault(self, server_id: str, kind: FaultKind) -> None:
        """Make the next resize of this server fail ("error", "no-valid-host", "stuck"), or be confirmed
        by Nova's periodic task just before the user's confirmResize ("auto-confirm": the user gets 409)."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {', '.join(FAULT_KINDS)}")
        with self._lock:
            self._get(server_id)
            self._faults[server_id] = kind

    # ---- actions -------------------------------------------------------------------------------------

    def resize(self, server_id: str, flavor_id: str, *, request_id: str | None = None,
               user_id: str | None = None) -> str:
        with self._lock:
            s = self._get(server_id)
            self._check_state(s, "resize", vm_states=("active", "stopped"))
            flavor = self._flavors.get(flavor_id)
            if flavor is None:
                raise BadRequest(f"Flavor {flavor_id} could not be found.")
            if flavor.id == s.flavor.id:
                raise BadRequest("When resizing, instances must change flavor!")
            if flavor.disk_gb == 0:
                raise BadRequest("Server disk was unable to be resized because: "
                                 "Resize to zero disk flavor is not allowed.")
            self._check_quota_for_upsize(s, flavor)  # the API's check: 403 before anything changes
            fault = self._faults.pop(server_id, None)
            if fault is None and not self._host_has_room(s, flavor):
                fault = "no-valid-host"  # the scheduler finds no host (the lab's only candidate is its own)
            s.resize_claim = flavor
            if fault == "auto-confirm":
                self._confirm_races.add(server_id)
                fault = None
            s.old_vm_state, s.task_state, s.progress, s.fault = s.vm_state, "resize_prep", 0, None
            s.migration_seq += 1
            s.migration_status = "pre-migrating"
            action = self._start_action(s, "resize", request_id, user_id=user_id)
            self._touch(s)
        self._spawn(self._run_resize, server_id, flavor, fault, action)
        return action.request_id

    def confirm_resize(self, server_id: str, *, request_id: str | None = None, user_id: str | None = None,
                       auto: bool = False) -> str:
        with self._lock:
            s = self._get(server_id)
            if not auto and server_id in self._confirm_races and s.vm_state == "resized":
                self._confirm_races.discard(server_id)
                self._confirm_now(s)  # _poll_unconfirmed_resizes got there first
            self._check_state(s, "confirmResize", vm_states=("resized",))
            if s.migration_status != "finished":
                raise BadRequest("Instance has not been resized.")
            s.migration_status = "confirming"
            action = self._start_action(s, "confirmResize", request_id, system=auto, user_id=user_id)
            self._touch(s)
        self._spawn(self._run_confirm, server_id, action)
        return action.request_id

    def _confirm_now(self, s: ServerRecord) -> None:
        """The periodic task's confirm, done at once (under the lock): ACTIVE with the new flavor."""
        action = self._start_action(s, "confirmResize", None, system=True)
        t = now()
        action.events.append(ActionEvent("compute_confirm_resize", t, t, "Success", None, s.vm.compute_host, None))
        s.vm_state, s.old_flavor, s.migration_status = s.old_vm_state, None, "confirmed"
        self._touch(s)

    def add_flavor(self, flavor: Flavor) -> None:
        """`openstack flavor create` (admin)."""
        with self._lock:
            if any(f.name == flavor.name or f.id == flavor.id for f in self._flavors.values()):
                raise Conflict(f"Flavor with name {flavor.name} already exists.")
            self._flavors[flavor.id] = flavor

    def revert_resize(self, server_id: str, *, request_id: str | None = None, user_id: str | None = None) -> str:
        with self._lock:
            s = self._get(server_id)
            self._check_state(s, "revertResize", vm_states=("resized",))
            if s.migration_status != "finished":
                raise BadRequest("Instance has not been resized.")
            s.migration_status, s.task_state = "reverting", "resize_reverting"
            action = self._start_action(s, "revertResize", request_id, user_id=user_id)
            self._touch(s)
        self._spawn(self._run_revert, server_id, action)
        return action.request_id

    def reboot(self, server_id: str, kind: Literal["SOFT", "HARD"] = "SOFT", *, request_id: str | None = None,
               user_id: str | None = None) -> str:
        kind = kind.upper()  # type: ignore[assignment]
        if kind not in ("SOFT", "HARD"):
            raise BadRequest(f"Invalid input for field/attribute type. Value: {kind}. "
                             f"'{kind}' is not one of ['HARD', 'Hard', 'hard', 'SOFT', 'Soft', 'soft']")
        with self._lock:
            s = self._get(server_id)
            if kind == "SOFT":
                self._check_state(s, "reboot", vm_states=("active",))
                s.task_state = "rebooting"
            else:
                self._check_state(s, "reboot", vm_states=("active", "stopped", "error", "paused", "suspended"),
                                  task_states=(None, *REBOOT_TASKS))
                s.task_state = "rebooting_hard"
            action = self._start_action(s, "reboot", request_id, user_id=user_id)
            self._touch(s)
        self._spawn(self._run_reboot, server_id, kind, action)
        return action.request_id

    def start(self, server_id: str, *, request_id: str | None = None, user_id: str | None = None) -> str:
        with self._lock:
            s = self._get(server_id)
            self._check_state(s, "start", vm_states=("stopped",))
            s.task_state = "powering-on"
            action = self._start_action(s, "start", request_id, user_id=user_id)
            self._touch(s)
        self._spawn(self._run_start, server_id, action)
        return action.request_id

    def stop(self, server_id: str, *, request_id: str | None = None, user_id: str | None = None) -> str:
        with self._lock:
            s = self._get(server_id)
            self._check_state(s, "stop", vm_states=("active", "error"))
            s.task_state = "powering-off"
            action = self._start_action(s, "stop", request_id, user_id=user_id)
            self._touch(s)
        self._spawn(self._run_stop, server_id, action, None)
        return action.request_id

    def reset_state(self, server_id: str, state: Literal["active", "error"] = "error") -> None:
        """Admin os-resetState: the way out of a stuck task."""
        if state not in ("active", "error"):
            raise BadRequest(f"Invalid input for field/attribute state. Value: {state}.")
        with self._lock:
            s = self._get(server_id)
            s.vm_state, s.task_state = state, None
            self._touch(s)

    def close(self, timeout: float = 5.0) -> None:
        """Abort pending delays and join the workers and the notifier."""
        self._closing.set()
        self._notifications.put(None)
        with self._lock:
            threads = list(self._threads) + ([self._notifier] if self._notifier else [])
        for t in threads:
            t.join(timeout)

    # ---- plumbing ----------------------------------------------------------------------------------

    def _get(self, server_id: str) -> ServerRecord:
        s = self._servers.get(server_id)
        if s is None:
            raise NotFound(f"Instance {server_id} could not be found.")
        return s

    @staticmethod
    def _check_state(s: ServerRecord, method: str, *, vm_states: tuple[str, ...],
                     task_states: tuple[str | None, ...] = (None,)) -> None:
        # nova.api.openstack.common.raise_http_conflict_for_instance_invalid_state
        if s.vm_state not in vm_states:
            raise Conflict(f"Cannot '{method}' instance {s.vm.server_id} while it is in vm_state {s.vm_state}")
        if s.task_state not in task_states:
            raise Conflict(f"Cannot '{method}' instance {s.vm.server_id} while it is in task_state {s.task_state}")

    def _start_action(self, s: ServerRecord, name: str, request_id: str | None, *,
                      system: bool = False, user_id: str | None = None) -> ActionRecord:
        # the caller's user (the project's admin by default); periodic tasks run with an admin
        # context that has no user or project
        user, project = (None, None) if system else (user_id or self.user_id, self.project_id)
        action = ActionRecord(name, request_id or new_request_id(), s.vm.server_id, user, project)
        s.actions.append(action)
        return action

    def _record_event(self, action: ActionRecord, index: int | None, event: ActionEvent, failed: bool) -> int:
        with self._lock:
            if index is None:
                action.events.append(event)
                index = len(action.events) - 1
            else:
                action.events[index] = event
            action.updated_at = now()
            if failed:
                action.message = "Error"
            self._touch(self._servers[action.server_id])
            return index

    def _error_out(self, sid: str, message: str, traceback: str | None, **extra: object) -> None:
        fault = ServerFault(500, message, traceback or "", now())
        self._set(sid, vm_state="error", task_state=None, fault=fault, **extra)

    def _set(self, sid: str, **changes: object) -> None:
        with self._lock:
            s = self._servers[sid]
            for key, value in changes.items():
                setattr(s, key, value)
            self._touch(s)

    def _touch(self, s: ServerRecord) -> None:
        """Called with the lock held after a change: wake waiters, tell subscribers."""
        s.updated = now()
        self._changed_cond.notify_all()
        if self._subscribers:
            self._notifications.put(s.view())

    def _notify_loop(self) -> None:
        while (view := self._notifications.get()) is not None:
            with self._lock:
                callbacks = list(self._subscribers)
            for cb in callbacks:
                try:
                    cb(view)
                except Exception:
                    log.exception("nova subscriber failed")
