"""The lab's PodDisruptionBudget arithmetic against kubernetes pkg/controller/disruption/disruption.go and the
Eviction API's check (pkg/registry/core/pod/storage/eviction.go)."""

from __future__ import annotations

import pytest

from console.lab import disruption
from console.lab.store import Store

RS_UID = "rs-uid"


def _world(ready: int, total: int, spec: dict) -> tuple[Store, dict]:
    store = Store()
    store.create("namespaces", {"metadata": {"name": "default"}})
    store.create("replicasets.apps", {"metadata": {"name": "web-1", "namespace": "default", "uid": RS_UID},
                                      "spec": {"replicas": total}})
    for i in range(total):
        conds = [{"type": "Ready", "status": "True" if i < ready else "False"}]
        store.create("pods", {"metadata": {"name": f"web-{i}", "namespace": "default", "labels": {"app": "web"},
                                           "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1", "uid": RS_UID,
                                                                "controller": True}]},
                              "status": {"phase": "Running", "conditions": conds}})
    pdb = store.create("poddisruptionbudgets.policy", {"metadata": {"name": "web", "namespace": "default"},
                                                       "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}})
    return store, pdb


@pytest.mark.parametrize(("ready", "total", "spec", "want"), [
    # (currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed)
    (3, 3, {"minAvailable": 2}, (3, 2, 3, 1)),
    (2, 3, {"minAvailable": 2}, (2, 2, 3, 0)),
    (3, 3, {"minAvailable": "50%"}, (3, 2, 3, 1)),
    (3, 3, {"maxUnavailable": 1}, (3, 2, 3, 1)),
    (3, 3, {"maxUnavailable": "34%"}, (3, 1, 3, 2)),  # ceil(3 × 34 %) = 2 may be unavailable
    (1, 1, {"minAvailable": 1}, (1, 1, 1, 0)),
    (3, 3, {"maxUnavailable": 0}, (3, 3, 3, 0)),
])
def test_status(ready, total, spec, want):
    store, pdb = _world(ready, total, spec)
    st = disruption.compute_status(store, pdb)
    assert (st["currentHealthy"], st["desiredHealthy"], st["expectedPods"], st["disruptionsAllowed"]) == want
    cond = st["conditions"][0]
    assert cond["type"] == "DisruptionAllowed"
    assert (cond["status"], cond["reason"]) == (("True", "SufficientPods") if want[3] else
                                                ("False", "InsufficientPods"))


def test_an_empty_selector_selects_nothing():
    assert not disruption.selects({}, {"app": "web"}) and not disruption.selects(None, {"app": "web"})
    assert disruption.selects({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                              {"app": "web"})


def test_eviction_takes_one_disruption_then_refuses_with_the_budget_named():
    store, _ = _world(2, 2, {"minAvailable": 1})
    disruption.sync(store, "default", "web")
    pod = store.get("pods", "default", "web-0")
    disruption.check_eviction(store, pod)
    st = store.get("poddisruptionbudgets.policy", "default", "web")["status"]
    assert st["disruptionsAllowed"] == 0 and "web-0" in st["disruptedPods"]
    with pytest.raises(disruption.EvictionRefused) as e:
        disruption.check_eviction(store, store.get("pods", "default", "web-1"))
    assert (e.value.code, e.value.reason, e.value.message) == (429, "TooManyRequests", disruption.VIOLATION)
    assert e.value.details == {"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget web needs "
                                           "1 healthy pods and has 2 currently"}]}
    # a recomputed status keeps web-0 out of the healthy count while the eviction is pending
    assert disruption.compute_status(store, store.get("poddisruptionbudgets.policy", "default", "web"))[
        "currentHealthy"] == 1


def test_pending_and_finished_pods_skip_the_budget():
    store, _ = _world(1, 1, {"minAvailable": 1})
    disruption.sync(store, "default", "web")
    for phase in ("Pending", "Succeeded", "Failed"):
        disruption.check_eviction(store, {"metadata": {"name": "x", "namespace": "default", "labels": {"app": "web"}},
                                          "status": {"phase": phase}})
