"""Nova's API errors and the lab's injectable resize faults."""

from __future__ import annotations

from typing import Literal

# "auto-confirm": the resize succeeds, and when the user's confirmResize arrives Nova's periodic
# `_poll_unconfirmed_resizes` (resize_confirm_window) has just confirmed it: the user gets 409
FaultKind = Literal["error", "no-valid-host", "stuck", "auto-confirm"]
FAULT_KINDS: tuple[FaultKind, ...] = ("error", "no-valid-host", "stuck", "auto-confirm")

# nova.exception.NoValidHost with the scheduler's usual reason
NO_VALID_HOST = "No valid host was found. There are not enough hosts available."


class NovaError(Exception):
    """An API error: HTTP status plus Nova's message (rendered as {"<name>": {"code", "message"}})."""

    status = 500

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BadRequest(NovaError):
    status = 400


class Forbidden(NovaError):
    status = 403


class NotFound(NovaError):
    status = 404


class Conflict(NovaError):
    status = 409


# where each instance-action event runs in Nova, for plausible tracebacks
_EVENT_FRAMES = {
    "conductor_migrate_server": [
        ("nova/conductor/manager.py", 316, "migrate_server", "self._cold_migrate(context, instance, flavor,"),
        ("nova/conductor/manager.py", 398, "_cold_migrate", "task.execute()"),
        ("nova/conductor/tasks/migrate.py", 288, "_execute",
         "selection_lists = self.query_client.select_destinations("),
        ("nova/scheduler/client/query.py", 41, "select_destinations",
         "return self.scheduler_rpcapi.select_destinations(context, spec_obj,"),
    ],
    "compute_resize_instance": [
        ("nova/compute/manager.py", 6174, "_resize_instance",
         "disk_info = self.driver.migrate_disk_and_power_off("),
        ("nova/virt/libvirt/driver.py", 11823, "migrate_disk_and_power_off",
         "raise exception.InstanceFaultRollback("),
    ],
}


def traceback_for(exc_name: str, message: str, event: str) -> str:
    """A Python traceback shaped like the ones Nova stores in instance-action events."""
    frames = [("nova/compute/utils.py", 1483, "decorated_function",
               "return function(self, context, *args, **kwargs)")]
    frames += _EVENT_FRAMES.get(event, [("nova/compute/manager.py", 10000, event.split("_", 1)[-1], "...")])
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines.append(f'  File "/opt/stack/nova/{path}", line {line}, in {func}')
        lines.append(f"    {code}")
    qualified = exc_name if "." in exc_name else f"nova.exception.{exc_name}"
    lines.append(f"{qualified}: {message}")
    return "\n".join(lines) + "\n"
