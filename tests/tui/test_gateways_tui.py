"""The App's one gateway bundle (console/gateways.py) and what the TUI shows when RBAC says no (issue 10,
deliverables 3 and 5), with Textual's pilot against a lab through the console's real kubernetes client.

- a user the API server knows but who may list nothing (the lab's `<state>/faults/kubeconfig-forbidden`,
  user lab-nobody): the nodes table says it cannot list nodes and why, instead of "Loading nodes…" for good;
- a context switch builds a new bundle and replaces the old one whole: the old caches and event watch are
  stopped, the screens and the scale-up session use the new bundle's connection (no second ApiClient).

Real system: kube-apiserver answers a list it forbids with 403 and a Status whose message is
`nodes is forbidden: User "x" cannot list resource "nodes" in API group "" at the cluster scope`
(k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage); k9s shows such a view
as "forbidden" rather than empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tuitools import console_app

from console.config import Settings
from console.lab.world import Lab
from console.tui.screenshots import wait_until

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
            assert first.cluster._stop.is_set() and first.events._stop.is_set()  # the old watches end
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
