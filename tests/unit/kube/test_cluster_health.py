"""The header's words for cache health (console/kube/cluster.CacheHealth): every cache that is down, since
when and why, as issue 10 words it ("nodes: reconnecting since 14:02:11 — connection refused"); caches still
on their first list apart; nothing when all are live."""

from __future__ import annotations

import time

from console.kube.cache import CacheState
from console.kube.cluster import CacheHealth


def _at(hms: str) -> float:
    return time.mktime(time.strptime(f"2026-12-01 {hms}", "%Y-%m-%d %H:%M:%S"))


def test_each_cache_that_is_down_is_named_with_since_and_why() -> None:
    states = (CacheState("nodes", "reconnecting", _at("14:02:11"), "connection refused", _at("14:02:00")),
              CacheState("pods", "unauthorized", _at("14:03:00"), "401 Unauthorized", 0.0))
    health = CacheHealth(_at("14:02:11"), 0.0, None, states)
    assert health.stale_text() == ('nodes: reconnecting since 14:02:11 — connection refused; '
                                   'pods: unauthorized since 14:03:00 — 401 Unauthorized')
    assert health.loading_text() is None


def test_a_forbidden_cache_is_not_stale() -> None:
    """RBAC, not an outage: the other data is current and the screen of the forbidden one says why."""
    states = (CacheState("nodes", "live", None, "", _at("14:02:00")),
              CacheState("pods", "forbidden", _at("14:03:00"), 'forbidden: pods is forbidden: User "v"', 0.0))
    assert CacheHealth(_at("14:03:00"), 0.0, None, states).stale_text() is None


def test_live_caches_say_nothing_and_loading_ones_are_not_stale() -> None:
    live = CacheState("nodes", "live", None, "", _at("14:00:00"))
    loading = CacheState("pods", "loading", _at("14:00:01"), "listing", 0.0)
    assert CacheHealth(None, 0.0, None, (live, loading)).stale_text() is None
    assert CacheHealth(None, 0.0, None, (live, loading)).loading_text() == "pods: loading since 14:00:01 — listing"
    assert CacheHealth(None, 0.0, None, (live, live)).stale_text() is None
