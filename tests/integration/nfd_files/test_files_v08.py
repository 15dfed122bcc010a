"""`console nfd files push` of a hook on NFD v0.9.0 (upstream's, the oldest release the lab builds, as field
report 1's v0.8.2: hooks from the hostPath source.d, labels named `<file name>-<key>`; no NodeFeature API), in the
seed-live lab, through the real clients and node access.

NFD v0.9.0 reads every name in source.d, hidden ones too (source/local/local.go at v0.9.0 has no
`strings.HasPrefix(fileName, ".")` skip; it came in v0.15), so the temp file of the atomic write must not be
there: it goes to the parent directory. The preview (console/nfd_preview.preview_file with the cluster's version)
must name the labels as that nfd-worker + nfd-master then write them.

Needs the issue-11 merge: guestfs (real sh in node exec), labnfd (the worker reading the node's source.d),
discovery (discover_nfd).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from labstart import start_lab

from console.lab.guestroot import NFD_SOURCE_D
from console.lab.world import Lab

pytestmark = pytest.mark.lab

FNS = "feature.node.kubernetes.io"
HOOK = """#!/bin/sh
# pid-max: field report 1's sysctl hook, one value
echo "kernel.pid_max=$(cat /proc/sys/kernel/pid_max)"
echo "/pid-max-read=true"
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-live", tmp_path_factory.mktemp("lab-nfd-files-v08"))


def labels(api: Any, node: str) -> dict[str, str]:
    return client.CoreV1Api(api).read_node(node).metadata.labels or {}


def test_a_hook_on_one_node_labels_that_node_as_the_preview_says(lab, api, cli, tmp_path):
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    hook = tmp_path / "pid-max"
    hook.write_text(HOOK)
    code, doc, err = cli(env, "nfd", "files", "push", str(hook), "--kind", "hook", "--node",
                             "kube-worker01", "--yes")
    assert (code, doc["status"], doc["nfd_version"]) == (0, "done", "v0.9.0"), err
    (row,) = doc["nodes"]
    # v0.9.0: a key without '/' is prefixed with the hook's name; a '/'-prefixed one is taken as it is
    assert set(row["labels"]) == {f"{FNS}/pid-max-kernel.pid_max", f"{FNS}/pid-max-read"}
    # the hook's values are the node's (the preview ran it here): the wait is for its keys
    assert row["relabelled"] and set(row["labels_seen"]) == set(row["labels"])
    on_node = labels(api, "kube-worker01")
    pid_max = lab.guest_roots["kube-worker01"].path("/proc/sys/kernel/pid_max").read_text().strip()
    assert on_node[f"{FNS}/pid-max-kernel.pid_max"] == pid_max and on_node[f"{FNS}/pid-max-read"] == "true"
    assert all(f"{FNS}/pid-max-read" not in labels(api, n) for n in ("kube-controlplane01", "kube-worker02"))
    src = lab.guest_roots["kube-worker01"].path(NFD_SOURCE_D)
    assert (src / "pid-max").read_text() == HOOK and (src / "pid-max").stat().st_mode & 0o111
    assert [p.name for p in src.iterdir() if p.name.startswith(".")] == []
    assert [p.name for p in src.parent.iterdir() if p.name.startswith(".console-nfd.")] == []

    code, doc, err = cli(env, "nfd", "files", "rm", "pid-max", "--kind", "hook", "--node",
                             "kube-worker01", "--yes")
    assert (code, doc["status"]) == (0, "done"), err
    assert f"{FNS}/pid-max-read" not in labels(api, "kube-worker01")


def test_field_report_1_my_script_on_kube_worker01_only(lab, api, cli, tmp_path):
    """Issue 11 acceptance, field report 1 on v0.9.0 (v0.8.2's design): the article's sysctl hook `my-script` pushed to
    kube-worker01 only; `kubectl get node kube-worker01 --show-labels` then has
    feature.node.kubernetes.io/my-script-kernel.pid_max=<the node's value> within the worker's interval (the
    push waits for it), no other node does, and removing it takes the label away."""
    import subprocess

    from console.lab.scenarios import SYSCTL_HOOK

    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    hook = tmp_path / "my-script"
    hook.write_text(SYSCTL_HOOK)
    code, doc, err = cli(env, "nfd", "files", "push", str(hook), "--kind", "hook", "--node", "kube-worker01", "--yes")
    assert (code, doc["status"]) == (0, "done"), err
    key = f"{FNS}/my-script-kernel.pid_max"
    pid_max = lab.guest_roots["kube-worker01"].path("/proc/sys/kernel/pid_max").read_text().strip()
    shown = subprocess.run(["kubectl", "--kubeconfig", str(lab.state.kubeconfig), "get", "node", "kube-worker01",
                            "--show-labels", "--no-headers"], capture_output=True, text=True, check=True).stdout
    assert f"{key}={pid_max}" in shown.split()[-1].split(",")
    assert all(key not in labels(api, n) for n in ("kube-controlplane01", "kube-worker02"))
    code, doc, err = cli(env, "nfd", "files", "rm", "my-script", "--kind", "hook", "--node", "kube-worker01", "--yes")
    assert (code, doc["status"]) == (0, "done"), err
    assert key not in labels(api, "kube-worker01")
