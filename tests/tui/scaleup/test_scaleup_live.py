"""The scale-up screen on `seed-live` (field report 2, online): 12 vCPU / 16Gi through libvirt, from a
Pending pod; read-only mode hides the run; a target the host cannot give is shown as a clear failure."""

from __future__ import annotations

from typing import Any

import pytest
from scaleuptui import log_text, open_screen, run_confirmed, text_of
from screentext import region_text, screen_text
from textual.widgets import Input

from console.tui.safety import ConfirmDanger
from console.tui.screens.scaleup import ScaleUpScreen
from console.tui.widgets.runbook_pickers import TargetPicker

pytestmark = pytest.mark.lab

NODE = "kube-worker02"


def node_obj(lab: Any) -> dict:
    return lab.store.get("nodes", None, NODE)


async def pick_size(pilot: Any, until: Any, screen: ScaleUpScreen, vcpus: str, memory: str) -> None:
    await pilot.press("t")
    await until(pilot, lambda: isinstance(pilot.app.screen, TargetPicker), 5, what="target picker")
    picker = pilot.app.screen
    picker.query_one("#target-vcpus", Input).value = vcpus
    picker.query_one("#target-memory", Input).value = memory
    await pilot.click("#target-use")
    await until(pilot, lambda: not isinstance(pilot.app.screen, TargetPicker), 5, what="picker closed")
    await until(pilot, lambda: (screen.plan is not None and screen.target is not None
                                and str(screen.target.vcpus) == vcpus) or bool(screen.plan_error), 30, what="plan")


async def test_read_only_hides_run_and_revert(live_lab, settings_for, host, until):
    app = host(ScaleUpScreen(NODE, "default/nginx-large"), settings_for(live_lab, read_only=True))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        keys = {b.binding.id for b in screen.active_bindings.values() if b.enabled}
        assert "scale-up-pick-target" in keys and "scale-up-toggle-log" in keys
        assert "scale-up-run" not in keys and "scale-up-revert" not in keys
        await pilot.press("r")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmDanger)
    assert not node_obj(live_lab)["spec"].get("unschedulable")


async def test_more_vcpus_than_the_host_allows_is_shown(live_lab, settings_for, host, until):
    app = host(ScaleUpScreen(NODE), settings_for(live_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        await pick_size(pilot, until, screen, "1000", "16Gi")
        assert screen.plan is not None and screen.plan.method == "libvirt"
        await run_confirmed(pilot, until, screen, timeout=60)
        result = screen.run.result
        assert result.status == "failed" and result.exit_code == 1
        verdict = text_of(screen, "#su-verdict")
        assert "1000" in verdict and "nothing was changed" in verdict and "rolled back" in verdict
        assert "✗" in str(screen.steps.render_steps())
    assert not node_obj(live_lab)["spec"].get("unschedulable")
    assert node_obj(live_lab)["status"]["capacity"]["cpu"] == "8"


async def test_field_report_live_scale_up_from_a_pending_pod(live_lab, settings_for, host, until):
    app = host(ScaleUpScreen(NODE, "default/nginx-large"), settings_for(live_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, until)
        # started from the pod: a target that makes it fit is proposed and planned right away
        await until(pilot, lambda: screen.plan is not None or bool(screen.plan_error), 30, what="proposed plan")
        assert screen.target is not None and screen.plan is not None
        assert screen.plan.will_fit == ["default/nginx-large"]
        assert "default/nginx-large" in text_of(screen, "#su-pods")
        assert "will fit" in text_of(screen, "#su-pods")
        await pick_size(pilot, until, screen, "12", "16Gi")
        assert screen.plan.will_fit == ["default/nginx-large"]
        plan_text = text_of(screen, "#su-plan")
        assert "→ 12 vCPU / 16Gi" in plan_text and "libvirt live" in plan_text
        confirm = await run_confirmed(pilot, until, screen, timeout=120)
        assert NODE in confirm.target and "12 vCPU / 16Gi" in confirm.target
        result = screen.run.result
        assert (result.status, result.exit_code) == ("done", 0), result.message
        assert screen.steps.status_of("online-cpus") == "done"
        assert screen.steps.status_of("restart-kubelet") == "done"
        said = " ".join(ev.message for ev in screen.run.events)
        assert "CPU topology doesn't match" in said and "soft reboot through Nova" in said
        assert "restart-kubelet" not in log_text(screen) and "restart the kubelet" in log_text(screen)
        verdict = text_of(screen, "#su-verdict")
        assert "✓ verified: kubelet capacity cpu 12 / memory 16396200Ki" in verdict
        assert "default/nginx-large Running on kube-worker02" in verdict
        assert screen.live.vm_now.vcpus == 12
        await until(pilot, lambda: "Running" in text_of(screen, "#su-pods"), 30, what="the pod Running")
        # 80×24, finished: the verification is on screen without `l` — the pods and the capacity table whole,
        # the plan, the steps and the log one line each (not shrunk to their borders)
        shown = screen_text(app)
        assert "default/nginx-large Running on kube-worker02" in region_text(app, screen.query_one("#su-pods"))
        assert "will fit" not in text_of(screen, "#su-pods")
        capacity = region_text(app, screen.query_one("#su-capacity"))
        assert "kubelet now" in capacity and "memory" in capacity and capacity.count("✓") == 2, shown
        for summary in ("▸ plan: kube-worker02", "▸ steps: ✓", "▸ log: ["):
            assert summary in shown, shown
    cap = node_obj(live_lab)["status"]["capacity"]
    assert (cap["cpu"], cap["memory"]) == ("12", "16396200Ki")
    pod = live_lab.store.get("pods", "default", "nginx-large")
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == NODE
