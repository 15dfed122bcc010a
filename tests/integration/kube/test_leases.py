"""coordination.k8s.io/v1 Leases through the console's lease client (console/kube/leases.py) and the runbook's
RunLock on top of them, against kube-apiserver on the lab.

Real-system references: client-go tools/leaderelection/resourcelock/leaselock.go (Get / Create → 409
AlreadyExists / Update with resourceVersion → 409 Conflict), leaderelection.go (tryAcquireOrRenew, release
as holder "" with leaseDurationSeconds 1), apimachinery metav1.MicroTime (RFC3339Micro).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from labstart import start_lab

from console.kube import leases
from console.lab.store import NotFound
from console.lab.world import Lab
from console.runbook.engine import Step, StepFailed
from console.runbook.lock import DURATION_S, LockError, RunLock, identity, lease_name

KEY = "leases.coordination.k8s.io"
NODE = "kube-worker01"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-resize", tmp_path_factory.mktemp("lab-leases"), metrics=False)


@pytest.fixture(autouse=True)
def no_run_lease(lab: Lab) -> None:
    """Each test starts without NODE's run Lease: the one a test before left held or released is deleted."""
    with contextlib.suppress(NotFound):
        lab.store.delete(KEY, "default", lease_name(NODE))


def lock(kube: Any, tmp_path: Path, run_id: str, *, resuming: bool = False) -> RunLock:
    return RunLock(kube, NODE, run_id, namespace="default", resuming=resuming, journal_dir=tmp_path)


def lease(lab: Lab) -> dict[str, Any]:
    """The run Lease as the API server has it now."""
    return dict(lab.store.fetch(KEY, "default", lease_name(NODE)))


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


def test_second_run_is_refused_until_the_first_releases(kube: Any, lab: Lab, tmp_path: Path) -> None:
    a = lock(kube, tmp_path, f"scale-up-{NODE}-a")
    a.acquire()
    try:
        obj = lease(lab)
        assert obj["spec"]["holderIdentity"] == identity(f"scale-up-{NODE}-a")
        assert obj["spec"]["leaseDurationSeconds"] == DURATION_S
        b = lock(kube, tmp_path, f"scale-up-{NODE}-b")
        with pytest.raises(LockError) as err:
            b.acquire()
        assert err.value.details["holder"] == identity(f"scale-up-{NODE}-a")
        assert "expires in" in str(err.value)
    finally:
        a.release()
    released = lease(lab)["spec"]
    assert released["holderIdentity"] == "" and released["leaseDurationSeconds"] == 1
    b.acquire()
    try:
        spec = lease(lab)["spec"]
        assert spec["holderIdentity"] == identity(f"scale-up-{NODE}-b") and spec["leaseTransitions"] == 1
    finally:
        b.release()


def test_renewal_and_a_lost_lease_stop_the_next_mutation(kube: Any, lab: Lab, tmp_path: Path) -> None:
    a = lock(kube, tmp_path, f"scale-up-{NODE}-c")
    a.acquire()
    name = lease_name(NODE)
    try:
        before = lease(lab)
        a.renew()
        after = lease(lab)
        assert after["spec"]["renewTime"] > before["spec"]["renewTime"]
        assert after["spec"]["acquireTime"] == before["spec"]["acquireTime"] and not a.lost
        # another holder takes it (as after our renewals failed for a whole duration)
        lab.store.mutate(KEY, "default", name,
                         lambda o: {**o, "spec": {**o["spec"], "holderIdentity": "bob@elsewhere/run-x"}})
        a.renew()
        assert "bob@elsewhere/run-x" in a.lost
        calls: list[str] = []
        guarded = a.guard([Step("cordon", f"cordon {NODE}", lambda _c: calls.append("cordon") or {}),
                           Step("verify", "verify", lambda _c: calls.append("verify") or {}, mutating=False)])
        with pytest.raises(StepFailed) as err:
            guarded[0].action(None)  # type: ignore[arg-type]
        assert err.value.resumable and calls == []
        guarded[1].action(None)  # type: ignore[arg-type]
        assert calls == ["verify"]
    finally:
        a.release()
    assert lease(lab)["spec"]["holderIdentity"] == "bob@elsewhere/run-x"


def test_one_process_per_journal_on_this_machine(kube: Any, tmp_path: Path) -> None:
    """Two resumes of the same run here would both own its Lease: the journal's flock keeps the second out."""
    a = lock(kube, tmp_path, f"scale-up-{NODE}-d", resuming=True)
    a.acquire()
    try:
        with pytest.raises(LockError, match="is in progress in another process"):
            lock(kube, tmp_path, f"scale-up-{NODE}-d", resuming=True).acquire()
    finally:
        a.release()
    assert not (tmp_path / f"scale-up-{NODE}-d.lock").exists()
    again = lock(kube, tmp_path, f"scale-up-{NODE}-d", resuming=True)
    again.acquire()
    again.release()
