"""`console nfd files list|push|rm` and `wait_relabel` on the default lab (NFD v0.19, features.d a hostPath as
NFD's manifests mount it: deployment/base/worker-daemonset, deployment/helm/.../worker.yaml), through the real
kubernetes client and the console's own node access (node-debug pods, whose `nsenter ... sh -c SCRIPT` the lab
runs with real sh/base64/sha256sum/mv over each node's GuestRoot).

The CLI tests need the issue-11 merge: `guestfs` (real tools in the lab's node exec), `labnfd` (the simulated
nfd-worker reading the node's features.d from its GuestRoot) and `discovery` (discover_nfd). The wait_relabel
tests need only the lab's API server.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from labstart import start_lab
from labtools import lab_env
from ptycli import answer_after

from console.kube.nfdfiles import wait_relabel
from console.lab.guestroot import NFD_FEATURES_D
from console.lab.world import Lab

pytestmark = pytest.mark.lab

FNS = "feature.node.kubernetes.io"
WORKERS = ("kube-worker01", "kube-worker02", "kube-worker03", "kube-worker04")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("default", tmp_path_factory.mktemp("lab-nfd-files"))


def _state(tmp_path: Path, *, config: str = "") -> dict[str, str]:
    state, cfg = tmp_path / "state", tmp_path / "config"
    (state / "console").mkdir(parents=True, exist_ok=True)
    (cfg / "console").mkdir(parents=True, exist_ok=True)
    if config:
        (cfg / "console" / "config.yaml").write_text(config)
    return {"XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(cfg)}


def audit(env: dict[str, str]) -> list[dict[str, Any]]:
    p = Path(env["XDG_STATE_HOME"]) / "console" / "audit.log"
    if p.is_symlink() or not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines()]


def labels(api: Any, node: str) -> dict[str, str]:
    return client.CoreV1Api(api).read_node(node).metadata.labels or {}


def config_maps(api: Any) -> dict[tuple[str, str], dict[str, str]]:
    return {(c.metadata.namespace, c.metadata.name): dict(c.data or {})
            for c in client.CoreV1Api(api).list_config_map_for_all_namespaces().items}


def features_d(lab: Lab, node: str) -> Path:
    return lab.guest_roots[node].path(NFD_FEATURES_D)


def node_cat(api: Any, node: str, path: str) -> str:
    """The file as the node has it, read through the console's node access (a node-debug pod)."""
    from console.kube.nodeaccess import node_access

    res = node_access("debug-pod", api).run(node, f"cat {path}", timeout=60)
    assert res.ok, res.tail()
    return res.output


# -- wait_relabel (the lab's API server only) ---------------------------------------------------------------


def _patch_later(api: Any, node: str, labels_: dict[str, str | None], started: threading.Event) -> threading.Thread:
    def go() -> None:
        started.wait(30)
        client.CoreV1Api(api).patch_node(node, {"metadata": {"labels": labels_}})

    t = threading.Thread(target=go)
    t.start()
    return t


@pytest.mark.parametrize("nodes", [("kube-worker01",), ("kube-worker02", "kube-worker03")])
def test_wait_relabel_sees_the_labels_arrive(api, nodes):
    """One node: a watch with the metadata.name field selector; several: one watch on all nodes. The labels are
    set after the wait has begun (its first progress line), so only the watch can see them."""
    key = f"example.com/wait-{len(nodes)}"
    started = threading.Event()
    messages: list[str] = []

    def progress(msg: str) -> None:
        messages.append(msg)
        started.set()

    threads = [_patch_later(api, n, {key: "yes"}, started) for n in nodes]
    seen = wait_relabel(api, {n: {key: "yes", "example.com/absent": None} for n in nodes}, timeout=60,
                        progress=progress)
    for t in threads:
        t.join()
    assert seen == {n: {key: "yes", "example.com/absent": None} for n in nodes}
    n = len(nodes)
    assert messages[0] == f"0/{n} nodes relabelled" and messages[-1] == f"{n}/{n} nodes relabelled"
    # and back: waiting for a label to go
    started.clear()
    threads = [_patch_later(api, n, {key: None}, started) for n in nodes]
    seen = wait_relabel(api, {n: {key: None} for n in nodes}, timeout=60, progress=progress)
    for t in threads:
        t.join()
    assert seen == {n: {key: None} for n in nodes}


