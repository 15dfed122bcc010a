"""Missing RBAC permissions refuse headless commands at plan time (issue 10, acceptance "lab-viewer").

The permissions are what the API server answers (SelfSubjectRulesReview, authorization.k8s.io/v1, as
`kubectl auth can-i --list`): `scale-up … --yes` as `lab-viewer` exits 2 naming them (JSON "error": "forbidden",
"missing": [...]) and nothing changes — Nova shows no resize, the node is not cordoned, no journal, no Lease;
`--dry-run` reports them and exits 0; `nfd apply` refuses before any write. `lab-operator` holds what
a scale-up calls (console/kube/access.py action_needs), so its dry run reports nothing missing, and its
`kubectl auth can-i` agrees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from labtools import lab_env, resize_to_verify

pytestmark = pytest.mark.lab

NODE = "kube-worker02"
VIEWER = {"CONSOLE_CONTEXT": "lab-viewer"}
SCALE_UP_MISSING = {"patch nodes", "create pods/eviction", "create pods in default", "delete pods in default",
                    "create leases.coordination.k8s.io in default",
                    "update leases.coordination.k8s.io in default"}


def test_viewer_scale_up_is_refused_at_plan_time_and_nothing_changes(resize_lab, tmp_path, scale_up, h):
    sid = next(vm.server_id for vm in resize_lab.vms if vm.node_name == NODE)
    before = [a.action for a in resize_lab.nova.actions(sid)]
    # as the issue writes it: the global --context after the command, as kubectl takes it
    code, doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", "m1.large", "--yes", "--context", "lab-viewer")
    assert code == 2, err
    assert doc["status"] == "refused" and doc["exit_code"] == 2 and doc["error"] == "forbidden"
    assert set(doc["missing"]) >= SCALE_UP_MISSING, doc["missing"]
    assert "list nodes" not in doc["missing"]  # the viewer reads
    assert "scale-up needs: patch nodes, " in doc["message"] and "user viewer" in doc["message"]
    assert "Traceback" not in err
    assert [a.action for a in resize_lab.nova.actions(sid)] == before  # Nova shows no resize
    assert resize_lab.nova.server(sid).flavor.name == "m1.medium"
    assert not h.node_obj(resize_lab)["spec"].get("unschedulable")
    assert h.journals(tmp_path) == []
    leases, _ = resize_lab.store.list("leases.coordination.k8s.io", "default")
    assert not [x for x in leases if NODE in x["metadata"]["name"]]


def test_viewer_dry_run_reports_what_a_run_would_be_refused_for(resize_lab, tmp_path, scale_up):
    code, doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", "m1.large", "--dry-run", extra_env=VIEWER)
    assert code == 0, err
    assert doc["dry_run"] is True and doc["plan"]["steps"][1]["id"] == "cordon"
    assert doc["error"] == "forbidden" and set(doc["missing"]) >= SCALE_UP_MISSING
    assert doc["message"].startswith("a run would be refused before any change: scale-up needs: ")


def test_operator_holds_what_a_scale_up_needs(resize_lab, tmp_path, scale_up):
    code, doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", "m1.large", "--dry-run",
                              extra_env={"CONSOLE_CONTEXT": "lab-operator"})
    assert code == 0, err
    assert "missing" not in doc and "error" not in doc
    env = lab_env(resize_lab)
    can = subprocess.run(["kubectl", "--context", "lab-operator", "auth", "can-i", "get", "nodes",
                          "--subresource=proxy"], env=env, capture_output=True, text=True, timeout=60)
    assert can.stdout.strip() == "no"  # configz is then read over the node-debug pod


def _nfd(lab, state: Path, *args: str) -> tuple[int, dict, str]:
    env = lab_env(lab) | {"XDG_STATE_HOME": str(state)} | VIEWER
    proc = subprocess.run([sys.executable, "-m", "console", "nfd", *args, "-o", "json"], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


RULE = """apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: rbac-refusal
spec:
  rules:
  - name: always
    labels:
      example.com/rbac: "true"
    matchFeatures:
    - feature: kernel.version
      matchExpressions:
        major: {op: Exists}
"""


def test_viewer_nfd_apply_refuses_before_any_write(resize_lab, tmp_path):
    rule = tmp_path / "rule.yaml"
    rule.write_text(RULE)
    code, doc, err = _nfd(resize_lab, tmp_path, "apply", "-f", str(rule), "--yes")
    assert code == 2, err
    assert doc["status"] == "refused" and doc["error"] == "forbidden"
    assert doc["missing"] == ["create nodefeaturerules.nfd.k8s-sigs.io", "update nodefeaturerules.nfd.k8s-sigs.io"]
    rules, _ = resize_lab.store.list("nodefeaturerules.nfd.k8s-sigs.io")
    assert "rbac-refusal" not in {r["metadata"]["name"] for r in rules}
    code, doc, err = _nfd(resize_lab, tmp_path, "apply", "-f", str(rule), "--dry-run")
    assert code == 0 and doc["status"] == "dry-run" and doc["error"] == "forbidden", err


def test_viewer_revert_is_refused_at_plan_time(resize_lab, tmp_path, scale_up, h):
    """A resize waiting in VERIFY_RESIZE (made with openstacksdk, as an admin would): the viewer's `--revert
    --yes` exits 2 naming what a revert calls for, and Nova still waits (no revertResize)."""
    node = "kube-worker01"
    sid = h.server_id(resize_lab, node)
    resize_to_verify(resize_lab, sid, "m1.large")
    code, doc, err = scale_up(resize_lab, tmp_path, node, "--revert", "--yes", extra_env=VIEWER)
    assert code == 2, err
    assert doc["error"] == "forbidden" and "patch nodes" in doc["missing"]
    assert "update leases.coordination.k8s.io in default" in doc["missing"]
    assert doc["message"].startswith("refused before any change: revert needs: ")
    assert resize_lab.nova.server(sid).status == "VERIFY_RESIZE" and not h.nova_actions(resize_lab, node,
                                                                                           "revertResize")
    code, doc, err = scale_up(resize_lab, tmp_path, node, "--revert", "--dry-run", extra_env=VIEWER)
    assert code == 0 and doc["dry_run"] is True and "patch nodes" in doc["missing"], err


def test_operator_scale_up_runs_with_exactly_its_permissions(resize_lab, tmp_path, scale_up, h):
    """The roles of lab-operator are enough for a whole offline resize: cordon, drain by eviction, the Lease,
    uncordon, the pods' verification (last: it resizes the node)."""
    code, doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", "m1.large", "--yes",
                              extra_env={"CONSOLE_CONTEXT": "lab-operator"})
    assert code == 0, err
    assert doc["status"] == "done"
    assert {"cordon", "drain", "resize", "uncordon"} <= {s["id"] for s in doc["steps"]}
    assert not h.node_obj(resize_lab)["spec"].get("unschedulable")
    cap = h.node_obj(resize_lab)["status"]["capacity"]
    assert cap["cpu"] == "8"
