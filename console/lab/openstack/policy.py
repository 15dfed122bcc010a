"""Nova's default API policy for the lab's two kinds of callers: a project admin and a project member.

From nova/policies/ (nova master 00a0304): base.py maps `rule:context_is_admin`
to the admin role and `project_member_or_admin` / `project_reader_or_admin` to
the project's members and readers. What a member notices:
- admin_actions.py: os-resetState (`os_compute_api:os-admin-actions:reset_state`) is admin only → 403;
- extended_server_attributes.py: every `OS-EXT-SRV-ATTR:*` field (host, instance_name,
  hypervisor_hostname, and the 2.3 ones) is admin only, except `hostname` at ≥ 2.90 (views/servers.py);
- servers.py: `show:host_status` is admin only; non-admins' unknown list filters (host, …) are
  dropped by `remove_invalid_options`;
- instance_actions.py: `events` (with the traceback and, at ≥ 2.62, the host) is admin only; at
  ≥ 2.51 members get the events without them, and `events:details` (≥ 2.84) is admin only;
- resize, confirmResize, revertResize, reboot, os-start, os-stop are `project_member_or_admin`.
"""

from __future__ import annotations

from console.lab.openstack.faults import Forbidden

RESET_STATE = "os_compute_api:os-admin-actions:reset_state"
EXTENDED_ATTRIBUTES = "os_compute_api:os-extended-server-attributes"
INSTANCE_ACTION_EVENTS = "os_compute_api:os-instance-actions:events"
LIMITS_OTHER_PROJECT = "os_compute_api:limits:other_project"  # limits.py: GET /limits?tenant_id= is admin only

# list filters a non-admin may use (`_get_server_search_options` in nova/api/openstack/compute/servers.py)
MEMBER_SERVER_FILTERS = ("reservation_id", "name", "status", "image", "flavor", "ip", "changes-since")
MEMBER_SERVER_FILTERS_283 = ("vm_state", "task_state", "power_state", "user_id")


def authorize(rule: str, *, admin: bool) -> None:
    """`context.can(rule)` for an admin-only rule: Nova's PolicyNotAuthorized as a 403."""
    if not admin:
        raise Forbidden(f"Policy doesn't allow {rule} to be performed.")
