"""The offline resize as a project member: an openrc (OS_* variables, no clouds.yaml cloud named), Nova's
default policy (no OS-EXT-SRV-ATTR fields, os-resetState 403), through `python -m console scale-up`.

Real-system sources: nova/policies/admin_actions.py (reset_state: admin), servers.py (resize,
confirm/revert, reboot: project member), extended_server_attributes.py; the libvirt driver's
"Unable to resize disk down." (nova/virt/libvirt/driver.py migrate_disk_and_power_off); the 409 of a
confirm after resize_confirm_window (nova/api/openstack/common.py); `openstack server set --state`
and `openstack server reboot --hard` (python-openstackclient openstackclient/compute/v2/server.py).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from labtools import lab_env, run, wait_for

from console.lab.vm import Flavor
from console.lab.world import MEMBER_USER_ID as MEMBER_ID

pytestmark = pytest.mark.lab

OPENSTACK = Path(sys.executable).with_name("openstack")


def _openrc(lab: Any) -> dict[str, str]:
    values = {}
    for line in lab.state.openrc_member.read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        values[key] = shlex.split(value)[0]
    return values


def member_env(lab: Any, state: Path) -> dict[str, str]:
    """The lab's env with `source openrc-member` instead of OS_CLOUD/clouds.yaml."""
    env = {k: v for k, v in lab_env(lab).items() if k not in ("OS_CLOUD", "OS_CLIENT_CONFIG_FILE")}
    return env | _openrc(lab) | {"XDG_STATE_HOME": str(state)}


def scale_up_as_member(lab: Any, state: Path, h: Any, *args: str) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run([sys.executable, "-m", "console", "scale-up", *args, "-o", "json"],
                          env=member_env(lab, state), capture_output=True, text=True, timeout=150,
                          stdin=subprocess.DEVNULL)
    h.transcript.append(proc.stdout + proc.stderr)
    assert _openrc(lab)["OS_PASSWORD"] not in proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def _ready(node: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or [])


def test_openrc_member_file(resize_lab) -> None:
    rc = _openrc(resize_lab)
    assert rc["OS_USERNAME"] == "lab-member" and rc["OS_AUTH_URL"] == resize_lab.openstack_url
    assert (resize_lab.state.openrc_member.stat().st_mode & 0o777) == 0o600


def test_member_plan_says_what_needs_an_admin_and_has_no_host(resize_lab, tmp_path, h) -> None:
    code, doc, err = scale_up_as_member(resize_lab, tmp_path, h, "kube-worker02", "--flavor", "m1.large",
                                        "--dry-run")
    assert code == 0, err
    plan = doc["plan"]
    assert plan["vm"]["host"] == ""  # OS-EXT-SRV-ATTR: admin only, Nova names no compute host
    # nor the instance name: the domain is found by UUID = server id, its name read from libvirt
    assert plan["vm"]["from_hypervisor"] and plan["vm"]["instance_name"] == next(
        vm.instance_name for vm in resize_lab.vms if vm.node_name == "kube-worker02")
    assert plan["vm"]["ref"] == h.server_id(resize_lab, "kube-worker02") and plan["vm"]["disk_gb"] == 40
    assert any("not a cloud admin" in n and "openstack server set --state active" in n for n in plan["notes"])
    code, doc, err = h.scale_up(resize_lab, tmp_path, "kube-worker02", "--flavor", "m1.large", "--dry-run")
    assert code == 0, err  # the admin (OS_CLOUD=lab) sees the host and gets no such note
    assert doc["plan"]["vm"]["host"] == "cmp001" and not any("admin" in n for n in doc["plan"]["notes"])


def test_root_disk_smaller_than_the_servers_is_refused_at_plan_time(resize_lab, tmp_path, h) -> None:
    """More vCPUs and RAM but a 20 GB root disk for a server on m1.medium (40 GB): Nova would fail the resize."""
    resize_lab.nova.add_flavor(Flavor("c1", "c1.large", 8, 12288, 20))
    code, doc, err = scale_up_as_member(resize_lab, tmp_path, h, "kube-worker01", "--flavor", "c1.large", "--yes")
    assert code == 2, err
    msg = doc["message"]
    assert "20 GB root disk" in msg and "server's 40 GB" in msg and "Unable to resize disk down" in msg, msg
    assert "at least 40 GB" in msg
    assert h.nova_actions(resize_lab, "kube-worker01", "resize") == []
    assert not h.node_obj(resize_lab, "kube-worker01")["spec"].get("unschedulable")


