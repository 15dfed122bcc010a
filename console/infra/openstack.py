"""OpenStack backend (openstacksdk): map node → server, flavors, resize / confirm / revert, soft reboot.

Facts from shared/reference/scale-up.md §1-2: pass a Flavor object (a name is
sent as an id → 400); at ≥2.47 `server.flavor` has no id, compare by name/
vcpus/ram; NoValidHost returns the server to ACTIVE with the old flavor and no
`fault` — the error is in the instance actions' events.

As a project member (Nova's default policy, nova/policies/): no
`OS-EXT-SRV-ATTR:*` fields (instance_name and host are None/""), no traceback
in instance-action events, and os-resetState answers 403 (`PolicyForbidden`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from console.infra.mapping import find_server
from console.infra.protocol import InfraError, VmDescription
from console.infra.sizes import FlavorInfo
from console.kube.model import NodeInfo

ENVVARS_CLOUD = "envvars"  # openstacksdk's cloud made of OS_* variables (openstack/config/loader.py)


def _why(e: BaseException) -> str:
    """console/faults.py's reason and hint (a wrong password is not "unreachable"), else the library's text."""
    from console.faults import classify, describe

    fault = classify(e)
    if fault is None:
        return describe(e)
    if fault.kind.endswith("-unreachable"):  # mid-run: the step's message says which API went away
        return f"OpenStack API unreachable: {fault.message}"
    return f"{fault.why} — {fault.check}"


class PolicyForbidden(InfraError):
    """Nova's policy refused the call (HTTP 403): the user's role may not do it; an admin can."""


@dataclass(frozen=True)
class ServerState:
    id: str
    name: str
    status: str  # ACTIVE | RESIZE | VERIFY_RESIZE | REVERT_RESIZE | ERROR | SHUTOFF | REBOOT ...
    vm_state: str
    task_state: str | None
    flavor: str
    vcpus: int
    ram_mib: int
    fault: str | None
    instance_name: str | None  # None without the admin-only OS-EXT-SRV-ATTR fields
    host: str  # "" likewise
    disk_gb: int = 0  # root disk of the current flavor (0: unknown, or a volume-backed flavor)


@dataclass(frozen=True)
class ActionRecord:
    action: str
    request_id: str
    message: str | None
    error: str | None  # the failed event's details (Nova's message), else its traceback's last line
    start_time: str


def disk_refusal(current_disk_gb: int, current_flavor: str, flavor: FlavorInfo) -> str | None:
    """Why Nova would refuse the flavor's root disk, or None.

    Nova's API only refuses a zero-disk flavor; the libvirt driver then fails the resize in
    `migrate_disk_and_power_off` with "Resize error: Unable to resize disk down." (root_gb smaller than
    the instance's, unless volume-backed) and rolls back — so the plan refuses it up front.
    """
    if current_disk_gb and flavor.disk_gb < current_disk_gb:
        return (f"flavor {flavor.name} has a {flavor.disk_gb} GB root disk, smaller than the server's "
                f"{current_disk_gb} GB (flavor {current_flavor}): Nova cannot shrink a root disk (the resize "
                f"would fail with \"Resize error: Unable to resize disk down.\"); pick a flavor with a root disk "
                f"of at least {current_disk_gb} GB")
    return None


def where(cloud: str | None) -> str:
    """The cloud as a message names it: its clouds.yaml name, or the openrc's auth URL (never a secret)."""
    if cloud in (None, ENVVARS_CLOUD, os.environ.get("OS_CLOUD_NAME")) and os.environ.get("OS_AUTH_URL"):
        return f"at {os.environ['OS_AUTH_URL']} (from the OS_* environment)"
    return f"cloud {cloud or os.environ.get('OS_CLOUD') or '(default)'}"


def check_config_files() -> None:
    """A FaultError (bad-clouds-yaml, exit 2) naming the file when the clouds.yaml or secure.yaml openstacksdk
    would read is not a regular file: its loader opens the first of each list that exists (openstack/config/
    loader.py OpenStackConfig._load_yaml_json_file, OS_CLIENT_CONFIG_FILE / OS_CLIENT_SECURE_FILE first) and would
    wait on a FIFO for ever."""
    from openstack.config import loader

    from console.faults import EXIT_BAD_FILE, Fault, FaultError
    from console.userfile import check_regular

    for override, files in (("OS_CLIENT_CONFIG_FILE", loader.CONFIG_FILES),
                            ("OS_CLIENT_SECURE_FILE", loader.SECURE_FILES), ("", loader.VENDOR_FILES)):
        first = next((p for p in [os.environ.get(override, "") if override else "", *files]
                      if p and os.path.exists(p)), None)
        if first is None:
            continue
        try:
            check_regular(first)
        except OSError as e:
            hint = f"point {override} at the file itself" if override else "move it aside"
            raise FaultError(Fault("bad-clouds-yaml", "clouds.yaml", f"{first}: {e.strerror}", hint,
                                   EXIT_BAD_FILE)) from e


class OpenStackBackend:
    kind = "openstack"

    def __init__(self, cloud: str | None = None, *, conn: Any = None) -> None:
        self.cloud = cloud
        self._conn = conn

    @property
    def conn(self) -> Any:
        if self._conn is None:
            import openstack

            check_config_files()  # a FaultError: cli.main's bad-clouds-yaml, exit 2
            try:
                conn = openstack.connect(cloud=self.cloud) if self.cloud else openstack.connect()
                conn.compute  # noqa: B018 — authenticates and discovers Nova: a wrong password fails here
                self._conn = conn
            except Exception as e:  # config errors come in many classes; name the cloud and move on
                raise InfraError(f"cannot connect to OpenStack {where(self.cloud)}: {_why(e)}") from e
        return self._conn

    def identity(self) -> dict[str, Any]:
        """Which cloud and project this is: Keystone's auth URL and the token's project (the id, as
        openstacksdk's current_project_id reads it from the token scope, and the configured name)."""
        auth = self.conn.config.get_auth_args()
        project_id = self._call("reading the token's project", lambda: self.conn.current_project_id)
        return {"auth_url": str(auth.get("auth_url") or ""), "project_id": project_id,
                "project": auth.get("project_name")}

    def _call(self, what: str, fn: Any, *args: Any, **kw: Any) -> Any:
        from keystoneauth1.exceptions import ClientException
        from openstack import exceptions

        try:
            return fn(*args, **kw)
        except exceptions.ForbiddenException as e:
            raise PolicyForbidden(f"{what}: {e.details or e}") from e
        except exceptions.SDKException as e:
            raise InfraError(f"{what}: {e}") from e
        except ClientException as e:  # a wrong password (401), connection refused, timeouts (keystoneauth)
            raise InfraError(f"{what}: {_why(e)}") from e

    # -- mapping ---------------------------------------------------------------------------------
    def find_server_id(self, node: NodeInfo) -> str:
        """providerID → systemUUID → name (console.infra.mapping.find_server), one GET or list per try."""
        import re

        compute = self.conn.compute

        def by_id(sid: str) -> Any:
            from openstack import exceptions

            def get() -> Any:
                try:
                    return compute.get_server(sid)
                except exceptions.NotFoundException:
                    return None

            return self._call(f"looking up server {sid}", get)

        def by_name(name: str) -> list[Any]:
            found = self._call(f"listing servers named {name}",
                               lambda: list(compute.servers(name=f"^{re.escape(name)}$")))
            return [s for s in found if s.name == name]

        return find_server(node, by_id, by_name).server.id

    def server(self, server_id: str) -> ServerState:
        s = self._call(f"reading server {server_id}", self.conn.compute.get_server, server_id)
        flavor = s.flavor or {}
        fault = (s.fault or {}).get("message") if isinstance(s.fault, dict) else None
        name = flavor.get("original_name") or flavor.get("name") or flavor.get("id") or ""
        return ServerState(
            id=s.id, name=s.name, status=s.status, vm_state=s.vm_state or "", task_state=s.task_state,
            flavor=name, vcpus=int(flavor.get("vcpus") or 0), ram_mib=int(flavor.get("ram") or 0),
            fault=fault, instance_name=getattr(s, "instance_name", None), host=getattr(s, "compute_host", "") or "",
            disk_gb=int(flavor.get("disk") or 0),
        )

    def describe(self, node: NodeInfo) -> VmDescription:
        st = self.server(self.find_server_id(node))
        return VmDescription(
            backend="openstack", ref=st.id, name=st.name, running=st.status not in ("SHUTOFF", "ERROR"),
            vcpus=st.vcpus, vcpus_max_live=st.vcpus, vcpus_config=st.vcpus, vcpus_max_config=st.vcpus,
            memory_mib=st.ram_mib, memory_max_mib=st.ram_mib, memory_max_config_mib=st.ram_mib,
            flavor=st.flavor, status=st.status, host=st.host, nova_server_id=st.id, instance_name=st.instance_name,
            disk_gb=st.disk_gb,
        )

    def roles(self) -> tuple[str, ...]:
        """The token's roles on the project (Keystone), e.g. ("member", "reader") for a project member."""
        access = self._call("reading the token's roles", self.conn.session.auth.get_access, self.conn.session)
        return tuple(access.role_names or ())

    def flavors(self) -> list[FlavorInfo]:
        items = self._call("listing flavors", lambda: list(self.conn.compute.flavors()))
        return [FlavorInfo(f.name, int(f.vcpus), int(f.ram), id=f.id, disk_gb=int(f.disk or 0)) for f in items]

    def servers(self) -> list[Any]:
        """Every server with its details in one call (console/infra/inventory.py joins them with libvirt)."""
        return self._call("listing servers", lambda: list(self.conn.compute.servers(details=True)))

    def actions(self, server_id: str) -> list[ActionRecord]:
        """Instance actions, newest first, with the error of a failed event."""
        out = []
        items = self._call("listing instance actions", lambda: list(self.conn.compute.server_actions(server_id)))
        for a in items:
            error = None
            if a.message:
                full = self._call("reading instance action", self.conn.compute.get_server_action,
                                  a.request_id, server_id)
                for ev in full.events or []:
                    # Nova's own message of the failure (events' `details`, microversion 2.84: "No valid host was
                    # found. ..."), else the traceback's last line, which older Novas end with the exception
                    details = (getattr(ev, "details", None) or "").strip()
                    if ev.result == "Error" and details:
                        error = details
                    elif ev.result == "Error" and ev.traceback:
                        error = ev.traceback.strip().splitlines()[-1]
                    elif ev.result == "Error" and error is None:  # members get no traceback (policy)
                        error = (f"event {ev.event} failed (Nova shows why to admins only: openstack server "
                                 f"event show {server_id} {a.request_id})")
            out.append(ActionRecord(a.action, a.request_id, a.message, error, str(a.start_time or "")))
        out.sort(key=lambda r: r.start_time, reverse=True)
        return out

    # -- mutations -------------------------------------------------------------------------------
    def resize(self, server_id: str, flavor: FlavorInfo) -> str | None:
        """POST resize; returns the request id of the new instance action when it can be found."""
        f = self._call(f"finding flavor {flavor.name}", self.conn.compute.find_flavor, flavor.id or flavor.name,
                       ignore_missing=False)
        before = {a.request_id for a in self.actions(server_id)}
        self._call(f"resizing server {server_id} to {flavor.name}", self.conn.compute.resize_server, server_id, f)
        new = [a for a in self.actions(server_id) if a.action == "resize" and a.request_id not in before]
        return new[0].request_id if new else None

    def confirm(self, server_id: str) -> bool:
        """True when this call confirmed; False when Nova had already confirmed it (resize_confirm_window).

        A late confirmResize gets 409 "Cannot 'confirmResize' instance <id> while it is in vm_state active"
        (`raise_http_conflict_for_instance_invalid_state`, nova/api/openstack/common.py); re-read to tell
        that from a real conflict.
        """
        from openstack import exceptions

        try:
            self._call("confirming the resize", self.conn.compute.confirm_server_resize, server_id)
            return True
        except InfraError as e:
            if not isinstance(e.__cause__, exceptions.ConflictException):
                raise
            st = self.server(server_id)
            if st.status in ("ACTIVE", "SHUTOFF") and st.task_state is None:
                return False
            raise

    def revert(self, server_id: str) -> None:
        self._call("reverting the resize", self.conn.compute.revert_server_resize, server_id)

    def soft_reboot(self, server_id: str) -> str | None:
        before = {a.request_id for a in self.actions(server_id)}
        self._call("soft-rebooting the server", self.conn.compute.reboot_server, server_id, "SOFT")
        new = [a for a in self.actions(server_id) if a.action == "reboot" and a.request_id not in before]
        return new[0].request_id if new else None

    def hard_reboot(self, server_id: str) -> None:
        """Nova regenerates the domain from the server's flavor and starts it (the way out of ERROR)."""
        self._call("hard-rebooting the server", self.conn.compute.reboot_server, server_id, "HARD")

    def reset_state(self, server_id: str, state: str = "active") -> None:
        """Admin os-resetState: clears a task that will never finish (a compute service that died mid-resize)."""
        self._call(f"resetting the server state to {state} (admin only)", self.conn.compute.reset_server_state,
                   server_id, state)

    def wait(self, server_id: str, predicate: Any, timeout: float, *, interval: float = 0.1) -> ServerState:
        """Poll the server (Nova has no watch) with backoff up to 0.5 s until `predicate(state)`."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.server(server_id)
            if predicate(st):
                return st
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"server {st.name} still {st.status} (task {st.task_state or '-'}, flavor {st.flavor}) "
                    f"after {timeout:g}s"
                )
            time.sleep(interval)
            interval = min(interval * 1.5, 0.5)
