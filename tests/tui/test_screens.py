"""Pilot-driven tests of every screen and action against the default lab (real clients, no patching)."""

from __future__ import annotations

from typing import Any

from labtools import lab_env, run
from tuitools import console_app, running

from console.config import Settings
from screenshots import loaded, wait_until

AVX512F = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"


def screen_name(pilot: Any) -> str:
    return type(pilot.app.screen).__name__


def notifications(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


async def test_nodes_table_lists_every_node_with_capacity_and_vm(lab: Any) -> None:
    async with running(lab) as pilot:
        app = pilot.app
        table = app.screen.query_one("#nodes-table")
        kubectl = run(["kubectl", "get", "nodes", "-o", "name"], lab_env(lab)).stdout.split()
        assert table.keys == sorted(name.removeprefix("node/") for name in kubectl)
        assert len(table.keys) == 5
        row = app.view.rows_by_name["kube-worker03"]
        assert row.requested.cpu_m == 6005  # analytics-0 requests cpu 6, NFD v0.19's nfd-worker pod 5m
        assert row.vm is not None and row.vm.flavor == "m1.large" and not row.stale
        assert row.nfd_labels > 10
        assert [c.key for c in table.visible_columns][:4] == ["name", "status", "cpu", "mem"]
        assert "vm" in [c.key for c in table.visible_columns]  # VM column fits at 80 columns
        status = str(app.screen.query_one("#nodes-status").render())
        assert "5 nodes" in status and "1 Pending" in status


async def test_filter_text_invert_and_label_selector(lab: Any) -> None:
    async with running(lab) as pilot:
        table = pilot.app.screen.query_one("#nodes-table")
        await pilot.press("slash", *"worker0")
        assert len(table.keys) == 4
        await pilot.press(*"4")
        assert table.keys == ["kube-worker04"]
        await pilot.press("escape")
        assert len(table.keys) == 5
        await pilot.press("slash", *"!worker")
        assert table.keys == ["kube-controlplane01"]
        await pilot.press("escape", "slash", *f"-l {AVX512F}=true", "enter")
        assert table.keys == ["kube-worker02", "kube-worker03"]  # Skylake and Ice Lake
        assert table.has_focus
        await pilot.press("slash", *",!example.com/rack")
        assert "kube-worker03" not in table.keys  # worker03 carries example.com/rack
        await pilot.press("escape", "slash", *"-l in (")
        status = str(pilot.app.screen.query_one("#nodes-status").render())
        assert "expected key" in status or "needs" in status or "requirement" in status


async def test_sort_by_cpu_use_and_back(lab: Any) -> None:
    async with running(lab) as pilot:
        table = pilot.app.screen.query_one("#nodes-table")
        await pilot.press("C")
        assert table.keys[:2] == ["kube-worker03", "kube-worker04"]  # 6 of 8 CPUs requested
        await pilot.press("C")
        assert table.keys[0] == "kube-controlplane01" and table.keys[-1] in ("kube-worker03", "kube-worker04")
        await pilot.press("N")
        assert table.keys == sorted(table.keys)


async def test_open_node_shows_labels_grouped_by_source(lab: Any) -> None:
    async with running(lab) as pilot:
        table = pilot.app.screen.query_one("#nodes-table")
        table.move_to("kube-worker03")
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen_name(pilot) == "NodeDetailScreen")
        labels = str(pilot.app.screen.query_one("#node-labels").render())
        assert "cpu (" in labels and "kernel (" in labels and "pci (" in labels and "other (" in labels
        assert labels.index("cpu (") < labels.index("cpu-cpuid.AVX512F=true") < labels.index("kernel (")
        resources = str(pilot.app.screen.query_one("#node-resources").render())
        assert "allocatable" in resources and "cpu" in resources
        conditions = str(pilot.app.screen.query_one("#node-conditions").render())
        assert "MemoryPressure" in conditions and "KubeletReady" in conditions
        pods = str(pilot.app.screen.query_one("#node-pods").render())
        assert "default/analytics-0" in pods
        await wait_until(pilot, lambda: "Starting" in str(pilot.app.screen.query_one("#node-events").render()),
                         what="the node's kubelet events")
        title = str(pilot.app.screen.query_one("#node-title").render())
        assert "m1.large" in title
        await pilot.press("escape")
        assert screen_name(pilot) == "NodesScreen"


