"""HooksScreen against labs whose NFD reads hooks and feature files from ConfigMaps.

default lab (NFD v0.19: no hooks): edit a feature file and see the nodes relabelled; turn the leftover
hook into a feature file. seed-resize lab (NFD v0.8.2: hooks run): edit a hook, preview, save, relabel.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labstart import start_lab
from textual.widgets import OptionList, Static, TextArea
from tuitools import Host, settle

from console.config import Settings
from console.gateways import Gateways
from console.kube.nfdstore import list_nodes
from console.lab.world import Lab
from console.tui.safety import ConfirmDanger
from console.tui.screens.hooks import HooksScreen

pytestmark = pytest.mark.lab


# default_lab (one per module) comes from tests/tui/conftest.py
@pytest.fixture(scope="module")
def v08_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-resize", tmp_path_factory.mktemp("lab-seed-resize-hooks"))


def cluster_for(lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Gateways:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return Gateways.connect(Settings(kubeconfig=str(lab.state.kubeconfig)))


def wait_label(kube: Gateways, node: str, key: str, value: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    labels: dict[str, str] = {}
    while time.monotonic() < deadline:
        labels = list_nodes(kube.api_client)[node]["metadata"]["labels"]
        if labels.get(key) == value:
            return
        time.sleep(0.1)
    raise AssertionError(f"{node} never got {key}={value}; it has {sorted(labels)}")


async def open_entry(pilot: Any, screen: HooksScreen, option_id: str) -> None:
    olist = screen.query_one("#hooks-list", OptionList)
    olist.focus()
    olist.highlighted = olist.get_option_index(option_id)
    await pilot.press("enter")
    await pilot.pause()


async def test_feature_file_edit_relabels_nodes(default_lab: Lab, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    kube = cluster_for(default_lab, tmp_path, monkeypatch)
    screen = HooksScreen(gateways=kube, settings=Settings())
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        status = str(screen.query_one("#hooks-status", Static).render())
        assert "ConfigMaps in node-feature-discovery (group workers)" in status
        assert "NFD v0.19.0 (detected on the cluster)" in status and "no hooks (removed in v0.17)" in status
        # what an admin actually sees at 80×24: the note on the first line, the location cut, not wrapped
        shown = [screen.query_one("#hooks-status", Static).render_line(y).text for y in range(2)]
        assert "no hooks (removed in v0.17)" in shown[0] and "c makes a hook a feature file" in shown[0], shown
        assert shown[1].lstrip().startswith("ConfigMaps in node-feature-discovery"), shown
        await open_entry(pilot, screen, "feature:inventory")
        editor = screen.query_one("#hooks-editor", TextArea)
        assert "example.com/rack=r1" in editor.text
        editor.text = editor.text.replace("example.com/rack=r1", "example.com/rack=r42")
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert "example.com/rack=r42" in str(screen.query_one("#hooks-result", Static).render())
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDanger)
        assert app.screen.target == "configmap node-feature-discovery/nfd-features-workers:inventory"
        assert "+example.com/rack=r42" in app.screen.preview
        await pilot.press("y")
        await settle(pilot)
        wait_label(kube, "kube-worker01", "example.com/rack", "r42")
        entry = json.loads((Path(os.environ["XDG_STATE_HOME"]) / "console" / "audit.log").read_text().splitlines()[-1])
        assert entry["action"] == "nfd.feature.save" and entry["result"] == "ok"

        # the leftover hook: NFD v0.19 ignores it; saving it says so
        await open_entry(pilot, screen, "hook:my-script")
        screen.query_one("#hooks-editor", TextArea).text = "#!/bin/sh\necho converted.flag=yes\n"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDanger)
        await pilot.press("y")
        await settle(pilot)
        shown = [n.message for n in app._notifications]
        assert any("does not run hooks" in m and "press c" in m for m in shown), shown
        # turn it into a feature file and its labels appear
        screen.query_one("#hooks-editor", TextArea).blur()
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDanger)
        assert app.screen.target.endswith("nfd-features-workers:my-script")
        await pilot.press("y")
        await settle(pilot)
        wait_label(kube, "kube-worker02", "feature.node.kubernetes.io/converted.flag", "yes")
    kube.api_client.close()


async def test_hook_edit_preview_save_relabels_on_v08(v08_lab: Lab, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    kube = cluster_for(v08_lab, tmp_path, monkeypatch)
    screen = HooksScreen(gateways=kube, settings=Settings())
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "NFD v0.8.2" in screen.version_text
        await open_entry(pilot, screen, "hook:my-script")
        editor = screen.query_one("#hooks-editor", TextArea)
        assert editor.text.startswith("#!/bin/sh")
        editor.text = "#!/bin/sh\necho FROM_CONSOLE=1\n"
        await pilot.press("ctrl+r")
        await settle(pilot)
        # v0.8 names hook labels <hook file name>-<key>
        assert "feature.node.kubernetes.io/my-script-FROM_CONSOLE=1" in str(
            screen.query_one("#hooks-result", Static).render())
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        wait_label(kube, "kube-worker01", "feature.node.kubernetes.io/my-script-FROM_CONSOLE", "1")
    kube.api_client.close()
