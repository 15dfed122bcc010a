"""Nova's server lifecycle as a thread-safe state machine (no HTTP).

Follows shared/reference/scale-up.md §1 and §3.9: resize is a cold migration
(stop → redefine from the new flavor → start → VERIFY_RESIZE), confirm/revert,
SOFT reboot keeps the persistent definition, HARD reboot and start regenerate it
from the flavor, and the power-state sync stops a server whose guest was shut
down outside Nova. Work runs in daemon threads because `Hypervisor` calls block.
"""

from __future__ import annotations

import logging
import queue
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Literal

from console.lab.openstack.faults import (
    FAULT_KINDS,
    NO_VALID_HOST,
    BadRequest,
    Conflict,
    FaultKind,
    NotFound,
    traceback_for,
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
from console.lab.vm import Flavor, Hypervisor, VMSpec

log = logging.getLogger(__name__)

POWER_NOSTATE, POWER_RUNNING, POWER_SHUTDOWN = 0, 1, 4
SYNC_STOP_MESSAGE = "Instance shutdown by itself. Calling the stop API."

__all__ = [
    "FAULT_KINDS",
    "NO_VALID_HOST",
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
    "status_of",
]


def _now() -> datetime:
    return datetime.now(UTC)


def new_request_id() -> str:
    return f"req-{uuid.uuid4()}"


class _StopWorker(Exception):
    """Ends a worker: Nova is closing, or the failure has been recorded."""


class _Action:
    def __init__(self, action: str, request_id: str, server_id: str, user_id: str | None, project_id: str | None):
        self.action, self.request_id, self.server_id = action, request_id, server_id
        self.user_id, self.project_id = user_id, project_id
        self.start_time = self.updated_at = _now()
        self.message: str | None = None
        self.events: list[ActionEvent] = []

    def view(self) -> InstanceAction:
        return InstanceAction(self.action, self.request_id, self.server_id, self.user_id, self.project_id,
                              self.start_time, self.updated_at, self.message, tuple(self.events))


class _Server:
    def __init__(self, vm: VMSpec, project_id: str, user_id: str, address: str | None):
        self.vm = vm
        self.vm_state = "active"
        self.task_state: str | None = None
        self.power_state = POWER_RUNNING
        self.flavor = vm.flavor
        self.old_flavor: Flavor | None = None
        self.old_vm_state = "active"
        self.migration_status: str | None = None
        self.migration_seq = 0
        self.progress = 0
        self.fault: ServerFault | None = None
        self.project_id, self.user_id = project_id, user_id
        self.created = self.updated = _now()
        self.addresses = (address,) if address else ()
        self.actions: list[_Action] = []

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


class Nova:
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
        self._flavors: dict[str, Flavor] = {f.id: f for f in flavors}
        self._servers: dict[str, _Server] = {}
        for vm in servers:
            s = _Server(vm, project_id, user_id, (addresses or {}).get(vm.server_id))
            create = _Action("create", new_request_id(), vm.server_id, user_id, project_id)
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
        """Make the next resize of this server fail: "error", "no-valid-host" or "stuck"."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {', '.join(FAULT_KINDS)}")
        with self._lock:
            self._get(server_id)
            self._faults[server_id] = kind

    # ---- actions -------------------------------------------------------------------------------------

    def resize(self, server_id: str, flavor_id: str, *, request_id: str | None = None) -> str:
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
            fault = self._faults.pop(server_id, None)
            s.old_vm_state, s.task_state, s.progress, s.fault = s.vm_state, "resize_prep", 0, None
            s.migration_seq += 1
            s.migration_status = "pre-migrating"
            action = self._start_action(s, "resize", request_id)
            self._touch(s)
        self._spawn(self._run_resize, server_id, flavor, fault, action)
        return action.request_id

    def confirm_resize(self, server_id: str, *, request_id: str | None = None, auto: bool = False) -> str:
        with self._lock:
            s = self._get(server_id)
            self._check_state(s, "confirmResize", vm_states=("resized",))
            if s.migration_status != "finished":
                raise BadRequest("Instance has not been resized.")
            s.migration_status = "confirming"
            action = self._start_action(s, "confirmResize", request_id, system=auto)
            self._touch(s)
        self._spawn(self._run_confirm, server_id, action)
        return action.request_id

    def revert_resize(self, server_id: str, *, request_id: str | None = None) -> str:
        with self._lock:
            s = self._get(server_id)
            self._check_state(s, "revertResize", vm_states=("resized",))
            if s.migration_status != "finished":
                raise BadRequest("Instance has not been resized.")
            s.migration_status, s.task_state = "reverting", "resize_reverting"
            action = self._start_action(s, "revertResize", request_id)
            self._touch(s)
        self._spawn(self._run_revert, server_id, action)
        return action.request_id

    def reboot(self, server_id: str, kind: Literal["SOFT", "HARD"] = "SOFT", *, request_id: str | None = None) -> str:
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
            action = self._start_action(s, "reboot", request_id)
            self._touch(s)
        self._spawn(self._run_reboot, server_id, kind, action)
        return action.request_id

    def start(self, server_id: str, *, request_id: str | None = None) -> str:
        with self._lock:
            s = self._get(server_id)
            self._check_state(s, "start", vm_states=("stopped",))
            s.task_state = "powering-on"
            action = self._start_action(s, "start", request_id)
            self._touch(s)
        self._spawn(self._run_start, server_id, action)
        return action.request_id

    def stop(self, server_id: str, *, request_id: str | None = None) -> str:
        with self._lock:
            s = self._get(server_id)
            self._check_state(s, "stop", vm_states=("active", "error"))
            s.task_state = "powering-off"
            action = self._start_action(s, "stop", request_id)
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

    # ---- workers -----------------------------------------------------------------------------------

    def _run_resize(self, sid: str, flavor: Flavor, fault: FaultKind | None, action: _Action) -> None:
        s = self._servers[sid]
        old_flavor, was_active = s.flavor, s.old_vm_state == "active"
        with self._event(action, "conductor_migrate_server") as ev:
            self._sleep(self.timing.resize_prep)
            if fault == "no-valid-host":
                ev.fail("NoValidHost", NO_VALID_HOST)
        if fault == "no-valid-host":
            self._rollback_resize(sid, "error")
            return
        with self._event(action, "compute_prep_resize"):
            self._set(sid, progress=10, migration_status="migrating")
        with self._event(action, "compute_resize_instance") as ev:
            if flavor.disk_gb < old_flavor.disk_gb:  # libvirt's migrate_disk_and_power_off refuses first
                ev.fail("ResizeError", "Resize error: Unable to resize disk down.")
                self._rollback_resize(sid, "error")
                return
            self._set(sid, task_state="resize_migrating", progress=20)
            if self._hv.is_running(sid):
                self._hv.stop(sid)
            self._set(sid, power_state=POWER_SHUTDOWN, progress=40)
            self._sleep(self.timing.resize_migrating)
            if fault == "error":
                message = "Resize error: Failed to migrate the instance disk: lab-injected fault"
                ev.fail("ResizeError", message)
                self._error_out(sid, message, ev.traceback, migration_status="error")
                return
            if fault == "stuck":
                ev.stuck = True
                return  # like a compute service that died mid-migration: RESIZE forever
            self._set(sid, task_state="resize_migrated", progress=60, migration_status="post-migrating")
            self._sleep(self.timing.resize_migrated)
        with self._event(action, "compute_finish_resize"):
            self._set(sid, task_state="resize_finish", progress=80)
            self._hv.define_from_flavor(s.vm, flavor)
            self._set(sid, flavor=flavor, old_flavor=old_flavor)
            if was_active:
                self._hv.start(sid)
                self._set(sid, power_state=POWER_RUNNING)
            self._sleep(self.timing.resize_finish)
            self._set(sid, vm_state="resized", task_state=None, progress=100, migration_status="finished")
        window = self.timing.resize_confirm_window
        if window > 0:
            self._spawn(self._auto_confirm, sid, self._servers[sid].migration_seq, window)

    def _rollback_resize(self, sid: str, migration_status: str) -> None:
        with self._lock:
            s = self._servers[sid]
            self._set(sid, vm_state=s.old_vm_state, task_state=None, progress=0, migration_status=migration_status)

    def _auto_confirm(self, sid: str, seq: int, window: float) -> None:
        self._sleep(window)
        with self._lock:
            s = self._servers[sid]
            if s.migration_seq != seq or s.vm_state != "resized" or s.migration_status != "finished":
                return
        try:
            self.confirm_resize(sid, auto=True)
        except (Conflict, BadRequest) as exc:  # the user confirmed or reverted meanwhile
            log.debug("auto-confirm of %s skipped: %s", sid, exc)

    def _run_confirm(self, sid: str, action: _Action) -> None:
        with self._event(action, "compute_confirm_resize"):
            self._sleep(self.timing.confirm)
            s = self._servers[sid]
            self._set(sid, vm_state=s.old_vm_state, old_flavor=None, migration_status="confirmed")

    def _run_revert(self, sid: str, action: _Action) -> None:
        s = self._servers[sid]
        with self._event(action, "compute_revert_resize"):
            if self._hv.is_running(sid):
                self._hv.stop(sid)
            self._set(sid, power_state=POWER_SHUTDOWN)
            self._sleep(self.timing.revert / 2)
        with self._event(action, "compute_finish_revert_resize"):
            old = s.old_flavor or s.flavor
            self._hv.define_from_flavor(s.vm, old)
            self._set(sid, flavor=old, old_flavor=None)
            if s.old_vm_state == "active":
                self._hv.start(sid)
                self._set(sid, power_state=POWER_RUNNING)
            self._sleep(self.timing.revert / 2)
            self._set(sid, vm_state=s.old_vm_state, task_state=None, migration_status="reverted")

    def _run_reboot(self, sid: str, kind: str, action: _Action) -> None:
        with self._event(action, "compute_reboot_instance"):
            if kind == "SOFT":
                self._set(sid, task_state="reboot_pending")
                self._set(sid, task_state="reboot_started")
                try:
                    self._hv.soft_reboot(sid)
                except Exception as exc:  # Nova falls back to a hard reboot when the soft one fails
                    log.warning("soft reboot of %s failed (%s); falling back to a hard reboot", sid, exc)
                    self._hard_boot(sid)
            else:
                self._set(sid, task_state="reboot_pending_hard")
                self._set(sid, task_state="reboot_started_hard")
                self._hard_boot(sid)
            self._sleep(self.timing.reboot)
            self._set(sid, vm_state="active", task_state=None, power_state=POWER_RUNNING, fault=None)

    def _run_start(self, sid: str, action: _Action) -> None:
        with self._event(action, "compute_start_instance"):
            self._hard_boot(sid)  # power_on is _hard_reboot in the libvirt driver
            self._sleep(self.timing.power)
            self._set(sid, vm_state="active", task_state=None, power_state=POWER_RUNNING)

    def _run_stop(self, sid: str, action: _Action, already_stopped: bool | None) -> None:
        with self._event(action, "compute_stop_instance"):
            if not already_stopped and self._hv.is_running(sid):
                self._hv.stop(sid)
            self._sleep(self.timing.power)
            self._set(sid, vm_state="stopped", task_state=None, power_state=POWER_SHUTDOWN)

    def _hard_boot(self, sid: str) -> None:
        s = self._servers[sid]
        self._hv.define_from_flavor(s.vm, s.flavor)  # destroys + undefines first: hand edits are lost
        self._hv.start(sid)
        self._set(sid, power_state=POWER_RUNNING)

    def _on_stopped_outside(self, server_id: str) -> None:
        if server_id in self._servers and not self._closing.is_set():
            self._spawn(self._power_sync, server_id)

    def _power_sync(self, sid: str) -> None:
        self._sleep(self.timing.power_sync)
        if self._hv.is_running(sid):
            return
        with self._lock:
            s = self._servers[sid]
            if s.task_state is not None:
                return  # Nova skips instances with a pending task
            s.power_state = POWER_SHUTDOWN
            if s.vm_state != "active":
                self._touch(s)
                return
            log.warning("%s: %s", s.vm.instance_name, SYNC_STOP_MESSAGE)
            s.task_state = "powering-off"
            action = self._start_action(s, "stop", None, system=True)
            action.message = SYNC_STOP_MESSAGE
            self._touch(s)
        self._run_stop(sid, action, already_stopped=True)

    # ---- plumbing ----------------------------------------------------------------------------------

    def _get(self, server_id: str) -> _Server:
        s = self._servers.get(server_id)
        if s is None:
            raise NotFound(f"Instance {server_id} could not be found.")
        return s

    @staticmethod
    def _check_state(s: _Server, method: str, *, vm_states: tuple[str, ...],
                     task_states: tuple[str | None, ...] = (None,)) -> None:
        # nova.api.openstack.common.raise_http_conflict_for_instance_invalid_state
        if s.vm_state not in vm_states:
            raise Conflict(f"Cannot '{method}' instance {s.vm.server_id} while it is in vm_state {s.vm_state}")
        if s.task_state not in task_states:
            raise Conflict(f"Cannot '{method}' instance {s.vm.server_id} while it is in task_state {s.task_state}")

    def _start_action(self, s: _Server, name: str, request_id: str | None, *, system: bool = False) -> _Action:
        # periodic tasks run with an admin context that has no user or project
        user, project = (None, None) if system else (self.user_id, self.project_id)
        action = _Action(name, request_id or new_request_id(), s.vm.server_id, user, project)
        s.actions.append(action)
        return action

    def _event(self, action: _Action, name: str) -> _EventScope:
        return _EventScope(self, action, name, self._servers[action.server_id].vm.compute_host)

    def _record_event(self, action: _Action, index: int | None, event: ActionEvent, failed: bool) -> int:
        with self._lock:
            if index is None:
                action.events.append(event)
                index = len(action.events) - 1
            else:
                action.events[index] = event
            action.updated_at = _now()
            if failed:
                action.message = "Error"
            self._touch(self._servers[action.server_id])
            return index

    def _error_out(self, sid: str, message: str, traceback: str | None, **extra: object) -> None:
        fault = ServerFault(500, message, traceback or "", _now())
        self._set(sid, vm_state="error", task_state=None, fault=fault, **extra)

    def _set(self, sid: str, **changes: object) -> None:
        with self._lock:
            s = self._servers[sid]
            for key, value in changes.items():
                setattr(s, key, value)
            self._touch(s)

    def _touch(self, s: _Server) -> None:
        """Called with the lock held after a change: wake waiters, tell subscribers."""
        s.updated = _now()
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

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self._closing.wait(seconds):
            raise _StopWorker

    def _spawn(self, fn: Callable[..., None], *args: object) -> None:
        def run() -> None:
            try:
                fn(*args)
            except _StopWorker:
                log.debug("nova worker %s ended early", fn.__name__)
            except Exception:
                log.exception("nova worker %s failed", fn.__name__)
            finally:
                with self._lock:
                    self._threads.discard(threading.current_thread())
                    self._changed_cond.notify_all()

        t = threading.Thread(target=run, name=f"nova-{fn.__name__}", daemon=True)
        with self._lock:
            self._threads.add(t)
        t.start()


class _EventScope:
    """`with nova._event(action, "compute_resize_instance") as ev:` records start/finish/result.

    Hypervisor exceptions inside the block put the server in ERROR with a fault, as
    `_error_out_instance_on_exception` does, and end the worker.
    """

    def __init__(self, nova: Nova, action: _Action, name: str, host: str):
        self.nova, self.action, self.name, self.host = nova, action, name, host
        self.index: int | None = None
        self.start = _now()
        self.error: tuple[str, str] | None = None
        self.traceback: str | None = None
        self.stuck = False

    def fail(self, exc_name: str, message: str) -> None:
        self.error = (exc_name, message)
        self.traceback = traceback_for(exc_name, message, self.name)

    def __enter__(self) -> _EventScope:
        self.index = self.nova._record_event(
            self.action, None, ActionEvent(self.name, self.start, None, None, None, self.host, None), False)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc_type is _StopWorker or self.stuck:
            return False
        if exc is not None and not isinstance(exc, Exception):
            return False
        if exc is not None:
            self.fail(f"{type(exc).__module__}.{type(exc).__qualname__}", str(exc))
            log.warning("%s failed for %s: %s", self.name, self.action.server_id, exc)
        result, details = ("Error", self.error[1]) if self.error else ("Success", None)
        event = ActionEvent(self.name, self.start, _now(), result, self.traceback, self.host, details)
        self.nova._record_event(self.action, self.index, event, self.error is not None)
        if exc is not None:
            self.nova._error_out(self.action.server_id, str(exc), self.traceback)
            raise _StopWorker from exc  # stop the worker after recording the failure
        return False

