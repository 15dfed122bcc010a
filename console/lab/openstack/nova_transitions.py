"""Nova's background transitions: the workers that drive a server through resize,
confirm/revert, reboot, start/stop and the power-state sync, calling the hypervisor.

`Nova` validates a request under its lock, then `_spawn`s one of these in a daemon
thread; each step is recorded as an instance-action event through `EventScope`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Literal

from console.lab.openstack.faults import NO_VALID_HOST, BadRequest, Conflict, FaultKind, traceback_for
from console.lab.openstack.model import ActionEvent, NovaTiming
from console.lab.openstack.nova_records import POWER_RUNNING, POWER_SHUTDOWN, ActionRecord, ServerRecord, now
from console.lab.vm import Flavor, Hypervisor

log = logging.getLogger(__name__)

SYNC_STOP_MESSAGE = "Instance shutdown by itself. Calling the stop API."


class StopWorker(Exception):
    """Ends a worker: Nova is closing, or the failure has been recorded."""


class NovaTransitions:
    """The worker half of `Nova` (mixed into it): runs in daemon threads, changes state only
    through Nova's `_set` / `_touch` / `_start_action` / `_error_out` under its lock."""

    timing: NovaTiming
    _hv: Hypervisor
    _lock: threading.RLock
    _changed_cond: threading.Condition
    _closing: threading.Event
    _threads: set[threading.Thread]
    _servers: dict[str, ServerRecord]

    # ---- Nova's own (console/lab/openstack/nova.py, which mixes this class in and defines them) -------------
    # declared here so the workers need not import Nova back

    def confirm_resize(self, server_id: str, *, request_id: str | None = None, user_id: str | None = None,
                       auto: bool = False) -> str:
        raise NotImplementedError

    def _start_action(self, s: ServerRecord, name: str, request_id: str | None, *,
                      system: bool = False, user_id: str | None = None) -> ActionRecord:
        raise NotImplementedError

    def _record_event(self, action: ActionRecord, index: int | None, event: ActionEvent, failed: bool) -> int:
        raise NotImplementedError

    def _error_out(self, sid: str, message: str, traceback: str | None, **extra: object) -> None:
        raise NotImplementedError

    def _set(self, sid: str, **changes: object) -> None:
        raise NotImplementedError

    def _touch(self, s: ServerRecord) -> None:
        raise NotImplementedError

    # ---- workers -----------------------------------------------------------------------------------

    def _run_resize(self, sid: str, flavor: Flavor, fault: FaultKind | None, action: ActionRecord) -> None:
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

    def _run_confirm(self, sid: str, action: ActionRecord) -> None:
        with self._event(action, "compute_confirm_resize"):
            self._sleep(self.timing.confirm)
            s = self._servers[sid]
            self._set(sid, vm_state=s.old_vm_state, old_flavor=None, migration_status="confirmed")

    def _run_revert(self, sid: str, action: ActionRecord) -> None:
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

    def _run_reboot(self, sid: str, kind: str, action: ActionRecord) -> None:
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

    def _run_start(self, sid: str, action: ActionRecord) -> None:
        with self._event(action, "compute_start_instance"):
            self._hard_boot(sid)  # power_on is _hard_reboot in the libvirt driver
            self._sleep(self.timing.power)
            self._set(sid, vm_state="active", task_state=None, power_state=POWER_RUNNING)

    def _run_stop(self, sid: str, action: ActionRecord, already_stopped: bool | None) -> None:
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

    # ---- worker plumbing ---------------------------------------------------------------------------

    def _event(self, action: ActionRecord, name: str) -> EventScope:
        return EventScope(self, action, name, self._servers[action.server_id].vm.compute_host)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self._closing.wait(seconds):
            raise StopWorker

    def _spawn(self, fn: Callable[..., None], *args: object) -> None:
        def run() -> None:
            try:
                fn(*args)
            except StopWorker:
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


class EventScope:
    """`with nova._event(action, "compute_resize_instance") as ev:` records start/finish/result.

    Hypervisor exceptions inside the block put the server in ERROR with a fault, as
    `_error_out_instance_on_exception` does, and end the worker.
    """

    def __init__(self, nova: NovaTransitions, action: ActionRecord, name: str, host: str):
        self.nova, self.action, self.name, self.host = nova, action, name, host
        self.index: int | None = None
        self.start = now()
        self.error: tuple[str, str] | None = None
        self.traceback: str | None = None
        self.stuck = False

    def fail(self, exc_name: str, message: str) -> None:
        self.error = (exc_name, message)
        self.traceback = traceback_for(exc_name, message, self.name)

    def __enter__(self) -> EventScope:
        self.index = self.nova._record_event(
            self.action, None, ActionEvent(self.name, self.start, None, None, None, self.host, None), False)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> Literal[False]:
        if exc_type is StopWorker or self.stuck:
            return False
        if exc is not None and not isinstance(exc, Exception):
            return False
        if exc is not None:
            self.fail(f"{type(exc).__module__}.{type(exc).__qualname__}", str(exc))
            log.warning("%s failed for %s: %s", self.name, self.action.server_id, exc)
        result, details = ("Error", self.error[1]) if self.error else ("Success", None)
        event = ActionEvent(self.name, self.start, now(), result, self.traceback, self.host, details)
        self.nova._record_event(self.action, self.index, event, self.error is not None)
        if exc is not None:
            self.nova._error_out(self.action.server_id, str(exc), self.traceback)
            raise StopWorker from exc  # stop the worker after recording the failure
        return False
