"""The VM column on the default lab: Nova's servers joined with libvirt's domains (server id = domain UUID), a VM
resized behind the kubelet's back marked kubelet-stale, libvirt alone, and a backend that does not answer."""

from __future__ import annotations

import json
from typing import Any

from labtools import lab_env, run, wait_for

from screenshots import loaded, make_app, wait_until


async def test_resized_vm_with_a_kubelet_that_did_not_restart_is_marked_stale(lab: Any) -> None:
    env = lab_env(lab)
    lab.kubelets["kube-worker01"].inject_fault("no-restart")  # the field report: capacity stays the old one
    app = make_app(lab, vm_refresh=0.5)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            row = app.view.rows_by_name["kube-worker01"]
            assert row.vm.flavor == "m1.medium" and not row.stale
            assert row.vm.running == row.vm.flavor_size  # libvirt's live size joined to Nova's server
            run(["openstack", "server", "resize", "--flavor", "m1.large", "kube-worker01"], env)
            wait_for(lambda: json.loads(run(["openstack", "server", "show", "kube-worker01", "-f", "json"],
                                            env).stdout)["status"] == "VERIFY_RESIZE", 90, what="VERIFY_RESIZE")
            await wait_until(pilot, lambda: app.view.rows_by_name["kube-worker01"].stale.kubelet, timeout=30,
                             what="the stale marker")
            row = app.view.rows_by_name["kube-worker01"]
            # Nova regenerated the domain from m1.large: the flavor is what runs, only the kubelet is behind
            assert row.vm.flavor == "m1.large" and row.vm.vcpus == 8 and row.vm.running is not None
            assert not row.stale.nova
            assert row.node.capacity.cpu_m == 2000  # what the kubelet still reports
            cells = app.screen.query_one("#nodes-table").cells
            index = app.screen.query_one("#nodes-table").keys.index("kube-worker01")
            assert str(cells[index][-1]) == "m1.large!"  # narrow VM column: flavor + "!"
            assert "! kubelet stale" in str(app.screen.query_one("#nodes-status").render())  # the legend
            app.screen.query_one("#nodes-table").move_to("kube-worker01")
            await pilot.press("enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "NodeDetailScreen")
            title = str(app.screen.query_one("#node-title").render())
            assert "m1.large (8 vCPU / 12Gi)" in title and "kubelet stale" in title and "Nova" not in title
    finally:
        app.kube.stop()
        lab.kubelets["kube-worker01"].clear_fault("no-restart")


async def test_without_a_cloud_the_vm_column_comes_from_libvirt(lab: Any) -> None:
    """No OpenStack configured: domains are listed through CONSOLE_LIBVIRT_URI's libvirt and mapped by UUID; the
    flavor of a Nova-made domain comes from the Nova metadata in its XML."""
    from console.config import Settings
    from console.infra.inventory import vm_inventory

    both = vm_inventory("lab", [lab.libvirt_uri])
    assert both is not None and both.openstack is not None and both.libvirt is not None
    domains = vm_inventory(None, [lab.libvirt_uri])
    assert domains is not None and domains.openstack is None
    assert vm_inventory(None, []) is None
    # what Nova says (through openstacksdk, the console's other real client) to compare libvirt's view with
    nova = vm_inventory("lab", [])
    assert nova is not None and nova.libvirt is None
    servers = {vm.name: vm for vm in nova.list().vms.values()}
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
                assert (vm.flavor, vm.flavor_size, vm.status) == (server.flavor, server.flavor_size, "running")
                assert vm.running == server.flavor_size and not rows[name].stale.nova
                # kube-worker01 may have been resized behind its kubelet by the test above: then it is stale
                fresh = vm.vcpus * 1000 == rows[name].node.capacity.cpu_m
                assert fresh or name == "kube-worker01", name
                assert rows[name].stale.kubelet == (not fresh), name
            cells = app.screen.query_one("#nodes-table").cells
            index = app.screen.query_one("#nodes-table").keys.index("kube-worker02")
            assert servers["kube-worker02"].flavor in str(cells[index][-1])
            assert app.flavors == []  # libvirt has no flavors: Pending shows sizes only
    finally:
        app.kube.stop()


async def test_unreachable_libvirt_is_a_notification_not_a_crash(lab: Any) -> None:
    from console.config import Settings
    from console.infra.inventory import vm_inventory

    bad = "qemu+unix:///session?socket=/nonexistent/libvirt-sock"
    settings = Settings(kubeconfig=str(lab.state.kubeconfig), theme="dark", libvirt_uris=(bad,))
    app = make_app(lab, vms=vm_inventory(None, [bad]), settings=settings)
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


async def test_with_nova_answering_and_libvirt_not_the_flavors_are_shown_and_said_to_be(lab: Any) -> None:
    """Both configured, libvirt unreachable: Nova's servers still fill the VM column, one warning says the sizes are
    the flavors' (not read from the hypervisor)."""
    from console.config import Settings
    from console.infra.inventory import vm_inventory

    bad = "qemu+unix:///session?socket=/nonexistent/libvirt-sock"
    settings = Settings(kubeconfig=str(lab.state.kubeconfig), cloud="lab", theme="dark", libvirt_uris=(bad,))
    app = make_app(lab, vms=vm_inventory("lab", [bad]), settings=settings)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            row = app.view.rows_by_name["kube-worker02"]
            assert row.vm is not None and row.vm.flavor == "m1.medium" and row.vm.running is None
            assert row.vm.size_text() == "m1.medium (2 vCPU / 4Gi)"
            await wait_until(pilot, lambda: any("not what runs" in n.message for n in app._notifications),
                             what="the libvirt warning")
            note = next(n.message for n in app._notifications if "not what runs" in n.message)
            assert bad in note and "Nova's flavors" in note
    finally:
        app.kube.stop()
