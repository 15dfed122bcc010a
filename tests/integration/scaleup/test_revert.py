"""`scale-up NODE --revert`: the revert runbook headless, with its journal and audit.

Nova's semantics (https://docs.openstack.org/api-ref/compute/#revert-resized-server-revertresize-action):
only a server in VERIFY_RESIZE can be reverted; revertResize → REVERT_RESIZE → ACTIVE with the old flavor.
A scale-up stopped by SIGINT right after VERIFY_RESIZE (before the confirm) leaves the node cordoned
and the server waiting; `--revert` brings the server back to its old flavor, the node back Ready with
the old capacity, uncordons it (the console cordoned it) and closes the scale-up run as superseded.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from crashcases import case_lab, case_workers, interrupted_run

from console.lab.nodelease import LEASES, micro_time

pytestmark = pytest.mark.lab

WORKERS = case_workers(["revert", "interrupted", "nothing", "held"], "rev")
lab = case_lab("revert", "m1.medium", WORKERS)


def _waiting_in_verify_resize(lab, state, h, node: str) -> dict:
    """A scale-up of `node` to m1.large stopped (SIGINT) once VERIFY_RESIZE is journaled: its journal."""
    h.add_case_pods(lab, node, "3", "5Gi")
    journal, line = interrupted_run(h, lab, state, "wait-verify-resize", node, "--flavor", "m1.large", "--yes")
    assert "VERIFY_RESIZE" in line and lab.nova.server(h.server_id(lab, node)).status == "VERIFY_RESIZE"
    return journal


def _reverted(lab, h, node: str) -> None:
    server = lab.nova.server(h.server_id(lab, node))
    assert (server.status, server.flavor.name) == ("ACTIVE", "m1.medium")
    assert len(h.nova_actions(lab, node, "revertResize")) == 1 and not h.nova_actions(lab, node, "confirmResize")
    n = h.node_obj(lab, node)
    assert n["status"]["capacity"]["cpu"] == "2" and not n["spec"].get("unschedulable")


def test_revert_brings_the_old_flavor_back_and_uncordons(lab, tmp_path, h):
    node = WORKERS["revert"]
    scale = _waiting_in_verify_resize(lab, tmp_path, h, node)
    code, doc, err = h.scale_up(lab, tmp_path, node, "--revert", "--dry-run")
    assert code == 0 and doc["plan"]["old_flavor"] == "m1.medium" and doc["plan"]["new_flavor"] == "m1.large", err
    assert lab.nova.server(h.server_id(lab, node)).status == "VERIFY_RESIZE"  # a dry run changes nothing
    code, _doc, err = h.scale_up(lab, tmp_path, node, "--revert")  # stdin is not a terminal, no --yes
    assert code == 5 and "refusing to change anything without --yes" in err, err
    assert lab.nova.server(h.server_id(lab, node)).status == "VERIFY_RESIZE"

    code, doc, err = h.scale_up(lab, tmp_path, node, "--revert", "--yes")
    assert code == 0, err
    assert doc["status"] == "done" and doc["run_id"].startswith(f"revert-{node}-")
    _reverted(lab, h, node)
    journals = {j["run_id"]: j for j in h.journals(tmp_path)}
    assert journals[doc["run_id"]]["status"] == "done" and journals[doc["run_id"]]["kind"] == "revert"
    assert journals[scale["run_id"]]["status"] == "reverted"  # no longer offered for resuming
    audited = [(e["action"], e["result"]) for e in h.audit_entries(tmp_path)
               if e.get("run_id") == doc["run_id"] and e["phase"] == "outcome"]
    assert audited == [("runbook.revert.revert-resize", "ok"), ("runbook.revert.uncordon", "ok")]


def test_interrupted_revert_resumes_and_reverts_once(lab, tmp_path, h):
    node = WORKERS["interrupted"]
    _waiting_in_verify_resize(lab, tmp_path, h, node)
    code, doc, err = h.scale_up(lab, tmp_path, node, "--revert", "--yes", signal_at="revert-resize", sig="SIGINT")
    assert code == 4 and "Traceback" not in err, err
    [line] = [x for x in err.splitlines() if "interrupted" in x]
    assert line.startswith("scale-up: interrupted before wait-reverted; the node is cordoned by the console")
    assert line.endswith(f"resume with: python -m console scale-up {node} --resume {doc['run_id']}")
    code, doc2, err = h.scale_up(lab, tmp_path, node, "--resume", doc["run_id"], "--yes")
    assert code == 0, err
    assert doc2["run_id"] == doc["run_id"]
    _reverted(lab, h, node)


def test_nothing_to_revert_is_refused_and_changes_nothing(lab, tmp_path, h):
    node = WORKERS["nothing"]
    code, doc, err = h.scale_up(lab, tmp_path, node, "--revert", "--yes")
    assert code == 2, err
    assert "nothing to revert" in doc["message"] and "VERIFY_RESIZE" in doc["message"]
    assert not h.nova_actions(lab, node, "revertResize") and not h.journals(tmp_path)
    assert not h.audit_entries(tmp_path)


def test_revert_while_another_run_holds_the_node_is_refused(lab, tmp_path, h):
    """A revert runs under the node's Lease as a scale-up does (console/runbook/lock.py): while another
    machine's run holds it, `--revert` is refused at once (exit 2, naming the holder) and Nova is not asked."""
    node = WORKERS["held"]
    _waiting_in_verify_resize(lab, tmp_path, h, node)
    now = micro_time(datetime.now(UTC))
    holder = "alice@bastion-2/scale-up-elsewhere"
    spec = {"holderIdentity": holder, "leaseDurationSeconds": 60, "acquireTime": now, "renewTime": now,
            "leaseTransitions": 1}
    # the interrupted scale-up released its Lease (holder ""): another machine's run takes it now
    lab.store.mutate(LEASES, "default", f"console-scale-up-{node}", lambda o: {**o, "spec": spec})
    code, doc, err = h.scale_up(lab, tmp_path, node, "--revert", "--yes")
    assert code == 2, err
    assert doc["holder"] == holder and holder in doc["message"]
    assert not h.nova_actions(lab, node, "revertResize")
    assert lab.nova.server(h.server_id(lab, node)).status == "VERIFY_RESIZE"
    assert not [j for j in h.journals(tmp_path) if j["kind"] == "revert"]