async def test_mouse_click_selects_and_double_click_opens(lab: Any) -> None:
    async with running(lab) as pilot:
        table = pilot.app.screen.query_one("#nodes-table")
        await pilot.click("#nodes-table", offset=(3, 3))  # header is line 0: line 3 is the third node
        assert table.cursor_key == "kube-worker02"
        await pilot.click("#nodes-table", offset=(3, 3), times=2)
        await wait_until(pilot, lambda: screen_name(pilot) == "NodeDetailScreen")
        assert pilot.app.screen.node_name == "kube-worker02"


async def test_mark_two_nodes_and_compare_labels(lab: Any) -> None:
    async with running(lab) as pilot:
        table = pilot.app.screen.query_one("#nodes-table")
        await pilot.press("c")
        assert screen_name(pilot) == "NodesScreen"
        assert any("mark two nodes" in m for m in notifications(pilot.app))
        table.move_to("kube-worker01")
        await pilot.press("space")
        table.move_to("kube-worker03")
        await pilot.press("space", "c")
        await wait_until(pilot, lambda: screen_name(pilot) == "CompareScreen")
        compare = pilot.app.screen.query_one("#compare-table")
        assert AVX512F in compare.keys
        await pilot.press("d")
        assert "kubernetes.io/os" not in compare.keys  # same on both: hidden with d
        status = str(pilot.app.screen.query_one("#compare-status").render())
        assert "kube-worker01 vs kube-worker03" in status


async def test_pending_shows_why_and_smallest_fitting_size(lab: Any) -> None:
    async with running(lab) as pilot:
        await pilot.press("p")
        await wait_until(pilot, lambda: screen_name(pilot) == "PendingScreen")
        screen = pilot.app.screen
        await wait_until(pilot, lambda: screen.advice, what="fit analysis")
        assert screen.query_one("#pending-pods").keys == ["default/nginx"]
        await wait_until(pilot, lambda: "Insufficient cpu" in str(screen.query_one("#pending-why").render()),
                         what="the FailedScheduling message")
        why = str(screen.query_one("#pending-why").render())
        assert "Smallest fitting size: kube-worker01 → 4 vCPU / 6Gi (flavor m1.large)" in why
        fit = screen.query_one("#pending-fit")
        assert "kube-controlplane01" not in fit.keys  # tainted NoSchedule
        assert screen.advice["kube-worker03"].flavor.name == "m1.xlarge"
        await pilot.press("tab", "enter")
        await wait_until(pilot, lambda: screen_name(pilot) == "PlanModal")
        text = str(pilot.app.screen.query_one("#plan-text").render())
        assert "default/nginx on kube-worker01" in text and "m1.large" in text and "does not fit now" in text
        await pilot.press("escape")
        await pilot.press("s")
        await wait_until(pilot, lambda: screen_name(pilot) in ("PlanModal", "ScaleUpScreen"))


async def test_read_only_hides_scale_up(lab: Any) -> None:
    settings = Settings(kubeconfig=str(lab.state.kubeconfig), cloud="lab", read_only=True)
    async with running(lab, settings=settings) as pilot:
        assert "read-only" in pilot.app.sub_title
        bindings = {b.binding.id for b in pilot.app.screen.active_bindings.values() if b.enabled}
        assert "nodes-scale-up" not in bindings and "nodes-filter" in bindings
        await pilot.press("s")
        assert screen_name(pilot) == "NodesScreen"
        await pilot.press("p")
        await wait_until(pilot, lambda: screen_name(pilot) == "PendingScreen")
        await pilot.press("tab", "s")
        assert screen_name(pilot) == "PendingScreen"


