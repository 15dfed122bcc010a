"""The TUI under faults (issue 9, deliverable 6), on a real lab through the console's real kubernetes client.

- The lab's API server goes away mid-session (its port closes, the open watches drop:
  `Lab.kube_api_down`): the views say the data is stale — since when, and from when the data is — in every
  screen's header, the nodes status line and a dimmed table, with one toast however often the caches retry;
  when the server answers again the marks go and the data is current.
- A non-UTF-8 file in the user's themes directory: the App starts on the default theme with a notification
  naming the file (STYLE.md: a broken theme is skipped with a message).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from labstart import start_lab
from tuitools import console_app

from console.config import Settings, xdg_data_home
from console.lab import scenarios
from console.lab.world import Lab
from console.tui.app import ConsoleApp
from screenshots import wait_until


@pytest.fixture(scope="module")
def scale_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab(scenarios.get("scale", nodes=3, pods_per_node=2), tmp_path_factory.mktemp("faults-tui"))


def _app(lab: Lab) -> ConsoleApp:
    return console_app(Settings(kubeconfig=str(lab.state.kubeconfig), theme="dark"))


def _toasts(app: ConsoleApp, text: str) -> list[str]:
    return [n.message for n in app._notifications if text in n.message]


async def test_api_server_gone_marks_every_view_stale_and_recovers(scale_lab: Lab) -> None:
    app = _app(scale_lab)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_until(pilot, lambda: len(app.view.rows) == 3, what="the nodes")
            assert app.stale is None and "STALE" not in app.sub_title
            scale_lab.kube_api_down()
            try:
                await wait_until(pilot, lambda: app.stale, timeout=60, what="the stale mark")
                # every cache that is down, since when and why (console/kube/cluster.CacheHealth.stale_text)
                for part in app.stale.split("; "):
                    assert re.fullmatch(r"(nodes|pods): reconnecting since \d\d:\d\d:\d\d — connection refused",
                                        part), app.stale
                first = app.kube.nodes.last_error
                # the caches keep retrying (with backoff): wait for another failure, still one toast
                await wait_until(pilot, lambda: app.kube.nodes.last_error is not first, timeout=60,
                                 what="a second failed retry")
                await pilot.pause()
                assert len(_toasts(app, "reconnecting since")) == 1
                toast = _toasts(app, "reconnecting since")[0]  # faults.py: what failed, why, what to check
                assert "data below is from " in toast
                assert "cannot reach it" in toast and str(scale_lab.state.kubeconfig) in toast
                assert f"STALE: {app.stale}" in app.sub_title  # the header of every screen
                status = str(app.screen.query_one("#nodes-status").render())
                assert app.stale in status and "(stale)" in status
                assert app.screen.query_one("#nodes-table").has_class("stale")
                assert len(app.view.rows) == 3  # the last known data stays, marked
            finally:
                scale_lab.kube_api_up()
            await wait_until(pilot, lambda: app.stale is None, timeout=90, what="the API server back")
            await pilot.pause()
            assert "STALE" not in app.sub_title
            assert not app.screen.query_one("#nodes-table").has_class("stale")
            assert "(stale)" not in str(app.screen.query_one("#nodes-status").render())
            assert _toasts(app, "answers again")
    finally:
        app.kube.stop()


async def test_binary_theme_file_gives_a_notification_and_the_default_theme(scale_lab: Lab) -> None:
    themes = xdg_data_home() / "console" / "themes"  # the autouse fixture points XDG_DATA_HOME at tmp_path
    themes.mkdir(parents=True)
    (themes / "mine.yaml").write_bytes(b"\xff\xfe\x00\x01\x02binary")
    (themes / "list.yaml").write_text("- not\n- a theme\n")
    app = _app(scale_lab)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_until(pilot, lambda: app.view.rows, what="the nodes")
            assert app.theme == "dark"
            skipped = _toasts(app, "theme skipped")
            assert any(str(Path(themes / "mine.yaml")) in t and "not UTF-8" in t for t in skipped), skipped
            assert any("list.yaml" in t and "expected a mapping" in t for t in skipped), skipped
    finally:
        app.kube.stop()


async def test_rbac_toast_names_the_kubeconfig_in_use_and_its_user(scale_lab: Lab, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20, point 6: with `--kubeconfig FILE` whose credentials get a 401, the RBAC toast ("permissions
    unknown …") named $KUBECONFIG's file and its user (console/kube/access.py classified the fault without the
    session's kubeconfig). It names FILE, the context in use and that context's user."""
    monkeypatch.setenv("KUBECONFIG", str(scale_lab.state.kubeconfig))  # the default: another file, another user
    doc = yaml.safe_load(scale_lab.state.kubeconfig.read_text())
    doc["users"] = [{"name": "alice-expired", "user": {"token": "a-token-the-server-never-issued"}}]
    doc["contexts"] = [{"name": "prod-east", "context": {"cluster": doc["clusters"][0]["name"],
                                                         "user": "alice-expired"}}]
    doc["current-context"] = "prod-east"
    mine = tmp_path / "alice.kubeconfig"
    mine.write_text(yaml.safe_dump(doc))
    app = console_app(Settings(kubeconfig=str(mine), theme="dark"))
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_until(pilot, lambda: _toasts(app, "permissions unknown"), timeout=60, what="the RBAC toast")
            [toast] = _toasts(app, "permissions unknown")
            assert "401 Unauthorized" in toast, toast
            assert f"user alice-expired in context prod-east of {mine}" in toast, toast
            assert str(scale_lab.state.kubeconfig) not in toast and "lab-admin" not in toast, toast
    finally:
        app.kube.stop()
