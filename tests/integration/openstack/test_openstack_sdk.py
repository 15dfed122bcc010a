"""openstacksdk against the lab's Keystone + Nova: the calls the console's infra/openstack.py makes."""

from __future__ import annotations

import stat
import threading
import time
from typing import Any

import keystoneauth1.exceptions
import pytest
import requests
from openstack import exceptions

from console.lab.cloudsyaml import write_clouds_yaml
from console.lab.openstack.nova import Nova, NovaTiming
from console.lab.openstack.server import OpenStackAPI, start_openstack
from console.lab.vm import Flavor, VMSpec

W2 = "6f1b6d0e-1c4a-4f5e-9a51-3a1c2b3d4e02"  # kube-worker02 in conftest.SERVER_IDS
RecordingHypervisor = Any  # conftest.RecordingHypervisor, reached through the `hypervisor` fixture


def _wait(conn: Any, status: str, wait: float = 10, failures: list[str] | None = None) -> Any:
    """wait_for_server on a fresh GET: the SDK checks the object it is given before polling."""
    return conn.compute.wait_for_server(conn.compute.get_server(W2), status=status, failures=failures,
                                        interval=0.05, wait=wait)


def _resize_and_wait(conn: Any, name: str, flavor: str, status: str = "VERIFY_RESIZE", wait: float = 10) -> Any:
    srv = conn.compute.find_server(name, ignore_missing=False)
    conn.compute.resize_server(srv, conn.compute.find_flavor(flavor, ignore_missing=False))
    return _wait(conn, status, wait)


def test_clouds_yaml_is_private(clouds_yaml: Any) -> None:
    assert stat.S_IMODE(clouds_yaml.stat().st_mode) == 0o600


def test_find_server_flavors_and_find_flavor(conn: Any) -> None:
    srv = conn.compute.find_server("kube-worker02", ignore_missing=False)
    assert srv.id == W2
    assert (srv.status, srv.vm_state, srv.task_state, srv.power_state) == ("ACTIVE", "active", None, 1)
    assert srv.instance_name == "instance-00003351"
    assert srv.compute_host == srv.hypervisor_hostname == "cmp02"
    assert srv.flavor.original_name == "m1.small" and srv.flavor.vcpus == 2 and srv.flavor.ram == 4096
    assert srv.addresses["lab-net"][0]["addr"] == "10.0.0.12"
    assert srv.fault is None
    assert sorted(f.name for f in conn.compute.flavors()) == ["m1.large", "m1.medium", "m1.small", "m1.tiny"]
    large = conn.compute.find_flavor("m1.large", ignore_missing=False)
    assert (large.id, large.vcpus, large.ram, large.disk) == ("f-large", 8, 16384, 40)
    with pytest.raises(exceptions.NotFoundException):
        conn.compute.get_server("no-such-server")
    with pytest.raises(exceptions.NotFoundException, match="Flavor nope could not be found"):
        conn.compute.get_flavor("nope")


def test_server_list_name_filter_is_a_regex(conn: Any) -> None:
    assert sorted(s.name for s in conn.compute.servers(name="worker0[12]$")) == ["kube-worker01", "kube-worker02"]
    assert [s.name for s in conn.compute.servers(name="^kube-worker03$")] == ["kube-worker03"]