async def test_command_bar_navigation(lab: Any) -> None:
    async with running(lab) as pilot:
        await pilot.press("colon", *"pending", "enter")
        await wait_until(pilot, lambda: screen_name(pilot) == "PendingScreen")
        await pilot.press("colon", *"node kube-worker02", "enter")
        await wait_until(pilot, lambda: screen_name(pilot) == "NodeDetailScreen")
        assert pilot.app.screen.node_name == "kube-worker02"
        await pilot.press("colon", *"nodes", "enter")
        await wait_until(pilot, lambda: screen_name(pilot) == "NodesScreen")
        assert len(pilot.app.screen_stack) == 1
        await pilot.press("colon", *"bogus", "enter")
        assert any("unknown command :bogus" in m for m in notifications(pilot.app))
        await pilot.press("colon", *"node nope", "enter")
        assert any("no node named 'nope'" in m for m in notifications(pilot.app))
        await pilot.press("colon", *"theme light", "enter")
        assert pilot.app.theme == "light"
        await pilot.press("colon", *"q", "enter")
        await wait_until(pilot, lambda: not pilot.app.is_running, what="the app to exit")


async def test_help_lists_active_bindings_with_ids(lab: Any) -> None:
    async with running(lab) as pilot:
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: screen_name(pilot) == "HelpScreen")
        text = str(pilot.app.screen.query_one("#help-text").render())
        for ident in ("nodes-filter", "nodes-mark", "nodes-compare", "nodes-pending", "sort-cpu", "command-bar"):
            assert f"({ident})" in text
        assert ":scale-up NAME" in text
        await pilot.press("escape")
        assert screen_name(pilot) == "NodesScreen"


async def test_key_overrides_remap_by_binding_id(lab: Any) -> None:
    settings = Settings(kubeconfig=str(lab.state.kubeconfig), cloud="lab", key_overrides={"nodes-pending": "P"})
    async with running(lab, settings=settings) as pilot:
        await pilot.press("p")
        assert screen_name(pilot) == "NodesScreen"
        await pilot.press("P")
        await wait_until(pilot, lambda: screen_name(pilot) == "PendingScreen")


async def test_palette_runs_category_verb_commands(lab: Any) -> None:
    async with running(lab) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"pending: show")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen_name(pilot) == "PendingScreen")


async def test_nodes_view_follows_the_watch(lab: Any) -> None:
    env = lab_env(lab)
    async with running(lab) as pilot:
        table = pilot.app.screen.query_one("#nodes-table")
        await pilot.press("slash", *"-l example.dev/tui-test=yes", "enter")
        assert table.keys == []
        run(["kubectl", "label", "node", "kube-worker01", "example.dev/tui-test=yes"], env)
        try:
            await wait_until(pilot, lambda: table.keys == ["kube-worker01"], what="the label to arrive by watch")
        finally:
            run(["kubectl", "label", "node", "kube-worker01", "example.dev/tui-test-"], env)
        await wait_until(pilot, lambda: table.keys == [], what="the label removal")


async def test_context_switch_reconnects(lab: Any, tmp_path: Any) -> None:
    import yaml

    kc = yaml.safe_load(lab.state.kubeconfig.read_text())
    ctx = dict(kc["contexts"][0])
    kc["contexts"].append({"name": "second", "context": ctx["context"]})  # last in the picker
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kc))
    settings = Settings(kubeconfig=str(path), cloud="lab")
    app = console_app(settings)
    first = app.gateways
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            await pilot.press("colon", *"ctx", "enter")
            await wait_until(pilot, lambda: screen_name(pilot) == "ContextPicker")
            await pilot.press("end", "enter")  # "second", appended after the lab's own contexts
            await wait_until(pilot, lambda: app.kube.target.context == "second", what="the context switch")
            assert app.gateways is not first and app.kube is not first.cluster
            await wait_until(pilot, lambda: len(app.view.rows) == 5, what="nodes from the new context")
            assert "second" in app.sub_title
    finally:
        first.stop()
        app.gateways.stop()


