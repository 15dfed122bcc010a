"""The drain plan against kubectl's cases (k8s.io/kubectl pkg/drain/filters.go and its drain_test.go).

kubectl's filters in order: DaemonSet (skipped with --ignore-daemonsets, which the runbook always uses;
an orphan DaemonSet pod needs --force), mirror pods (skipped), local storage (emptyDir needs
--delete-emptydir-data), unreplicated (no controller needs --force); finished pods (Succeeded/Failed) are
deleted whatever their owner or volumes.
"""

from __future__ import annotations

from typing import Any

import pytest

from console.kube.drain import (
    DAEMONSET_WARNING,
    LOCAL_STORAGE_FATAL,
    LOCAL_STORAGE_WARNING,
    UNMANAGED_FATAL,
    UNMANAGED_WARNING,
    DrainItem,
    blocked_message,
    budget_from_429,
    classify,
    drain_plan,
)


def pod(name: str = "p", *, owner: str | None = None, controller: bool = True, phase: str = "Running",
        empty_dir: bool = False, mirror: bool = False, labels: dict[str, str] | None = None,
        api_version: str = "apps/v1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels or {}}
    if owner:
        kind, _, oname = owner.partition("/")
        meta["ownerReferences"] = [{"apiVersion": api_version if kind != "Node" else "v1", "kind": kind,
                                    "name": oname, "uid": "o", "controller": controller}]
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if empty_dir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


CASES = [
    # (case, pod, flags, action, why, needs)
    ("ReplicaSet pod", pod(owner="ReplicaSet/web-7d9"), {}, "evict", "", ()),
    ("StatefulSet pod", pod(owner="StatefulSet/db"), {}, "evict", "", ()),
    ("Job pod", pod(owner="Job/backup", api_version="batch/v1"), {}, "evict", "", ()),
    ("DaemonSet pod", pod(owner="DaemonSet/node-exporter"), {}, "skip", DAEMONSET_WARNING, ()),
    ("DaemonSet pod with emptyDir", pod(owner="DaemonSet/ds", empty_dir=True), {}, "skip", DAEMONSET_WARNING, ()),
    ("finished DaemonSet pod", pod(owner="DaemonSet/ds", phase="Succeeded"), {}, "evict", "finished (Succeeded)",
     ()),
    ("mirror pod", pod(owner="Node/kube-worker02", mirror=True), {}, "skip",
     "mirror (static) pod: the kubelet owns it", ()),
    ("bare pod", pod(), {}, "blocked", UNMANAGED_FATAL, ("--force",)),
    ("bare pod with --force", pod(), {"force": True}, "evict", UNMANAGED_WARNING, ()),
    ("owner that is not a controller", pod(owner="ReplicaSet/x", controller=False), {}, "blocked", UNMANAGED_FATAL,
     ("--force",)),
    ("emptyDir pod", pod(owner="ReplicaSet/cache", empty_dir=True), {}, "blocked", LOCAL_STORAGE_FATAL,
     ("--delete-emptydir-data",)),
    ("emptyDir pod with --delete-emptydir-data", pod(owner="ReplicaSet/cache", empty_dir=True),
     {"delete_emptydir_data": True}, "evict", LOCAL_STORAGE_WARNING, ()),
    ("bare emptyDir pod: both flags named", pod(empty_dir=True), {}, "blocked", LOCAL_STORAGE_FATAL,
     ("--delete-emptydir-data", "--force")),
    ("bare emptyDir pod with --delete-emptydir-data", pod(empty_dir=True), {"delete_emptydir_data": True},
     "blocked", UNMANAGED_FATAL, ("--force",)),
    ("bare emptyDir pod with both flags", pod(empty_dir=True), {"force": True, "delete_emptydir_data": True},
     "evict", UNMANAGED_WARNING, ()),
    ("finished bare pod", pod(phase="Failed"), {}, "evict", "finished (Failed)", ()),
    ("finished bare emptyDir pod", pod(phase="Succeeded", empty_dir=True), {}, "evict", "finished (Succeeded)", ()),
    ("the console's node-access pod", pod(labels={"app.kubernetes.io/managed-by": "console"}), {}, "skip",
     "the console's own node-access pod", ()),
]


@pytest.mark.parametrize(("case", "p", "flags", "action", "why", "needs"), CASES, ids=[c[0] for c in CASES])
def test_classify_like_kubectl(case, p, flags, action, why, needs):
    item = classify(p, **flags)
    assert (item.action, item.why, item.needs) == (action, why, needs), case


def test_only_force_evictions_of_bare_pods_are_lost():
    assert classify(pod(), force=True).lost
    assert not classify(pod(owner="ReplicaSet/web"), force=True).lost
    assert classify(pod(owner="ReplicaSet/web")).controller == "ReplicaSet/web"


def test_orphaned_daemonset_pod_needs_force():
    """kubectl GETs the DaemonSet: an orphan (its DaemonSet gone) is deleted with --force, an error without."""
    orphan = pod(owner="DaemonSet/gone")
    item = classify(orphan, daemonsets={("default", "other")})
    assert (item.action, item.needs) == ("blocked", ("--force",))
    assert item.why == 'daemonsets.apps "gone" not found'
    forced = classify(orphan, force=True, daemonsets=set())
    assert forced.action == "evict" and forced.lost
    assert classify(orphan, daemonsets={("default", "gone")}).action == "skip"


def test_plan_lists_every_pod_sorted():
    items = drain_plan([pod("b", owner="ReplicaSet/r"), pod("a"), pod("c", owner="DaemonSet/d")])
    assert [(i.name, i.action) for i in items] == [("a", "blocked"), ("b", "evict"), ("c", "skip")]


def test_blocked_message_names_each_pod_reason_and_flag():
    items = [classify(pod("bare")), classify(pod("scratch", owner="ReplicaSet/r", empty_dir=True))]
    msg = blocked_message("kube-worker02", [i for i in items if i.action == "blocked"])
    assert "cannot delete Pods that declare no controller (use --force to override): default/bare" in msg
    assert "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/scratch" in msg
    assert "--delete-emptydir-data --force" in msg and "default/bare will be deleted and not come back" in msg


def test_budget_name_from_the_eviction_429():
    """The Status body of pkg/registry/core/pod/storage/eviction.go checkAndDecrement."""
    body = {"kind": "Status", "code": 429, "reason": "TooManyRequests",
            "message": "Cannot evict pod as it would violate the pod's disruption budget.",
            "details": {"causes": [{"reason": "DisruptionBudget",
                                    "message": "The disruption budget web-pdb needs 2 healthy pods and has 2 "
                                               "currently"}]}}
    assert budget_from_429(body) == ("web-pdb", "The disruption budget web-pdb needs 2 healthy pods and has 2 "
                                                "currently")
    assert budget_from_429({"message": "x"}) == ("", "")


def test_item_dict_shape():
    d = DrainItem("ns", "n", "blocked", "why", ("--force",)).to_dict()
    assert d == {"namespace": "ns", "name": "n", "action": "blocked", "why": "why", "needs": ["--force"],
                 "controller": "", "lost": False}
