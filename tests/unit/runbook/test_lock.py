"""Pure parts of the per-node run lock: Lease names, holder identities, expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from console.kube.leases import Lease, micro_time
from console.runbook.lock import identity, lease_name, run_of


def test_lease_name_stays_a_valid_object_name_for_the_longest_node_names() -> None:
    assert lease_name("kube-worker02") == "console-scale-up-kube-worker02"
    long_a, long_b = "a" * 250 + "x", "a" * 250 + "y"
    assert len(lease_name(long_a)) <= 253 and lease_name(long_a) != lease_name(long_b)


def test_the_run_id_is_read_back_from_the_holder_identity() -> None:
    holder = identity("scale-up-kube-worker02-20261201T084500-ab12")
    assert "@" in holder and run_of(holder) == "scale-up-kube-worker02-20261201T084500-ab12"


def test_micro_time_always_has_six_fractional_digits() -> None:
    assert micro_time(datetime(2026, 12, 1, 8, 45, 59, tzinfo=UTC)) == "2026-12-01T08:45:59.000000Z"


def test_a_lease_is_held_until_renew_time_plus_duration_and_never_without_a_holder() -> None:
    now = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)

    def lease(holder: str, renewed_ago: float, duration: int = 60) -> Lease:
        spec = {"holderIdentity": holder, "leaseDurationSeconds": duration,
                "renewTime": micro_time(now - timedelta(seconds=renewed_ago))}
        return Lease.from_api({"metadata": {"name": "l", "namespace": "default", "resourceVersion": "7"},
                               "spec": spec})

    assert lease("a", 59).held(now) and not lease("a", 61).held(now)
    assert lease("a", 30).expires == now + timedelta(seconds=30)
    assert not lease("", 0).held(now)  # released (client-go: holder "")
    assert not Lease.from_api({"metadata": {}, "spec": {"holderIdentity": "a"}}).held(now)  # never renewed
