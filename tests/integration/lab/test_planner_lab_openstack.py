"""The planner scenario's cloud through openstacksdk: Nova's limits, the quota a resize is checked against, a
nearly full hypervisor (NoValidHost), and Placement's providers, inventories and usages (admin only).

Sources: openstack/nova 00a0304 — api/openstack/compute/limits.py + views/limits.py (GET /limits),
compute/api.py `_check_quota_for_upsize` and exception.py TooManyInstances ("Quota exceeded for %(overs)s:
Requested %(req)s, but already used %(used)s of %(allowed)s %(overs)s", a 403 from servers.py `_resize`),
conductor/tasks/migrate.py (a same-host resize holds the old flavor on the migration and claims the new one);
openstack/placement 7ad9ef0 — handlers/resource_provider.py, inventory.py, usage.py, policies/ (admin or
service); openstacksdk compute.get_limits, placement.resource_providers / resource_provider_inventories.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openstack
import openstack.config
import openstack.connection
import openstack.exceptions
import pytest
from labstart import start_lab
from labtools import wait_for

from console.lab.openstack.faults import NO_VALID_HOST
from console.lab.world import Lab

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("lab-planner-os"))


def _connect(lab: Lab, cloud: str) -> Any:
    region = openstack.config.OpenStackConfig(config_files=[str(lab.state.clouds_yaml)]).get_one(cloud)
    return openstack.connection.Connection(config=region)


@pytest.fixture(scope="module")
def admin(lab: Lab) -> Iterator[Any]:
    conn = _connect(lab, "lab")
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def member(lab: Lab) -> Iterator[Any]:
    conn = _connect(lab, "lab-member")
    yield conn
    conn.close()


def _server(conn: Any, node: str) -> Any:
    return conn.compute.find_server(node, ignore_missing=False)


def _usages(conn: Any, host: str) -> dict[str, int]:
    rp = next(conn.placement.resource_providers(name=host))
    resp = conn.placement.get(f"/resource_providers/{rp.id}/usages", microversion="1.9")
    assert resp.status_code == 200, resp.text
    return resp.json()["usages"]


def test_limits_show_the_project_quota(admin: Any, member: Any) -> None:
    for conn in (admin, member):  # GET /limits is the caller's own project: any member may read it
        a = conn.compute.get_limits().absolute
        assert (a.total_cores, a.total_cores_used) == (36, 17)
        assert (a.total_ram, a.total_ram_used) == (81920, 30720)
        assert (a.instances, a.instances_used) == (10, 6)


def test_placement_providers_inventories_usages(admin: Any) -> None:
    providers = {rp.name: rp for rp in admin.placement.resource_providers()}
    assert sorted(providers) == ["cmp001", "cmp002", "cmp003"]
    inv = {i.resource_class: i for i in admin.placement.resource_provider_inventories(providers["cmp001"])}
    vcpu, mem = inv["VCPU"], inv["MEMORY_MB"]
    assert (vcpu.total, vcpu.reserved, vcpu.allocation_ratio, vcpu.max_unit, vcpu.min_unit, vcpu.step_size) == (
        14, 2, 1.0, 14, 1, 1)
    assert (mem.total, mem.reserved, mem.allocation_ratio) == (32768, 512, 1.0)
    assert _usages(admin, "cmp001") == {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 80}
    assert _usages(admin, "cmp003")["VCPU"] == 10
    one = next(admin.placement.resource_providers(name="cmp002"))
    assert one.name == "cmp002" and one.id == providers["cmp002"].id


def test_placement_is_admin_only(member: Any) -> None:
    with pytest.raises(openstack.exceptions.HttpException) as err:
        list(member.placement.resource_providers())
    assert err.value.status_code == 403
    # Placement's errors are {"errors": [{status, title, detail, ...}]}; openstacksdk keeps the response
    detail = err.value.response.json()["errors"][0]
    assert (detail["status"], detail["title"]) == (403, "Forbidden")
    assert "Policy does not allow placement:resource_providers:list to be performed." in detail["detail"]


def test_resize_to_a_full_host_is_no_valid_host(admin: Any, lab: Lab) -> None:
    # cmp001 has 8 vCPUs free: m1.xlarge's 16 do not fit beside what kube-worker01 still holds
    server = _server(admin, "kube-worker01")
    admin.compute.resize_server(server, admin.compute.find_flavor("m1.xlarge", ignore_missing=False).id)
    lab.nova.wait_idle(60)
    after = admin.compute.get_server(server.id)
    assert (after.status, after.flavor.original_name) == ("ACTIVE", "m1.medium")
    action = next(a for a in admin.compute.server_actions(server) if a.action == "resize")
    events = admin.compute.get_server_action(action.request_id, server).events
    assert [(e.event, e.result) for e in events] == [("conductor_migrate_server", "Error")]
    assert NO_VALID_HOST in (events[0].traceback or "")
    assert _usages(admin, "cmp001")["VCPU"] == 4  # nothing left claimed


def _resize_and_confirm(conn: Any, node: str, flavor: str) -> None:
    server = _server(conn, node)
    conn.compute.resize_server(server, conn.compute.find_flavor(flavor, ignore_missing=False).id)
    conn.compute.wait_for_server(server, status="VERIFY_RESIZE", wait=120)
    conn.compute.confirm_server_resize(server)
    conn.compute.wait_for_server(server, status="ACTIVE", wait=120)


def test_resize_over_quota_is_403(admin: Any) -> None:
    # two train nodes grown as the plan grows them (m1.large guests: QEMU here cannot start m1.xlarge's 24 GiB)
    w04 = _server(admin, "kube-worker04")  # m1.small on cmp002: +7 cores
    admin.compute.resize_server(w04, admin.compute.find_flavor("m1.large", ignore_missing=False).id)
    admin.compute.wait_for_server(w04, status="VERIFY_RESIZE", wait=120)
    # the same host holds the old flavor (the migration's) and the new one until the confirm
    assert _usages(admin, "cmp002")["VCPU"] == 2 + 1 + 8
    admin.compute.confirm_server_resize(w04)
    admin.compute.wait_for_server(w04, status="ACTIVE", wait=120)
    wait_for(lambda: _usages(admin, "cmp002")["VCPU"] == 2 + 8, what="cmp002 to drop the old flavor")
    _resize_and_confirm(admin, "kube-worker03", "m1.large")  # +6 cores
    assert admin.compute.get_limits().absolute.total_cores_used == 17 + 7 + 6
    w05 = _server(admin, "kube-worker05")
    with pytest.raises(openstack.exceptions.HttpException) as err:
        admin.compute.resize_server(w05, admin.compute.find_flavor("m1.xlarge", ignore_missing=False).id)
    assert err.value.status_code == 403  # m1.large → m1.xlarge: +8 cores, 6 left
    assert "Quota exceeded for cores: Requested 8, but already used 30 of 36 cores" in str(err.value)
    assert admin.compute.get_server(w05.id).status == "ACTIVE"
    assert not [a for a in admin.compute.server_actions(w05) if a.action == "resize"]  # refused before any action
