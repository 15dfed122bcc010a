"""The lab's OpenStack is the real one (console/lab/cloud/): Keystone 30, Nova 34 and Placement 16 from PyPI, and the
lab's virt driver on one real libvirtd per compute host. Driven here as a cloud user drives them, with openstacksdk,
and checked in libvirt on each host.

What real Nova does that the lab did not (shared/reference/real-openstack.md, nova/conf/compute.py
`allow_resize_to_same_host` default False): a resize goes to another host; during VERIFY_RESIZE Placement holds the
new flavor against the server on the destination and the old one against the migration record on the source;
confirm drops the source's, revert moves the server back."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libvirt
import pytest

from console.lab.cloud.confs import LAB_IMAGE_ID
from console.lab.cloud.hosts import HostSpec
from console.lab.cloud.stack import Cloud
from console.lab.domain_xml import vcpu_element
from console.lab.libvirt_daemon import SessionDaemon

pytestmark = pytest.mark.timeout(600)
HOSTS = ("cmp001", "cmp002")
ROOMY_CORES = 200
WAIT = 180  # a boot or resize takes 1-6 s on an idle 2-core machine; CI is slower and loaded


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    root = tmp_path_factory.mktemp("cloud")
    daemons = []
    try:
        for name in HOSTS:
            (root / name).mkdir()
            daemon = SessionDaemon(root / name)
            daemon.start()
            daemons.append(daemon)
        # 16 vCPUs and 32 GiB each: two m1.xlarge (24 GiB) fit nowhere together, each fits anywhere alone
        specs = [HostSpec(name, d.uri(), vcpus=16, memory_mb=32768) for name, d in zip(HOSTS, daemons, strict=True)]
        c = Cloud(root / "cloud", specs, admin_password=secrets.token_urlsafe(16))
        try:
            c.start()
            admin = c.admin()
            for fid, name, vcpus, ram in (
                ("1", "m1.small", 2, 4096),
                ("2", "m1.large", 8, 16384),
                ("3", "m1.xlarge", 16, 24576),
                ("4", "m1.huge", 32, 65536),
            ):
                admin.compute.create_flavor(id=fid, name=name, vcpus=vcpus, ram=ram, disk=20)
            admin.set_compute_quotas(admin.current_project_id, cores=ROOMY_CORES, ram=-1)  # Nova's default: 20
            admin.close()
            yield c
        finally:
            c.stop()
    finally:
        for d in daemons:
            d.stop()


@pytest.fixture(scope="module")
def admin(cloud: Cloud) -> Iterator[Any]:
    conn = cloud.admin()
    yield conn
    conn.close()


def _uris(cloud: Cloud) -> dict[str, str]:
    return {h.name: h.uri for h in cloud.hosts}


def _domains(cloud: Cloud) -> dict[str, dict[str, tuple[str, bool, int, int]]]:
    """Each host's domains: uuid -> (name, running, vCPUs maximum, memory KiB)."""
    out = {}
    for host, uri in _uris(cloud).items():
        conn = libvirt.open(uri)
        try:
            out[host] = {
                d.UUIDString(): (d.name(), bool(d.isActive()), vcpu_element(d.XMLDesc(0))[1], d.maxMemory())
                for d in conn.listAllDomains()
            }
        finally:
            conn.close()
    return out


def _boot(admin: Any, name: str, flavor: str) -> Any:
    server = admin.compute.create_server(name=name, flavor_id=flavor, image_id=LAB_IMAGE_ID, networks="none")
    return admin.compute.wait_for_server(server, wait=WAIT)


def _allocations(admin: Any, consumer: str) -> dict[str, dict[str, int]]:
    """Placement's allocations of a consumer (a server or a migration), by resource provider name."""
    names = {rp.id: rp.name for rp in admin.placement.resource_providers()}
    got = admin.placement.get(f"/allocations/{consumer}", microversion="1.28").json()["allocations"]
    return {names[rp]: a["resources"] for rp, a in got.items()}