def test_wait_relabel_returns_what_it_saw_at_the_timeout(api):
    seen = wait_relabel(api, {"kube-worker04": {"example.com/never": "1", "kubernetes.io/hostname": "kube-worker04"}},
                        timeout=1.0)
    assert seen == {"kube-worker04": {"example.com/never": None, "kubernetes.io/hostname": "kube-worker04"}}


# -- the CLI (needs the merge: guestfs, labnfd, discovery) ---------------------------------------------------


def test_push_a_feature_file_to_one_node_then_remove_it(lab, api, cli, tmp_path):
    env = _state(tmp_path)
    f = tmp_path / "rack.feature"
    f.write_text("rack=r42\n")
    cms = config_maps(api)
    code, doc, err = cli(env, "nfd", "files", "push", str(f), "--kind", "feature", "--node",
                             "kube-worker01", "--dry-run")
    assert (code, doc["status"]) == (0, "dry-run"), err
    (row,) = doc["nodes"]
    assert row["node"] == "kube-worker01" and row["action"] == "create"
    assert row["labels"] == {f"{FNS}/rack": "r42"}
    assert not (features_d(lab, "kube-worker01") / "rack.feature").exists()

    code, doc, err = cli(env, "nfd", "files", "push", str(f), "--kind", "feature", "--node",
                             "kube-worker01", "--yes")
    assert (code, doc["status"]) == (0, "done"), err
    assert doc["target"] == f"hostPath {NFD_FEATURES_D} on each node"
    (row,) = doc["nodes"]
    assert (row["ok"], row["changed"], row["relabelled"]) == (True, True, True)
    assert labels(api, "kube-worker01")[f"{FNS}/rack"] == "r42"
    assert all(f"{FNS}/rack" not in labels(api, n) for n in (*WORKERS[1:], "kube-controlplane01"))
    assert (features_d(lab, "kube-worker01") / "rack.feature").read_text() == "rack=r42\n"
    assert node_cat(api, "kube-worker01", f"{NFD_FEATURES_D}/rack.feature") == "rack=r42\n"
    assert all(not (features_d(lab, n) / "rack.feature").exists() for n in WORKERS[1:])
    assert config_maps(api) == cms  # no ConfigMap created or changed
    assert [e["phase"] for e in audit(env)] == ["intent", "outcome"]
    assert audit(env)[0]["action"] == "nfd.file.push"

    code, doc, err = cli(env, "nfd", "files", "list", "--kind", "feature")
    assert code == 0, err
    listed = {ls["node"]: ls for ls in doc["kinds"]["feature"]["nodes"]}
    (rack,) = [x for x in listed["kube-worker01"]["files"] if x["name"] == "rack.feature"]
    assert (rack["size"], rack["mode"]) == (9, "0644") and len(rack["sha256"]) == 64
    (diff,) = [d for d in doc["kinds"]["feature"]["differences"] if d["name"] == "rack.feature"]
    assert diff["by_hash"] == {rack["sha256"]: ["kube-worker01"]}
    assert set(diff["missing_on"]) == set(listed) - {"kube-worker01"} != set()

    code, doc, err = cli(env, "nfd", "files", "push", str(f), "--kind", "feature", "--node",
                             "kube-worker01", "--yes")
    assert (code, doc["status"]) == (0, "nothing-to-do"), err
    assert len(audit(env)) == 2  # nothing written, nothing audited

    code, doc, err = cli(env, "nfd", "files", "rm", "rack.feature", "--kind", "feature", "--node",
                             "kube-worker01", "--yes")
    assert (code, doc["status"]) == (0, "done"), err
    assert f"{FNS}/rack" not in labels(api, "kube-worker01")
    assert not (features_d(lab, "kube-worker01") / "rack.feature").exists()
    assert config_maps(api) == cms


