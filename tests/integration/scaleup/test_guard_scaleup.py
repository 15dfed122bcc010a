"""Read-only and audit-before-action hold for the headless scale-up and --revert (console/guard.py).

- `console --read-only scale-up … --yes` and `read_only: true` in the config file (XDG_CONFIG_HOME) refuse
  with exit 2 and "read-only: scale-up of NODE not done"; the plan and --dry-run still work; Nova and the
  node are unchanged (read back through openstacksdk and the kubernetes client).
- The audit log on a full device (/dev/full: every write fails with ENOSPC, full(4)): scale-up and --revert
  refuse before their first change, exit 2 naming the log; nothing changes.
- A run killed right after the cordon was sent (its intent logged, its outcome not) and resumed: every
  mutating step has exactly one intent and one outcome, with the same id, in the audit log.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import openstack
import openstack.config
import openstack.connection
import pytest
from crashcases import RESIZE_MUTATING, case_lab, case_workers, interrupted_run, killed_run
from kubernetes import client
from labtools import lab_env

from console.kube.connection import connect
from console.lab.world import Lab

pytestmark = pytest.mark.lab

WORKERS = case_workers(["ro-flag", "ro-config", "full", "revert-full", "resume"], "grd")
lab = case_lab("guard", "m1.medium", WORKERS)


def cli(lab: Lab, state: Path, *args: str, config: str = "", audit_full: bool = False) -> tuple[int, dict, str]:
    """`python -m console ARGS -o json` with its own XDG state and config dirs."""
    cfg = state / "config"
    (cfg / "console").mkdir(parents=True, exist_ok=True)
    if config:
        (cfg / "console" / "config.yaml").write_text(config)
    if audit_full:
        (state / "console").mkdir(parents=True, exist_ok=True)
        (state / "console" / "audit.log").symlink_to("/dev/full")
    env = lab_env(lab) | {"XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(cfg)}
    proc = subprocess.run([sys.executable, "-m", "console", *args, "-o", "json"], env=env, capture_output=True,
                          text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def real_state(lab: Lab, node: str) -> tuple[str, str, bool]:
    """(Nova status, flavor name, node unschedulable) through the real clients, as an admin would look."""
    region = openstack.config.OpenStackConfig(config_files=[str(lab.state.clouds_yaml)]).get_one("lab")
    conn = openstack.connection.Connection(config=region)
    try:
        server = next(s for s in conn.compute.servers() if s.name == node or node in (s.name or ""))
        flavor = server.flavor.get("original_name") or server.flavor.get("name") or ""
        status = server.status
    finally:
        conn.close()
    api, _ = connect(str(lab.state.kubeconfig))
    try:
        unschedulable = bool(client.CoreV1Api(api).read_node(node).spec.unschedulable)
    finally:
        api.close()
    return status, flavor, unschedulable


@pytest.mark.parametrize("how", ["ro-flag", "ro-config", "ro-context", "ro-viewer"])
def test_read_only_scale_up_refuses_and_changes_nothing(lab, tmp_path, h, how):
    """ro-context: `contexts: {lab: {read_only: true}}` for the kubeconfig's current context, no --context
    (client-go loader.go: the current-context is the context in use). ro-viewer: a read-only session of a
    user RBAC would refuse (lab-viewer) is told read-only, the session's own setting, not "ask for RBAC"."""
    node = WORKERS["ro-config" if how in ("ro-context", "ro-viewer") else how]  # refusals change nothing
    before = real_state(lab, node)
    assert before == ("ACTIVE", "m1.medium", False)
    flag = {"ro-flag": ["--read-only"], "ro-viewer": ["--context", "lab-viewer", "--read-only"]}.get(how, [])
    config = {"ro-config": "read_only: true\n", "ro-context": "contexts:\n  lab:\n    read_only: true\n"}.get(how, "")
    code, doc, err = cli(lab, tmp_path, *flag, "scale-up", node, "--flavor", "m1.large", "--dry-run", config=config)
    assert code == 0 and doc["dry_run"] is True, err  # the plan still works read-only
    code, doc, err = cli(lab, tmp_path, *flag, "scale-up", node, "--flavor", "m1.large", "--yes", config=config)
    assert (code, doc["status"], doc["error"]) == (2, "refused", "read-only"), err
    assert doc["message"] == f"read-only: scale-up of {node} not done"
    assert f"scale-up: read-only: scale-up of {node} not done" in err
    assert real_state(lab, node) == before
    assert not h.nova_actions(lab, node, "resize")
    assert h.journals(tmp_path) == [] and h.audit_entries(tmp_path) == []