def test_member_completes_the_offline_resize(resize_lab, tmp_path, h) -> None:
    code, _doc, err = scale_up_as_member(resize_lab, tmp_path, h, "kube-worker02", "--flavor", "m1.large", "--yes")
    assert code == 0, err
    cap = h.node_obj(resize_lab, "kube-worker02")["status"]["capacity"]
    assert cap["cpu"] == "8"
    pod = h.pod_obj(resize_lab, "nginx")
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == "kube-worker02"
    sid = h.server_id(resize_lab, "kube-worker02")
    assert resize_lab.nova.server(sid).flavor.name == "m1.large"
    recent = resize_lab.nova.actions(sid)[:2]
    assert [(a.action, a.user_id) for a in recent] == [("confirmResize", MEMBER_ID), ("resize", MEMBER_ID)]
    actions = {e["action"] for e in h.audit_entries(tmp_path)}
    assert {"runbook.scale-up.resize", "runbook.scale-up.confirm-resize"} <= actions


def test_stuck_resize_needs_an_admin_and_says_what_to_run(resize_lab, tmp_path, h) -> None:
    """os-resetState is admin only: the member's run stops "needs attention" with the admin's commands,
    and those commands (run as the admin) bring the server back."""
    node, sid = "kube-worker01", h.server_id(resize_lab, "kube-worker01")
    resize_lab.nova.inject_fault(sid, "stuck")
    code, doc, err = scale_up_as_member(resize_lab, tmp_path, h, node, "--flavor", "m1.large", "--yes",
                                        "--resize-timeout", "3")
    assert code == 4, err
    msg = doc["message"]
    assert "did not reach VERIFY_RESIZE" in msg
    assert "Policy doesn't allow os_compute_api:os-admin-actions:reset_state to be performed." in msg
    assert f"ask an admin to run `openstack server set --state active {sid}`" in msg, msg
    assert f"`openstack server reboot --hard {sid}`" in msg
    assert h.journals(tmp_path)[0]["status"] == "needs-attention"
    assert resize_lab.nova.server(sid).status == "RESIZE"  # nothing the member could do

    if not OPENSTACK.exists():
        pytest.skip("python-openstackclient is not installed")
    admin = lab_env(resize_lab)
    proc = subprocess.run([str(OPENSTACK), "server", "set", "--state", "active", sid], env=admin, input="y\n",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    run([str(OPENSTACK), "server", "reboot", "--hard", "--wait", sid], admin)
    server = resize_lab.nova.server(sid)
    assert (server.status, server.flavor.name) == ("ACTIVE", "m1.medium")
    wait_for(lambda: _ready(h.node_obj(resize_lab, node)), 60, what=f"{node} Ready after the hard reboot")


def test_confirm_that_meets_novas_auto_confirm_counts_as_done(resize_lab, tmp_path, h) -> None:
    node, sid = "kube-worker01", h.server_id(resize_lab, "kube-worker01")
    wait_for(lambda: _ready(h.node_obj(resize_lab, node)), 60, what=f"{node} Ready")
    resize_lab.nova.inject_fault(sid, "auto-confirm")
    code, _doc, err = scale_up_as_member(resize_lab, tmp_path, h, node, "--flavor", "m1.large", "--yes")
    assert code == 0, err
    [journal] = h.journals(tmp_path)
    data = h.journal_step(journal, "confirm-resize")["data"]
    assert data.pop("audit_intent") and data == {"auto_confirmed": True}  # and the id of its audit intent
    confirms = [a for a in resize_lab.nova.actions(sid) if a.action == "confirmResize"]
    assert confirms[0].user_id is None  # Nova's periodic task confirmed it, not the member
    assert h.node_obj(resize_lab, node)["status"]["capacity"]["cpu"] == "8"


def test_member_rollback_out_of_error_is_a_hard_reboot(resize_lab, tmp_path, h) -> None:
    """A resize that ends in ERROR: the member's rollback is a hard reboot (servers:reboot, member-allowed)."""
    node, sid = "kube-worker01", h.server_id(resize_lab, "kube-worker01")
    wait_for(lambda: _ready(h.node_obj(resize_lab, node)), 60, what=f"{node} Ready")
    before = resize_lab.nova.server(sid).flavor.name
    resize_lab.nova.inject_fault(sid, "error")
    code, doc, err = scale_up_as_member(resize_lab, tmp_path, h, node, "--flavor", "m1.xlarge", "--yes")
    assert code == 1, err
    assert "Rolled back: hard-rebooted the server out of ERROR" in doc["message"], doc["message"]
    server = resize_lab.nova.server(sid)
    assert (server.status, server.flavor.name) == ("ACTIVE", before)
    reboot = next(a for a in resize_lab.nova.actions(sid) if a.action == "reboot")
    assert reboot.user_id == MEMBER_ID
    assert not h.node_obj(resize_lab, node)["spec"].get("unschedulable")
