"""A project member (role `member`, OS_* variables from an openrc, no clouds.yaml cloud) against the lab.

What the lab's Nova must do, from nova master 00a0304:
- nova/policies/extended_server_attributes.py + api/openstack/compute/views/servers.py: no
  `OS-EXT-SRV-ATTR:*` fields for non-admins (hostname only at >= 2.90), no host_status;
- nova/policies/admin_actions.py: os-resetState is admin only; the 403 is PolicyNotAuthorized
  ("Policy doesn't allow %(action)s to be performed.", nova/exception.py);
- nova/policies/instance_actions.py + api/openstack/compute/instance_actions.py: members get the
  events (>= 2.51) without traceback, host or details;
- nova/policies/servers.py: resize, confirm/revert, reboot are project_member_or_admin;
- a confirmResize after the periodic auto-confirm: 409 "Cannot 'confirmResize' instance <id> while it is
  in vm_state active" (`raise_http_conflict_for_instance_invalid_state`, api/openstack/common.py).
The console side: console/infra/openstack.py through the real openstacksdk, and the real `openstack` CLI.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from openstack import exceptions

from console.config import load
from console.infra.openstack import OpenStackBackend, PolicyForbidden
from console.infra.protocol import InfraError
from console.kube.model import NodeInfo, Resources
from console.lab.cloudsyaml import write_openrc
from console.lab.openstack.nova import Nova
from console.lab.openstack.server import OpenStackAPI

W2 = "6f1b6d0e-1c4a-4f5e-9a51-3a1c2b3d4e02"  # kube-worker02 in conftest.SERVER_IDS
OPENSTACK = Path(sys.executable).with_name("openstack")
POLICY_403 = "Policy doesn't allow os_compute_api:os-admin-actions:reset_state to be performed."


@pytest.fixture
def openrc(api: OpenStackAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clouds_yaml: Path) -> dict[str, str]:
    """`source openrc-member` with OS_CLOUD unset; the admin's clouds.yaml stays (named by OS_CLIENT_CONFIG_FILE)
    but no cloud of it is named, so openstacksdk's default cloud is the OS_* one."""
    secret = "member-pw-" + os.urandom(6).hex()
    api.keystone.add_user("lab-member", secret, user_id="9b7c1d2e3f4a45b6c7d8e9f0a1b2c3d4")
    path = write_openrc(tmp_path / "openrc-member", auth_url=api.auth_url, username="lab-member",
                        password=secret, project="admin")
    values = {}
    for line in path.read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        values[key] = shlex.split(value)[0]
    monkeypatch.delenv("OS_CLOUD", raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return values


@pytest.fixture
def member(openrc: dict[str, str]) -> Any:
    import openstack

    c = openstack.connect()  # no cloud name: openstacksdk's "envvars" cloud
    yield c
    c.close()


def _node(name: str = "kube-worker02", *, system_uuid: str = "", provider_id: str = "") -> NodeInfo:
    r = Resources(0, 0, 0)
    return NodeInfo(name, "uid", "1", {}, (), "True", False, r, r, "v1.21.6", system_uuid, provider_id)


def _raw_server(conn: Any, version: str) -> dict[str, Any]:
    resp = conn.compute.get(f"/servers/{W2}", microversion=version)
    assert resp.status_code == 200
    return resp.json()["server"]


def test_member_sees_no_extended_server_attributes(member: Any, conn: Any) -> None:
    srv = member.compute.get_server(W2)
    assert srv.status == "ACTIVE" and srv.flavor.original_name == "m1.small"
    assert srv.instance_name is None and srv.compute_host is None and srv.hypervisor_hostname is None
    for version in ("2.1", "2.47", "2.89", "2.96"):
        body = _raw_server(member, version)
        hidden = sorted(k for k in body if k.startswith("OS-EXT-SRV-ATTR:"))
        assert hidden == (["OS-EXT-SRV-ATTR:hostname"] if version == "2.96" else []), version
        assert "host_status" not in body
        assert body["OS-EXT-STS:vm_state"] == "active"  # extended *status* is for everyone
    admin = _raw_server(conn, "2.96")
    assert admin["OS-EXT-SRV-ATTR:instance_name"] == "instance-00003351" and admin["host_status"] == "UP"
    # non-admins' admin-only list filters are dropped, not applied (remove_invalid_options)
    def listed(c: Any) -> int:
        return len(c.compute.get("/servers/detail?host=no-such-host", microversion="2.96").json()["servers"])

    assert (listed(member), listed(conn)) == (3, 0)


def test_member_reset_state_is_forbidden_with_novas_policy_message(member: Any, nova: Nova, api: OpenStackAPI,
                                                                   openrc: dict[str, str]) -> None:
    token = member.session.get_token()
    resp = requests.post(f"{api.compute_url}/servers/{W2}/action", json={"os-resetState": {"state": "active"}},
                         headers={"X-Auth-Token": token}, timeout=10)
    assert resp.status_code == 403
    assert resp.json() == {"forbidden": {"code": 403, "message": POLICY_403}}
    with pytest.raises(exceptions.ForbiddenException):
        member.compute.reset_server_state(W2, "error")
    assert nova.server(W2).vm_state == "active"


@pytest.mark.skipif(not OPENSTACK.exists(), reason="python-openstackclient is not installed")
def test_member_cli_server_set_state_fails_and_show_hides_host(openrc: dict[str, str], nova: Nova) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")} | openrc
    proc = subprocess.run([str(OPENSTACK), "server", "set", "--state", "active", "kube-worker02"], env=env,
                          input="y\n", capture_output=True, text=True, timeout=60)  # it asks "continue? [y/n]"
    assert proc.returncode != 0
    assert POLICY_403 in proc.stderr and "403" in proc.stderr
    assert openrc["OS_PASSWORD"] not in proc.stdout + proc.stderr
    out = subprocess.run([str(OPENSTACK), "server", "show", "kube-worker02", "-f", "json"], env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    shown = json.loads(out)  # OSC prints every attribute it knows; the ones Nova did not send are null
    assert shown["status"] == "ACTIVE" and "cmp02" not in out
    assert shown["OS-EXT-SRV-ATTR:host"] is None and shown["OS-EXT-SRV-ATTR:instance_name"] is None


def test_member_events_have_no_traceback(member: Any, conn: Any, nova: Nova) -> None:
    nova.inject_fault(W2, "no-valid-host")
    member.compute.resize_server(W2, member.compute.find_flavor("m1.large", ignore_missing=False))
    nova.wait_for(W2, lambda v: v.task_state is None and v.migration_status == "error")
    rid = next(a.request_id for a in member.compute.server_actions(W2) if a.action == "resize")
    mine = member.compute.get(f"/servers/{W2}/os-instance-actions/{rid}", microversion="2.96").json()
    (event,) = mine["instanceAction"]["events"]
    assert event["event"] == "conductor_migrate_server" and event["result"] == "Error"
    assert not {"traceback", "host", "details"} & set(event) and event["hostId"]
    old = member.compute.get(f"/servers/{W2}/os-instance-actions/{rid}", microversion="2.50").json()
    assert "events" not in old["instanceAction"]  # before 2.51 events are admin-only
    (admin_event,) = conn.compute.get_server_action(rid, W2).events
    assert "No valid host was found." in admin_event.traceback
    # the console names the failed event and where the reason is, instead of a traceback it cannot see
    backend = OpenStackBackend(load(path=Path("/nonexistent")).cloud)
    error = next(a.error for a in backend.actions(W2) if a.action == "resize")
    assert error and "conductor_migrate_server failed" in error and f"openstack server event show {W2}" in error


def test_member_resize_confirm_revert_and_hard_reboot_are_allowed(member: Any, nova: Nova) -> None:
    large = member.compute.find_flavor("m1.large", ignore_missing=False)
    member.compute.resize_server(W2, large)
    nova.wait_for(W2, lambda v: v.status == "VERIFY_RESIZE")
    member.compute.revert_server_resize(W2)
    nova.wait_for(W2, lambda v: v.status == "ACTIVE" and v.flavor.name == "m1.small")
    nova.inject_fault(W2, "error")
    member.compute.resize_server(W2, large)
    nova.wait_for(W2, lambda v: v.status == "ERROR")
    member.compute.reboot_server(W2, "HARD")  # the member's way out of ERROR
    nova.wait_for(W2, lambda v: v.status == "ACTIVE" and v.task_state is None)
    member.compute.resize_server(W2, large)
    nova.wait_for(W2, lambda v: v.status == "VERIFY_RESIZE")
    member.compute.confirm_server_resize(W2)
    nova.wait_for(W2, lambda v: v.status == "ACTIVE" and v.flavor.name == "m1.large")


def test_console_backend_as_member(openrc: dict[str, str], nova: Nova) -> None:
    """console/infra/openstack.py from the settings an openrc gives: mapping, no admin fields, 403, 409."""
    settings = load(path=Path("/nonexistent"))
    assert settings.cloud == "envvars"
    backend = OpenStackBackend(settings.cloud)
    assert backend.find_server_id(_node(system_uuid=W2.upper())) == W2  # systemUUID = server id
    assert backend.find_server_id(_node(provider_id=f"openstack:///{W2}")) == W2
    assert backend.find_server_id(_node()) == W2  # by exact name
    st = backend.server(W2)
    assert (st.instance_name, st.host, st.flavor, st.disk_gb) == (None, "", "m1.small", 20)
    assert {f.name: f.disk_gb for f in backend.flavors()}["m1.large"] == 40
    with pytest.raises(PolicyForbidden, match="Policy doesn't allow os_compute_api:os-admin-actions:reset_state"):
        backend.reset_state(W2, "active")

    flavors = {f.name: f for f in backend.flavors()}
    nova.inject_fault(W2, "auto-confirm")
    backend.resize(W2, flavors["m1.medium"])
    nova.wait_for(W2, lambda v: v.status == "VERIFY_RESIZE")
    with pytest.raises(exceptions.ConflictException,
                       match=f"Cannot 'confirmResize' instance {W2} while it is in vm_state active"):
        backend.conn.compute.confirm_server_resize(W2)  # the periodic task got there first
    assert nova.server(W2).status == "ACTIVE" and nova.server(W2).flavor.name == "m1.medium"
    confirms = [a for a in nova.actions(W2) if a.action == "confirmResize"]
    assert len(confirms) == 1 and confirms[0].user_id is None  # Nova's own (periodic) confirm

    nova.inject_fault(W2, "auto-confirm")
    backend.resize(W2, flavors["m1.large"])
    nova.wait_for(W2, lambda v: v.status == "VERIFY_RESIZE")
    assert backend.confirm(W2) is False  # 409, and the server is ACTIVE: Nova confirmed it
    assert nova.server(W2).flavor.name == "m1.large"
    w3 = "6f1b6d0e-1c4a-4f5e-9a51-3a1c2b3d4e03"  # kube-worker03, no fault: the confirm is ours
    backend.resize(w3, flavors["m1.medium"])
    nova.wait_for(w3, lambda v: v.status == "VERIFY_RESIZE")
    assert backend.confirm(w3) is True


def test_wrong_openrc_password_names_the_auth_url_not_the_secret(openrc: dict[str, str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = "wrong-" + openrc["OS_PASSWORD"]
    monkeypatch.setenv("OS_PASSWORD", wrong)
    backend = OpenStackBackend(load(path=Path("/nonexistent")).cloud)
    with pytest.raises(InfraError) as info:
        backend.server(W2)
    text = str(info.value)
    assert "401" in text or "requires authentication" in text
    assert wrong not in text and openrc["OS_PASSWORD"] not in text
    monkeypatch.setenv("OS_AUTH_URL", "http://127.0.0.1:9/identity/v3")  # nothing listens on the discard port
    refused = re.escape("cannot connect to OpenStack at http://127.0.0.1:9/identity/v3")
    with pytest.raises(InfraError, match=refused) as info:
        OpenStackBackend("envvars").server(W2)
    assert wrong not in str(info.value)
