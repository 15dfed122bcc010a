"""The rules and hooks screens write through the Guard (console/guard.py): with the audit log on a full device
(/dev/full, full(4): every write ENOSPC) the apply/save is refused before the write and the toast says so;
in read-only the actions are hidden and, if a save is reached anyway, the store refuses it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.widgets import TextArea
from tuitools import Host, settle

from console.config import Settings
from console.gateways import Gateways
from console.kube.nfdstore import RuleStore, StoreNotFound
from console.lab.world import Lab
from console.tui.safety import ConfirmDanger
from console.tui.screens.hooks import HooksScreen
from console.tui.screens.rules import RulesScreen, TemplatePicker


def _full_audit_log() -> Path:
    log = Path(os.environ["XDG_STATE_HOME"]) / "console" / "audit.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.symlink_to("/dev/full")
    return log


@pytest.fixture
def hook_dir(tmp_path: Path) -> Path:
    root = tmp_path / "nfd"
    (root / "source.d").mkdir(parents=True)
    (root / "features.d").mkdir()
    (root / "features.d" / "rack").write_text("RACK=r1\n")
    return root


async def _wait(pilot, predicate, what: str, tries: int = 200) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _messages(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_hooks_save_refused_when_the_audit_log_is_full(hook_dir: Path) -> None:
    log = _full_audit_log()
    screen = HooksScreen(settings=Settings(hook_store="directory", hook_dir=str(hook_dir)))
    app = Host(screen, screen.settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        rack = next(f for f in screen.files if f.name == "rack")
        screen.open_file(rack)
        await settle(pilot)
        screen.query_one("#hooks-editor", TextArea).text = "RACK=r42\n"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDanger)
        await pilot.press("y")
        await _wait(pilot, lambda: any("cannot be written" in m for m in _messages(app)), "the refusal toast")
        [msg] = [m for m in _messages(app) if "cannot be written" in m]
        assert str(log) in msg and "not done" in msg and "saved" not in " ".join(_messages(app))
    assert (hook_dir / "features.d" / "rack").read_text() == "RACK=r1\n"  # nothing changed


async def test_read_only_hides_save_and_the_store_refuses_if_reached(hook_dir: Path) -> None:
    screen = HooksScreen(settings=Settings(hook_store="directory", hook_dir=str(hook_dir), read_only=True))
    app = Host(screen, screen.settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert screen.check_action("save", ()) is False  # hidden (console/tui/safety.py)
        rack = next(f for f in screen.files if f.name == "rack")
        screen.save_file(rack, "RACK=r9\n", rack.version)  # reached anyway: below the UI, the guard refuses
        await _wait(pilot, lambda: any(m.startswith("read-only:") for m in _messages(app)), "the refusal")
    assert (hook_dir / "features.d" / "rack").read_text() == "RACK=r1\n"
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "console" / "audit.log").exists()


@pytest.mark.lab
async def test_rule_apply_refused_when_the_audit_log_is_full(default_lab: Lab) -> None:
    cluster = Gateways.connect(Settings(kubeconfig=str(default_lab.state.kubeconfig)))
    log = _full_audit_log()
    try:
        screen = RulesScreen(gateways=cluster, settings=Settings())
        app = Host(screen, screen.settings)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("n")
            await pilot.pause()
            assert isinstance(app.screen, TemplatePicker)
            await pilot.press("down", "enter")  # "AVX512F nodes"
            await pilot.pause()
            screen.query_one("#rules-editor", TextArea).blur()
            await pilot.press("ctrl+r")
            await settle(pilot)
            await pilot.press("a")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmDanger)
            await pilot.press("y")
            await _wait(pilot, lambda: any("cannot be written" in m for m in _messages(app)), "the refusal toast")
            assert not any(m.startswith("created") for m in _messages(app))
            assert any(str(log) in m for m in _messages(app))
        with pytest.raises(StoreNotFound):
            RuleStore(cluster.api_client).get("avx512")  # the rule was not applied
    finally:
        cluster.api_client.close()