def test_push_to_two_nodes_yields_the_previewed_labels_on_those_two_only(lab, api, cli, tmp_path):
    """Issue 22's acceptance on the newest NFD (the default lab's v0.19.0): a feature file pushed to two nodes; the
    dry run's preview per node is what the real nfd-worker and nfd-master then write there, and nowhere else."""
    env = _state(tmp_path)
    f = tmp_path / "pool.feature"
    f.write_text("pool=batch\nexample.com/tier=gold\n# +no-label\nhidden=1\n")
    two = ["--node", "kube-worker02", "--node", "kube-worker03"]
    code, doc, err = cli(env, "nfd", "files", "push", str(f), "--kind", "feature", *two, "--dry-run")
    assert (code, doc["status"]) == (0, "dry-run"), err
    previewed = {row["node"]: row["labels"] for row in doc["nodes"]}
    assert set(previewed) == {"kube-worker02", "kube-worker03"}
    assert previewed["kube-worker02"] == {f"{FNS}/pool": "batch", "example.com/tier": "gold"}
    before = {n: labels(api, n) for n in (*WORKERS, "kube-controlplane01")}
    try:
        code, doc, err = cli(env, "nfd", "files", "push", str(f), "--kind", "feature", *two, "--yes")
        assert (code, doc["status"]) == (0, "done"), err
        for node, want in previewed.items():
            got = labels(api, node)
            assert {k: got.get(k) for k in want} == want, node
        for node in ("kube-worker01", "kube-worker04", "kube-controlplane01"):
            assert labels(api, node) == before[node], node
    finally:
        code, doc, err = cli(env, "nfd", "files", "rm", "pool.feature", "--kind", "feature", *two, "--yes")
        assert code == 0, err


def test_a_node_whose_access_fails_reports_it_the_others_get_the_file(lab, api, cli, tmp_path):
    env = _state(tmp_path)
    f = tmp_path / "gpu.feature"
    f.write_text("gpu-pool=a\n")
    lab.node_exec.inject_fault("exec-fail", "kube-worker02")  # its debug pods cannot start (StartError)
    try:
        code, doc, err = cli(env, "nfd", "files", "push", str(f), "--kind", "feature", "--node",
                                 "kube-worker01", "kube-worker02", "kube-worker03", "--yes")
    finally:
        lab.node_exec.clear_fault("exec-fail", "kube-worker02")
    assert code == 1 and doc["failed"] == ["kube-worker02"], err
    rows = {r["node"]: r for r in doc["nodes"]}
    assert "kube-worker02" in rows["kube-worker02"]["error"] and not rows["kube-worker02"]["ok"]
    assert "kube-worker02" in doc["message"]
    for n in ("kube-worker01", "kube-worker03"):
        assert rows[n]["ok"] and labels(api, n)[f"{FNS}/gpu-pool"] == "a"
        assert (features_d(lab, n) / "gpu.feature").read_text() == "gpu-pool=a\n"
    assert f"{FNS}/gpu-pool" not in labels(api, "kube-worker02")
    for n in WORKERS:  # nothing half-written anywhere
        assert [p.name for p in features_d(lab, n).iterdir() if p.name.startswith(".")] == []
        assert not (features_d(lab, "kube-worker02") / "gpu.feature").exists()
    assert audit(env)[-1]["result"] == "partial"
    cli(env, "nfd", "files", "rm", "gpu.feature", "--kind", "feature", "-l",
            "kubernetes.io/hostname in (kube-worker01,kube-worker03)", "--yes")


