"""The rules screen's EDIT MODE contract (issue 12) against the lab's API server (libvirt's test driver: only
Kubernetes is needed), at 80×24: unsaved rule edits ask before they go, `--read-only` says so, and an NFD
without NodeFeatureRules (v0.8.2, field report 1) offers neither `n` nor templates but what to use instead
(nfd-worker's custom source or feature files: kubernetes-sigs/node-feature-discovery
docs/usage/customization-guide.md, "Custom feature source", "Local feature source")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from textual.widgets import OptionList, Static
from tuitools import Host, settle

from console.audit import AuditLog
from console.config import Settings
from console.gateways import Gateways
from console.guard import Guard
from console.kube.nfdstore import RuleStore
from console.lab.world import Lab
from console.nfd_preview import RULE_TEMPLATES
from console.tui.screens.rules import RulesScreen, TemplatePicker
from console.tui.widgets.discard_dialog import DiscardDialog
from console.tui.widgets.editor import CodeEditor

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def kube(kube_lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateways]:
    gateways = Gateways.connect(Settings(kubeconfig=str(kube_lab.state.kubeconfig)))
    audit = AuditLog(tmp_path_factory.mktemp("someone-else") / "audit.log")
    store = RuleStore(gateways.api_client, guard=Guard(read_only=False, audit=audit))
    for name in ("modes-a", "modes-b"):  # two rules in the cluster, made by someone else
        obj = yaml.safe_load(RULE_TEMPLATES["kernel modules loaded"])
        obj["metadata"]["name"] = name
        store.create(obj)
    yield gateways
    gateways.api_client.close()


def app_for(kube: Gateways, **kw: Any) -> tuple[Host, RulesScreen]:
    settings = Settings(**kw)
    screen = RulesScreen(gateways=kube, settings=settings)
    return Host(screen, settings, kube), screen


def shown(screen: RulesScreen, wid: str) -> str:
    return str(screen.query_one(wid, Static).render())


def notes(app: Host) -> list[str]:
    return [n.message for n in app._notifications]


async def asked(pilot: Any, *keys: str, name: str) -> None:
    await pilot.press(*keys)
    await pilot.pause()
    assert isinstance(pilot.app.screen, DiscardDialog), keys
    assert f"Discard unsaved changes to {name}?" in str(pilot.app.screen.query_one("#discard-title").render())


async def test_unsaved_rule_edits_ask_before_they_go(kube: Gateways, tmp_path: Path) -> None:
    """The bug: unsaved rule edits vanished (esc, another rule, n) without a word."""
    app, screen = app_for(kube)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert screen.loaded is not None and screen.loaded["metadata"]["name"] == "modes-a"
        assert shown(screen, "#rules-status").startswith("editing modes-a · ")  # the name first: never cut at 80
        assert shown(screen, "#rules-mode").startswith("BROWSE — e: edit · ctrl+r: dry-run · a: apply")
        editor = screen.query_one("#rules-editor", CodeEditor)
        browse = editor.region.height
        await pilot.press("e")
        assert shown(screen, "#rules-mode") == "EDIT — esc: stop editing · ctrl+s: apply · ctrl+r: dry-run"
        await pilot.pause()
        # 80×24: the list collapses to one row (the open rule) and the editor takes the rest
        assert screen.query_one("#rules-list").region.height == 3 and editor.region.height == browse + 1
        await pilot.press(*"# and a note", "enter", "escape")  # a, n, d typed, not Apply / New / Diff
        edited = editor.text
        assert edited.startswith("# and a note\napiVersion") and app.screen is screen
        assert shown(screen, "#rules-mode").startswith("BROWSE ● unsaved")
        await asked(pilot, "escape", name="modes-a")  # leaving
        await pilot.press("k")
        await asked(pilot, "n", name="modes-a")  # a new rule from a template
        await pilot.press("escape")
        olist = screen.query_one("#rules-list", OptionList)
        olist.focus()
        olist.highlighted = 1
        await asked(pilot, "enter", name="modes-a")  # another rule
        await pilot.press("k")
        await pilot.pause()
        assert editor.text == edited and screen.loaded["metadata"]["name"] == "modes-a"
        await asked(pilot, "enter", name="modes-a")
        await pilot.press("d")  # discarded: modes-b opens; back on modes-a, the cluster's text, no draft
        await pilot.pause()
        assert screen.loaded["metadata"]["name"] == "modes-b" and screen.unsaved_name() is None
        assert app.focused is editor  # opening a rule focuses the editor, still in BROWSE
        olist.focus()
        olist.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert screen.loaded["metadata"]["name"] == "modes-a" and "# and a note" not in editor.text
        # a rule from a template is unsaved until applied; leaving asks, d leaves
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, TemplatePicker)
        await pilot.press("down", "enter")  # "AVX512F nodes"
        await pilot.pause()
        assert screen.unsaved_name() == "avx512 (new)"
        await asked(pilot, "escape", name="avx512 (new)")
        await pilot.press("d")
        await pilot.pause()
        assert app.screen is not screen


async def test_read_only_offers_no_ctrl_s_and_says_not_saved(kube: Gateways) -> None:
    app, screen = app_for(kube, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        hint = shown(screen, "#rules-result")
        assert "read-only" in hint and "ctrl+s" not in hint and "apply" not in hint.replace("applied", ""), hint
        await pilot.press("e")  # EDIT still works, to try a dry-run
        assert screen.editing and "ctrl+s" not in shown(screen, "#rules-mode")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "read-only: modes-a not saved" in notes(app)
        assert screen.dry_run is None  # the apply key did not start the dry-run before an apply either


async def test_nfd_without_nodefeaturerules_offers_what_to_use_instead(kube: Gateways) -> None:
    """v0.8.2 (field report 1): no `n`, no templates; the screen names nfd-worker's custom source and :hooks."""
    app, screen = app_for(kube, nfd_version="v0.8.2")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        hint = shown(screen, "#rules-result")
        assert "NFD v0.8.2 has no NodeFeatureRules" in hint and "sources.custom" in hint and ":hooks" in hint
        olist = screen.query_one("#rules-list", OptionList)
        prompts = [str(olist.get_option_at_index(i).prompt) for i in range(olist.option_count)]
        assert not any("press n" in p for p in prompts), prompts
        assert screen.check_action("new_rule", ()) is False
        assert "new_rule" not in {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        screen.query_one("#rules-editor").focus()
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is screen  # no template picker
        await pilot.press("e")
        assert not screen.editing
        screen.query_one("#rules-editor", CodeEditor).focus()
        await pilot.press("enter")  # enter on the editor neither
        assert not screen.editing and not screen.query_one("#rules-editor", CodeEditor).editing
        assert shown(screen, "#rules-mode").startswith("BROWSE — NFD v0.8.2 has no NodeFeatureRules")
        assert any("sources.custom" in n for n in notes(app))
