"""`python -m console nfd publish` on the default lab (NFD v0.19): third-party NodeFeatures label the node.

Reference: NFD docs/usage/customization-guide.md "NodeFeature custom resource" (a NodeFeature with the label
`nfd.node.kubernetes.io/node-name: <node>`, `spec.labels` become node labels) and pkg/nfd-master/nfd-master.go
getAndMergeNodeFeatures (every namespace counts unless restrictions.nodeFeatureNamespaceSelector narrows it).
Updates send the resourceVersion read (k8s.io/apiserver registry store Update: 409 when stale); identical
content sends nothing and audits nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from labtools import lab_env, wait_for
from publishtools import audit, publish, xdg

from console.lab.world import Lab

pytestmark = pytest.mark.lab

NODE = "kube-worker01"
NFD_NS = "node-feature-discovery"  # where the lab runs NFD: the default namespace the console derives
FNS = "feature.node.kubernetes.io"


def labels(kube: Any, node: str) -> dict[str, str]:
    return client.CoreV1Api(kube).read_node(node).metadata.labels or {}


def nodefeature(kube: Any, ns: str, name: str) -> dict[str, Any] | None:
    try:
        return client.CustomObjectsApi(kube).get_namespaced_custom_object("nfd.k8s-sigs.io", "v1alpha1", ns,
                                                                          "nodefeatures", name)
    except client.ApiException as e:
        if e.status == 404:
            return None
        raise


def test_dry_run_previews_and_sends_nothing(default_lab: Lab, kube: Any, tmp_path: Path) -> None:
    env = xdg(tmp_path)
    code, doc, err = publish(default_lab, env, "--node", NODE, "--label", "pub-dry=yes", "--dry-run")
    assert code == 0, err
    assert doc["status"] == "dry-run" and doc["version"].startswith("v0.19")
    [plan] = doc["nodes"]
    assert plan["action"] == "create" and plan["namespace"] == NFD_NS and plan["name"] == f"{NODE}-console"
    assert plan["spec"]["labels"] == {"pub-dry": "yes"}
    assert f"+{FNS}/pub-dry=yes" in plan["nodeChanges"]["labels"]  # what nfd-master will then write
    assert nodefeature(kube, NFD_NS, f"{NODE}-console") is None
    assert audit(env) == []


def test_publish_update_noop_delete_in_nfd_namespace(default_lab: Lab, kube: Any, tmp_path: Path) -> None:
    env = xdg(tmp_path)
    code, doc, err = publish(default_lab, env, "--node", NODE, "--label", "rack=r42", "--label",
                             "example.com/pub=one", "--yes")
    assert code == 0, err
    assert doc["status"] == "done" and doc["nodes"][0]["result"] == "created"
    obj = nodefeature(kube, NFD_NS, f"{NODE}-console")
    assert obj is not None and obj["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == NODE
    wait_for(lambda: labels(kube, NODE).get(f"{FNS}/rack") == "r42" and
             labels(kube, NODE).get("example.com/pub") == "one", timeout=30, what="nfd-master labelling the node")
    assert f"{FNS}/rack" not in labels(kube, "kube-worker02")
    records = audit(env)
    assert len(records) == 2  # intent and outcome
    assert records[0]["action"] == "nfd.nodefeature.create" and records[0]["target"].endswith(f"{NODE}-console")

    # the same spec again: nothing sent, nothing audited
    code, doc, err = publish(default_lab, env, "--node", NODE, "--label", "rack=r42", "--label",
                             "example.com/pub=one", "--yes")
    assert code == 0 and doc["status"] == "nothing-to-do", err
    assert len(audit(env)) == 2
    assert nodefeature(kube, NFD_NS, f"{NODE}-console")["metadata"]["resourceVersion"] == \
        obj["metadata"]["resourceVersion"]

    # update: the resourceVersion read is sent; the dropped label goes, the changed one changes
    code, doc, err = publish(default_lab, env, "--node", NODE, "--label", "rack=r43", "--yes")
    assert code == 0 and doc["nodes"][0]["result"] == "updated", err
    assert doc["nodes"][0]["resourceVersion"] != obj["metadata"]["resourceVersion"]
    wait_for(lambda: labels(kube, NODE).get(f"{FNS}/rack") == "r43" and "example.com/pub" not in labels(kube, NODE),
             timeout=30, what="nfd-master relabelling after the update")

    code, doc, err = publish(default_lab, env, "--delete", "--node", NODE, "--yes")
    assert code == 0 and doc["nodes"][0]["result"] == "deleted", err
    assert nodefeature(kube, NFD_NS, f"{NODE}-console") is None
    wait_for(lambda: f"{FNS}/rack" not in labels(kube, NODE), timeout=30, what="the label removed")
    assert [r["action"] for r in audit(env)][-2:] == ["nfd.nodefeature.delete"] * 2


def test_publish_in_another_namespace(default_lab: Lab, kube: Any, tmp_path: Path) -> None:
    """nfd-master (v0.14+) merges third-party NodeFeatures of every namespace (no namespace selector)."""
    env = xdg(tmp_path)
    code, doc, err = publish(default_lab, env, "--node", NODE, "--namespace", "default", "--name", "vendor-x",
                             "--label", "vendor.example/accel=yes", "--yes")
    assert code == 0 and doc["nodes"][0]["result"] == "created", err
    assert nodefeature(kube, "default", "vendor-x") is not None
    wait_for(lambda: labels(kube, NODE).get("vendor.example/accel") == "yes", timeout=30,
             what="a NodeFeature in namespace default labelling the node")
    code, _doc, err = publish(default_lab, env, "--delete", "--node", NODE, "--namespace", "default", "--name",
                              "vendor-x", "--yes")
    assert code == 0, err
    wait_for(lambda: "vendor.example/accel" not in labels(kube, NODE), timeout=30, what="the label removed")


def test_feature_file_published_as_nodefeature(default_lab: Lab, kube: Any, tmp_path: Path) -> None:
    """A feature file read locally as the cluster's nfd-worker would: its labels in spec.labels, its
    `# +no-label` features in spec.features (local.feature), so a rule can match them."""
    env = xdg(tmp_path)
    ff = tmp_path / "rack.feature"
    ff.write_text("# site inventory\nrack=r7\n# +no-label\nserial=ABC123\n")
    code, doc, err = publish(default_lab, env, "--node", NODE, "--from-file", str(ff), "--kind", "feature", "--yes")
    assert code == 0 and doc["nodes"][0]["spec"]["labels"] == {"rack": "r7"}, err
    spec = nodefeature(kube, NFD_NS, f"{NODE}-console")["spec"]
    assert spec["labels"] == {"rack": "r7"}
    # source/local/local.go: local.label = the labels, local.feature = every feature (+no-label ones too)
    assert spec["features"]["attributes"]["local.label"]["elements"] == {"rack": "r7"}
    assert spec["features"]["attributes"]["local.feature"]["elements"] == {"rack": "r7", "serial": "ABC123"}
    wait_for(lambda: labels(kube, NODE).get(f"{FNS}/rack") == "r7", timeout=30, what="the feature file's label")
    assert f"{FNS}/serial" not in labels(kube, NODE)
    code, _doc, err = publish(default_lab, env, "--delete", "--node", NODE, "--yes")
    assert code == 0, err
    wait_for(lambda: f"{FNS}/rack" not in labels(kube, NODE), timeout=30, what="the label removed")


def test_hook_output_published_dry_run(default_lab: Lab, tmp_path: Path) -> None:
    """A hook runs here (as nfd-worker would run it on the node) and its stdout is read as a feature file."""
    hook = tmp_path / "gpu-probe"
    hook.write_text("#!/bin/sh\necho gpu=present\necho \"probed-on=$NODE_NAME\"\n")
    code, doc, err = publish(default_lab, xdg(tmp_path), "-l", "kubernetes.io/hostname=kube-worker02",
                             "--from-file", str(hook), "--kind", "hook", "--dry-run")
    assert code == 0, err
    [plan] = doc["nodes"]
    assert plan["node"] == "kube-worker02"
    assert plan["spec"]["labels"] == {"gpu": "present", "probed-on": "kube-worker02"}  # its NODE_NAME
    assert f"+{FNS}/gpu=present" in plan["nodeChanges"]["labels"]

    bad = tmp_path / "broken"
    bad.write_text("#!/bin/sh\nexit 3\n")
    code, doc, err = publish(default_lab, xdg(tmp_path), "--node", NODE, "--from-file", str(bad), "--kind", "hook",
                             "--dry-run")
    assert code == 1 and doc["error"] == "hook-failed" and "broken" in doc["message"], err


def test_read_only_and_rbac_refuse_before_sending(default_lab: Lab, kube: Any, tmp_path: Path) -> None:
    env = xdg(tmp_path, config="read_only: true\n")
    code, doc, err = publish(default_lab, env, "--node", NODE, "--label", "ro=yes", "--yes")
    assert code == 2 and doc["status"] == "refused" and doc["error"] == "read-only", err
    assert "read-only" in err and nodefeature(kube, NFD_NS, f"{NODE}-console") is None
    assert audit(env) == []

    env = xdg(tmp_path / "viewer")
    code, doc, err = publish(default_lab, env, "--context", "lab-viewer", "--node", NODE, "--label", "rbac=no",
                             "--yes")
    assert code == 2 and doc["error"] == "forbidden", err
    assert doc["missing"] == [f"create nodefeatures.nfd.k8s-sigs.io in {NFD_NS}"]
    assert nodefeature(kube, NFD_NS, f"{NODE}-console") is None and audit(env) == []


def test_read_only_flag_and_a_full_audit_log_refuse_before_sending(default_lab: Lab, kube: Any,
                                                                    tmp_path: Path) -> None:
    """`--read-only`; and an audit log whose intent record cannot be written (/dev/full, full(4)): no NodeFeature."""
    proc = subprocess.run([sys.executable, "-m", "console", "--read-only", "nfd", "publish", "--node", NODE, "--label",
                           "ro=flag", "--yes", "-o", "json"], env=lab_env(default_lab) | xdg(tmp_path / "flag"),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    doc = json.loads(proc.stdout)
    assert (proc.returncode, doc["status"], doc["error"]) == (2, "refused", "read-only"), proc.stderr
    env = xdg(tmp_path / "full")
    log = Path(env["XDG_STATE_HOME"]) / "console" / "audit.log"
    log.symlink_to("/dev/full")
    code, doc, err = publish(default_lab, env, "--node", NODE, "--label", "full=yes", "--yes")
    assert (code, doc["status"], doc["error"]) == (2, "refused", "audit-unwritable"), err
    assert f"audit log {log} cannot be written (No space left on device)" in doc["message"]
    assert nodefeature(kube, NFD_NS, f"{NODE}-console") is None
    assert f"{FNS}/full" not in labels(kube, NODE)


def test_not_confirmed_without_yes(default_lab: Lab, kube: Any, tmp_path: Path) -> None:
    env = xdg(tmp_path)
    code, doc, err = publish(default_lab, env, "--node", NODE, "--label", "confirm=no")
    assert code == 5 and doc["status"] == "not-confirmed", err
    assert f"{NODE}: create NodeFeature {NFD_NS}/{NODE}-console" in err  # the preview names the node
    assert nodefeature(kube, NFD_NS, f"{NODE}-console") is None and audit(env) == []


def test_worker_object_is_not_touched(default_lab: Lab, kube: Any, tmp_path: Path) -> None:
    env = xdg(tmp_path)
    before = nodefeature(kube, NFD_NS, NODE)
    code, doc, err = publish(default_lab, env, "--node", NODE, "--name", NODE, "--label", "x=y", "--yes")
    assert code == 2 and "nfd-worker's own object" in doc["message"], err
    assert nodefeature(kube, NFD_NS, NODE)["spec"] == before["spec"]


def test_conflict_on_one_node_reports_it_and_the_others_are_done(kube: Any, tmp_path: Path) -> None:
    """The update carries the resourceVersion read: changed in between, the API server answers 409 and that
    node's object is not overwritten (k8s.io/apiserver registry store Update); the other node is still done."""
    from console.audit import AuditLog
    from console.guard import Guard
    from console.kube import nodefeatures as NFS

    guard = Guard(read_only=False, audit=AuditLog(tmp_path / "audit.log"))
    nfd = NFS.cluster_nfd(kube)
    nodes = [NODE, "kube-worker02"]
    NFS.apply_plan(kube, NFS.plan_publish(kube, nfd, [NODE], labels={"race": "one"}), guard=guard)
    plans = NFS.plan_publish(kube, nfd, nodes, labels={"race": "two"})
    assert [p.action for p in plans] == ["update", "create"]
    theirs = nodefeature(kube, NFD_NS, f"{NODE}-console")
    theirs["spec"]["labels"] = {"race": "theirs"}
    client.CustomObjectsApi(kube).replace_namespaced_custom_object("nfd.k8s-sigs.io", "v1alpha1", NFD_NS,
                                                                   "nodefeatures", f"{NODE}-console", theirs)
    done = {p.node: p for p in NFS.apply_plan(kube, plans, guard=guard)}
    assert done[NODE].result == "failed" and "changed by someone else" in done[NODE].error
    assert done["kube-worker02"].result == "created"
    assert nodefeature(kube, NFD_NS, f"{NODE}-console")["spec"]["labels"] == {"race": "theirs"}
    records = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    # intent then outcome per write: the update's outcome is the conflict, the create's ok
    assert [(r["action"], r["result"]) for r in records][-4:] == [
        ("nfd.nodefeature.update", "pending"), ("nfd.nodefeature.update", "conflict"),
        ("nfd.nodefeature.create", "pending"), ("nfd.nodefeature.create", "ok")]
    NFS.apply_plan(kube, NFS.plan_publish(kube, nfd, nodes, delete=True), guard=guard)
    assert nodefeature(kube, NFD_NS, f"{NODE}-console") is None
