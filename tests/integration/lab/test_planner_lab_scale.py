"""The scale world with Pending pods (scenarios.scale(..., pending=N)): the planner's benchmark world — its nodes
are Nova servers with sizes and compute hosts the planner reads, its Pending pods wait for the scheduler's reasons.

Sources: as console/lab/seed.py scale_pending_pods and console/lab/openstack/nova_capacity.py say (openstack/nova
views/servers.py and limits.py, openstack/placement handlers); kubernetes FitError.Error for the reasons.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openstack.config
import openstack.connection
import pytest
from labstart import start_lab
from labtools import wait_for

from console.lab import scenarios
from console.lab.world import Lab

pytestmark = pytest.mark.lab

NODES, PENDING = 120, 40


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab(scenarios.scale(NODES, 5, PENDING), tmp_path_factory.mktemp("lab-scale-pending"))


@pytest.fixture(scope="module")
def admin(lab: Lab) -> Iterator[Any]:
    region = openstack.config.OpenStackConfig(config_files=[str(lab.state.clouds_yaml)]).get_one("lab")
    conn = openstack.connection.Connection(config=region)
    yield conn
    conn.close()


def _message(lab: Lab, name: str) -> str:
    pod = lab.store.get("pods", "default", name)
    return next((c.get("message", "") for c in pod["status"].get("conditions") or []
                 if c["type"] == "PodScheduled" and c["status"] == "False"), "")


def test_pending_pods_wait_for_growth(lab: Lab) -> None:
    pending, _ = lab.store.list("pods", "default", lambda p: not p["spec"].get("nodeName"))
    assert len(pending) == PENDING
    # pending-00001: 19 CPUs, no selector; every node has 16 allocatable
    msg = wait_for(lambda: _message(lab, "pending-00001"), what="pending-00001's FailedScheduling")
    assert msg.startswith(f"0/{NODES} nodes are available: {NODES} Insufficient cpu."), msg
    # pending-00003: every third selects AVX512F, which half the nodes (index % 4 >= 2) have
    msg = wait_for(lambda: _message(lab, "pending-00003"), what="pending-00003's FailedScheduling")
    half = NODES // 2
    assert msg.startswith(f"0/{NODES} nodes are available: {half} Insufficient cpu, {half} node(s) didn't match "
                          "Pod's node affinity/selector."), msg


def test_nodes_are_servers_with_sizes_and_hosts(admin: Any) -> None:
    servers = list(admin.compute.servers(details=True))
    assert len(servers) == NODES
    assert {s.flavor.original_name for s in servers} == {"r1.xlarge"}
    by_host: dict[str, int] = {}
    for s in servers:
        by_host[s.compute_host] = by_host.get(s.compute_host, 0) + 1
    assert by_host == {"cmp000": 50, "cmp001": 50, "cmp002": 20}
    flavors = {f.name: (f.vcpus, f.ram) for f in admin.compute.flavors()}
    assert flavors["r1.2xlarge"] == (32, 131072)


def test_placement_shows_each_hosts_room(admin: Any) -> None:
    rp = next(admin.placement.resource_providers(name="cmp000"))
    inv = {i.resource_class: i.total for i in admin.placement.resource_provider_inventories(rp)}
    assert (inv["VCPU"], inv["MEMORY_MB"]) == (1024, 4 * 1024 * 1024)
    usages = admin.placement.get(f"/resource_providers/{rp.id}/usages").json()["usages"]
    assert (usages["VCPU"], usages["MEMORY_MB"]) == (50 * 16, 50 * 65536)
