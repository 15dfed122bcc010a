"""`:ctx NAME` resolves the settings again for NAME (console.config.for_context): a switch into a context whose
`contexts.NAME` block says read_only makes the session read-only, and its theme applies (k9s: skins and
read-only per context). Against a lab (libvirt's test driver: no VMs are needed here), real clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from tuitools import console_app

from console.config import config_path, load
from console.lab.world import Lab
from console.tui.safety import allow_action, is_read_only
from screenshots import wait_until


def _two_contexts(lab: Lab, path: Path) -> tuple[Path, str]:
    """The lab's kubeconfig with a second context `prod` on the same cluster; (file, first context)."""
    kc = yaml.safe_load(lab.state.kubeconfig.read_text())
    first = kc["contexts"][0]
    kc["contexts"].append({"name": "prod", "context": dict(first["context"])})
    path.write_text(yaml.safe_dump(kc))
    return path, first["name"]


def _notes(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


async def test_switch_into_a_read_only_context_makes_the_session_read_only(kube_lab: Lab, tmp_path: Path) -> None:
    kubeconfig, first = _two_contexts(kube_lab, tmp_path / "kubeconfig")
    config_path().parent.mkdir(parents=True)
    config_path().write_text("theme: dark\ncontexts:\n  prod: {read_only: true, theme: light}\n")
    settings = load({"kubeconfig": str(kubeconfig)})  # as cli_tui resolves them: current-context = first
    assert settings.read_only is False
    app = console_app(settings)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.view.rows, what="nodes")
            assert not is_read_only(app) and app.theme == "dark"
            assert allow_action(app, "scale_up")
            await pilot.press("colon", *"ctx prod", "enter")
            await wait_until(pilot, lambda: app.kube.target.context == "prod", what="the switch to prod")
            assert app.settings.read_only is True and is_read_only(app)
            assert app.settings.context == "prod" and app.settings.kubeconfig == str(kubeconfig)
            assert "read-only" in app.sub_title and app.theme == "light"
            assert not allow_action(app, "scale_up")  # the dangerous bindings are gone
            assert app.guard.read_only  # and the gateways' guard refuses below the UI
            assert any("switched to context prod" in m and "read-only" in m for m in _notes(app))
            await pilot.press("colon", *"scale-up kube-worker02", "enter")
            await pilot.pause()
            assert type(app.screen).__name__ == "NodesScreen"
            assert any("read-only mode: scale-up is disabled" in m for m in _notes(app))

            await pilot.press("colon", *f"ctx {first}", "enter")  # back: that context's settings again
            await wait_until(pilot, lambda: app.kube.target.context == first, what="the switch back")
            assert not is_read_only(app) and app.theme == "dark" and "read-only" not in app.sub_title
            assert not app.guard.read_only
    finally:
        app.gateways.stop()


async def test_a_bad_config_refuses_the_switch(kube_lab: Lab, tmp_path: Path) -> None:
    """The file was edited into a bad one since the start: the switch is refused, naming line and key."""
    kubeconfig, first = _two_contexts(kube_lab, tmp_path / "kubeconfig")
    config_path().parent.mkdir(parents=True)
    config_path().write_text("contexts:\n  prod: {read_only: true}\n")
    app = console_app(load({"kubeconfig": str(kubeconfig)}))
    gateways = app.gateways
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.view.rows, what="nodes")
            config_path().write_text("contexts:\n  prod:\n    read_only: ture\n")
            await pilot.press("colon", *"ctx prod", "enter")
            await wait_until(pilot, lambda: any("not switched to prod" in m for m in _notes(app)), what="refusal")
            note = next(m for m in _notes(app) if "not switched to prod" in m)
            assert "config.yaml:3: contexts.prod.read_only: expected true or false, not 'ture'" in note
            assert app.kube is gateways.cluster and app.kube.target.context == first  # the same bundle
    finally:
        gateways.stop()