def test_read_only_refuses_before_any_node_is_touched(lab, api, cli, tmp_path):
    """read_only: true in the config file (the guard: console/guard.py; the audit log's own refusals are
    tests/unit/test_guard.py's)."""
    env = _state(tmp_path, config="read_only: true\n")
    f = tmp_path / "ro.feature"
    f.write_text("ro=1\n")
    code, doc, err = cli(env, "nfd", "files", "push", str(f), "--kind", "feature", "--node",
                             "kube-worker01", "--yes")
    assert (code, doc["error"]) == (2, "read-only"), err
    assert doc["message"].startswith("read-only: push of feature file ro.feature on kube-worker01")
    assert not (features_d(lab, "kube-worker01") / "ro.feature").exists() and audit(env) == []


@pytest.mark.parametrize("how", ["flag", "current-context"])
def test_read_only_by_flag_or_current_context_refuses_push_and_rm(lab, api, cli, tmp_path, how):
    """`--read-only`, and `contexts: {lab: {read_only: true}}` for the kubeconfig's current context (no --context)."""
    env = _state(tmp_path, config="contexts:\n  lab:\n    read_only: true\n" if how == "current-context" else "")
    flag = ["--read-only"] if how == "flag" else []
    f = tmp_path / "ro.feature"
    f.write_text("ro=1\n")
    code, doc, err = cli(env, *flag, "nfd", "files", "push", str(f), "--kind", "feature", "--node", "kube-worker01",
                         "--yes")
    assert (code, doc["error"]) == (2, "read-only"), err
    assert not (features_d(lab, "kube-worker01") / "ro.feature").exists()
    code, doc, err = cli(env, *flag, "nfd", "files", "rm", "inventory", "--kind", "feature", "--node",
                         "kube-worker01", "--yes")
    assert (code, doc["error"]) == (2, "read-only"), err
    assert (features_d(lab, "kube-worker01") / "inventory").exists() and audit(env) == []


def test_audit_log_on_a_full_device_refuses_push_and_rm(lab, api, cli, tmp_path):
    """The intent record cannot be written (/dev/full: ENOSPC on every write, full(4)): no node is written to."""
    env = _state(tmp_path)
    log = Path(env["XDG_STATE_HOME"]) / "console" / "audit.log"
    log.symlink_to("/dev/full")
    f = tmp_path / "full.feature"
    f.write_text("full=1\n")
    before = labels(api, "kube-worker01")
    code, doc, err = cli(env, "nfd", "files", "push", str(f), "--kind", "feature", "--node", "kube-worker01", "--yes")
    assert (code, doc["status"], doc["error"]) == (2, "refused", "audit-unwritable"), err
    assert f"audit log {log} cannot be written (No space left on device)" in doc["message"]
    assert "not done" in doc["message"]
    assert not (features_d(lab, "kube-worker01") / "full.feature").exists()
    code, doc, err = cli(env, "nfd", "files", "rm", "inventory", "--kind", "feature", "--node", "kube-worker01",
                         "--yes")
    assert (code, doc["error"]) == (2, "audit-unwritable"), err
    assert (features_d(lab, "kube-worker01") / "inventory").exists()
    assert labels(api, "kube-worker01") == before


def test_usage_errors(cli, tmp_path):
    env = _state(tmp_path)
    big = tmp_path / "big.feature"
    big.write_text("x" * 65537)
    code, doc, err = cli(env, "nfd", "files", "push", str(big), "--kind", "feature", "--node",
                             "kube-worker01", "--yes")
    assert (code, doc["error"]) == (2, "bad-file"), err
    ok = tmp_path / "ok.feature"
    ok.write_text("a=1\n")
    code, doc, err = cli(env, "nfd", "files", "push", str(ok), "--name", ".hidden", "--kind", "feature",
                             "--node", "kube-worker01", "--yes")
    assert (code, doc["error"]) == (2, "bad-name"), err
    code, doc, err = cli(env, "nfd", "files", "push", str(ok), "--kind", "feature", "--node", "no-such",
                             "--yes")
    assert (code, doc["error"]) == (2, "no-such-node"), err


