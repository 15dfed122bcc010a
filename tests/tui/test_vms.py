"""The VM column on a lab whose VM is resized behind the kubelet's back: the stale-capacity marker."""

from __future__ import annotations

import json
from typing import Any

from labtools import lab_env, run, wait_for

from console.tui.screenshots import loaded, make_app, wait_until


async def test_resized_vm_with_a_kubelet_that_did_not_restart_is_marked_stale(lab: Any) -> None:
    env = lab_env(lab)
    lab.kubelets["kube-worker01"].inject_fault("no-restart")  # the field report: capacity stays the old one
    app = make_app(lab, vm_refresh=0.5)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            row = app.view.rows_by_name["kube-worker01"]
            assert row.vm.flavor == "m1.medium" and not row.stale
            run(["openstack", "server", "resize", "--flavor", "m1.large", "kube-worker01"], env)
            wait_for(lambda: json.loads(run(["openstack", "server", "show", "kube-worker01", "-f", "json"],
                                            env).stdout)["status"] == "VERIFY_RESIZE", 90, what="VERIFY_RESIZE")
            await wait_until(pilot, lambda: app.view.rows_by_name["kube-worker01"].stale, timeout=30,
                             what="the stale marker")
            row = app.view.rows_by_name["kube-worker01"]
            assert row.vm.flavor == "m1.large" and row.vm.vcpus == 8
            assert row.node.capacity.cpu_m == 2000  # what the kubelet still reports
            cells = app.screen.query_one("#nodes-table").cells
            index = app.screen.query_one("#nodes-table").keys.index("kube-worker01")
            assert str(cells[index][-1]).endswith("!")  # narrow VM column: flavor + "!"
            app.screen.query_one("#nodes-table").move_to("kube-worker01")
            await pilot.press("enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "NodeDetailScreen")
            assert "stale capacity" in str(app.screen.query_one("#node-title").render())
    finally:
        app.kube.stop()
        lab.kubelets["kube-worker01"].clear_fault("no-restart")
