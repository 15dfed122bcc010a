"""Budgets against the default lab: a pathological NodeFeatureRule in the TUI's dry-run and applied with kubectl.

Each of the rule's 40 rules has a template that ranges over 2,000,000,000 (Go text/template has no
limit; issue 9 saw minutes and a frozen UI). The template budget (console/nfd/budget.py) ends each
after 500,000 steps; 40 of them still keep an evaluation busy for many seconds, long enough to show
that Esc cancels it (the TUI) and that the API server keeps answering while nfd-master evaluates it (the lab).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Static
from tuitools import Host

from console.config import Settings
from console.gateways import Gateways
from console.lab.world import Lab
from console.tui.screens.rules import RulesScreen

pytestmark = pytest.mark.lab

RULES = 40
PATHOLOGICAL = "\n".join([
    "apiVersion: nfd.k8s-sigs.io/v1alpha1", "kind: NodeFeatureRule", "metadata:", "  name: slow-templates",
    "spec:", "  rules:",
    *[line for i in range(RULES) for line in (
        f"  - name: slow-{i:02d}",
        '    labelsTemplate: "{{range 2000000000}}{{end}}"',
        "    matchFeatures:",
        "    - feature: kernel.version",
        "      matchExpressions: {major: {op: Exists}}")],
]) + "\n"


@pytest.fixture
def kube(default_lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateways]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cluster = Gateways.connect(Settings(kubeconfig=str(default_lab.state.kubeconfig)))
    yield cluster
    cluster.api_client.close()


async def wait_for(pilot: object, predicate: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)  # type: ignore[attr-defined]


async def test_esc_cancels_a_running_dry_run(kube: Gateways) -> None:
    screen = RulesScreen(gateways=kube, settings=Settings())
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen.open_rule(None, PATHOLOGICAL)
        screen.editor.blur()
        assert not screen.errors, screen.errors
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: any(w.name == "run_dry_run" for w in app.workers if w.is_running),
                       "the dry-run worker")
        await pilot.press("escape")  # answered while the evaluation runs
        assert app.screen is screen  # the first esc cancels the dry-run, it does not leave

        def shown() -> str:
            return str(screen.query_one("#rules-result", Static).render())

        # far sooner than the evaluation would end (40 rules x 500,000 steps on every node)
        await wait_for(pilot, lambda: "dry-run cancelled" in shown(), "the cancelled dry-run to report", timeout=20)
        assert screen.dry_run is None  # no result was taken for the cancelled run
        assert not any(w.name == "run_dry_run" and w.is_running for w in app.workers)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is not screen  # esc again goes back


async def test_ctrl_q_quits_while_a_dry_run_evaluates(kube: Gateways) -> None:
    screen = RulesScreen(gateways=kube, settings=Settings())
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen.open_rule(None, PATHOLOGICAL)
        screen.editor.blur()
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: any(w.name == "run_dry_run" for w in app.workers if w.is_running),
                       "the dry-run worker")
        cancel = screen._dry_run_cancel
        assert cancel is not None and not cancel.is_set()
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: not app.is_running, "the app to quit", timeout=20)
    assert cancel.is_set()  # the evaluation thread was told to stop, not left running


def kubectl(lab: Lab, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(lab.state.kubeconfig)}
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, env=env, timeout=timeout)


REDOS_RULE = """apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: redos-tui}
spec:
  rules:
  - name: redos
    labels: {redos: "true"}
    matchFeatures:
    - feature: custom.redos
      matchExpressions:
        value: {op: InRegexp, value: ["(a+)+$"]}
"""


async def test_rules_screen_dry_run_of_a_pathological_regexp_against_10000_characters(kube: Gateways) -> None:
    """`(a+)+$` against a 10,000-character attribute, through the rules screen's own dry-run (ctrl+r, its thread
    worker, the cluster's NodeFeatures): NFD's InRegexp is Go's regexp (RE2, linear: expression.go
    regexp.Compile + MatchString), so the result is there at once. With a backtracking engine 27 characters took
    11 s (issue 9). A third-party NodeFeature for kube-worker01 carries the value (NFD merges every NodeFeature
    of a node: nfd-master getAndMergeNodeFeatures); the match case shows the value is the one evaluated."""
    from kubernetes import client

    api = client.CustomObjectsApi(kube.api_client)
    nf = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
          "metadata": {"name": "redos-tui", "namespace": "node-feature-discovery",
                       "labels": {"nfd.node.kubernetes.io/node-name": "kube-worker01"}},
          "spec": {"features": {"attributes": {"custom.redos": {"elements": {"value": "a" * 10_000}}}}}}
    api.create_namespaced_custom_object("nfd.k8s-sigs.io", "v1alpha1", "node-feature-discovery", "nodefeatures", nf)
    try:
        screen = RulesScreen(gateways=kube, settings=Settings())
        app = Host(screen, screen.settings)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            screen.open_rule(None, REDOS_RULE)
            screen.editor.blur()
            assert not screen.errors, screen.errors

            async def dry_run() -> list[str]:
                screen.dry_run = None
                await pilot.press("ctrl+r")
                # generous: a backtracking engine would not end in minutes
                await wait_for(pilot, lambda: screen.dry_run is not None, "the dry-run result", timeout=20)
                assert screen.dry_run is not None and screen.dry_run.error == ""
                return [n.node for n in screen.dry_run.affected]

            assert await dry_run() == ["kube-worker01"]  # a…a ends in a's: the rule would label it
            nf["spec"]["features"]["attributes"]["custom.redos"]["elements"]["value"] = "a" * 10_000 + "!"
            api.patch_namespaced_custom_object("nfd.k8s-sigs.io", "v1alpha1", "node-feature-discovery",
                                               "nodefeatures", "redos-tui", {"spec": nf["spec"]})
            assert await dry_run() == []  # the worst case for backtracking: no match
    finally:
        api.delete_namespaced_custom_object("nfd.k8s-sigs.io", "v1alpha1", "node-feature-discovery", "nodefeatures",
                                            "redos-tui")
