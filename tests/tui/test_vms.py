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


async def test_without_a_cloud_the_vm_column_comes_from_libvirt(lab: Any) -> None:
    """No OpenStack configured: domains are listed through CONSOLE_LIBVIRT_URI's libvirt and mapped by UUID."""
    from console.config import Settings
    from console.kube.vms import LibvirtDomains, OpenStackServers, vm_lister

    assert isinstance(vm_lister("lab", [lab.libvirt_uri]), OpenStackServers)
    domains = vm_lister(None, [lab.libvirt_uri])
    assert isinstance(domains, LibvirtDomains)
    assert vm_lister(None, []) is None
    # what Nova says (through openstacksdk, the console's other real client) to compare libvirt's view with
    servers = {vm.name: vm for vm in OpenStackServers("lab").list().values()}
    settings = Settings(kubeconfig=str(lab.state.kubeconfig), theme="dark", libvirt_uris=(lab.libvirt_uri,))
    app = make_app(lab, vms=domains, settings=settings)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            rows = app.view.rows_by_name
            assert set(rows) == set(servers)
            for name, server in servers.items():
                vm = rows[name].vm
                assert vm is not None, name
                assert vm.name.startswith("instance-") and vm.server_id == server.server_id.lower()
                assert (vm.flavor, vm.vcpus, vm.status) == (server.flavor, server.vcpus, "running")
                # kube-worker01 may have been resized behind its kubelet by the test above: then it is stale
                fresh = vm.vcpus * 1000 == rows[name].node.capacity.cpu_m
                assert fresh or name == "kube-worker01", name
                assert rows[name].stale == (not fresh), name
            cells = app.screen.query_one("#nodes-table").cells
            index = app.screen.query_one("#nodes-table").keys.index("kube-worker02")
            assert servers["kube-worker02"].flavor in str(cells[index][-1])
            assert app.flavors == []  # libvirt has no flavors: Pending shows sizes only
    finally:
        app.kube.stop()


async def test_unreachable_libvirt_is_a_notification_not_a_crash(lab: Any) -> None:
    from console.config import Settings
    from console.kube.vms import LibvirtDomains

    bad = "qemu+unix:///session?socket=/nonexistent/libvirt-sock"
    settings = Settings(kubeconfig=str(lab.state.kubeconfig), theme="dark", libvirt_uris=(bad,))
    app = make_app(lab, vms=LibvirtDomains([bad]), settings=settings)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.view.rows, what="nodes")
            await wait_until(pilot, lambda: any("cannot connect to libvirt" in n.message
                                                for n in app._notifications), what="the libvirt notification")
            note = next(n.message for n in app._notifications if "cannot connect to libvirt" in n.message)
            assert bad in note and "CONSOLE_LIBVIRT_URI" in note
            assert type(app.screen).__name__ == "NodesScreen"
    finally:
        app.kube.stop()
