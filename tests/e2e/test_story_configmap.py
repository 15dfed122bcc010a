"""Two admins edit one feature file where nfd-worker reads it from a ConfigMap (the `nfd-configmap` scenario: NFD
v0.16.4, features.d the `nfd-features` ConfigMap volume), end to end on `./dev lab --scenario nfd-configmap` in a
real 80×24 terminal (tmux), the second admin with kubectl (issue 20, point 1).

Admin A edits `inventory` in `:hooks`; admin B `kubectl patch`es that key of the ConfigMap; A pushes: the update
would carry the resourceVersion A loaded, and the key is no longer what A loaded, so nothing is sent; A sees the
conflict with both versions and the resourceVersions; the ConfigMap keeps B's content (kubectl). Kubernetes API
conventions, "Concurrency Control and Consistency" (resourceVersion: a 409 on a stale one); the dialog is the rules
editor's (console/tui/widgets/diff_dialog.py).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest
from storytools import Console, console_on_lab, mode
from tmuxtools import flat

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]


@pytest.fixture(scope="module")
def console() -> Iterator[Console]:
    yield from console_on_lab("--scenario", "nfd-configmap", nodes=3)


def test_concurrent_edits_of_a_feature_file_in_a_configmap(console: Console) -> None:
    t = console.tmux
    console.home()
    (cm,) = [c for c in console.kget("configmaps", "-A")["items"] if c["metadata"]["name"] == "nfd-features"]
    ns, loaded_rv = cm["metadata"]["namespace"], cm["metadata"]["resourceVersion"]
    console.command("hooks")
    t.wait_text("hook my-script", "file inventory", timeout=30, what="the hooks and feature files")
    t.keys("Down", "Enter")  # the list opens on the workers' hook; the feature file is next
    t.wait(lambda s: "# delivered by the nfd-features ConfigMap" in s and mode(s) == "BROWSE", 30,
           "the inventory feature file from the ConfigMap, in BROWSE mode")
    assert f"ConfigMap {ns}/nfd-features" in flat(t.screen())  # the status line names the store
    console.add_first_line("example.com/owner=admin-a")  # A's edit, unsaved

    theirs = "# patched by admin B\nexample.com/owner=admin-b\n"
    console.kubectl("patch", "configmap", "nfd-features", "-n", ns, "--type", "merge", "-p",
                    json.dumps({"data": {"inventory": theirs}}))
    theirs_rv = console.kget("configmap", "nfd-features", "-n", ns)["metadata"]["resourceVersion"]
    assert theirs_rv != loaded_rv

    t.keys("C-s")  # a ConfigMap reaches every node nfd-worker runs on: nothing to mark
    t.wait_text("Press y to confirm", "inventory on", timeout=30, what="the push confirmation")
    t.keys("y")
    screen = t.wait_text("Conflict:", "changed since it was read", "Reload theirs", "Overwrite with mine",
                         timeout=60, what="the conflict dialog")
    text = flat(screen)
    assert f"inventory in ConfigMap {ns}/nfd-features" in text, screen
    assert f"resourceVersion {loaded_rv} → {theirs_rv}" in text and "also on" not in text, screen
    # both versions: B's (-) and A's edit (+)
    assert "-example.com/owner=admin-b" in text and "+example.com/owner=admin-a" in text, screen

    after = console.kget("configmap", "nfd-features", "-n", ns)
    assert after["data"]["inventory"] == theirs and after["metadata"]["resourceVersion"] == theirs_rv  # B's survives

    t.keys("Escape")  # keep editing: A's edit stays, unsaved
    t.wait(lambda s: "Conflict:" not in s and mode(s) == "BROWSE" and "● unsaved" in s, 10, "A's edit kept")
    console.home()  # leaving asks to discard A's edit (d)
    assert console.kget("configmap", "nfd-features", "-n", ns)["data"]["inventory"] == theirs