async def test_unreachable_api_server_gives_a_clear_message(lab: Any, tmp_path: Any) -> None:
    import socket

    import yaml

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = yaml.safe_load(lab.state.kubeconfig.read_text())
    kc["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kc))
    app = console_app(Settings(kubeconfig=str(path)))
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.api_error, what="the API probe")
            # console/faults.py: what failed (the server), why, what to check (the kubeconfig's cluster)
            assert f"the Kubernetes API server https://127.0.0.1:{port}: cannot reach it" in app.api_error
            assert f"check the server URL of cluster lab in {path}" in app.api_error
            assert any("cannot reach" in m for m in notifications(app))
            assert "Traceback" not in app.api_error
            status = str(app.screen.query_one("#nodes-status").render())
            assert "cannot reach" in status
    finally:
        app.gateways.stop()


async def test_broken_or_unknown_theme_falls_back_with_a_notification(lab: Any, tmp_path: Any) -> None:
    import os
    from pathlib import Path

    user_themes = Path(os.environ["XDG_DATA_HOME"]) / "console" / "themes"
    user_themes.mkdir(parents=True)
    (user_themes / "broken.yaml").write_text("name: broken\ncolors: {primary: nope}\n")
    (user_themes / "mine.yaml").write_text("name: mine\ncolors: {primary: '#00aa00'}\n")
    settings = Settings(kubeconfig=str(lab.state.kubeconfig), cloud="lab", theme="broken")
    async with running(lab, settings=settings) as pilot:
        assert pilot.app.theme == "dark"
        msgs = notifications(pilot.app)
        assert any("broken.yaml" in m and "not a colour" in m for m in msgs)
        assert any("theme 'broken' not found" in m for m in msgs)
        assert "mine" in pilot.app.available_themes
        pilot.app.theme = "mine"
        await pilot.pause()
        assert pilot.app.get_css_variables()["status-ready"]  # domain variables exist in user themes too


async def test_read_only_refuses_scale_up_command(lab: Any) -> None:
    settings = Settings(kubeconfig=str(lab.state.kubeconfig), cloud="lab", read_only=True)
    async with running(lab, settings=settings) as pilot:
        await pilot.press("colon", *"scale-up kube-worker01", "enter")
        assert screen_name(pilot) == "NodesScreen"
        assert any("read-only mode" in m for m in notifications(pilot.app))


async def test_node_detail_groups_labels_by_origin_and_counts_as_the_table(lab: Any) -> None:
    """Labels by the object that yields them (nfd-master's merge of the node's NodeFeatures, then the rules:
    pkg/nfd-master/nfd-master.go), NFD's labels being those its feature-labels annotation lists: a rule's
    unprefixed label under its rule, a third-party NodeFeature's under that object, a feature-file label in
    another namespace (example.com/rack) under the worker's local source — and the detail's NFD count is the
    nodes table's."""
    import re

    from kubernetes import client
    from kubernetes.config import new_client_from_config

    api = client.CustomObjectsApi(new_client_from_config(str(lab.state.kubeconfig)))
    rule = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
            "metadata": {"name": "tui-avx512-ready"},
            "spec": {"rules": [{"name": "avx512", "labels": {"avx512-ready": "true"},
                                "matchFeatures": [{"feature": "cpu.cpuid",
                                                   "matchExpressions": {"AVX512F": {"op": "Exists"}}}]}]}}
    vendor = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
              "metadata": {"name": "tui-vendor", "namespace": "default",
                           "labels": {"nfd.node.kubernetes.io/node-name": "kube-worker03"}},
              "spec": {"labels": {"vendor.example/accel": "yes"}}}
    api.create_cluster_custom_object("nfd.k8s-sigs.io", "v1alpha1", "nodefeaturerules", rule)
    api.create_namespaced_custom_object("nfd.k8s-sigs.io", "v1alpha1", "default", "nodefeatures", vendor)
    try:
        async with running(lab, size=(100, 80)) as pilot:
            def on_node() -> dict[str, str]:
                return pilot.app.view.snapshot.nodes["kube-worker03"].labels

            await wait_until(pilot, lambda: on_node().get("feature.node.kubernetes.io/avx512-ready") == "true"
                             and on_node().get("vendor.example/accel") == "yes", what="nfd-master labelling")
            pilot.app.screen.query_one("#nodes-table").move_to("kube-worker03")
            await pilot.press("enter")
            await wait_until(pilot, lambda: screen_name(pilot) == "NodeDetailScreen")

            def text() -> str:
                return str(pilot.app.screen.query_one("#node-labels").render())

            def group(title: str) -> str:
                t = text()
                start = t.find(f"  {title} (")
                if start < 0:
                    return ""
                end = re.search(r"\n  \S", t[start + 3:])
                return t[start:start + 3 + end.start()] if end else t[start:]

            await wait_until(pilot, lambda: "avx512-ready=true" in group("rule tui-avx512-ready: avx512"),
                             what="the rule's label under its rule")
            assert "vendor.example/accel=yes" in group("NodeFeature default/tui-vendor")
            assert "example.com/rack=" in group("local") and "storage.tier=" in group("local")
            assert "cpu-cpuid.AVX512F=true" in group("cpu")
            assert text().count("avx512-ready=true") == 1
            row = pilot.app.view.rows_by_name["kube-worker03"]
            heading = re.search(r"Labels \((\d+), NFD (\d+)\)", text())
            assert heading and int(heading.group(2)) == row.nfd_labels
            counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^  (\S.*?) \((\d+)\)$", text(), re.M)}
            assert sum(n for g, n in counts.items() if g != "other") == row.nfd_labels
            assert int(heading.group(1)) == sum(counts.values())
    finally:
        api.delete_cluster_custom_object("nfd.k8s-sigs.io", "v1alpha1", "nodefeaturerules", "tui-avx512-ready")
        api.delete_namespaced_custom_object("nfd.k8s-sigs.io", "v1alpha1", "default", "nodefeatures", "tui-vendor")


