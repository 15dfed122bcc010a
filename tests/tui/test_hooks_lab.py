"""HooksScreen on a cluster whose nfd-worker DaemonSet mounts features.d and source.d from ConfigMaps (the NFD
article's alternative to NFD's hostPath volumes), through the real kubernetes client, at 80×24.

The DaemonSet and its ConfigMap are made by the test (tests/support/nfdcm.py); the NfdDeployment is built by hand
until the discovery (console/kube/nfddiscovery.py) merges.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from labtools import wait_for
from nfdcm import create_worker, deployment, scheduled
from textual.widgets import DataTable, Input, OptionList, Static, TextArea
from tuitools import Host, confirm_into_conflict, settle

from console.config import Settings
from console.gateways import Gateways
from console.kube.connection import connect
from console.kube.nfdfiles import NodeFile, NodeListing
from console.lab.world import Lab
from console.tui.safety import ConfirmDanger
from console.tui.screens.hooks import HooksScreen
from console.tui.screens.hooks_messages import FileRead, TargetsLoaded
from console.tui.widgets.diff_dialog import ConflictDialog

pytestmark = pytest.mark.lab

NS = "nfd-cm-tui"


@pytest.fixture(scope="module")
def api(kube_lab: Lab) -> Iterator[Any]:
    api_client, _ = connect(str(kube_lab.state.kubeconfig))
    create_worker(api_client, NS, {"rack": "example.com/rack=r1\n"})
    wait_for(lambda: scheduled(api_client, NS), what="nfd-worker pods scheduled")
    try:
        yield api_client
    finally:
        api_client.close()


def app_for(lab: Lab, **settings: Any) -> tuple[Host, HooksScreen, Gateways]:
    s = Settings(kubeconfig=str(lab.state.kubeconfig), **settings)
    gateways = Gateways.connect(s)
    screen = HooksScreen(gateways=gateways, settings=s, deployment=deployment(NS))
    return Host(screen, s, gateways), screen, gateways


def text(screen: HooksScreen, wid: str) -> str:
    return str(screen.query_one(wid, Static).render())


def node_rows(screen: HooksScreen) -> dict[str, tuple[str, str]]:
    table = screen.query_one("#hooks-nodes", DataTable)
    return {str(table.get_row_at(i)[1]): (str(table.get_row_at(i)[0]), str(table.get_row_at(i)[2]))
            for i in range(table.row_count)}


def features(api: Any) -> dict[str, str]:
    return dict(client.CoreV1Api(api).read_namespaced_config_map("nfd-features", NS).data or {})


async def until(pilot: Any, predicate: Any, what: str) -> None:
    for _ in range(400):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_listing_confirm_names_nodes_push_and_report(kube_lab: Lab, api: Any) -> None:
    app, screen, gateways = app_for(kube_lab)
    reach = scheduled(api, NS)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        status = text(screen, "#hooks-status")
        assert f"ConfigMap {NS}/nfd-features (volume features-d, mode 0644" in status
        assert f"all {len(reach)} nodes nfd-worker runs on (its pods)" in status
        shown = [screen.query_one("#hooks-status", Static).render_line(y).text for y in range(2)]
        assert "hooks off unless sources.local.hooksEnabled" in shown[0], shown  # 80 columns: note first
        olist = screen.query_one("#hooks-list", OptionList)
        assert [olist.get_option_at_index(i).prompt for i in range(olist.option_count)] == ["file rack"]
        assert node_rows(screen) == {n: (" ", "same") for n in reach}
        assert screen.query_one("#hooks-nodes").region.height > 0  # visible at 80×24
        editor = screen.query_one("#hooks-editor", TextArea)
        assert editor.text == "example.com/rack=r1\n"

        editor.text = "example.com/rack=r42\n"
        editor.blur()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDanger)
        body = app.screen.preview
        assert f"Target: ConfigMap {NS}/nfd-features" in body
        assert f"Nodes ({len(reach)}): {', '.join(reach)}" in body
        assert "reaches every node nfd-worker runs on" in body
        assert "example.com/rack=r42" in body and "+example.com/rack=r42" in body
        assert app.screen.target == f"feature rack on {len(reach)} node(s)"
        await pilot.press("y")
        await until(pilot, lambda: "Push feature rack" in text(screen, "#hooks-result"), "the per-node report")
        report = text(screen, "#hooks-result")
        assert f"{len(reach)} changed, 0 unchanged, 0 failed" in report and reach[0] in report
        assert features(api) == {"rack": "example.com/rack=r42\n"}
        await until(pilot, lambda: str(screen.query_one("#hooks-output").border_title).startswith("relabel:"),
                    "relabel progress")
        audit = (Path(os.environ["XDG_STATE_HOME"]) / "console" / "audit.log").read_text()
        assert '"action": "nfd.feature.push"' in audit
        await pilot.press("escape")  # leaving the screen ends the relabel wait
        await settle(pilot)
    gateways.api_client.close()


async def test_read_only_refuses_visibly_and_below_the_ui(kube_lab: Lab, api: Any) -> None:
    app, screen, gateways = app_for(kube_lab, read_only=True)
    before = features(api)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "read-only: push and remove are disabled" in text(screen, "#hooks-status")
        assert screen.check_action("save", ()) is False and screen.check_action("remove", ()) is False
        screen.action_save()
        await pilot.pause()
        assert any("read-only mode: push is disabled" in n.message for n in app._notifications)
        # reached anyway: the target's guard refuses it, nothing is sent
        reach = scheduled(api, NS)
        screen.write_files("Push", "feature", "rack", "example.com/rack=ro\n", reach, {},
                           screen.expected("feature", "rack", reach))
        await settle(pilot)
        assert any(n.message.startswith("read-only: push of feature rack") for n in app._notifications)
    assert features(api) == before
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "console" / "audit.log").exists()
    gateways.api_client.close()


async def test_a_hook_into_a_non_executable_volume_is_refused_with_the_mode(kube_lab: Lab, api: Any) -> None:
    app, screen, gateways = app_for(kube_lab)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen.editor.blur()
        await pilot.press("n")
        await pilot.pause()
        await pilot.press(*"probe")
        await pilot.click("#new-hook")
        await settle(pilot)
        screen.editor.blur()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDanger) and f"ConfigMap {NS}/nfd-hooks" in app.screen.preview
        await pilot.press("y")
        await settle(pilot)
        said = " ".join(n.message for n in app._notifications)
        assert "mode 0644" in said and "defaultMode: 0755" in said and "volume source-d" in said
    with pytest.raises(client.ApiException):
        client.CoreV1Api(api).read_namespaced_config_map("nfd-hooks", NS)
    gateways.api_client.close()


async def test_differences_between_nodes_are_shown(kube_lab: Lab, api: Any) -> None:
    """What the list and the node table show for per-node listings that differ (as a hostPath target reports
    them): ≠ for the same name with different content, n/m where some nodes lack it, each node's state."""
    app, screen, gateways = app_for(kube_lab)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)

        def f(node: str, name: str, digest: str) -> NodeFile:
            return NodeFile(node, "feature", name, 10, digest * 64, 0o644, 0.0)

        listings = [NodeListing("w1", (f("w1", "rack", "a"), f("w1", "zone", "c"))),
                    NodeListing("w2", (f("w2", "rack", "b"), f("w2", "zone", "c"))),
                    NodeListing("w3", (f("w3", "zone", "c"),)),
                    NodeListing("w4", (), error="node access refused")]
        screen.post_message(TargetsLoaded(screen.deployment, screen.targets, {"feature": listings},
                                          screen.version, screen.version_text))
        await pilot.pause()
        olist = screen.query_one("#hooks-list", OptionList)
        assert [str(olist.get_option_at_index(i).prompt) for i in range(olist.option_count)] == [
            "file rack ≠ 2/3", "file zone"]
        screen.current = None
        screen.open_file(screen.files[0])
        screen._fill_nodes()
        await pilot.pause()
        rows = node_rows(screen)
        assert {n: s for n, (_, s) in rows.items()} == {
            "w1": "differs (aaaaaaaa)", "w2": "same", "w3": "missing", "w4": "cannot read: node access refused"}
        await settle(pilot)
    gateways.api_client.close()


