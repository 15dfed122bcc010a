"""HooksScreen on a local directory store (no cluster): edit, preview, diff, save, conflicts, bad hooks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static, TextArea
from tuitools import Host, confirm_into_conflict, settle

from console.config import Settings
from console.tui.safety import ConfirmDanger
from console.tui.screens.hooks import HooksScreen
from console.tui.widgets.diff import DiffView


@pytest.fixture
def hook_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "nfd"
    (root / "source.d").mkdir(parents=True)
    (root / "features.d").mkdir()
    hook = root / "source.d" / "gpu.sh"
    hook.write_text("#!/bin/sh\necho GPU=true\n")
    hook.chmod(0o755)
    (root / "features.d" / "rack").write_text("RACK=r1\n")
    return root


def settings_for(root: Path, **kw: Any) -> Settings:
    return Settings(hook_store="directory", hook_dir=str(root), nfd_version="v0.16.0", **kw)


def result_text(screen: HooksScreen) -> str:
    return str(screen.query_one("#hooks-result", Static).render())


async def test_edit_preview_diff_save(hook_dir: Path) -> None:
    screen = HooksScreen(settings=settings_for(hook_dir))
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert [(f.kind, f.name) for f in screen.files] == [("hook", "gpu.sh"), ("feature", "rack")]
        assert screen.current is not None and screen.current.name == "gpu.sh"
        editor = screen.query_one("#hooks-editor", TextArea)
        assert editor.text.startswith("#!/bin/sh")
        # narrow terminal: the panels stack
        assert screen.has_class("-narrow")
        editor.text = "#!/bin/sh\necho GPU=true\necho VRAM=16\necho oops >&2\n"
        await pilot.press("ctrl+r")
        await settle(pilot)
        out = result_text(screen)
        assert "feature.node.kubernetes.io/GPU=true" in out
        assert "feature.node.kubernetes.io/VRAM=16" in out
        assert "oops" in out  # stderr shown inline
        assert "hooksEnabled" in out  # v0.16 runs hooks only when enabled
        # diff against what is deployed
        editor.blur()
        await pilot.press("d")
        view = screen.query_one("#hooks-diffview", DiffView)
        assert view.display and "+echo VRAM=16" in str(view.render())
        await pilot.press("v")
        assert view.mode == "split"
        # save: confirm names the target, then the file changes on disk and the audit log has it
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDanger)
        assert app.screen.target.endswith("source.d:gpu.sh")
        await pilot.press("y")
        await settle(pilot)
        assert (hook_dir / "source.d" / "gpu.sh").read_text().endswith("echo oops >&2\n")
        assert os.access(hook_dir / "source.d" / "gpu.sh", os.X_OK)
        log = Path(os.environ["XDG_STATE_HOME"]) / "console" / "audit.log"
        entry = json.loads(log.read_text().splitlines()[-1])
        assert entry["action"] == "nfd.hook.save" and entry["result"] == "ok" and "VRAM" in entry["after"]


async def test_conflict_then_overwrite(hook_dir: Path) -> None:
    screen = HooksScreen(settings=settings_for(hook_dir))
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen.query_one("#hooks-editor", TextArea).text = "#!/bin/sh\necho MINE=1\n"
        # someone else edits the hook after we loaded it
        (hook_dir / "source.d" / "gpu.sh").write_text("#!/bin/sh\necho THEIRS=1\n")
        await pilot.press("ctrl+s")
        await pilot.pause()
        dialog = await confirm_into_conflict(pilot)
        assert "THEIRS" in dialog.theirs and "MINE" in dialog.mine
        await pilot.press("o")
        await settle(pilot)
        assert (hook_dir / "source.d" / "gpu.sh").read_text() == "#!/bin/sh\necho MINE=1\n"


@pytest.mark.parametrize(
    ("script", "expect"),
    [
        ("#!/bin/sh\nsleep 30\n", "would have hung nfd-worker"),
        ("#!/bin/sh\nhead -c 10000000 /dev/zero | tr '\\0' 'x'\n", "printed more than 1048576 bytes"),
        ("#!/bin/sh\nprintf '\\001\\002 bad key!\\n=\\n%s\\n' \"$(head -c 300 /dev/urandom | base64)\"\n",
         "Dropped"),
        ("#!/bin/sh\nexit 3\n", "exited with status 3"),
    ],
    ids=["hangs", "10MB", "garbage", "fails"],
)
async def test_bad_hooks_give_inline_messages(hook_dir: Path, script: str, expect: str) -> None:
    screen = HooksScreen(settings=settings_for(hook_dir), preview_timeout=1.0)
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen.query_one("#hooks-editor", TextArea).text = script
        await pilot.press("ctrl+r")
        # the UI keeps handling keys while the hook runs in its worker
        screen.query_one("#hooks-editor", TextArea).blur()
        await pilot.press("v")
        assert screen.query_one(DiffView).mode == "split"
        if expect.startswith("would have hung"):
            assert any(w.group == "hooks-preview" and w.is_running for w in app.workers)
        await settle(pilot)
        assert expect in result_text(screen)
        assert app.screen is screen


async def test_read_only_hides_save(hook_dir: Path) -> None:
    screen = HooksScreen(settings=settings_for(hook_dir, read_only=True))
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = (hook_dir / "source.d" / "gpu.sh").read_text()
        screen.query_one("#hooks-editor", TextArea).text = "#!/bin/sh\necho X=1\n"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmDanger)
        assert (hook_dir / "source.d" / "gpu.sh").read_text() == before
        assert screen.check_action("save", ()) is False
        assert screen.check_action("preview", ()) is True


async def test_convert_hook_to_feature_file_on_v018(hook_dir: Path) -> None:
    settings = Settings(hook_store="directory", hook_dir=str(hook_dir), nfd_version="v0.18.1")
    screen = HooksScreen(settings=settings)
    app = Host(screen, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "no hooks (removed in v0.17)" in str(screen.query_one("#hooks-status", Static).render())
        screen.query_one("#hooks-editor", TextArea).blur()
        await pilot.press("c")
        await settle(pilot)
        assert "has no hooks" in result_text(screen)
        assert isinstance(app.screen, ConfirmDanger)
        assert app.screen.target.endswith("features.d:gpu.sh")
        await pilot.press("y")
        await settle(pilot)
        text = (hook_dir / "features.d" / "gpu.sh").read_text()
        assert text.startswith("# Converted from hook 'gpu.sh'") and "GPU=true" in text


async def test_mouse_opens_a_file_and_new_file_dialog(hook_dir: Path) -> None:
    screen = HooksScreen(settings=settings_for(hook_dir))
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        # the list is stacked on top at 80 columns: its second row is the feature file "rack"
        await pilot.click("#hooks-list", offset=(4, 2))
        await pilot.pause()
        assert screen.current is not None and (screen.current.kind, screen.current.name) == ("feature", "rack")
        assert screen.query_one("#hooks-editor", TextArea).text == "RACK=r1\n"
        screen.query_one("#hooks-editor", TextArea).blur()
        await pilot.press("n")
        await pilot.pause()
        await pilot.press(*"probe.sh")
        await pilot.click("#new-hook")
        await pilot.pause()
        assert screen.current is not None and (screen.current.kind, screen.current.name) == ("hook", "probe.sh")
        assert screen.query_one("#hooks-editor", TextArea).text.startswith("#!/bin/sh")
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert os.access(hook_dir / "source.d" / "probe.sh", os.X_OK)
        assert ("hook", "probe.sh") in [(f.kind, f.name) for f in screen.files]