def test_resize_confirm(conn: Any, hypervisor: RecordingHypervisor, nova: Nova) -> None:
    seen: list[tuple[str, str | None]] = []
    nova.subscribe(lambda v: seen.append((v.status, v.task_state)) if v.id == W2 else None)
    srv = _resize_and_wait(conn, "kube-worker02", "m1.large")
    assert (srv.status, srv.vm_state, srv.task_state) == ("VERIFY_RESIZE", "resized", None)
    assert srv.flavor.original_name == "m1.large" and srv.flavor.vcpus == 8
    assert hypervisor.calls_for(W2) == [("stop", W2), ("define_from_flavor", W2, "f-large"), ("start", W2)]
    deadline = time.monotonic() + 5  # notifications arrive on Nova's notifier thread
    while ("VERIFY_RESIZE", None) not in seen and time.monotonic() < deadline:
        time.sleep(0.01)
    tasks = [t for i, (_, t) in enumerate(seen) if t and (i == 0 or seen[i - 1][1] != t)]
    assert tasks[:4] == ["resize_prep", "resize_migrating", "resize_migrated", "resize_finish"]
    conn.compute.confirm_server_resize(srv)
    srv = _wait(conn, "ACTIVE")
    assert srv.flavor.original_name == "m1.large" and srv.vm_state == "active"
    assert len(hypervisor.calls_for(W2)) == 3  # confirm does not touch the guest
    actions = [a.action for a in conn.compute.server_actions(srv)]
    assert actions == ["confirmResize", "resize", "create"]


def test_resize_revert(conn: Any, hypervisor: RecordingHypervisor) -> None:
    srv = _resize_and_wait(conn, "kube-worker02", "m1.large")
    conn.compute.revert_server_resize(srv)
    assert conn.compute.get_server(W2).status == "REVERT_RESIZE"
    srv = _wait(conn, "ACTIVE")
    assert srv.flavor.original_name == "m1.small" and srv.flavor.vcpus == 2
    assert hypervisor.calls_for(W2)[3:] == [("stop", W2), ("define_from_flavor", W2, "f-small"), ("start", W2)]
    with pytest.raises(exceptions.ConflictException, match=r"Cannot 'revertResize' instance .* vm_state active"):
        conn.compute.revert_server_resize(srv)


def test_injected_error_fault(conn: Any, nova: Nova, hypervisor: RecordingHypervisor) -> None:
    nova.inject_fault(W2, "error")
    with pytest.raises(exceptions.ResourceFailure):
        _resize_and_wait(conn, "kube-worker02", "m1.large")
    srv = conn.compute.get_server(W2)
    assert (srv.status, srv.vm_state, srv.task_state) == ("ERROR", "error", None)
    assert srv.fault["code"] == 500 and "Resize error" in srv.fault["message"]
    assert srv.flavor.original_name == "m1.small"
    # the documented way out: a hard reboot regenerates the domain from the flavor
    conn.compute.reboot_server(srv, "HARD")
    _wait(conn, "ACTIVE", failures=[])  # status stays ERROR while the hard reboot runs
    assert conn.compute.get_server(W2).fault is None
    assert hypervisor.calls_for(W2)[-2:] == [("define_from_flavor", W2, "f-small"), ("start", W2)]
    # the fault was used up: the next resize works
    assert _resize_and_wait(conn, "kube-worker02", "m1.large").status == "VERIFY_RESIZE"


def test_injected_no_valid_host(conn: Any, nova: Nova, hypervisor: RecordingHypervisor) -> None:
    nova.inject_fault(W2, "no-valid-host")
    srv = conn.compute.find_server("kube-worker02", ignore_missing=False)
    conn.compute.resize_server(srv, conn.compute.find_flavor("m1.large", ignore_missing=False))
    assert conn.compute.get_server(W2).status == "RESIZE"
    srv = _wait(conn, "ACTIVE")
    assert srv.flavor.original_name == "m1.small" and srv.fault is None
    assert hypervisor.calls_for(W2) == []
    resize = next(a for a in conn.compute.server_actions(srv) if a.action == "resize")
    assert resize.message == "Error"
    detail = conn.compute.get_server_action(resize.request_id, W2)
    event = detail.events[0]
    assert event.event == "conductor_migrate_server" and event.result == "Error"
    assert "No valid host was found. There are not enough hosts available." in event.traceback
    assert event.details == "No valid host was found. There are not enough hosts available."


def test_injected_stuck_never_verifies(conn: Any, nova: Nova) -> None:
    nova.inject_fault(W2, "stuck")
    with pytest.raises(exceptions.ResourceTimeout):
        _resize_and_wait(conn, "kube-worker02", "m1.large", wait=1.0)
    srv = conn.compute.get_server(W2)
    assert srv.status == "RESIZE" and srv.task_state == "resize_migrating"
    with pytest.raises(exceptions.ConflictException, match="task_state resize_migrating"):
        conn.compute.reboot_server(srv, "SOFT")