async def test_selector_marks_nodes_and_remove_edits_the_configmap(kube_lab: Lab, api: Any) -> None:
    core = client.CoreV1Api(api)
    core.patch_namespaced_config_map("nfd-features", NS, {"data": {"gone": "example.com/gone=1\n"}})
    reach = scheduled(api, NS)
    host = next(n for n in core.list_node().items if n.metadata.name == reach[-1]).metadata.labels[
        "kubernetes.io/hostname"]
    app, screen, gateways = app_for(kube_lab)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen.editor.blur()
        # an invalid selector is said in one line here (the nodes screen's words), not the API's raw 400
        await pilot.press("l", *"foo=bar=baz,,(", "enter")
        await settle(pilot)
        said = [n.message for n in app._notifications]
        assert "invalid selector 'foo=bar=baz,,(': 'foo=bar=baz': expected key=value" in said, said
        assert not any("HTTP" in m or "400" in m for m in said), said
        screen.query_one("#hooks-selector-input", Input).value = ""
        screen.query_one("#hooks-nodes").focus()  # out of the selector box again
        await pilot.press("l", *f"kubernetes.io/hostname={host}", "enter")
        await settle(pilot)
        assert screen.marked == {reach[-1]} and node_rows(screen)[reach[-1]][0] == "●"
        assert "1 marked · the ConfigMap reaches all" in str(screen.query_one("#hooks-selector-input").placeholder)
        olist = screen.query_one("#hooks-list", OptionList)
        olist.focus()
        olist.highlighted = olist.get_option_index("feature:gone")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.current is not None and screen.current.name == "gone"
        olist.blur()
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDanger) and app.screen.action_name == "Remove"
        # one node marked, but a ConfigMap reaches every node nfd-worker runs on: the confirmation names them all
        assert f"Nodes ({len(reach)}): {', '.join(reach)}" in app.screen.preview
        assert "Labels this file gave (they go):" in app.screen.preview and "example.com/gone=1" in app.screen.preview
        await pilot.press("y")
        await until(pilot, lambda: "Remove feature gone" in text(screen, "#hooks-result"), "the remove report")
        assert "gone" not in features(api)
        await pilot.press("escape")
        await settle(pilot)
    gateways.api_client.close()