async def test_a_pushed_feature_file_shows_the_relabel_outcome_at_80x24(lab: Any) -> None:
    """At 80×24 the output panel shows 3 lines: after a push the relabel outcome (`relabelled: 4/4 nodes`) must be
    among them, not below the push report where the panel cuts it; and what was pushed is saved (no `● unsaved`).
    Also ctrl+c with unsaved edits asks before quitting (ConsoleApp.request_quit), as `:quit` does."""
    from screentext import region_text

    from console.tui.command_grammar import parse_command
    from console.tui.widgets.discard_dialog import DiscardDialog

    async with running(lab) as pilot:
        app = pilot.app
        app.run_command(parse_command("hooks"))
        await wait_until(pilot, lambda: screen_name(pilot) == "HooksScreen" and app.screen.current is not None
                         and app.screen.current.name == "inventory", what="the inventory feature file open", timeout=30)
        screen = app.screen
        original = screen.editor.text
        await pilot.press("e", *"example.com/pushed=1", "enter", "escape")
        assert "● unsaved" in str(screen.query_one("#hooks-mode").render())
        await pilot.press("ctrl+c")  # quitting with unsaved edits asks first
        await pilot.pause()
        assert isinstance(app.screen, DiscardDialog) and app.is_running
        await pilot.press("k")  # keep editing
        await pilot.pause()
        assert app.screen is screen
        # the workers, whose inventory this is (the control plane's differs: the node table's first row, unmarked)
        await pilot.press("a", "space", "ctrl+s")
        await wait_until(pilot, lambda: screen_name(pilot) == "ConfirmDanger", what="the push confirmation")
        await pilot.press("y")
        output = screen.query_one("#hooks-output")
        await wait_until(pilot, lambda: "relabelled: 4/4 nodes" in region_text(app, output),
                         what="the relabel outcome", timeout=60)
        assert "unsaved" not in str(screen.query_one("#hooks-mode").render())
        assert not str(screen.editor.border_title).startswith("●")
        # NFD v0.19 has no hooks: no toast that source.d is not mounted (the status line says hooks are removed)
        assert not [m for m in notifications(app) if "source.d" in m], notifications(app)
        screen.editor.load_text(original)  # put the lab's file back for the module's other tests
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: screen_name(pilot) == "ConfirmDanger", what="the second confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: "relabelled: 4/4 nodes" in region_text(app, output)
                         and "pushed" not in region_text(app, output), what="the file put back", timeout=60)