def test_resize_errors(conn: Any) -> None:
    srv = conn.compute.find_server("kube-worker02", ignore_missing=False)
    small = conn.compute.find_flavor("m1.small", ignore_missing=False)
    with pytest.raises(exceptions.BadRequestException, match="When resizing, instances must change flavor!"):
        conn.compute.resize_server(srv, small)
    with pytest.raises(exceptions.BadRequestException, match=r"Flavor m1\.large could not be found\."):
        conn.compute.resize_server(srv, "m1.large")  # a name is sent as the id
    with pytest.raises(exceptions.ConflictException,
                       match=f"Cannot 'confirmResize' instance {W2} while it is in vm_state active"):
        conn.compute.confirm_server_resize(srv)
    with pytest.raises(exceptions.NotFoundException):
        conn.compute.resize_server("6f1b6d0e-0000-0000-0000-000000000000", small)


def test_resize_disk_down_rolls_back(conn: Any, hypervisor: RecordingHypervisor) -> None:
    srv = conn.compute.find_server("kube-worker02", ignore_missing=False)
    conn.compute.resize_server(srv, conn.compute.find_flavor("m1.tiny", ignore_missing=False))
    srv = _wait(conn, "ACTIVE")
    assert srv.flavor.original_name == "m1.small"
    resize = next(a for a in conn.compute.server_actions(srv) if a.action == "resize")
    events = conn.compute.get_server_action(resize.request_id, W2).events
    assert any("Unable to resize disk down." in (e.traceback or "") for e in events)
    assert hypervisor.calls_for(W2) == []


def test_reboot_soft_and_hard(conn: Any, hypervisor: RecordingHypervisor) -> None:
    srv = conn.compute.find_server("kube-worker02", ignore_missing=False)
    conn.compute.reboot_server(srv, "SOFT")
    assert conn.compute.get_server(W2).status == "REBOOT"
    _wait(conn, "ACTIVE")
    assert hypervisor.calls_for(W2) == [("soft_reboot", W2)]
    conn.compute.reboot_server(srv, "HARD")
    assert conn.compute.get_server(W2).status == "HARD_REBOOT"
    _wait(conn, "ACTIVE")
    assert hypervisor.calls_for(W2)[1:] == [("define_from_flavor", W2, "f-small"), ("start", W2)]


def test_stop_start_and_reboot_rules(conn: Any, hypervisor: RecordingHypervisor) -> None:
    srv = conn.compute.find_server("kube-worker02", ignore_missing=False)
    conn.compute.stop_server(srv)
    srv = _wait(conn, "SHUTOFF")
    assert srv.power_state == 4 and hypervisor.calls_for(W2) == [("stop", W2)]
    with pytest.raises(exceptions.ConflictException, match=r"Cannot 'reboot' instance .* vm_state stopped"):
        conn.compute.reboot_server(srv, "SOFT")
    with pytest.raises(exceptions.ConflictException, match="Cannot 'stop'"):
        conn.compute.stop_server(srv)
    # resizing a stopped server keeps it stopped: no start
    srv = _resize_and_wait(conn, "kube-worker02", "m1.large")
    assert hypervisor.calls_for(W2)[1:] == [("define_from_flavor", W2, "f-large")]
    conn.compute.confirm_server_resize(srv)
    srv = _wait(conn, "SHUTOFF")
    conn.compute.start_server(srv)
    srv = _wait(conn, "ACTIVE")
    assert hypervisor.calls_for(W2)[2:] == [("define_from_flavor", W2, "f-large"), ("start", W2)]


def test_power_state_sync_stops_server(conn: Any, hypervisor: RecordingHypervisor) -> None:
    hypervisor.stop_outside(W2)  # virsh destroy
    srv = _wait(conn, "SHUTOFF")
    assert (srv.vm_state, srv.power_state) == ("stopped", 4)
    stop = next(iter(conn.compute.server_actions(srv)))
    assert stop.action == "stop" and stop.message == "Instance shutdown by itself. Calling the stop API."
    assert stop.user_id is None
    assert hypervisor.calls_for(W2) == []  # already off: nothing to do