def test_a_resize_moves_the_server_to_another_host_and_confirm_drops_the_source(cloud: Cloud, admin: Any) -> None:
    server = _boot(admin, "kube-worker01", "1")
    source = server.compute_host
    assert server.status == "ACTIVE" and source in HOSTS
    name, running, vcpus, kib = _domains(cloud)[source][server.id]
    # Nova's libvirt naming: instance-%08x of the instance's database id, UUID = server id
    assert name.startswith("instance-") and running and vcpus == 2 and kib == 4096 * 1024

    admin.compute.resize_server(server, "2")
    server = admin.compute.wait_for_server(server, status="VERIFY_RESIZE", wait=WAIT)
    dest = server.compute_host
    assert dest != source  # allow_resize_to_same_host = False, Nova's default
    migration = next(iter(admin.compute.migrations(instance_uuid=server.id)))
    assert (migration.source_compute, migration.dest_compute) == (source, dest)
    # Placement during VERIFY_RESIZE: the new flavor on the destination held by the server, the old one on the
    # source held by the migration record
    assert _allocations(admin, server.id) == {dest: {"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 20}}
    assert _allocations(admin, migration.uuid) == {source: {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20}}
    domains = _domains(cloud)
    assert domains[dest][server.id][1:] == (True, 8, 16384 * 1024)
    assert domains[source][server.id][1] is False  # stopped, still defined until the confirm

    admin.compute.confirm_server_resize(server)
    server = admin.compute.wait_for_server(server, status="ACTIVE", wait=WAIT)
    assert server.compute_host == dest and server.flavor.vcpus == 8
    admin.compute.wait_for_server(server, status="ACTIVE", wait=WAIT)
    _until(lambda: _allocations(admin, migration.uuid) == {})  # confirm drops the source's hold
    domains = _domains(cloud)
    assert server.id not in domains[source] and domains[dest][server.id][1:] == (True, 8, 16384 * 1024)
    admin.compute.delete_server(server)
    admin.compute.wait_for_delete(server, wait=WAIT)
    assert all(server.id not in d for d in _domains(cloud).values())


def test_b_revert_moves_the_server_back_with_its_old_flavor(cloud: Cloud, admin: Any) -> None:
    server = _boot(admin, "kube-worker02", "1")
    source = server.compute_host
    admin.compute.resize_server(server, "2")
    server = admin.compute.wait_for_server(server, status="VERIFY_RESIZE", wait=WAIT)
    dest = server.compute_host
    admin.compute.revert_server_resize(server)
    server = admin.compute.wait_for_server(server, status="ACTIVE", wait=WAIT)
    assert server.compute_host == source and server.flavor.vcpus == 2
    domains = _domains(cloud)
    assert server.id not in domains[dest] and domains[source][server.id][1:] == (True, 2, 4096 * 1024)
    _until(lambda: _allocations(admin, server.id) == {source: {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20}})
    admin.compute.delete_server(server)
    admin.compute.wait_for_delete(server, wait=WAIT)


def test_c_two_guests_larger_than_the_machine_run_at_once(cloud: Cloud, admin: Any) -> None:
    """Two m1.xlarge (24 GiB each, more than this machine's RAM together and, here, each) run at once: the lab's
    domains back guest RAM with a shared memfd (console/lab/domain_xml.py), which the kernel's overcommit
    heuristic does not refuse; libvirt and Nova see the flavor's size."""
    servers = [_boot(admin, f"big{i}", "3") for i in (1, 2)]
    assert sorted(s.compute_host for s in servers) == sorted(HOSTS)  # 16 vCPUs each: one per host
    domains = _domains(cloud)
    for s in servers:
        assert domains[s.compute_host][s.id][1:] == (True, 16, 24576 * 1024)
    for s in servers:
        admin.compute.delete_server(s)
    for s in servers:
        admin.compute.wait_for_delete(s, wait=WAIT)


def test_d_no_host_with_room_is_novalidhost_from_nova(admin: Any) -> None:
    server = _boot(admin, "kube-worker03", "1")
    admin.compute.resize_server(server, "4")  # 32 vCPUs: no host has them
    action = None
    for _ in range(WAIT * 5):
        actions = [a for a in admin.compute.server_actions(server) if a.action == "resize"]
        action = admin.compute.get_server_action(actions[0].request_id, server) if actions else None
        if action is not None and any(e.get("result") == "Error" for e in action.events or []):
            break
        import time

        time.sleep(0.2)
    assert action is not None
    detail = " ".join(str(e.get("traceback") or "") + str(e.get("details") or "") for e in action.events)
    assert "No valid host was found" in detail, action.events
    server = admin.compute.wait_for_server(server, status="ACTIVE", wait=WAIT)
    assert server.flavor.vcpus == 2
    admin.compute.delete_server(server)
    admin.compute.wait_for_delete(server, wait=WAIT)


def test_e_a_member_sees_no_hosts_and_nova_refuses_admin_calls(cloud: Cloud, admin: Any) -> None:
    password = secrets.token_urlsafe(12)
    cloud.add_user("member1", password, "admin", ["member"])
    member = cloud.connect("member1", password, "admin")
    server = _boot(admin, "kube-worker04", "1")
    try:
        seen = member.compute.get_server(server.id)
        assert seen.compute_host is None and seen.hypervisor_hostname is None  # no OS-EXT-SRV-ATTR:*
        from openstack import exceptions

        with pytest.raises(exceptions.ForbiddenException):
            list(member.compute.hypervisors())
    finally:
        member.close()
        admin.compute.delete_server(server)
        admin.compute.wait_for_delete(server, wait=WAIT)


def test_f_quota_exceeded_is_novas_own_403(admin: Any) -> None:
    from openstack import exceptions

    project = admin.current_project_id
    admin.set_compute_quotas(project, cores=4)
    try:
        server = _boot(admin, "kube-worker05", "1")
        with pytest.raises(exceptions.ForbiddenException, match="Quota exceeded for cores"):
            admin.compute.resize_server(server, "2")
        admin.compute.delete_server(server)
        admin.compute.wait_for_delete(server, wait=WAIT)
    finally:
        admin.set_compute_quotas(project, cores=ROOMY_CORES)


def test_g_soft_reboot_keeps_the_definition_and_hard_reboot_writes_it_again(cloud: Cloud, admin: Any) -> None:
    """nova/virt/libvirt/driver.py: a soft reboot starts the domain's persistent definition again; a hard reboot
    (`_hard_reboot`) regenerates it from the flavor, so a maximum raised with virsh goes."""
    from console.lab.domain_xml import with_vcpu_maximum

    server = _boot(admin, "kube-worker06", "1")
    uri = _uris(cloud)[server.compute_host]
    conn = libvirt.open(uri)
    try:
        dom = conn.lookupByUUIDString(server.id)
        conn.defineXML(with_vcpu_maximum(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE), 4))
        admin.compute.reboot_server(server, "SOFT")
        _settled(admin, server)
        assert _wait_domain(conn, server.id, lambda d: d.isActive() and vcpu_element(d.XMLDesc(0)) == (2, 4))
        admin.compute.reboot_server(server, "HARD")
        _settled(admin, server)
        assert _wait_domain(conn, server.id, lambda d: d.isActive() and vcpu_element(d.XMLDesc(0)) == (2, 2))
    finally:
        conn.close()
    admin.compute.delete_server(server)
    admin.compute.wait_for_delete(server, wait=WAIT)


def _settled(admin: Any, server: Any) -> Any:
    """The server ACTIVE with no task under way (a reboot's status is REBOOT only once the API set its task)."""
    return _until(lambda: (s := admin.compute.get_server(server.id)).status == "ACTIVE" and s.task_state is None and s)


def _until(probe: Any, timeout: float = WAIT) -> Any:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := probe():
            return got
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout}s")