def test_push_meets_a_change_made_since_its_preview_and_overwrites_nothing(lab, api, cli, tmp_path):
    """Issue 20, point 1 (hostPath): admin A's push previews the nodes and waits at its question; admin B pushes
    another version to kube-worker01 and kube-worker02 with the same CLI; A answers y. Each node compares what A's
    preview showed with its file in the script that renames: B's two nodes are a conflict (exit 1, JSON "error":
    "conflict"), left as B made them, kube-worker03 gets A's file; A's audit intent names the versions it
    replaces. Then A runs it again: the new preview, and a push that overwrites B's version knowingly."""
    a_env, b_env = _state(tmp_path / "a"), _state(tmp_path / "b")
    mine, theirs = tmp_path / "mine" / "zone.feature", tmp_path / "theirs" / "zone.feature"
    for f, text in ((mine, "zone=a\n"), (theirs, "zone=b\n")):
        f.parent.mkdir()
        f.write_text(text)
    nodes = ("kube-worker01", "kube-worker02", "kube-worker03")
    code, doc, err = cli(a_env, "nfd", "files", "push", str(mine), "--kind", "feature", "--node", *nodes[:2],
                         "--yes", "--no-wait")
    assert (code, doc["status"]) == (0, "done"), err
    first = {n: (features_d(lab, n) / "zone.feature").read_text() if n in nodes[:2] else None for n in nodes}
    mine.write_text("zone=a2\n")

    def b_pushes(_asked: str) -> None:
        code, doc, err = cli(b_env, "nfd", "files", "push", str(theirs), "--kind", "feature", "--node", *nodes[:2],
                             "--yes", "--no-wait")
        assert (code, doc["status"]) == (0, "done"), err

    code, out, err = answer_after([sys.executable, "-m", "console", "nfd", "files", "push", str(mine), "--kind",
                                   "feature", "--node", *nodes, "--no-wait", "-o", "json"],
                                  lab_env(lab) | a_env, b_pushes)
    assert "Traceback" not in err
    doc = json.loads(out)
    assert (code, doc["status"], doc.get("error"), doc["exit_code"]) == (1, "error", "conflict", 1), err
    assert doc["conflicts"] == list(nodes[:2]) and doc["done"] == [nodes[2]]
    assert "changed since the preview on kube-worker01, kube-worker02" in doc["message"]
    assert "kube-worker01, kube-worker02" in err.splitlines()[-1]  # the one line on stderr says so too
    for n in nodes[:2]:
        assert (features_d(lab, n) / "zone.feature").read_text() == "zone=b\n"  # B's change survives
    assert (features_d(lab, nodes[2]) / "zone.feature").read_text() == "zone=a2\n"
    rows = {r["node"]: r for r in doc["nodes"]}
    assert rows[nodes[0]]["conflict"] and not rows[nodes[0]]["ok"] and rows[nodes[2]]["ok"]
    intent, outcome = audit(a_env)[-2:]
    digest = hashlib.sha256(first[nodes[0]].encode()).hexdigest()
    assert intent["before"] == {"sha256": {nodes[0]: digest, nodes[1]: digest, nodes[2]: "absent"}}
    assert outcome["result"] == "partial"

    # again: the preview shows B's version, and the push replaces it knowingly
    code, doc, err = cli(a_env, "nfd", "files", "push", str(mine), "--kind", "feature", "--node", *nodes[:2],
                         "--yes", "--no-wait")
    assert (code, doc["status"]) == (0, "done"), err
    assert all((features_d(lab, n) / "zone.feature").read_text() == "zone=a2\n" for n in nodes[:2])
    theirs_digest = hashlib.sha256(b"zone=b\n").hexdigest()
    assert audit(a_env)[-2]["before"] == {"sha256": dict.fromkeys(nodes[:2], theirs_digest)}
    cli(a_env, "nfd", "files", "rm", "zone.feature", "--kind", "feature", "--node", *nodes, "--yes", "--no-wait")
