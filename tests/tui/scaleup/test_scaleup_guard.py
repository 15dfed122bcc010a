"""The scale-up screen's runs go through the App's Guard (console/guard.py), below the UI, on `seed-resize`.

- The audit log on a full device (/dev/full: every write fails with ENOSPC, full(4)): picked, run and confirmed
  from the screen, the run is refused before its first change and the screen says so, naming the log.
- A ConsoleApp whose settings are not read-only but whose Guard is: the screen offers the run and the
  confirmation (both decided from the settings), and the Session's Guard refuses it with
  "read-only: scale-up of NODE not done".

Nothing changes in either case, read back as an admin would: the node through the kubernetes client, the
server's status and flavor and its instance actions (GET /servers/{id}/os-instance-actions, nova's
instance_actions API) through openstacksdk, and nobody holding the node's Lease (console/runbook/lock.py: a
refused run hands it back as client-go does, holderIdentity ""; the Lease is not audited, by design).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import openstack
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from scaleuptui import log_text, open_screen, pick_flavor, text_of
from tuitools import console_app

from console.audit import AuditLog
from console.guard import Guard
from console.kube.connection import connect
from console.tui.safety import ConfirmDanger, allow_action
from console.tui.screens.scaleup import ScaleUpScreen

pytestmark = pytest.mark.lab

NODE = "kube-worker02"
LEASE = f"console-scale-up-{NODE}"


def real_state(lab: Any) -> dict[str, Any]:
    """The node, its server and the server's instance actions, through the real clients."""
    conn = openstack.connect(cloud="lab")  # OS_CLIENT_CONFIG_FILE names the lab's clouds.yaml (conftest)
    try:
        server = conn.compute.find_server(NODE, ignore_missing=False)
        actions = sorted(a.action for a in conn.compute.server_actions(server))
        flavor = server.flavor.get("original_name") or server.flavor.get("name")
        status = server.status
    finally:
        conn.close()
    api, _ = connect(str(lab.state.kubeconfig))
    try:
        node = client.CoreV1Api(api).read_node(NODE)
        try:  # released as client-go releases (holderIdentity "") or never taken: nobody holds the node
            held = bool(client.CoordinationV1Api(api).read_namespaced_lease(LEASE, "default").spec.holder_identity)
        except ApiException as e:
            if e.status != 404:
                raise
            held = False
    finally:
        api.close()
    return {"status": status, "flavor": flavor, "actions": actions, "unschedulable": bool(node.spec.unschedulable),
            "lease_held": held}


async def confirm_run(pilot: Any, until: Any, screen: ScaleUpScreen) -> None:
    """r, then y in the confirmation; wait until the run has ended (refused or not)."""
    await pilot.press("r")
    await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmDanger), 5, what="confirmation")
    await pilot.press("y")
    await until(pilot, lambda: not screen.run.running and (screen.run.result is not None or screen.run.error), 60,
                what="the run ended")


async def test_full_audit_log_refuses_the_run_before_any_change(resize_lab, settings_for, host, until):
    before = real_state(resize_lab)
    assert before == {"status": "ACTIVE", "flavor": "m1.medium", "actions": ["create"], "unschedulable": False,
                      "lease_held": False}
    log = Path(os.environ["XDG_STATE_HOME"]) / "console" / "audit.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.symlink_to("/dev/full")
    app = host(ScaleUpScreen(NODE), settings_for(resize_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        await pick_flavor(pilot, until, screen, "m1.large")
        await confirm_run(pilot, until, screen)
        result = screen.run.result
        assert result is not None, screen.run.error
        assert (result.status, result.exit_code, result.refusal) == ("refused", 2, "audit-unwritable")
        verdict = " ".join(text_of(screen, "#su-verdict").split())  # unwrapped
        assert verdict.startswith("✗ refused: ")
        assert f"audit log {log} cannot be written (No space left on device): " in verdict
        assert "nothing was changed" in verdict
        assert screen.query_one("#su-verdict").has_class("-bad")
        # the first mutating step is where the intent could not be written: shown failed, saying why
        cordon = screen.steps.step("cordon")
        assert cordon is not None and cordon.status == "failed" and str(log) in cordon.message
        assert "not done" in cordon.message
        assert [screen.steps.status_of(s) for s in ("drain", "resize", "confirm-resize")] == ["pending"] * 3
        assert "refused" in log_text(screen)
    assert real_state(resize_lab) == before


async def test_read_only_guard_refuses_the_run_the_screen_lets_start(resize_lab, settings_for, tmp_path, until):
    settings = settings_for(resize_lab)
    assert not settings.read_only
    audit = tmp_path / "guard-audit.log"
    app = console_app(settings, guard=Guard(read_only=True, audit=AuditLog(audit)))
    before = real_state(resize_lab)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: NODE in app.view.snapshot.nodes, 30, what="the nodes")
            await pilot.press("colon", *f"scale-up {NODE}", "enter")
            await until(pilot, lambda: isinstance(app.screen, ScaleUpScreen), 5, what="the scale-up screen")
            screen = await open_screen(pilot, until)
            assert allow_action(app, "run")  # the UI decides from the settings: the run is offered
            await pick_flavor(pilot, until, screen, "m1.large")
            await confirm_run(pilot, until, screen)
            assert screen.run.result is None  # refused before the Lease, the journal or a step
            assert screen.run.error == f"read-only: scale-up of {NODE} not done"
            assert f"✗ the run stopped: read-only: scale-up of {NODE} not done" in text_of(screen, "#su-verdict")
            assert f"run failed to start: read-only: scale-up of {NODE} not done" in " ".join(log_text(screen).split())
            assert all(s.status == "pending" for s in screen.steps.steps)
    finally:
        app.kube.stop()
    assert real_state(resize_lab) == before
    assert not audit.exists()  # refused before the intent record
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "console" / "runbooks").exists()