async def test_edit_mode_gives_the_editor_the_node_tables_rows_at_80x24(kube_lab: Lab, api: Any) -> None:
    """EDIT MODE (issue 12): while editing at 80×24 the node table collapses to its one-line summary (the selector
    line, "N marked") and the editor takes its rows; BROWSE shows the table again."""
    app, screen, gateways = app_for(kube_lab)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        editor = screen.query_one("#hooks-editor", TextArea)
        browse = editor.region.height
        assert screen.query_one("#hooks-nodes").region.height > 0
        await pilot.press("e")
        await pilot.pause()
        assert screen.editing and screen.query_one("#hooks-nodes").region.height == 0
        assert "0 marked" in str(screen.query_one("#hooks-selector-input").placeholder)
        assert screen.query_one("#hooks-selector-input").region.height == 1
        assert editor.region.height >= browse + 4
        await pilot.press("escape")
        await pilot.pause()
        assert screen.query_one("#hooks-nodes").region.height > 0 and editor.region.height == browse
    gateways.api_client.close()


async def test_a_push_meets_a_change_made_since_the_editor_loaded_the_file(kube_lab: Lab, api: Any) -> None:
    """Issue 20, point 1, on the screen (ConfigMap store): the editor loads `rack`; another admin patches that key
    of the ConfigMap; ctrl+s, y: the rules editor's conflict dialog, theirs (the ConfigMap's content now) against
    mine, naming the resourceVersions; nothing was sent. o overwrites (carrying their version); after a second
    change of theirs, r reloads theirs into the editor and drops the edit. The audit's intent names the version the
    overwrite replaced."""
    core = client.CoreV1Api(api)
    core.patch_namespaced_config_map("nfd-features", NS, {"data": {"rack": "example.com/rack=base\n"}})
    app, screen, gateways = app_for(kube_lab)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        editor = screen.query_one("#hooks-editor", TextArea)
        assert editor.text == "example.com/rack=base\n"
        editor.text = "example.com/rack=mine\n"
        editor.blur()
        core.patch_namespaced_config_map("nfd-features", NS, {"data": {"rack": "example.com/rack=theirs\n"}})
        theirs_rv = core.read_namespaced_config_map("nfd-features", NS).metadata.resource_version
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDanger)
        dialog = await confirm_into_conflict(pilot)
        assert dialog.theirs == "example.com/rack=theirs\n" and dialog.mine == "example.com/rack=mine\n"
        assert f"→ {theirs_rv}" in dialog.message and "changed since it was read" in dialog.message
        assert features(api)["rack"] == "example.com/rack=theirs\n"  # theirs survives
        await pilot.press("o")
        await until(pilot, lambda: "Push feature rack" in text(screen, "#hooks-result"), "the overwrite's report")
        assert features(api)["rack"] == "example.com/rack=mine\n" and screen.unsaved_name() is None
        audit = [json.loads(x) for x in (Path(os.environ["XDG_STATE_HOME"]) / "console" / "audit.log")
                 .read_text().splitlines()]
        assert audit[-2]["before"]["resourceVersion"] == theirs_rv
        assert audit[-2]["before"]["content"] == "example.com/rack=theirs\n"

        editor.text = "example.com/rack=mine2\n"
        editor.blur()
        core.patch_namespaced_config_map("nfd-features", NS, {"data": {"rack": "example.com/rack=theirs2\n"}})
        await pilot.press("ctrl+s")  # (the relabel wait of the overwrite still runs: wait for what is asked)
        await until(pilot, lambda: isinstance(app.screen, ConfirmDanger), "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ConflictDialog), "the second conflict")
        assert app.screen.theirs == "example.com/rack=theirs2\n"
        await pilot.press("r")
        await until(pilot, lambda: editor.text == "example.com/rack=theirs2\n", "theirs in the editor")
        assert screen.unsaved_name() is None
        assert features(api)["rack"] == "example.com/rack=theirs2\n"
        await pilot.press("escape")
        await settle(pilot)
    gateways.api_client.close()


async def test_a_read_that_arrives_late_does_not_replace_the_file_asked_for_last(kube_lab: Lab, api: Any) -> None:
    """The screen opens the first file on its own; the admin picks another before that read is back (a node read
    through a debug pod takes a second, a ConfigMap read milliseconds): the late read must not replace the file
    the admin asked for, nor would a push then carry that file's version."""
    core = client.CoreV1Api(api)
    core.patch_namespaced_config_map("nfd-features", NS, {"data": {"zone": "example.com/zone=z1\n"}})
    app, screen, gateways = app_for(kube_lab)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        olist = screen.query_one("#hooks-list", OptionList)
        olist.focus()
        olist.highlighted = olist.get_option_index("feature:zone")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.current is not None and screen.current.name == "zone"
        screen.post_message(FileRead("feature", "rack", reach_node(api), "example.com/rack=late\n", version="1/x"))
        await pilot.pause()
        assert screen.current.name == "zone" and screen.editor.text == "example.com/zone=z1\n"
        await pilot.press("escape")
        await settle(pilot)
    core.patch_namespaced_config_map("nfd-features", NS, {"data": {"zone": None}})
    gateways.api_client.close()


def reach_node(api: Any) -> str:
    return scheduled(api, NS)[0]


async def test_a_second_read_of_the_open_file_leaves_the_admins_edit_and_cursor(kube_lab: Lab, api: Any) -> None:
    """Two reads of the first file can be in flight (the targets loaded twice before the first read was back). The
    later one must leave the editor as the admin has it: reloading it put the cursor at the top mid-line, and the
    rest of a typed line landed there (the tmux story (d) under load: "xample.com/owner=admin-a" above
    "eexample.com/owner=story-b")."""
    app, screen, gateways = app_for(kube_lab)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        cur = screen.current
        assert cur is not None and cur.content
        editor = screen.editor
        editor.focus()
        await pilot.press("e")
        await until(pilot, lambda: editor.editing, "EDIT mode")
        editor.cursor_location = (0, 0)
        await pilot.press("x")
        assert editor.text == "x" + cur.content and editor.cursor_location == (0, 1)
        screen.post_message(FileRead(cur.kind, cur.name, reach_node(api), cur.content, version=cur.version))
        await pilot.pause()
        await pilot.press("y")
        assert editor.text == "xy" + cur.content and editor.cursor_location == (0, 2)
        await pilot.press("escape")
        await pilot.press("escape")
        await settle(pilot)
    gateways.api_client.close()