def _wait_domain(conn: Any, uuid: str, ok: Any, timeout: float = WAIT) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok(conn.lookupByUUIDString(uuid)):
            return True
        time.sleep(0.1)
    return False


def test_h_the_database_template_is_made_once(cloud: Cloud) -> None:
    from console.lab.cloud import template

    made = template.template()
    assert (made / "nova_cell1.sqlite").exists()
    assert Path(cloud.root / "nova_cell1.sqlite").stat().st_size > 0


def test_i_a_domain_stopped_behind_novas_back_stops_the_server(cloud: Cloud, admin: Any) -> None:
    """`virsh destroy`: libvirt's STOPPED event reaches Nova (after the libvirt driver's 15 s delay) and Nova's
    power-state sync stops the server (nova/compute/manager.py handle_lifecycle_event)."""
    server = _boot(admin, "kube-worker07", "1")
    conn = libvirt.open(_uris(cloud)[server.compute_host])
    try:
        conn.lookupByUUIDString(server.id).destroy()
    finally:
        conn.close()
    server = admin.compute.wait_for_server(server, status="SHUTOFF", wait=WAIT)
    assert server.power_state == 4  # nova.compute.power_state.SHUTDOWN
    admin.compute.delete_server(server)
    admin.compute.wait_for_delete(server, wait=WAIT)


@contextlib.contextmanager
def _hypervisor_fault(cloud: Cloud, server_id: str, kind: str) -> Iterator[None]:
    """The lab's hypervisor misbehaves on the server's next resize until the block ends."""
    cloud.inject_fault(server_id, kind)
    try:
        yield
    finally:
        cloud.inject_fault(server_id, None)


def test_j_the_hypervisor_refusing_the_destination_puts_the_server_in_error(cloud: Cloud, admin: Any) -> None:
    server = _boot(admin, "kube-worker08", "1")
    with _hypervisor_fault(cloud, server.id, "error"):
        admin.compute.resize_server(server, "2")
        server = admin.compute.wait_for_server(server, status="ERROR", failures=[], wait=WAIT)
        # the instance fault is recorded as the exception leaves the compute manager (wrap_instance_fault), which
        # may be just after the vm_state became ERROR
        server = _until(lambda: (s := admin.compute.get_server(server.id)).fault and s)
        assert "refused the domain" in server.fault.get("message", ""), server.fault
    admin.compute.delete_server(server)
    admin.compute.wait_for_delete(server, wait=WAIT)


def test_k_a_stuck_power_off_keeps_the_server_in_resize_until_it_ends(cloud: Cloud, admin: Any) -> None:
    server = _boot(admin, "kube-worker09", "1")
    with _hypervisor_fault(cloud, server.id, "stuck"):
        admin.compute.resize_server(server, "2")
        _until(lambda: (s := admin.compute.get_server(server.id)).task_state == "resize_migrating" and s)
        assert admin.compute.get_server(server.id).status == "RESIZE"
    server = admin.compute.wait_for_server(server, status="VERIFY_RESIZE", wait=WAIT)
    admin.compute.confirm_server_resize(server)
    _settled(admin, server)
    admin.compute.delete_server(server)
    admin.compute.wait_for_delete(server, wait=WAIT)
