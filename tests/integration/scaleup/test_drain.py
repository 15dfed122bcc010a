"""The runbook drains as `kubectl drain --ignore-daemonsets` does, on the seed-drain lab, through the real CLI.

kube-worker02 holds a bare pod (debug-shell), a StatefulSet pod with emptyDir data (db-0, behind db-pdb
which allows no disruption), a Deployment pod (frontend, behind frontend-pdb which allows one) and a
DaemonSet pod. Sources: kubectl pkg/drain/filters.go (what blocks, with which flag), pkg/drain/drain.go
(eviction through policy/v1, --force evicts too, 429 retried), kubernetes
pkg/registry/core/pod/storage/eviction.go (the 429 and its DisruptionBudget cause).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from labtools import wait_for

from console.lab import scenarios
from console.lab.store import NotFound
from console.lab.world import Lab

pytestmark = pytest.mark.lab

NODE = "kube-worker02"


@pytest.fixture(scope="module")
def drain_lab(tmp_path_factory: pytest.TempPathFactory, h) -> Iterator[Lab]:
    yield from h.start_lab(scenarios.get("seed-drain"), tmp_path_factory.mktemp("scaleup-drain"))


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("drain-state")  # one XDG_STATE_HOME: the last test resumes the second's run


def _frontend(lab: Lab) -> list[dict]:
    pods, _ = lab.store.list("pods", "default", lambda p: p["metadata"].get("labels", {}).get("app") == "frontend")
    return pods


def _exists(lab: Lab, name: str) -> bool:
    try:
        lab.store.get("pods", "default", name)
    except NotFound:
        return False
    return True


def _pdb_allows(lab: Lab, name: str, n: int) -> bool:
    return lab.store.get("poddisruptionbudgets.policy", "default", name).get("status", {}).get(
        "disruptionsAllowed") == n


def test_dry_run_lists_every_pod_and_its_fate(drain_lab, state, h):
    wait_for(lambda: len([p for p in drain_lab.store.pods_on_node(NODE)
                          if p["metadata"]["name"].startswith("node-exporter-")]) == 1,
             what="the DaemonSet pod on kube-worker02")
    code, doc, err = h.scale_up(drain_lab, state, NODE, "--flavor", "m1.large", "--dry-run", "--force",
                                "--delete-emptydir-data")
    assert code == 0, err
    owners = ("frontend", "node-exporter", "nfd-worker")
    fates = {next((o for o in owners if d["name"].startswith(o + "-")), d["name"]):
             (d["action"], d["controller"].split("/")[0], d["lost"]) for d in doc["plan"]["drain"]}
    # nfd-worker: NFD's DaemonSet (its release's manifests, console/lab/nfd_release.py) runs on every node, as
    # node-exporter
    assert fates == {"db-0": ("evict", "StatefulSet", False), "debug-shell": ("evict", "", True),
                     "frontend": ("evict", "ReplicaSet", False), "node-exporter": ("skip", "DaemonSet", False),
                     "nfd-worker": ("skip", "DaemonSet", False)}


def test_bare_and_emptydir_pods_refuse_the_plan(drain_lab, state, h):
    code, doc, err = h.scale_up(drain_lab, state, NODE, "--flavor", "m1.large", "--yes")
    assert code == 2, err
    msg = doc["message"]
    assert "cannot delete Pods that declare no controller (use --force to override): default/debug-shell" in msg
    assert "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/db-0" in msg
    assert "nothing was changed" in msg
    assert {(b["name"], tuple(b["needs"])) for b in doc["blocking"]} == {
        ("debug-shell", ("--force",)), ("db-0", ("--delete-emptydir-data",))}
    assert not h.node_obj(drain_lab, NODE)["spec"].get("unschedulable")
    assert h.nova_actions(drain_lab, NODE, "resize") == []
    assert h.journals(state) == [] and h.audit_entries(state) == []
    assert _exists(drain_lab, "debug-shell") and _exists(drain_lab, "db-0")


def test_a_budget_allowing_no_disruption_stops_the_drain_before_the_vm(drain_lab, state, h):
    wait_for(lambda: _pdb_allows(drain_lab, "frontend-pdb", 1), what="frontend-pdb to allow one disruption")
    frontend_before = {p["metadata"]["uid"]: p["spec"].get("nodeName") for p in _frontend(drain_lab)}
    code, doc, err = h.scale_up(drain_lab, state, NODE, "--flavor", "m1.large", "--yes", "--force",
                                "--delete-emptydir-data", "--drain-timeout", "4")
    assert code == 4, err
    assert doc["status"] == "needs-attention"
    assert "PodDisruptionBudget default/db-pdb still refuses to evict default/db-0" in doc["message"]
    assert "The disruption budget db-pdb needs 1 healthy pods and has 1 currently" in doc["message"]
    assert f"{NODE} stays cordoned (evicted so far: default/debug-shell, default/frontend-" in doc["message"]
    assert h.nova_actions(drain_lab, NODE, "resize") == []  # the VM is untouched
    assert h.node_obj(drain_lab, NODE)["spec"].get("unschedulable") is True
    assert _exists(drain_lab, "db-0")
    # --force: the bare pod was evicted (gone once its grace period ran) and nothing brings it back
    wait_for(lambda: not _exists(drain_lab, "debug-shell"), what="the evicted debug-shell gone")

    def replaced() -> bool:
        now = {p["metadata"]["uid"]: p["spec"].get("nodeName") for p in _frontend(drain_lab)}
        new = set(now) - set(frontend_before)
        return len(now) == 2 and len(new) == 1 and now[new.pop()] == "kube-worker01"

    wait_for(replaced, what="the ReplicaSet to recreate the evicted frontend pod on kube-worker01")
    assert not _exists(drain_lab, "debug-shell")
    journal = h.journals(state)[-1]
    assert journal["status"] == "needs-attention" and h.journal_step(journal, "drain")["status"] == "failed"
    assert "deleted and not come back" not in doc["message"]  # that was said at plan time, not here


def test_the_rerun_resumes_once_the_budget_allows_it(drain_lab, state, h):
    from kubernetes import client
    from kubernetes.config import new_client_from_config

    policy = client.PolicyV1Api(new_client_from_config(str(drain_lab.state.kubeconfig)))
    policy.patch_namespaced_pod_disruption_budget("db-pdb", "default", {"spec": {"minAvailable": 0}},
                                                  _content_type="application/merge-patch+json")
    wait_for(lambda: _pdb_allows(drain_lab, "db-pdb", 1), what="db-pdb to allow one disruption")
    db_uid = drain_lab.store.get("pods", "default", "db-0")["metadata"]["uid"]
    code, _doc, err = h.scale_up(drain_lab, state, NODE, "--flavor", "m1.large", "--yes", timeout=240)
    assert code == 0, err
    assert "resuming run" in err
    assert len(h.nova_actions(drain_lab, NODE, "resize")) == 1
    wait_for(lambda: _exists(drain_lab, "db-0") and
             drain_lab.store.get("pods", "default", "db-0")["metadata"]["uid"] != db_uid,
             what="the StatefulSet to recreate db-0")
    assert not _exists(drain_lab, "debug-shell")
    assert h.pod_obj(drain_lab, "nginx")["spec"]["nodeName"] == NODE
