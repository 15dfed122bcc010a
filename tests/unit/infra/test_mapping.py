"""Node ↔ Nova server mapping: providerID, then systemUUID, then the exact name.

Order and formats from kubernetes/cloud-provider-openstack pkg/openstack/instances.go
(`getInstance`, `instanceIDFromProviderID`, `getServerByName`) and Nova's libvirt driver,
which sets the SMBIOS system UUID to the server id (`_get_guest_config_sysinfo`).
"""

from __future__ import annotations

import pytest

from console.infra.mapping import find_server, server_id_from_provider
from console.infra.protocol import InfraError, NotMapped
from console.kube.model import NodeInfo, Resources

A = "6f1b6d0e-1c4a-4f5e-9a51-3a1c2b3d4e01"
B = "6f1b6d0e-1c4a-4f5e-9a51-3a1c2b3d4e02"
SERVERS = {A: {"id": A, "name": "kube-worker01"}, B: {"id": B, "name": "kube-worker02"}}


def node(name: str, *, system_uuid: str = "", provider_id: str = "") -> NodeInfo:
    r = Resources(0, 0, 0)
    return NodeInfo(name, "uid", "1", {}, (), "True", False, r, r, "v1.32.4", system_uuid, provider_id)


def lookup(servers: dict[str, dict[str, str]]):
    calls: list[tuple[str, str]] = []

    def by_id(sid: str):
        calls.append(("id", sid))
        return servers.get(sid)

    def by_name(name: str):
        calls.append(("name", name))
        return [s for s in servers.values() if s["name"] == name]

    return by_id, by_name, calls


@pytest.mark.parametrize("pid", [f"openstack:///{B}", f"openstack://RegionOne/{B}", f"/{B}"])
def test_provider_id_forms(pid: str) -> None:
    assert server_id_from_provider(pid) == B


@pytest.mark.parametrize("pid", ["", "aws:///eu-west-1a/i-0abc", "openstack://", "openstack:///", B])
def test_provider_id_that_is_not_an_openstack_id(pid: str) -> None:
    assert server_id_from_provider(pid) is None


def test_provider_id_wins_over_system_uuid_and_name() -> None:
    by_id, by_name, calls = lookup(SERVERS)
    m = find_server(node("kube-worker01", system_uuid=A, provider_id=f"openstack:///{B}"), by_id, by_name)
    assert (m.server["id"], m.by) == (B, "providerID")
    assert calls == [("id", B)]


def test_provider_id_of_a_missing_server_is_reported_not_guessed() -> None:
    by_id, by_name, _ = lookup(SERVERS)
    gone = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(NotMapped, match=f"names server {gone}"):
        find_server(node("kube-worker01", provider_id=f"openstack:///{gone}"), by_id, by_name)


def test_system_uuid_when_there_is_no_provider_id() -> None:
    by_id, by_name, calls = lookup(SERVERS)
    m = find_server(node("renamed-node", system_uuid=B.upper()), by_id, by_name)  # DMI may print it in upper case
    assert (m.server["id"], m.by) == (B, "systemUUID")
    assert calls == [("id", B)]


def test_other_cloud_provider_id_falls_back_to_system_uuid() -> None:
    by_id, by_name, _ = lookup(SERVERS)
    m = find_server(node("x", system_uuid=A, provider_id="kind://docker/kind/x"), by_id, by_name)
    assert m.by == "systemUUID" and m.server["id"] == A


def test_name_when_the_system_uuid_is_not_a_server() -> None:
    by_id, by_name, calls = lookup(SERVERS)
    other = "11111111-2222-4333-8444-555555555555"  # a VM not made by Nova's libvirt driver
    m = find_server(node("kube-worker02", system_uuid=other), by_id, by_name)
    assert (m.server["id"], m.by) == (B, "name")
    assert calls == [("id", other), ("name", "kube-worker02")]


def test_name_only_and_not_a_uuid() -> None:
    by_id, by_name, calls = lookup(SERVERS)
    m = find_server(node("kube-worker01", system_uuid="not-a-uuid"), by_id, by_name)
    assert m.by == "name" and calls == [("name", "kube-worker01")]


def test_two_servers_with_the_name_is_an_error() -> None:
    twins = {A: {"id": A, "name": "w"}, B: {"id": B, "name": "w"}}
    by_id, by_name, _ = lookup(twins)
    with pytest.raises(InfraError, match=r"2 servers are named w.*providerID"):
        find_server(node("w"), by_id, by_name)


def test_nothing_matches() -> None:
    by_id, by_name, _ = lookup(SERVERS)
    with pytest.raises(NotMapped, match="no OpenStack server for node ghost"):
        find_server(node("ghost"), by_id, by_name)