@pytest.mark.parametrize("timing", [NovaTiming(resize_confirm_window=0.2)])
def test_auto_confirm_window(conn: Any) -> None:
    srv = _resize_and_wait(conn, "kube-worker02", "m1.large")
    srv = _wait(conn, "ACTIVE")
    assert srv.flavor.original_name == "m1.large"
    with pytest.raises(exceptions.ConflictException):
        conn.compute.confirm_server_resize(srv)
    confirm = next(iter(conn.compute.server_actions(srv)))
    assert confirm.action == "confirmResize" and confirm.user_id is None


# ---- raw HTTP: microversions, auth -------------------------------------------------------------


def _get(api: OpenStackAPI, token: str, path: str, version: str | None = None, **headers: str) -> requests.Response:
    if version:
        headers["OpenStack-API-Version"] = f"compute {version}"
    return requests.get(f"{api.compute_url}{path}", headers={"X-Auth-Token": token, **headers}, timeout=5)


def test_microversions(conn: Any, api: OpenStackAPI) -> None:
    token = conn.auth_token
    old = _get(api, token, f"/servers/{W2}", "2.46")
    assert old.headers["OpenStack-API-Version"] == "compute 2.46"
    assert old.json()["server"]["flavor"]["id"] == "f-small"
    new = _get(api, token, f"/servers/{W2}", "2.47").json()["server"]["flavor"]
    assert new["original_name"] == "m1.small" and "id" not in new
    legacy = _get(api, token, f"/servers/{W2}", **{"X-OpenStack-Nova-API-Version": "2.60"})
    assert legacy.headers["X-OpenStack-Nova-API-Version"] == "2.60"
    assert "OS-EXT-SRV-ATTR:hostname" not in _get(api, token, f"/servers/{W2}").json()["server"]
    assert _get(api, token, "/servers", "latest").headers["OpenStack-API-Version"] == "compute 2.96"
    too_new = _get(api, token, "/servers", "2.200")
    assert too_new.status_code == 406 and "maximum is 2.96" in too_new.text
    doc = requests.get(api.compute_url, timeout=5).json()["version"]
    assert (doc["version"], doc["min_version"]) == ("2.96", "2.1")
    missing = _get(api, token, "/servers/nope")
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == "Instance nope could not be found."


def test_flavor_list_pagination(conn: Any, api: OpenStackAPI) -> None:
    page = _get(api, conn.auth_token, "/flavors/detail?limit=2").json()
    assert [f["id"] for f in page["flavors"]] == ["f-large", "f-medium"]
    nxt = requests.get(page["flavors_links"][0]["href"], headers={"X-Auth-Token": conn.auth_token}, timeout=5)
    assert [f["id"] for f in nxt.json()["flavors"]] == ["f-small", "f-tiny"]


def test_nova_requires_a_valid_token(api: OpenStackAPI) -> None:
    assert requests.get(f"{api.compute_url}/servers", timeout=5).status_code == 401
    bad = requests.get(f"{api.compute_url}/servers", headers={"X-Auth-Token": "gAAAAAnope"}, timeout=5)
    assert bad.status_code == 401 and "WWW-Authenticate" in bad.headers


def _auth_body(password: str) -> dict[str, Any]:
    return {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"name": "Default"}, "password": password}}},
        "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}


