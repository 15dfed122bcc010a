"""Mapping nodes to their backing VMs: providerID, systemUUID, then name."""

from __future__ import annotations

from console.kube.model import NodeInfo, Resources
from console.kube.vms import BackingVM, match_nodes


def node(name: str, uuid: str = "", provider: str = "") -> NodeInfo:
    r = Resources(2000, 4 * 2**30, 110)
    return NodeInfo(name, "uid", "1", {}, (), "True", False, r, r, "v1.32.4", uuid, provider)


def vm(sid: str, name: str) -> BackingVM:
    return BackingVM(sid, name, "ACTIVE", "m1.medium", 2, 4096)


def test_match_by_provider_id_then_system_uuid_then_name() -> None:
    servers = {v.server_id: v for v in (vm("aaa", "w1"), vm("bbb", "other-name"), vm("ccc", "w3"), vm("ddd", "x"))}
    nodes = [
        node("w1", provider="openstack:///aaa", uuid="zzz"),  # providerID wins over a wrong systemUUID
        node("w2", uuid="BBB"),  # systemUUID, case-insensitive
        node("w3"),  # neither: by name
        node("w4", uuid="eee"),  # nothing matches
    ]
    got = match_nodes(nodes, servers)
    assert {n: v.server_id for n, v in got.items()} == {"w1": "aaa", "w2": "bbb", "w3": "ccc"}
