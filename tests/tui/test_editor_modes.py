"""The editors' EDIT MODE contract (issue 12) on the hooks screen's directory mode (no cluster), at 80×24.

BROWSE on opening (plain letters are actions), `e` / `enter` → EDIT (letters type, only ctrl keys act), `escape`
→ BROWSE with the edits kept and marked `●`, a further `escape` asks before leaving; unsaved edits are never
dropped without `Discard unsaved changes to NAME?`; read-only says so instead of offering ctrl+s.

BROWSE is Textual's `TextArea.read_only` (textual/widgets/_text_area.py: `check_consume_key` returns False when
read-only, so the screen's bindings get the letters); the mode is shown on the line above the footer, which
starts with `EDIT —` or `BROWSE —`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static
from tuitools import Host, settle

from console.config import Settings
from console.tui.command_grammar import parse_command
from console.tui.navigation import run
from console.tui.screens.hooks import HooksScreen
from console.tui.screens.hooks_messages import NewFileDialog
from console.tui.widgets.diff import DiffView
from console.tui.widgets.discard_dialog import DiscardDialog
from console.tui.widgets.editor import CodeEditor

SAVED = "#!/bin/sh\necho GPU=true\n"


@pytest.fixture
def hook_dir(tmp_path: Path) -> Path:
    root = tmp_path / "nfd"
    (root / "source.d").mkdir(parents=True)
    (root / "features.d").mkdir()
    hook = root / "source.d" / "gpu.sh"
    hook.write_text(SAVED)
    hook.chmod(0o755)
    (root / "features.d" / "rack").write_text("RACK=r1\n")
    return root


def app_for(root: Path, **kw: Any) -> tuple[Host, HooksScreen]:
    settings = Settings(hook_store="directory", hook_dir=str(root), nfd_version="v0.16.0", **kw)
    screen = HooksScreen(settings=settings)
    return Host(screen, settings), screen


def mode_line(screen: HooksScreen) -> str:
    return str(screen.query_one("#hooks-mode", Static).render())


def footer_actions(app: Host) -> set[str]:
    """The actions the footer offers now (shown, enabled)."""
    return {b.binding.action for b in app.screen.active_bindings.values() if b.binding.show and b.enabled}


def notes(app: Host) -> list[str]:
    return [n.message for n in app._notifications]


async def test_letters_type_in_edit_mode_and_act_only_in_browse_mode(hook_dir: Path) -> None:
    """The bug: after one Esc, `a` `d` `n` fired Apply/Diff/New while the user thought they were typing."""
    app, screen = app_for(hook_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        editor = screen.query_one("#hooks-editor", CodeEditor)
        assert mode_line(screen).startswith("BROWSE — e: edit")
        assert editor.read_only and not screen.editing
        editor.focus()
        await pilot.press("enter")  # enter on the editor starts editing, as `e` does
        assert screen.editing and not editor.read_only and app.focused is editor
        assert mode_line(screen) == "EDIT — esc: stop editing · ctrl+s: save · ctrl+r: preview"
        assert footer_actions(app) >= {"save", "preview", "stop_editing"}
        assert not footer_actions(app) & {"diff", "new_file", "mark_all", "toggle_node", "remove", "back", "edit"}
        await pilot.press("down", "down")
        await pilot.press(*"echo and=x")  # every plain letter types (e, a, n, d, x…), none is an action
        assert editor.text == SAVED + "echo and=x"
        assert app.screen is screen and not screen.query_one(DiffView).display
        await pilot.press("escape")  # back to BROWSE: the edits stay, marked unsaved; the focus stays too
        assert not screen.editing and editor.read_only and app.focused is editor
        assert editor.text == SAVED + "echo and=x"
        assert mode_line(screen).startswith("BROWSE ● unsaved — e: edit")
        assert str(editor.border_title).startswith("● gpu.sh")
        await pilot.press("d")  # now plain letters are actions, as the mode line says
        assert screen.query_one(DiffView).display
        await pilot.press("e")
        assert screen.editing and app.focused is editor
        await pilot.press("ctrl+r")  # ctrl keys act in EDIT mode
        await settle(pilot)
        assert "feature.node.kubernetes.io/and=x" in str(screen.query_one("#hooks-result", Static).render())
        assert screen.editing
        await pilot.press("escape", "escape")  # the second escape, in BROWSE, asks before leaving
        await pilot.pause()
        assert isinstance(app.screen, DiscardDialog)


async def test_unsaved_edits_are_never_dropped_silently(hook_dir: Path) -> None:
    """Opening another file, new, reload, leaving and `:` navigation each ask; k/esc keep, d discards."""
    app, screen = app_for(hook_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        editor = screen.query_one("#hooks-editor", CodeEditor)
        await pilot.press("e", "end", *"# mine", "escape")
        edited = editor.text
        assert edited != SAVED and screen.unsaved_name() == "gpu.sh"

        async def asked(*keys: str) -> DiscardDialog:
            await pilot.press(*keys)
            await pilot.pause()
            assert isinstance(app.screen, DiscardDialog), keys
            assert "Discard unsaved changes to gpu.sh?" in str(app.screen.query_one("#discard-title").render())
            return app.screen

        await pilot.click("#hooks-list", offset=(4, 2))  # the feature file "rack"
        await pilot.pause()
        assert isinstance(app.screen, DiscardDialog)
        await pilot.press("k")  # keep editing: nothing else happened
        await pilot.pause()
        assert app.screen is screen and screen.current is not None and screen.current.name == "gpu.sh"
        assert editor.text == edited
        for keys in (("n",), ("ctrl+l",), ("escape",)):
            await asked(*keys)
            await pilot.press("escape")  # esc keeps editing too
            await pilot.pause()
            assert app.screen is screen and editor.text == edited and not isinstance(app.screen, NewFileDialog)
        run(app, parse_command("quit"))  # `:quit` from the command bar
        await pilot.pause()
        assert isinstance(app.screen, DiscardDialog) and app.is_running
        await pilot.press("k")
        await pilot.pause()
        # discard, then the file asked for opens; the edits are gone for good (no draft comes back)
        await pilot.click("#hooks-list", offset=(4, 2))
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        assert screen.current is not None and screen.current.name == "rack" and editor.text == "RACK=r1\n"
        await pilot.click("#hooks-list", offset=(4, 1))
        await pilot.pause()
        assert app.screen is screen and screen.current.name == "gpu.sh" and editor.text == SAVED
        assert screen.unsaved_name() is None
        assert (hook_dir / "source.d" / "gpu.sh").read_text() == SAVED


async def test_nothing_unsaved_leaves_without_asking(hook_dir: Path) -> None:
    app, screen = app_for(hook_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e", "escape")  # edit mode without a change
        assert screen.unsaved_name() is None and mode_line(screen).startswith("BROWSE — ")
        run(app, parse_command("quit"))
        await pilot.pause()
        assert not isinstance(app.screen, DiscardDialog)


async def test_read_only_says_so_and_ctrl_s_is_not_silent(hook_dir: Path) -> None:
    """`--read-only`: no text offers ctrl+s; ctrl+s (in EDIT or BROWSE) toasts `read-only: NAME not saved`."""
    app, screen = app_for(hook_dir, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        result = str(screen.query_one("#hooks-result", Static).render())
        assert "read-only" in result and "ctrl+s" not in result, result
        assert mode_line(screen).startswith("BROWSE (read-only) — e: edit") and "ctrl+s" not in mode_line(screen)
        await pilot.press("e", "down", "down", *"echo TRY=1")  # EDIT mode still works, to try a preview
        assert screen.editing
        assert "ctrl+s" not in mode_line(screen) and "read-only" in mode_line(screen)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "read-only: gpu.sh not saved" in notes(app)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert "feature.node.kubernetes.io/TRY=1" in str(screen.query_one("#hooks-result", Static).render())
        await pilot.press("escape")
        before = len(notes(app))
        await pilot.press("ctrl+s")  # in BROWSE too
        await pilot.pause()
        assert notes(app)[before:] == ["read-only: gpu.sh not saved"]
        assert (hook_dir / "source.d" / "gpu.sh").read_text() == SAVED
        assert "save" not in footer_actions(app) and "not_saved" not in footer_actions(app)


async def test_navigation_asks_for_every_stacked_editor_with_unsaved_edits(hook_dir: Path) -> None:
    """`:nodes` pops every screen: each stacked editor with unsaved edits is asked about, the top one first."""
    app, below = app_for(hook_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e", *"# below", "escape")
        top = HooksScreen(settings=below.settings)
        app.push_screen(top)
        await settle(pilot)
        await pilot.press("e", *"# top", "escape")
        assert app.screen is top and below.unsaved_name() == top.unsaved_name() == "gpu.sh"
        run(app, parse_command("quit"))
        await pilot.pause()
        assert isinstance(app.screen, DiscardDialog)
        await pilot.press("d")
        await pilot.pause()
        assert top.unsaved_name() is None and isinstance(app.screen, DiscardDialog)  # then the one below
        await pilot.press("k")  # keep: the command does not run
        await pilot.pause()
        assert app.is_running and app.screen is top and below.unsaved_name() == "gpu.sh"