def test_keystone_tokens(api: OpenStackAPI, password: str) -> None:
    resp = requests.post(f"{api.auth_url}/auth/tokens", json=_auth_body(password), timeout=5)
    assert resp.status_code == 201
    token = resp.headers["X-Subject-Token"]
    types = {s["type"] for s in resp.json()["token"]["catalog"]}
    assert types == {"compute", "identity", "placement"}
    check = requests.get(f"{api.auth_url}/auth/tokens", timeout=5,
                         headers={"X-Auth-Token": token, "X-Subject-Token": token})
    assert check.status_code == 200 and check.json()["token"]["project"]["name"] == "admin"
    assert requests.delete(f"{api.auth_url}/auth/tokens", timeout=5,
                           headers={"X-Auth-Token": token, "X-Subject-Token": token}).status_code == 204
    assert requests.get(f"{api.compute_url}/servers", headers={"X-Auth-Token": token}, timeout=5).status_code == 401
    assert password not in resp.text


def test_wrong_password(api: OpenStackAPI, tmp_path: Any, password: str, caplog: pytest.LogCaptureFixture,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    import openstack

    wrong = "not-" + password
    resp = requests.post(f"{api.auth_url}/auth/tokens", json=_auth_body(wrong), timeout=5)
    assert resp.status_code == 401
    assert wrong not in resp.text and password not in resp.text
    bad = write_clouds_yaml(tmp_path / "bad.yaml", "bad", auth_url=api.auth_url, username="admin",
                            password=wrong, project="admin")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(bad))
    conn = openstack.connect(cloud="bad")
    # keystoneauth raises its own Unauthorized (not an openstack.exceptions class) when the token POST fails
    with pytest.raises(keystoneauth1.exceptions.http.Unauthorized) as info:
        conn.compute.get_server(W2)
    assert info.value.http_status == 401
    assert "requires authentication" in str(info.value)
    assert wrong not in caplog.text and password not in caplog.text


def test_password_never_logged(conn: Any, password: str, caplog: pytest.LogCaptureFixture) -> None:
    _resize_and_wait(conn, "kube-worker02", "m1.large")
    list(conn.compute.servers())
    assert "/compute/v2.1/servers" in caplog.text  # our request log is captured...
    assert password not in caplog.text  # ...and never carries the password
    assert conn.auth_token not in caplog.text


def test_api_does_not_block_while_hypervisor_is_slow(conn: Any, api: OpenStackAPI,
                                                      hypervisor: RecordingHypervisor) -> None:
    entered, release = threading.Event(), threading.Event()
    original = hypervisor.stop

    def blocking_stop(server_id: str) -> None:
        entered.set()
        release.wait(10)
        original(server_id)

    hypervisor.stop = blocking_stop  # type: ignore[method-assign]
    srv = conn.compute.find_server("kube-worker02", ignore_missing=False)
    conn.compute.resize_server(srv, conn.compute.find_flavor("m1.large", ignore_missing=False))
    try:
        assert entered.wait(5)
        # the hypervisor call is still blocked: the API must answer anyway
        body = _get(api, conn.auth_token, f"/servers/{W2}").json()["server"]
        assert (body["status"], body["OS-EXT-STS:task_state"]) == ("RESIZE", "resize_migrating")
    finally:
        release.set()
    assert _wait(conn, "VERIFY_RESIZE").flavor.original_name == "m1.large"


def test_large_server_list_is_paged(lab_loop: Any, hypervisor: RecordingHypervisor, tmp_path: Any,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import openstack

    flavor = Flavor("f-small", "m1.small", 2, 4096, 20)
    vms = [VMSpec(f"00000000-0000-4000-8000-{i:012x}", i + 1, f"w{i:04d}", "cmp01", flavor) for i in range(1205)]
    big = Nova([flavor], vms, hypervisor)
    api = lab_loop.call(start_openstack(big, password="pw-big"))
    try:
        path = write_clouds_yaml(tmp_path / "clouds.yaml", "big", auth_url=api.auth_url, username="admin",
                                 password="pw-big", project="admin")
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
        conn = openstack.connect(cloud="big")
        first = _get(api, conn.auth_token, "/servers/detail").json()
        assert len(first["servers"]) == 1000 and first["servers_links"][0]["rel"] == "next"
        names = [s.name for s in conn.compute.servers()]
        assert len(names) == 1205 and len(set(names)) == 1205
        conn.close()
    finally:
        lab_loop.call(api.stop())
        big.close()
