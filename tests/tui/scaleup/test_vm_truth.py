"""One truth for a VM's size, on `seed-live` after the field report's live scale-up (12 vCPU / 16Gi through
libvirt on kube-worker02, a Nova server on m1.large), run headless through the real CLI.

What runs is what the hypervisor runs (libvirt live vCPUs / balloon, read through libvirt-python), and Nova's
flavor is shown beside it, marked out of date: Nova regenerates the domain from the flavor on a hard reboot,
resize, migration, evacuate or unshelve (nova/virt/libvirt/driver.py `_hard_reboot`, `power_on`,
`finish_migration`; nova/compute/manager.py `rebuild_instance`, `_unshelve_instance` → `driver.spawn` →
`_get_guest_xml`), and placement keeps the flavor's allocation (nova/scheduler/utils.py
`resources_from_flavor`). The kubelet, restarted by the runbook, matches what runs and is not marked.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from labtools import lab_env
from scaleuptui import open_screen, text_of
from textual.widgets import Input

from console.tui.safety import ConfirmDanger
from console.tui.screens.scaleup import ScaleUpScreen
from console.tui.widgets.runbook_pickers import TargetPicker
from screenshots import loaded, make_app, wait_until

pytestmark = pytest.mark.lab

NODE = "kube-worker02"
REGENERATES = ("hard reboot", "resize", "migration", "evacuate", "unshelve")


def cli(lab: Any, state: Path, *args: str) -> subprocess.CompletedProcess:
    env = lab_env(lab) | {"XDG_STATE_HOME": str(state)}
    return subprocess.run([sys.executable, "-m", "console", "scale-up", NODE, *args], env=env, capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def scaled(live_lab: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The live scale-up, once for the module, as an admin runs it: the CLI with --yes."""
    proc = cli(live_lab, tmp_path_factory.mktemp("vm-truth-state"), "--vcpus", "12", "--memory", "16Gi",
               "--method", "libvirt", "--yes", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    cap = live_lab.store.get("nodes", None, NODE)["status"]["capacity"]
    assert (cap["cpu"], cap["memory"]) == ("12", "16396200Ki")
    # the field report's nginx-large now runs there as a bare pod, which any further drain of the node refuses
    # without --force (as kubectl drain does): it has shown what it had to, so it goes
    live_lab.store.delete("pods", "default", "nginx-large")
    return {"doc": json.loads(proc.stdout), "stderr": proc.stderr}


def test_the_libvirt_plan_of_a_nova_domain_says_what_nova_will_undo(scaled):
    plan = scaled["doc"]["plan"]
    assert plan["nova_server_id"]
    warning = next(n for n in plan["notes"] if n.startswith("Nova manages this domain"))
    assert "flavor m1.large (8 vCPU / 12Gi)" in warning and "placement still counts the old flavor" in warning
    assert all(op in warning for op in REGENERATES)
    assert warning in scaled["stderr"]  # the plan printed before the run names it too


def test_dry_runs_show_the_running_size_and_nova_out_of_date(live_lab, scaled, tmp_path):
    proc = cli(live_lab, tmp_path, "--flavor", "m1.xlarge", "--dry-run", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)["plan"]
    assert plan["current"] == {"vcpus": 12, "memory_mib": 16384}
    assert plan["size"] == {"running": {"vcpus": 12, "memory_mib": 16384},
                            "nova_flavor": {"name": "m1.large", "vcpus": 8, "memory_mib": 12288}, "stale": ["nova"]}
    assert plan["vm"]["flavor"] == "m1.large" and plan["vm"]["vcpus"] == 12

    proc = cli(live_lab, tmp_path, "--flavor", "m1.xlarge", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "12 vCPU / 16Gi → 16 vCPU / 24Gi (flavor m1.xlarge)" in proc.stdout
    assert "Nova: m1.large · running: 12 vCPU / 16Gi (Nova flavor out of date)" in proc.stdout
    assert "kubelet stale" not in proc.stdout

    # m1.large is what Nova believes; the VM runs more: a resize to it would shrink what runs
    proc = cli(live_lab, tmp_path, "--flavor", "m1.large", "--dry-run")
    assert proc.returncode == 2
    assert "smaller than the VM (12 vCPU / 16Gi)" in proc.stderr

    proc = cli(live_lab, tmp_path, "--vcpus", "14", "--memory", "16Gi", "--method", "libvirt", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "12 vCPU / 16Gi → 14 vCPU / 16Gi" in proc.stdout
    assert "note: Nova manages this domain" in proc.stdout


def test_the_cli_prompt_states_what_nova_will_undo(live_lab, scaled, tmp_path):
    """Without --yes on a terminal the CLI asks for the node's name; the question carries the Nova warning.
    Answering something else changes nothing (exit 5). (input() writes its prompt to stderr or stdout depending
    on readline: both go to the terminal here.)"""
    env = lab_env(live_lab) | {"XDG_STATE_HOME": str(tmp_path)}
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "console", "scale-up", NODE, "--vcpus", "14", "--memory", "16Gi",
                             "--method", "libvirt"], env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)

    def read_until(done: Any, timeout: float) -> bytes:
        out, deadline = b"", time.monotonic() + timeout
        while not done(out):
            assert time.monotonic() < deadline, out
            if select.select([master], [], [], 0.5)[0]:
                try:
                    out += os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
        return out

    try:
        prompt = read_until(lambda out: b"Type the node name" in out, 120).decode().replace("\r", "")
        os.write(master, b"no\n")
        rest = read_until(lambda out: b"nothing changed" in out, 60).decode()
        assert proc.wait(timeout=60) == 5
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert "warning: Nova manages this domain" in prompt
    question = prompt[prompt.index("warning: Nova manages"):]
    assert all(op in question for op in REGENERATES) and "placement still counts the old flavor" in question
    assert question.rstrip().endswith("Type the node name to go on:")
    assert "not confirmed; nothing changed" in rest
    assert live_lab.store.get("nodes", None, NODE)["status"]["capacity"]["cpu"] == "12"


async def test_the_nodes_screen_shows_what_runs_with_nova_marked_out_of_date(live_lab, scaled):
    app = make_app(live_lab, vm_refresh=0.5)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            row = app.view.rows_by_name[NODE]
            assert row.vm is not None and row.vm.flavor == "m1.large"
            assert (row.vm.running.vcpus, row.vm.running.memory_mib) == (12, 16384)
            assert row.stale.nova and not row.stale.kubelet  # the kubelet matches what runs
            table = app.screen.query_one("#nodes-table")
            assert str(table.cells[table.keys.index(NODE)][-1]) == "12/16Gi*"
            status = str(app.screen.query_one("#nodes-status").render())
            assert "* Nova flavor out of date" in status and "kubelet stale" not in status
            table.move_to(NODE)
            await pilot.press("enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "NodeDetailScreen")
            title = str(app.screen.query_one("#node-title").render())
            assert "Nova: m1.large · running: 12 vCPU / 16Gi" in title and "Nova flavor out of date" in title
            assert "kubelet stale" not in title
            await pilot.press("escape", "question_mark")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "HelpScreen")
            help_text = str(app.screen.query_one("#help-text").render())
            assert "* Nova out of date" in help_text and "! kubelet stale" in help_text
    finally:
        app.kube.stop()


async def test_the_scale_up_screen_header_capacity_and_confirmation(live_lab, scaled, settings_for, host, until):
    app = host(ScaleUpScreen(NODE), settings_for(live_lab))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_screen(pilot, until)
        status = text_of(screen, "#su-status")
        assert "Nova: m1.large · running: 12 vCPU / 16Gi [ACTIVE] * Nova flavor out of date" in status
        capacity = text_of(screen, "#su-capacity")
        assert "Nova flavor" in capacity and "8*" in capacity and "12Gi*" in capacity
        assert "* Nova flavor out of date" in capacity and "!" not in capacity
        await pilot.press("t")  # the target picker, as an admin picks 14 vCPU / 16Gi
        await until(pilot, lambda: isinstance(app.screen, TargetPicker), 5, what="target picker")
        app.screen.query_one("#target-vcpus", Input).value = "14"
        app.screen.query_one("#target-memory", Input).value = "16Gi"
        await pilot.click("#target-use")
        await until(pilot, lambda: screen.plan is not None or bool(screen.plan_error), 30, what="plan")
        assert screen.plan is not None, screen.plan_error
        assert "Nova: m1.large · running: 12 vCPU / 16Gi" in text_of(screen, "#su-plan")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDanger), 5, what="confirmation")
        preview = app.screen.preview
        assert preview.startswith("warning: Nova manages this domain")
        assert all(op in preview.split("\n", 1)[0] for op in REGENERATES)
        await pilot.press("n")  # nothing is changed
        await until(pilot, lambda: not isinstance(app.screen, ConfirmDanger), 5, what="dialog closed")
    assert live_lab.store.get("nodes", None, NODE)["status"]["capacity"]["cpu"] == "12"