def test_audit_log_on_a_full_device_refuses_scale_up_before_any_change(lab, tmp_path, h):
    node = WORKERS["full"]
    before = real_state(lab, node)
    code, doc, err = cli(lab, tmp_path, "scale-up", node, "--flavor", "m1.large", "--yes", audit_full=True)
    assert (code, doc["status"], doc["error"]) == (2, "refused", "audit-unwritable"), err
    log = tmp_path / "console" / "audit.log"
    assert f"audit log {log} cannot be written (No space left on device)" in doc["message"]
    assert "nothing was changed" in doc["message"]
    assert real_state(lab, node) == before and not h.nova_actions(lab, node, "resize")
    [journal] = h.journals(tmp_path)
    assert journal["status"] == "refused"  # not resumed by the next run
    assert all(s["status"] in ("pending", "done") for s in journal["steps"])  # only the read-only preflight ran


def test_audit_log_on_a_full_device_refuses_revert(lab, tmp_path, h):
    node = WORKERS["revert-full"]
    h.add_case_pods(lab, node, "3", "5Gi")
    interrupted_run(h, lab, tmp_path, "wait-verify-resize", node, "--flavor", "m1.large", "--yes")
    sid = h.server_id(lab, node)
    assert lab.nova.server(sid).status == "VERIFY_RESIZE"
    log = tmp_path / "console" / "audit.log"
    kept = log.read_text()
    log.unlink()
    log.symlink_to("/dev/full")
    code, doc, err = cli(lab, tmp_path, "scale-up", node, "--revert", "--yes")
    assert (code, doc["status"], doc["error"]) == (2, "refused", "audit-unwritable"), err
    assert lab.nova.server(sid).status == "VERIFY_RESIZE" and not h.nova_actions(lab, node, "revertResize")
    assert h.node_obj(lab, node)["spec"].get("unschedulable")  # still as the interrupted scale-up left it
    # the refused revert did not supersede the scale-up: it is still the run to resume
    scale = next(j for j in h.journals(tmp_path) if j["kind"] == "scale-up")
    assert scale["status"] == "interrupted"
    log.unlink()
    log.write_text(kept)
    # read-only --revert refuses the same way
    code, doc, err = cli(lab, tmp_path, "--read-only", "scale-up", node, "--revert", "--yes")
    assert (code, doc["error"]) == (2, "read-only"), err
    # and says read-only, not "ask for RBAC", to a read-only user RBAC would refuse too
    code, doc, err = cli(lab, tmp_path, "--context", "lab-viewer", "--read-only", "scale-up", node, "--revert",
                         "--yes")
    assert (code, doc["error"]) == (2, "read-only"), err
    assert lab.nova.server(sid).status == "VERIFY_RESIZE"


def test_resumed_run_audits_each_step_exactly_once(lab, tmp_path, h):
    """Killed the moment the cordon is journaled "acted" (sent, its outcome not yet written), then resumed."""
    node = WORKERS["resume"]
    h.add_case_pods(lab, node, "3", "5Gi")
    args = (node, "--flavor", "m1.large", "--yes")
    journal = killed_run(h, lab, tmp_path, "cordon:acted", *args)
    run = journal["run_id"]
    cordon_intent = h.journal_step(journal, "cordon")["data"]["audit_intent"]
    first = [e for e in h.audit_entries(tmp_path) if e.get("run_id") == run]
    assert [(e["phase"], e["action"], e["id"]) for e in first] == [("intent", "runbook.scale-up.cordon",
                                                                    cordon_intent)]
    code, doc, err = h.scale_up(lab, tmp_path, *args)
    assert code == 0 and doc["run_id"] == run, err
    records: dict[str, list[dict[str, Any]]] = {}
    for e in h.audit_entries(tmp_path):
        if e.get("run_id") == run:
            records.setdefault(e["action"].rsplit(".", 1)[1], []).append(e)
    assert sorted(records) == sorted(RESIZE_MUTATING)
    for step, recs in records.items():
        assert [r["phase"] for r in recs] == ["intent", "outcome"], (step, recs)
        assert recs[0]["id"] == recs[1]["id"] and recs[1]["result"] == "ok"
    assert records["cordon"][0]["id"] == cordon_intent
    assert "interrupted run" in records["cordon"][1]["detail"]
    assert len(h.nova_actions(lab, node, "resize")) == 1
