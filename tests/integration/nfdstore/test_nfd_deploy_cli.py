"""`console nfd apply` against the default lab, through the real kubernetes client.

Create-or-replace with the resourceVersion read, like `kubectl replace` (a stale resourceVersion is a 409:
k8s.io/apiserver/pkg/registry/generic/registry/store.go Update, "the object has been modified"); identical
content is nothing to do and audits nothing; read-only (flag or `read_only: true` in the config file) and an
audit log on a full device (/dev/full: ENOSPC on every write, full(4)) refuse with exit 2 and change nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from labtools import lab_env
from ptycli import answer_after

from console.kube.nfdstore import NFD_GROUP, RULES_PLURAL
from console.lab.world import Lab

pytestmark = pytest.mark.lab

RULE = """\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: {name}
spec:
  rules:
    - name: "{rule}"
      labels:
        "example.com/{label}": "true"
      matchFeatures:
        - feature: kernel.version
          matchExpressions:
            major: {{op: Exists}}
"""


def _state(tmp_path: Path, *, config: str = "", audit_full: bool = False) -> dict[str, str]:
    """XDG dirs of one run: a config file (XDG_CONFIG_HOME) and an audit log that may be /dev/full."""
    state, cfg = tmp_path / "state", tmp_path / "config"
    (state / "console").mkdir(parents=True, exist_ok=True)
    (cfg / "console").mkdir(parents=True, exist_ok=True)
    if config:
        (cfg / "console" / "config.yaml").write_text(config)
    log = state / "console" / "audit.log"
    if audit_full and not log.is_symlink():
        log.symlink_to("/dev/full")
    return {"XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(cfg)}


def console(lab: Lab, env: dict[str, str], *args: str, stdin: Any = subprocess.DEVNULL) -> tuple[int, dict, str]:
    proc = subprocess.run([sys.executable, "-m", "console", *args, "-o", "json"], env=lab_env(lab) | env,
                          capture_output=True, text=True, timeout=120, stdin=stdin)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def audit(env: dict[str, str]) -> list[dict[str, Any]]:
    p = Path(env["XDG_STATE_HOME"]) / "console" / "audit.log"
    if p.is_symlink() or not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines()]


def get_rule(api_client: Any, name: str) -> dict[str, Any] | None:
    try:
        return client.CustomObjectsApi(api_client).get_cluster_custom_object(NFD_GROUP, "v1alpha1", RULES_PLURAL,
                                                                             name)
    except client.ApiException as e:
        if e.status == 404:
            return None
        raise


def test_apply_creates_replaces_and_identical_is_nothing_to_do(default_lab: Lab, api_client: Any,
                                                               tmp_path: Path) -> None:
    env = _state(tmp_path)
    f = tmp_path / "rule.yaml"
    f.write_text(RULE.format(name="deploy-a", rule="kernel", label="kernel"))
    code, doc, err = console(default_lab, env, "nfd", "apply", "-f", str(f), "--yes")
    assert code == 0 and doc["status"] == "applied", err
    created = get_rule(api_client, "deploy-a")
    assert created is not None and created["spec"]["rules"][0]["name"] == "kernel"
    intent, outcome = audit(env)
    assert (intent["phase"], intent["action"], intent["target"]) == ("intent", "nfd.rule.create",
                                                                     "nodefeaturerule/deploy-a")
    assert (outcome["phase"], outcome["id"], outcome["result"]) == ("outcome", intent["id"], "ok")

    # the same file again: nothing to do, nothing written, nothing audited
    code, doc, err = console(default_lab, env, "nfd", "apply", "-f", str(f), "--yes")
    assert (code, doc["status"]) == (0, "nothing-to-do"), err
    assert [r["action"] for r in doc["rules"]] == ["unchanged"] and len(audit(env)) == 2
    assert get_rule(api_client, "deploy-a")["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    # a change: --dry-run shows the diff and changes nothing; then --yes replaces at the resourceVersion read
    f.write_text(RULE.format(name="deploy-a", rule="kernel-v2", label="kernel"))
    code, doc, err = console(default_lab, env, "nfd", "apply", "-f", str(f), "--dry-run")
    assert (code, doc["status"]) == (0, "dry-run"), err
    assert "-  - name: kernel\n" in doc["rules"][0]["diff"] and "+  - name: kernel-v2\n" in doc["rules"][0]["diff"]
    assert get_rule(api_client, "deploy-a")["spec"]["rules"][0]["name"] == "kernel"
    code, doc, err = console(default_lab, env, "nfd", "apply", "-f", str(f), "--yes")
    assert (code, doc["status"], doc["rules"][0]["action"]) == (0, "applied", "replace"), err
    assert get_rule(api_client, "deploy-a")["spec"]["rules"][0]["name"] == "kernel-v2"
    replace_intent = audit(env)[2]
    assert replace_intent["action"] == "nfd.rule.replace"
    assert replace_intent["before"]["spec"]["rules"][0]["name"] == "kernel"  # what it was, before the call


def test_apply_invalid_rule_and_unconfirmed(default_lab: Lab, api_client: Any, tmp_path: Path) -> None:
    env = _state(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(RULE.format(name="deploy-bad", rule="x", label="x").replace("op: Exists", "op: Nope"))
    code, doc, err = console(default_lab, env, "nfd", "apply", "-f", str(bad), "--yes")
    assert (code, doc["status"]) == (1, "invalid") and "Nope" in doc["message"], err
    good = tmp_path / "good.yaml"
    good.write_text(RULE.format(name="deploy-unconfirmed", rule="x", label="x"))
    code, doc, err = console(default_lab, env, "nfd", "apply", "-f", str(good))  # stdin is not a terminal
    assert (code, doc["status"]) == (5, "not-confirmed"), err
    assert get_rule(api_client, "deploy-bad") is None and get_rule(api_client, "deploy-unconfirmed") is None
    assert audit(env) == []


def test_apply_conflict_when_the_rule_changes_before_the_write(default_lab: Lab, api_client: Any,
                                                               tmp_path: Path) -> None:
    """The rule is changed by someone else while apply waits for the answer: 409, nothing overwritten."""
    env = _state(tmp_path)
    f = tmp_path / "rule.yaml"
    f.write_text(RULE.format(name="deploy-race", rule="one", label="race"))
    assert console(default_lab, env, "nfd", "apply", "-f", str(f), "--yes")[0] == 0
    f.write_text(RULE.format(name="deploy-race", rule="two", label="race"))

    def theirs_meanwhile(_asked: str) -> None:
        theirs = get_rule(api_client, "deploy-race")
        theirs["spec"]["rules"][0]["name"] = "theirs"
        client.CustomObjectsApi(api_client).replace_cluster_custom_object(NFD_GROUP, "v1alpha1", RULES_PLURAL,
                                                                          "deploy-race", theirs)

    code, out, err = answer_after([sys.executable, "-m", "console", "nfd", "apply", "-f", str(f), "-o", "json"],
                                  lab_env(default_lab) | env, theirs_meanwhile)
    doc = json.loads(out)
    assert (code, doc["status"], doc["error"]) == (1, "error", "conflict"), err
    assert "changed by someone else" in doc["message"] and "Traceback" not in err
    assert get_rule(api_client, "deploy-race")["spec"]["rules"][0]["name"] == "theirs"
    assert audit(env)[-1]["result"] == "conflict"  # the intent was logged, then its outcome says why


@pytest.mark.parametrize("how", ["flag", "config-file", "current-context", "viewer"])
def test_read_only_refuses_apply_and_changes_nothing(default_lab: Lab, api_client: Any, tmp_path: Path,
                                                     how: str) -> None:
    """current-context: `contexts: {lab: {read_only: true}}` for the kubeconfig's current context; viewer: a
    read-only user RBAC would also refuse is told read-only (the session's setting) before any RBAC check."""
    config = {"config-file": "read_only: true\n", "current-context": "contexts:\n  lab:\n    read_only: true\n"}
    env = _state(tmp_path, config=config.get(how, ""))
    flag = {"flag": ["--read-only"], "viewer": ["--context", "lab-viewer", "--read-only"]}.get(how, [])
    f = tmp_path / "rule.yaml"
    f.write_text(RULE.format(name=f"deploy-ro-{how}", rule="x", label="ro"))
    code, doc, err = console(default_lab, env, *flag, "nfd", "apply", "-f", str(f), "--yes")
    assert (code, doc["status"], doc["error"]) == (2, "refused", "read-only"), err
    assert doc["message"] == f"read-only: create of NodeFeatureRule deploy-ro-{how} not done"
    assert err.strip() == f"nfd apply: {doc['message']}"
    assert get_rule(api_client, f"deploy-ro-{how}") is None
    # the preview still works read-only
    code, doc, err = console(default_lab, env, *flag, "nfd", "apply", "-f", str(f), "--dry-run")
    assert (code, doc["status"]) == (0, "dry-run"), err
    assert audit(env) == []


def test_audit_log_on_a_full_device_refuses_apply(default_lab: Lab, api_client: Any,
                                                           tmp_path: Path) -> None:
    env = _state(tmp_path, audit_full=True)
    log = Path(env["XDG_STATE_HOME"]) / "console" / "audit.log"
    f = tmp_path / "rule.yaml"
    f.write_text(RULE.format(name="deploy-full", rule="x", label="full"))
    code, doc, err = console(default_lab, env, "nfd", "apply", "-f", str(f), "--yes")
    assert (code, doc["status"], doc["error"]) == (2, "refused", "audit-unwritable"), err
    assert str(log) in doc["message"] and "not done" in doc["message"]
    assert get_rule(api_client, "deploy-full") is None


SELECTIVE = """\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: dryrun-nodes
spec:
  rules:
    - name: avx512
      labels:
        "example.com/avx512": "true"
      matchFeatures:
        - feature: cpu.cpuid
          matchExpressions:
            AVX512F: {op: Exists}
    - name: vfio
      labels:
        "example.com/vfio": "true"
      matchFeatures:
        - feature: kernel.loadedmodule
          matchExpressions:
            vfio_pci: {op: Exists}
"""


def test_apply_labels_exactly_the_nodes_dryrun_from_cluster_named(default_lab: Lab, api_client: Any,
                                                                   tmp_path: Path) -> None:
    """Issue 22 acceptance on the newest NFD (upstream's v0.19.0 in the default lab): `nfd dryrun --from-cluster`
    evaluates the rules against every node's NodeFeatures as read from the cluster (written by the real
    nfd-worker), and the real nfd-master, once `nfd apply` created the rule, labels exactly those nodes."""
    import time

    env = _state(tmp_path)
    f = tmp_path / "rule.yaml"
    f.write_text(SELECTIVE)
    code, doc, err = console(default_lab, env, "nfd", "dryrun", "--from-cluster", "--rule", str(f))
    assert (code, doc["status"], doc["nfd_version"]) == (0, "ok", "v0.19.0"), err
    assert set(doc["nodes"]) == {n.name for n in default_lab.scenario.nodes}
    named = {label: {n for n, row in doc["nodes"].items() if label in row["rule_labels"]}
             for label in ("example.com/avx512", "example.com/vfio")}
    assert all(0 < len(nodes) < len(doc["nodes"]) for nodes in named.values()), named  # selective, both ways
    code, doc, err = console(default_lab, env, "nfd", "apply", "-f", str(f), "--yes")
    assert (code, doc["status"]) == (0, "applied"), err

    def labelled() -> dict[str, set[str]]:
        nodes = client.CoreV1Api(api_client).list_node().items
        return {label: {n.metadata.name for n in nodes if (n.metadata.labels or {}).get(label) == "true"}
                for label in named}

    try:
        deadline = time.monotonic() + 60
        while (seen := labelled()) != named and time.monotonic() < deadline:
            time.sleep(0.2)
        assert seen == named
    finally:
        client.CustomObjectsApi(api_client).delete_cluster_custom_object(NFD_GROUP, "v1alpha1", RULES_PLURAL,
                                                                         "dryrun-nodes")
    deadline = time.monotonic() + 60
    while any(labelled().values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(labelled().values())


def test_dryrun_without_nodefeatures_needs_the_cluster(tmp_path: Path) -> None:
    f = tmp_path / "rule.yaml"
    f.write_text(SELECTIVE)
    proc = subprocess.run([sys.executable, "-m", "console", "nfd", "dryrun", "--rule", str(f), "-o", "json"],
                          capture_output=True, text=True, timeout=60)
    doc = json.loads(proc.stdout)
    assert (proc.returncode, doc["error"]) == (2, "usage") and "--from-cluster" in doc["message"]
