"""coordination.k8s.io/v1 Leases on the lab API server through the real `kubernetes` client, and the runbook's
RunLock on top of them.

Real-system references: client-go tools/leaderelection/resourcelock/leaselock.go (Get / Create → 409
AlreadyExists / Update with resourceVersion → 409 Conflict), leaderelection.go (tryAcquireOrRenew, release
as holder "" with leaseDurationSeconds 1), kubernetes pkg/apis/coordination/validation (ValidateLeaseSpec),
apimachinery metav1.MicroTime (RFC3339Micro).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from console.kube import leases
from console.runbook.engine import Step, StepFailed
from console.runbook.lock import DURATION_S, LockError, RunLock, identity, lease_name

KubeLab = Any  # the kube_lab fixture's type, from conftest.py
KEY = "leases.coordination.k8s.io"


def lock(kube: Any, tmp_path: Path, run_id: str, *, resuming: bool = False) -> RunLock:
    return RunLock(kube, "worker-1", run_id, namespace="default", resuming=resuming, journal_dir=tmp_path)


def test_create_if_absent_and_optimistic_update(kube: Any) -> None:
    now = datetime.now(UTC)
    first = leases.create(kube, "default", "l1", leases.spec("a", 60, now, now, 0))
    assert first.holder == "a" and first.held(now) and first.resource_version
    with pytest.raises(leases.LeaseConflict, match="already exists"):
        leases.create(kube, "default", "l1", leases.spec("b", 60, now, now, 0))
    second = leases.update(kube, first, leases.spec("a", 60, now, datetime.now(UTC), 0))
    assert second.resource_version != first.resource_version
    with pytest.raises(leases.LeaseConflict, match="modified"):
        leases.update(kube, first, leases.spec("b", 60, now, now, 1))  # read before `second`: stale
    assert leases.get(kube, "default", "l1").holder == "a"
    assert leases.get(kube, "default", "missing") is None


def test_lab_validates_leases_like_the_api_server(kube: Any) -> None:
    api = client.CoordinationV1Api(kube)
    body = {"metadata": {"name": "bad"}, "spec": {"holderIdentity": "x", "renewTime": "2026-01-01T00:00:00Z"}}
    with pytest.raises(ApiException) as err:  # MicroTime wants six fractional digits
        api.create_namespaced_lease("default", body)
    assert err.value.status == 400
    body["spec"] = {"holderIdentity": "x", "leaseDurationSeconds": 0}
    with pytest.raises(ApiException) as err:
        api.create_namespaced_lease("default", body)
    assert err.value.status == 422 and "must be greater than 0" in err.value.body


def test_second_run_is_refused_until_the_first_releases(kube: Any, kube_lab: KubeLab, tmp_path: Path) -> None:
    a = lock(kube, tmp_path, "scale-up-worker-1-a")
    a.acquire()
    try:
        obj = kube_lab.store.get(KEY, "default", lease_name("worker-1"))
        assert obj["spec"]["holderIdentity"] == identity("scale-up-worker-1-a")
        assert obj["spec"]["leaseDurationSeconds"] == DURATION_S
        b = lock(kube, tmp_path, "scale-up-worker-1-b")
        with pytest.raises(LockError) as err:
            b.acquire()
        assert err.value.details["holder"] == identity("scale-up-worker-1-a")
        assert "expires in" in str(err.value)
    finally:
        a.release()
    released = kube_lab.store.get(KEY, "default", lease_name("worker-1"))["spec"]
    assert released["holderIdentity"] == "" and released["leaseDurationSeconds"] == 1
    b.acquire()
    try:
        spec = kube_lab.store.get(KEY, "default", lease_name("worker-1"))["spec"]
        assert spec["holderIdentity"] == identity("scale-up-worker-1-b") and spec["leaseTransitions"] == 1
    finally:
        b.release()


def test_renewal_and_a_lost_lease_stop_the_next_mutation(kube: Any, kube_lab: KubeLab, tmp_path: Path) -> None:
    a = lock(kube, tmp_path, "scale-up-worker-1-c")
    a.acquire()
    name = lease_name("worker-1")
    try:
        before = kube_lab.store.get(KEY, "default", name)
        a.renew()
        after = kube_lab.store.get(KEY, "default", name)
        assert after["spec"]["renewTime"] > before["spec"]["renewTime"]
        assert after["spec"]["acquireTime"] == before["spec"]["acquireTime"] and not a.lost
        # another holder takes it (as after our renewals failed for a whole duration)
        kube_lab.store.mutate(KEY, "default", name,
                              lambda o: {**o, "spec": {**o["spec"], "holderIdentity": "bob@elsewhere/run-x"}})
        a.renew()
        assert "bob@elsewhere/run-x" in a.lost
        calls: list[str] = []
        guarded = a.guard([Step("cordon", "cordon worker-1", lambda _c: calls.append("cordon") or {}),
                           Step("verify", "verify", lambda _c: calls.append("verify") or {}, mutating=False)])
        with pytest.raises(StepFailed) as err:
            guarded[0].action(None)  # type: ignore[arg-type]
        assert err.value.resumable and calls == []
        guarded[1].action(None)  # type: ignore[arg-type]
        assert calls == ["verify"]
    finally:
        a.release()
    assert kube_lab.store.get(KEY, "default", name)["spec"]["holderIdentity"] == "bob@elsewhere/run-x"


def test_one_process_per_journal_on_this_machine(kube: Any, tmp_path: Path) -> None:
    """Two resumes of the same run here would both own its Lease: the journal's flock keeps the second out."""
    a = lock(kube, tmp_path, "scale-up-worker-1-d", resuming=True)
    a.acquire()
    try:
        with pytest.raises(LockError, match="is in progress in another process"):
            lock(kube, tmp_path, "scale-up-worker-1-d", resuming=True).acquire()
    finally:
        a.release()
    assert not (tmp_path / "scale-up-worker-1-d.lock").exists()
    again = lock(kube, tmp_path, "scale-up-worker-1-d", resuming=True)
    again.acquire()
    again.release()
