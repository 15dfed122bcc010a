"""The API server goes away for 10 s while the TUI is open, and comes back on the same port.

The header says which caches are stale, since when and why ("nodes: reconnecting since 14:02:11 —
connection refused"), and clears within 5 s of the server answering again; what changed while it was away
(a pod deleted) is in the caches afterwards. Reconnects back off as client-go's reflector does
(wait.Backoff with jitter, k8s.io/client-go/tools/cache/reflector.go), capped so that recovery is seen
within seconds (console/kube/cache.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import datetime

import pytest
from labstart import start_lab
from labtools import wait_for
from tuitools import console_app, isolated_xdg  # noqa: F401 (isolated_xdg: autouse)

from console.config import Settings
from console.kube.cluster import Cluster
from console.lab import scenarios
from console.lab.world import Lab
from screenshots import wait_until

DOWN_FOR = 10.0
STALE = re.compile(r"(nodes|pods): reconnecting since (\d\d:\d\d:\d\d) — connection refused")


@pytest.fixture(scope="module")
def restart_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab(scenarios.get("scale", nodes=3, pods_per_node=2), tmp_path_factory.mktemp("api-restart"))


def _seconds(hms: str) -> int:
    h, m, s = (int(x) for x in hms.split(":"))
    return h * 3600 + m * 60 + s


async def test_header_says_stale_since_when_and_why_and_clears_when_the_server_is_back(restart_lab: Lab) -> None:
    """Issue 10, acceptance 2, through the real TUI (Textual pilot) and the real kubernetes client."""
    app = console_app(Settings(kubeconfig=str(restart_lab.state.kubeconfig), theme="dark"))
    cluster = app.kube
    try:
        async with app.run_test(size=(140, 30)) as pilot:
            await wait_until(pilot, lambda: len(app.view.rows) == 3, timeout=30, what="the nodes")
            assert app.stale is None and "STALE" not in app.sub_title
            victim = sorted(cluster.pods.snapshot())[0]

            restart_lab.kube_api_down()
            down_at = time.monotonic()
            down_clock = _seconds(datetime.now().strftime("%H:%M:%S"))
            try:
                await wait_until(pilot, lambda: app.stale, timeout=60, what="the stale mark")
                header = app.sub_title
                found = STALE.findall(header)
                assert found and header.count("STALE: ") == 1, header
                for _name, hms in found:  # since when: the moment the server went away (to the clock's second)
                    assert abs(_seconds(hms) - down_clock) <= 2 or abs(_seconds(hms) - down_clock) >= 86398, header
                # changed while the console cannot see: in the storage behind the API server, as another API
                # server of the cluster would write it (on upstream: etcd, which keeps running)
                restart_lab.delete_behind_api("pods", victim[0], victim[1])
                await pilot.pause(max(0.0, DOWN_FOR - (time.monotonic() - down_at)))
                assert app.stale, "the header cleared while the server was still down"
                assert len(app.view.rows) == 3  # the last known rows stay, marked stale
            finally:
                restart_lab.kube_api_up()
            back_at = time.monotonic()
            await wait_until(pilot, lambda: app.stale is None, timeout=5, what="the header to clear")
            assert time.monotonic() - back_at < 5
            assert "STALE" not in app.sub_title
            assert all(c.health().state == "live" for c in (cluster.nodes, cluster.pods))
            await wait_until(pilot, lambda: victim not in cluster.pods.snapshot(), timeout=5,
                             what="the pod deleted during the outage gone from the cache")
    finally:
        app.gateways.stop()


def test_a_refused_cache_says_forbidden_or_unauthorized_and_holds_no_rows(restart_lab: Lab) -> None:
    """A 403 on the list: the cache is `forbidden`, quotes the server's message and shows nothing as fact; a
    token the server never issued: `unauthorized` (fault files of the lab, console/lab/faultfiles.py)."""
    faults = restart_lab.state.root / "faults"
    # both at once: each waits out the caches' retries on its own (the checks are per cluster, as before)
    clusters = {state: Cluster(str(faults / kubeconfig))
                for kubeconfig, state in (("kubeconfig-forbidden", "forbidden"),
                                          ("kubeconfig-wrong-token", "unauthorized"))}
    for cluster in clusters.values():
        cluster.start()
    try:
        for state, cluster in clusters.items():
            wait_for(lambda c=cluster, s=state: all(x.state == s for x in c.health().states), timeout=30,
                     what=f"both caches {state}")
            health = cluster.health()
            assert {s.name for s in health.states} == {"nodes", "pods"}
            assert health.down_since is not None
            if state == "unauthorized":  # an outage of these credentials: the data is stale
                assert f"nodes: {state} since " in (health.stale_text() or "")
            else:  # RBAC, not an outage: the screen says what cannot be read (Gateways.unreadable), not STALE
                assert health.stale_text() is None
            if state == "forbidden":  # the server's own words (Kubernetes' Forbidden message)
                assert 'User "lab-nobody" cannot list resource "nodes"' in cluster.nodes.health().reason
            assert cluster.snapshot().nodes == {} and cluster.snapshot().pods == {}
            assert cluster.nodes.loading and cluster.pods.loading
    finally:
        for cluster in clusters.values():
            cluster.stop()
