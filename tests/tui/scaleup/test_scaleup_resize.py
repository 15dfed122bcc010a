"""The scale-up screen on `seed-resize` (field report 2, offline): failures shown clearly, then the resize.

Order matters (one lab per module): the current flavor (nothing to do), a node held by another run's
Lease (refused), Nova NoValidHost (rolled back), the
field-report resize to m1.large (nginx Running, cpu 8 / memory 12268324Ki), then revert: refused once the
resize is confirmed, and done for a resize left in VERIFY_RESIZE.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from scaleuptui import log_text, open_screen, pick_flavor, run_confirmed, text_of

from console.tui.safety import ConfirmDanger
from console.tui.screens.scaleup import ScaleUpScreen

pytestmark = pytest.mark.lab

NODE = "kube-worker02"


def server_id(lab: Any) -> str:
    return next(vm.server_id for vm in lab.vms if vm.node_name == NODE)


def node_obj(lab: Any) -> dict:
    return lab.store.get("nodes", None, NODE)


async def test_current_flavor_is_nothing_to_do_in_the_plan_pane(resize_lab, settings_for, host, until):
    """Choosing the size the VM already has: "already at …; nothing changed", and nothing is offered to run."""
    app = host(ScaleUpScreen(NODE), settings_for(resize_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        await pick_flavor(pilot, until, screen, "m1.medium")
        assert screen.plan is not None and screen.plan.nothing_to_do
        plan_text = text_of(screen, "#su-plan")
        assert "already at flavor m1.medium" in plan_text and "nothing changed" in plan_text
        assert screen.steps.steps == []
        await pilot.press("r")  # nothing to run: a notice, no confirmation
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmDanger)
    assert not node_obj(resize_lab)["spec"].get("unschedulable")


async def test_a_node_held_by_another_run_is_refused_with_its_holder(resize_lab, settings_for, host, until):
    """The screen's runs take the node's Lease too: held by another machine's run, the plan is refused before
    the VM is read (Session.plan looks at the Lease first) and the screen says by whom; nothing changes."""
    from datetime import UTC, datetime

    from console.lab.nodelease import LEASES, micro_time

    holder = "bob@bastion-2/scale-up-kube-worker02-20261201T000000-beef"
    now = micro_time(datetime.now(UTC))
    resize_lab.store.create(LEASES, {
        "metadata": {"name": f"console-scale-up-{NODE}", "namespace": "default"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 600, "acquireTime": now, "renewTime": now}})
    try:
        app = host(ScaleUpScreen(NODE), settings_for(resize_lab))
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_screen(pilot, until)
            await pick_flavor(pilot, until, screen, "m1.large")
            await until(pilot, lambda: bool(screen.plan_error), 30, what="the plan refused")
            assert holder in screen.plan_error and "expires in" in screen.plan_error
            await pilot.press("r")  # nothing to confirm: no plan
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmDanger)
    finally:
        resize_lab.store.delete(LEASES, "default", f"console-scale-up-{NODE}")
    assert not node_obj(resize_lab)["spec"].get("unschedulable")
    assert resize_lab.nova.server(server_id(resize_lab)).flavor.name == "m1.medium"


async def test_log_lines_rewrap_when_the_layout_changes(resize_lab, settings_for, host, until):
    """80×24 keeps the log closed to its latest line, `l` opens it under the plan; 140 columns puts it beside: no
    entry may be cut at the edge."""
    app = host(ScaleUpScreen(NODE), settings_for(resize_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        await pick_flavor(pilot, until, screen, "m1.large")
        log = screen.log_pane
        await until(pilot, lambda: "plan:" in log_text(screen), 30, what="the plan in the log")
        assert not log.display and "▸ log: [" in str(screen.query_one("#su-log-line").render())
        await pilot.press("l")
        await until(pilot, lambda: log.display and log.scrollable_content_region.width > 0, 5, what="the log open")
        await pilot.pause()

        def check(what: str) -> None:
            width = log.scrollable_content_region.width
            assert width > 0
            assert all(strip.cell_length <= width for strip in log.lines), (what, width, [s.text for s in log.lines])
            shown = "".join(strip.text for strip in log.lines).replace(" ", "")
            for entry in log._entries:
                assert entry.replace(" ", "") in shown, f"{what}: entry cut: {entry!r}"

        check("at 80×24")
        narrow = log.scrollable_content_region.width
        await pilot.resize_terminal(140, 30)
        await until(pilot, lambda: screen.has_class("-wide") and log.scrollable_content_region.width != narrow,
                    5, what="the wide layout")
        await pilot.pause()
        check("at 140×30")


async def test_no_valid_host_is_shown_and_rolled_back(resize_lab, settings_for, host, until):
    sid = server_id(resize_lab)
    app = host(ScaleUpScreen(NODE), settings_for(resize_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        await pick_flavor(pilot, until, screen, "m1.large")
        assert screen.plan is not None and screen.plan.will_fit == ["default/nginx"]
        resize_lab.nova.inject_fault(sid, "no-valid-host")
        await run_confirmed(pilot, until, screen, timeout=90)
        result = screen.run.result
        assert result.status == "failed" and result.exit_code == 1
        assert screen.steps.status_of("wait-verify-resize") == "failed"
        assert screen.steps.status_of("cordon") == "undone"
        assert screen.steps.status_of("confirm-resize") == "pending"
        verdict = text_of(screen, "#su-verdict")
        assert "rolled back" in verdict and "No valid host was found" in verdict and "m1.medium" in verdict
        assert screen.query_one("#su-verdict").has_class("-bad")
        assert "capacity cpu 2 / memory 4030532Ki" in verdict
        assert "No valid host" in log_text(screen)
        rows = {r.key: r for r in screen.live.pods}
        assert rows["default/nginx"].phase == "Pending" and "Insufficient cpu" in rows["default/nginx"].why
    assert resize_lab.nova.server(sid).flavor.name == "m1.medium"
    assert not node_obj(resize_lab)["spec"].get("unschedulable")


async def test_field_report_resize_from_the_screen(resize_lab, settings_for, host, until, tmp_path):
    app = host(ScaleUpScreen(NODE), settings_for(resize_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        await pick_flavor(pilot, until, screen, "m1.large")
        plan_text = text_of(screen, "#su-plan")
        assert "2 vCPU / 4Gi → 8 vCPU / 12Gi" in plan_text and "makes fit: default/nginx" in plan_text
        confirm = await run_confirmed(pilot, until, screen, timeout=90)
        assert NODE in confirm.target and "m1.large" in confirm.target
        result = screen.run.result
        assert (result.status, result.exit_code) == ("done", 0), result.message
        assert all(s.status in ("done", "skipped") for s in screen.steps.steps)
        assert screen.live.capacity_ok and screen.live.vm_now.vcpus == 8
        verdict = text_of(screen, "#su-verdict")
        assert "✓ verified: kubelet capacity cpu 8 / memory 12268324Ki" in verdict
        assert "default/nginx Running on kube-worker02" in verdict
        log = log_text(screen)
        assert "resize server kube-worker02 to m1.large" in log and "done" in log
        # the target picker offers sizes from what the VM has now, and the finished run stays on screen
        await until(pilot, lambda: screen.info is not None and screen.info.vm is not None
                    and screen.info.vm.flavor == "m1.large", 30, what="the VM's new size for the picker")
        assert str(screen.info.current) == "8 vCPU / 12Gi"
        assert screen.run.result is result and "✓ verified" in text_of(screen, "#su-verdict")
    cap = node_obj(resize_lab)["status"]["capacity"]
    assert (cap["cpu"], cap["memory"]) == ("8", "12268324Ki")
    pod = resize_lab.store.get("pods", "default", "nginx")
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == NODE
    journal = next((tmp_path / "xdg_state_home" / "console" / "runbooks").glob("scale-up-*.json"))
    assert json.loads(journal.read_text())["status"] == "done"
    audit = (tmp_path / "xdg_state_home" / "console" / "audit.log").read_text()
    assert "runbook.scale-up.resize" in audit and "runbook.scale-up.confirm-resize" in audit


async def test_revert_is_refused_once_the_resize_is_confirmed(resize_lab, settings_for, host, until):
    app = host(ScaleUpScreen(NODE), settings_for(resize_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        await pick_flavor(pilot, until, screen, "m1.xlarge")
        # nginx now runs on the node without a controller: kubectl's drain (and the plan) needs --force
        assert screen.drain_blocked is not None and "default/nginx" in text_of(screen, "#su-plan")
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDanger), 5, what="the drain override confirm")
        await pilot.press("y")
        await until(pilot, lambda: screen.plan is not None, 30, what="the plan with --force")
        assert screen.plan.vm.flavor == "m1.large" and screen.plan.request.force
        await pilot.press("v")
        await until(pilot, lambda: bool(screen.revert_message), 20, what="revert check")
        assert "was confirmed" in screen.revert_message or "nothing to revert" in screen.revert_message
        assert not isinstance(app.screen, ConfirmDanger)
    assert resize_lab.nova.server(server_id(resize_lab)).flavor.name == "m1.large"


async def test_revert_a_resize_waiting_in_verify_resize(resize_lab, settings_for, host, until, tmp_path):
    # kube-worker01 (m1.medium) resized to m1.large and left unconfirmed, as by a console killed mid-run
    sid = next(vm.server_id for vm in resize_lab.vms if vm.node_name == "kube-worker01")
    resize_lab.nova.resize(sid, "4")
    resize_lab.nova.wait_for(sid, lambda s: s.vm_state == "resized" and s.task_state is None, timeout=30)
    app = host(ScaleUpScreen("kube-worker01"), settings_for(resize_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        await pick_flavor(pilot, until, screen, "m1.large")
        assert screen.plan is not None
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDanger), 20, what="revert confirmation")
        confirm = app.screen
        assert "revert" in confirm.action_name and "kube-worker01" in confirm.target
        assert "resize revert" in confirm.preview
        await pilot.press("y")
        await until(pilot, lambda: not screen.run.running and screen.revert_message.startswith(
            ("reverted", "revert of", "server")), 60, what="revert done")
        assert screen.revert_message.startswith("reverted"), screen.revert_message
        assert "back to m1.medium" in screen.revert_message and "kube-worker01 Ready with cpu 2" in \
            screen.revert_message
    server = resize_lab.nova.server(sid)
    assert server.flavor.name == "m1.medium" and server.vm_state == "active"
    assert resize_lab.store.get("nodes", None, "kube-worker01")["status"]["capacity"]["cpu"] == "2"
    # the revert is a runbook of the engine: its own journal and audit (console/runbook/revert.py)
    audit = (tmp_path / "xdg_state_home" / "console" / "audit.log").read_text()
    assert "runbook.revert.revert-resize" in audit
    [journal] = (tmp_path / "xdg_state_home" / "console" / "runbooks").glob("revert-kube-worker01-*.json")
    doc = json.loads(journal.read_text())
    assert doc["status"] == "done" and [st["status"] for st in doc["steps"]][:3] == ["done", "done", "done"]


async def test_unfinished_run_is_offered_and_resumed(resize_lab, settings_for, host, until):
    from dataclasses import asdict

    from console.runbook.journal import Journal
    from console.runbook.scaleup import ScaleUpRequest, resumed
    from console.runbook.session import Session

    # a run killed after "wait-node": its journal says running, the first six steps done. The VM has m1.large
    # by now, which a new plan reads as nothing to do: the journal gets the steps the run started with
    session = Session(settings_for(resize_lab))
    plan, _ = session.plan(ScaleUpRequest(NODE, flavor="m1.large"), new=True)
    plan = resumed(plan, {})
    journal = Journal.create("scale-up", NODE, asdict(plan.request), plan.steps, cluster=session.cluster,
                             infra=session.infra(plan.method, plan.vm.ref))
    for step in plan.steps[:6]:
        journal.mark(step["id"], "done")
    app = host(ScaleUpScreen(NODE), settings_for(resize_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        await until(pilot, lambda: screen.plan is not None and screen.journal is not None, 30, what="resume offer")
        assert screen.journal.run_id == journal.run_id
        assert f"unfinished run {journal.run_id}" in text_of(screen, "#su-status")
        assert "resuming run" in text_of(screen, "#su-plan")
        assert [s.status for s in screen.steps.steps][:7] == ["done"] * 6 + ["pending"]
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDanger), 5, what="confirmation")
        assert app.screen.action_name == "resume scale-up"
        await pilot.press("y")
        await until(pilot, lambda: screen.run.result is not None and screen.live is not None
                    and screen.live.vm_now is not None, 60, what="resumed run finished")
        assert screen.run.result.run_id == journal.run_id and screen.run.result.status == "done"
        skipped = [e.step for e in screen.run.events if e.kind == "step-skip" and e.message == "done in an earlier run"]
        assert skipped == [s["id"] for s in plan.steps[:6]]
    assert Journal.load(journal.run_id).doc["status"] == "done"
    assert resize_lab.nova.server(server_id(resize_lab)).flavor.name == "m1.large"
