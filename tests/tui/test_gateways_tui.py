"""The App's one gateway bundle (console/gateways.py) and what the TUI shows when RBAC says no (issue 10,
deliverables 3 and 5), with Textual's pilot against a lab through the console's real kubernetes client.

- a user the API server knows but who may list nothing (the lab's `<state>/faults/kubeconfig-forbidden`,
  user lab-nobody): the nodes table says it cannot list nodes and why, instead of "Loading nodes…" for good;
- lab-viewer reads nodes and pods; every mutation is shown disabled with what it needs (the toast on its key,
  the `?` help); a switch to lab-operator reviews again; a user who may list nodes but not pods sees requests
  as unknown, not 0;
- a context switch builds a new bundle and replaces the old one whole: the old caches and event watch are
  stopped, the screens and the scale-up session use the new bundle's connection (no second ApiClient).

Real system: kube-apiserver answers a list it forbids with 403 and a Status whose message is
`nodes is forbidden: User "x" cannot list resource "nodes" in API group "" at the cluster scope`
(k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage); k9s shows such a view
as "forbidden" rather than empty.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from tuitools import console_app

from console.config import Settings
from console.lab.world import Lab
from console.tui.safety import ACTION_NEEDS, allow_action, why_disabled
from screenshots import wait_until

pytestmark = pytest.mark.lab


def _status(app: Any) -> str:
    return str(app.screen.query_one("#nodes-status").render())


async def test_forbidden_nodes_say_so_instead_of_loading_forever(kube_lab: Lab) -> None:
    kubeconfig = kube_lab.state.root / "faults" / "kubeconfig-forbidden"
    app = console_app(Settings(kubeconfig=str(kubeconfig)))
    try:
        async with app.run_test(size=(100, 24)) as pilot:
            table = app.screen.table
            await wait_until(pilot, lambda: "cannot list nodes" in table.empty_text, what="the forbidden nodes")
            assert "lab-nobody" in table.empty_text  # who was refused
            assert "cannot list nodes" in _status(app) and "Loading" not in _status(app)
            assert table.keys == []  # no rows shown as fact
    finally:
        app.gateways.stop()


async def test_context_switch_replaces_the_bundle_whole(kube_lab: Lab, tmp_path: Path) -> None:
    kc = yaml.safe_load(kube_lab.state.kubeconfig.read_text())
    kc["contexts"].append({"name": "second", "context": dict(kc["contexts"][0]["context"])})
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kc))
    app = console_app(Settings(kubeconfig=str(path)))
    first = app.gateways
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.view.rows, what="nodes")
            await pilot.press("colon", *"ctx second", "enter")
            await wait_until(pilot, lambda: app.kube.target.context == "second", what="the context switch")
            new = app.gateways
            assert new is not first and new.cluster is not first.cluster and new.events is not first.events
            assert first.cluster._stop.is_set() and first.events.scheduling.stopped  # the old watches end
            assert not new.cluster._stop.is_set()
            await wait_until(pilot, lambda: app.view.rows and app.view.generation[-1] == id(new.cluster),
                             what="nodes from the new bundle")
            await pilot.press("colon", *"rules", "enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "RulesScreen", what="the rules screen")
            assert app.screen.gateways is app.gateways  # the screen took the App's (new) bundle
            session = app.gateways.scaleup_session()
            assert session.api is new.cluster.api_client  # the scale-up runs on the same connection
    finally:
        first.stop()
        app.gateways.stop()


def _until_allowed(call: Any, timeout: float = 20.0) -> None:
    """Poll `call(limit=1)` until the API server stops answering 403 (an RBAC change takes effect when its
    informer sees it, on a real API server too)."""
    from kubernetes.client.exceptions import ApiException

    deadline = time.monotonic() + timeout
    while True:
        try:
            call(limit=1, _request_timeout=5)
            return
        except ApiException as e:
            if e.status != 403 or time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def _toasts(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


async def test_viewer_reads_nodes_and_pods_every_mutation_disabled_with_its_reason(kube_lab: Lab) -> None:
    """lab-viewer (get/list/watch on all but secrets): the screens work, each dangerous action shows disabled
    (check_action None: dimmed in the footer, listed in ? with the reason) and its key says why; a switch to
    lab-operator reviews again and scale-up is offered (kubectl auth can-i answers the same)."""
    app = console_app(Settings(kubeconfig=str(kube_lab.state.kubeconfig), context="lab-viewer"))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.view.rows and "pods" not in app.view.unknown, what="nodes, pods")
            await wait_until(pilot, lambda: app.gateways.access.user == "viewer", what="the access review")
            assert app.gateways.access.unknown == ""
            assert "pods" in _status(app) and "cannot" not in _status(app)
            for action in sorted(ACTION_NEEDS):  # every mutation the screens offer
                assert why_disabled(app, action), action
            nodes = app.screen
            assert nodes.check_action("scale_up", ()) is None  # shown, disabled (read-only would hide it: False)
            await pilot.press("s")
            await wait_until(pilot, lambda: any("scale-up needs: " in m for m in _toasts(app)), what="the toast")
            said = next(m for m in _toasts(app) if "scale-up needs: " in m)
            assert "patch nodes" in said and "create pods/eviction" in said and "create pods in default" in said
            assert type(app.screen).__name__ == "NodesScreen"  # nothing opened
            await pilot.press("question_mark")
            await pilot.pause()
            help_text = str(app.screen.query_one("#help-text").render())
            assert "disabled: scale-up needs: " in help_text
            await pilot.press("escape", "enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "NodeDetailScreen", what="node detail")
            pods = str(app.screen.query_one("#node-pods").render())
            assert pods.startswith("Pods (") and "cannot" not in pods  # the viewer reads the node's pods
            assert app.screen.check_action("scale_up", ()) is None
            await pilot.press("escape", "p")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen", what="the pending screen")
            assert "Pending pods" in str(app.screen.query_one("#pending-status").render())
            assert app.screen.check_action("scale_up", ()) is None
            await pilot.press("colon", *"rules", "enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "RulesScreen", what="the rules screen")
            assert app.screen.check_action("apply", ()) is None
            assert "rule-apply needs: " in why_disabled(app, "apply")
            await pilot.press("colon", *"hooks", "enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "HooksScreen", what="the hooks screen")
            assert app.screen.check_action("save", ()) is None
            assert "create pods in default" in why_disabled(app, "save")  # hostPath writes go through node access
            await pilot.press("colon", *"scale-up kube-worker01", "enter")
            await pilot.pause()
            assert type(app.screen).__name__ != "ScaleUpScreen"

            await pilot.press("colon", *"ctx lab-operator", "enter")  # reviewed again for the new context
            await wait_until(pilot, lambda: app.gateways.access.user == "operator", what="the operator's review")
            assert why_disabled(app, "scale_up") == "" and allow_action(app, "scale_up") is True
            assert "rule-apply needs: " in why_disabled(app, "apply")  # the operator may not write rules
    finally:
        app.gateways.stop()


async def test_nodes_without_pods_show_requests_unknown_not_zero(kube_lab: Lab) -> None:
    """lab-nobody granted list/watch on nodes only (a real ClusterRole + binding made through the API): the
    nodes table shows requested as `?` and says it cannot list pods; the pending screen says so too, instead
    of "No Pending pods"."""
    from kubernetes import client, config

    admin = config.new_client_from_config(str(kube_lab.state.kubeconfig))
    rbac = client.RbacAuthorizationV1Api(admin)
    rbac.create_cluster_role({"metadata": {"name": "nodes-only"}, "rules": [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]})
    rbac.create_cluster_role_binding({"metadata": {"name": "nobody-nodes"}, "subjects": [
        {"kind": "User", "name": "lab-nobody", "apiGroup": "rbac.authorization.k8s.io"}],
        "roleRef": {"kind": "ClusterRole", "name": "nodes-only", "apiGroup": "rbac.authorization.k8s.io"}})
    nobody = str(kube_lab.state.root / "faults" / "kubeconfig-forbidden")
    _until_allowed(client.CoreV1Api(config.new_client_from_config(nobody)).list_node)  # bindings apply async
    app = console_app(Settings(kubeconfig=nobody))
    try:
        async with app.run_test(size=(100, 24)) as pilot:
            await wait_until(pilot, lambda: app.view.rows and "cannot list pods" in _status(app),
                             what="nodes, and pods refused")
            assert app.stale is None and "STALE" not in app.sub_title  # RBAC is not an outage: nodes are current
            assert "lab-nobody" in _status(app)
            cpu = str(app.screen.table.cells[0][2])
            assert cpu.endswith("?/" + cpu.split("/")[-1]) and "?" in cpu  # requested unknown, not 0
            await pilot.press("p")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen", what="the pending screen")
            status = str(app.screen.query_one("#pending-status").render())
            assert "cannot list pods" in status and "Pending pods" not in status
            assert app.screen.pods_table.empty_text.startswith("cannot list pods")
    finally:
        app.gateways.stop()
        rbac.delete_cluster_role_binding("nobody-nodes")
        rbac.delete_cluster_role("nodes-only")
        admin.close()
