"""RulesScreen against the default lab: template, validation as you type, dry-run, apply, conflicts."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static, TextArea
from tuitools import Host, confirm_into_conflict, settle

from console.audit import AuditLog
from console.config import Settings
from console.gateways import Gateways
from console.guard import Guard
from console.kube.nfdstore import RuleStore, list_nodes
from console.lab.world import Lab
from console.tui.safety import ConfirmDanger
from console.tui.screens.rules import RulesScreen, TemplatePicker

pytestmark = pytest.mark.lab


@pytest.fixture
def kube(default_lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateways]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cluster = Gateways.connect(Settings(kubeconfig=str(default_lab.state.kubeconfig)))
    yield cluster
    cluster.api_client.close()


def wait_until(predicate: Any, timeout: float = 15.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def test_template_dry_run_apply_labels_nodes(kube: Gateways) -> None:
    screen = RulesScreen(gateways=kube, settings=Settings())
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert screen.version_text.startswith("NFD v0.19.0 (detected")
        assert screen.has_class("-narrow")
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, TemplatePicker)
        await pilot.press("down", "enter")  # "AVX512F nodes"
        await pilot.pause()
        assert "AVX512F" in screen.query_one("#rules-editor", TextArea).text
        assert "valid" in str(screen.query_one("#rules-problems", Static).render())
        screen.query_one("#rules-editor", TextArea).blur()
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert screen.dry_run is not None
        assert {n.node for n in screen.dry_run.affected} == {"kube-worker02", "kube-worker03"}
        shown = str(screen.query_one("#rules-result", Static).render())
        assert "2 of 5 node(s) change" in shown and "+ labels: example.dev/avx512=true" in shown
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDanger)
        assert app.screen.target == "NodeFeatureRule avx512 (2 nodes affected)"
        await pilot.press("y")
        await settle(pilot)
        assert RuleStore(kube.api_client).get("avx512")["spec"]["rules"][0]["name"] == "cpu has AVX512F"

        def labelled() -> set[str]:
            nodes = list_nodes(kube.api_client)
            return {n for n, o in nodes.items() if o["metadata"]["labels"].get("example.dev/avx512") == "true"}

        assert wait_until(lambda: labelled() == {"kube-worker02", "kube-worker03"}, what="nfd-master labels")
        entry = json.loads((Path(os.environ["XDG_STATE_HOME"]) / "console" / "audit.log").read_text().splitlines()[-1])
        assert entry["action"] == "nfd.rule.create" and entry["target"] == "nodefeaturerule/avx512"
        assert entry["phase"] == "outcome" and entry["result"] == "ok"

        # now change it: the dry-run shows the label value changing on the same two nodes
        editor = screen.query_one("#rules-editor", TextArea)
        assert screen.loaded is not None and screen.loaded["metadata"]["name"] == "avx512"
        editor.text = editor.text.replace('example.dev/avx512: "true"', 'example.dev/avx512: "fast"').replace(
            "example.dev/avx512: 'true'", "example.dev/avx512: fast")
        editor.blur()
        await pilot.press("ctrl+r")
        await settle(pilot)
        changed = {n.node: n.labels.changed for n in screen.dry_run.affected}
        assert changed == {n: {"example.dev/avx512": ("true", "fast")} for n in ("kube-worker02", "kube-worker03")}
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDanger) and app.screen.action_name == "Replace"
        await pilot.press("y")
        await settle(pilot)
        assert wait_until(lambda: list_nodes(kube.api_client)["kube-worker03"]["metadata"]["labels"].get(
            "example.dev/avx512") == "fast", what="relabel to fast")


async def test_validation_messages_and_conflict(kube: Gateways) -> None:
    # someone else's writes (their own audit log)
    rules = RuleStore(kube.api_client, guard=Guard(read_only=False, audit=AuditLog(Path(os.environ["XDG_STATE_HOME"])
                                                                                 / "someone-else.log")))
    import yaml

    from console.nfd_preview import RULE_TEMPLATES

    obj = yaml.safe_load(RULE_TEMPLATES["kernel modules loaded"])
    rules.create(obj)
    screen = RulesScreen(gateways=kube, settings=Settings())
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        editor = screen.query_one("#rules-editor", TextArea)
        # invalid YAML: a line number, no crash, no dry-run
        editor.text = "apiVersion: nfd.k8s-sigs.io/v1alpha1\nspec:\n  rules: [\n    - name: x\n"
        screen.validate_now()
        problems = str(screen.query_one("#rules-problems", Static).render())
        assert "YAML error at line" in problems
        editor.blur()
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert screen.dry_run is None
        # a rule with an unknown operator: the validator's message names the rule and field
        editor.text = RULE_TEMPLATES["AVX512F nodes"].replace("op: Exists", "op: Bogus")
        screen.validate_now()
        problems = str(screen.query_one("#rules-problems", Static).render())
        assert "cpu has AVX512F" in problems and "Bogus" in problems
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmDanger)

        # open the cluster rule, someone else changes it, apply -> conflict dialog -> overwrite
        name = obj["metadata"]["name"]
        screen.open_rule(next(r for r in screen.rules if r["metadata"]["name"] == name))
        editor.text = editor.text.replace("example.dev/kernel-modules-ready", "example.dev/modules-mine")
        theirs = rules.get(name)
        theirs["spec"]["rules"][0]["labels"] = {"example.dev/modules-theirs": "true"}
        rules.replace(theirs, resource_version=theirs["metadata"]["resourceVersion"])
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDanger)
        dialog = await confirm_into_conflict(pilot)
        assert "modules-theirs" in dialog.theirs and "modules-mine" in dialog.mine
        await pilot.press("o")
        await settle(pilot)
        assert rules.get(name)["spec"]["rules"][0]["labels"] == {"example.dev/modules-mine": "true"}


async def test_read_only_hides_apply(kube: Gateways) -> None:
    settings = Settings(read_only=True)
    screen = RulesScreen(gateways=kube, settings=settings)
    app = Host(screen, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert screen.check_action("apply", ()) is False
        assert screen.check_action("dry_run", ()) is True
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        screen.query_one("#rules-editor", TextArea).blur()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDanger)
        assert screen.dry_run is None  # nothing ran on the apply key either


async def test_screens_pushed_without_arguments_use_the_apps_gateway(kube: Gateways) -> None:
    """`:rules` / `:hooks` push the screens with no arguments; they take the app's gateways and settings."""
    from console.tui.screens.hooks import HooksScreen

    rules_screen = RulesScreen()
    app = Host(rules_screen, Settings(nfd_version="v0.16.0"))
    app.gateways = kube
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert rules_screen.gateways is kube and rules_screen.version_text == "NFD v0.16.0 (from settings)"
        assert rules_screen.store is not None
        hooks_screen = HooksScreen()
        app.push_screen(hooks_screen)
        await settle(pilot)
        assert hooks_screen.gateways is kube and hooks_screen.settings.nfd_version == "v0.16.0"
        assert "hooks off unless sources.local.hooksEnabled: true" in str(
            hooks_screen.query_one("#hooks-status", Static).render())
