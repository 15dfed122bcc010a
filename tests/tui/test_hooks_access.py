"""What the hooks screen says where this user may not read the files (issue 20, point 5), with Textual's pilot
against the default lab (NFD v0.19, features.d a hostPath: read through node-debug pods) through the console's real
kubernetes client.

lab-viewer may get/list/watch but create no pod, so node access cannot reach any node: the screen says what is
not readable and why, from the RBAC review the App made at start (SelfSubjectRulesReview, console/kube/access.py),
as the nodes and Pending screens say `cannot list pods … (forbidden for viewer)` — never "(none yet: press n)"
while `n` is dimmed, and without a refused node-debug pod per node first (the API server's own 403 message would
show that it was tried). kube-apiserver's refusal: k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/
errors.go forbiddenMessage (`pods is forbidden: User "viewer" cannot create resource "pods" …`).
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, OptionList
from tuitools import console_app

from console.config import Settings
from console.lab.world import Lab
from console.tui.safety import why_disabled
from screenshots import wait_until

pytestmark = pytest.mark.lab


def _options(screen: Any) -> list[str]:
    olist = screen.query_one("#hooks-list", OptionList)
    return [str(olist.get_option_at_index(i).prompt) for i in range(olist.option_count)]


def _states(screen: Any) -> dict[str, str]:
    table = screen.query_one("#hooks-nodes", DataTable)
    return {str(table.get_row_at(i)[1]): str(table.get_row_at(i)[2]) for i in range(table.row_count)}


async def test_a_viewer_is_told_what_is_not_readable_and_why(kube_lab: Lab) -> None:
    app = console_app(Settings(kubeconfig=str(kube_lab.state.kubeconfig), context="lab-viewer"))
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.gateways.access.user == "viewer", what="the access review")
            await pilot.press("colon", *"hooks", "enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "HooksScreen", what="the hooks screen")
            screen = app.screen
            await wait_until(pilot, lambda: _options(screen), what="the file list")
            (shown,) = _options(screen)
            assert "press n" not in shown and "none yet" not in shown, shown
            # what is not readable (the status line names the store) and why
            assert shown.startswith("(not readable: cannot create pods in default"), shown
            assert "(forbidden for viewer)" in shown
            status = str(screen.query_one("#hooks-status").render())
            assert "hostPath /etc/kubernetes/node-feature-discovery/features.d on each node" in status
            assert "User \"viewer\" cannot" not in shown  # from the review: no node-debug pod was tried
            states = _states(screen)
            assert set(states) >= {"kube-worker01", "kube-worker04"}
            assert all(s.startswith("cannot create pods in default") and "forbidden for viewer" in s
                       for s in states.values())
            hint = str(screen.query_one("#hooks-result").render())
            assert "ctrl+s" not in hint and "e edits the file" in hint  # ctrl+s is dimmed too: not offered
            assert screen.check_action("new_file", ()) is None and why_disabled(app, "new_file")  # n dimmed
            mode = str(screen.query_one("#hooks-mode").render())
            assert "n: new" not in mode and "press n" not in mode
            await pilot.press("e")
            await pilot.pause()
            said = [n.message for n in app._notifications]
            assert "open a hook or feature file first" in said and not any("n: new" in m for m in said), said
    finally:
        app.gateways.stop()
