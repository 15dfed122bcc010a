"""A target the VM already has: nothing done at all; a VM already at the target with a stale kubelet: only the
kubelet steps (issue 8, deliverable 2)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from console.lab.nodeexec import is_node_debug_pod
from console.lab.store import WatchEvent

pytestmark = pytest.mark.lab

NODE = "kube-worker02"


@contextmanager
def recording(lab: Any) -> Iterator[list[WatchEvent]]:
    """Every node and pod event the lab's store emits meanwhile (a cordon is a MODIFIED node with
    spec.unschedulable, an eviction a DELETED pod)."""
    events: list[WatchEvent] = []
    unsubs = [lab.store.subscribe(r, events.append) for r in ("nodes", "pods")]
    try:
        yield events
    finally:
        for u in unsubs:
            u()


def cordoned(events: list[WatchEvent], node: str) -> bool:
    return any(e.resource == "nodes" and e.object["metadata"]["name"] == node
               and (e.object.get("spec") or {}).get("unschedulable") for e in events)


def pods_gone(events: list[WatchEvent]) -> list[str]:
    """Pods deleted meanwhile, other than the console's own node-debug pods (node access)."""
    return [e.object["metadata"]["name"] for e in events
            if e.resource == "pods" and e.type == "DELETED" and not is_node_debug_pod(e.object)]


def test_current_flavor_is_nothing_to_do(resize_lab, tmp_path, scale_up, h):
    """`scale-up kube-worker02 --flavor <its flavor> --yes`: exit 0, no cordon, no eviction, no Nova action,
    no journal, no audit entry; --dry-run says the same."""
    flavor = resize_lab.nova.server(h.server_id(resize_lab, NODE)).flavor.name
    code, doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", flavor, "--dry-run")
    assert code == 0, err
    assert doc["status"] == "nothing-to-do" and doc["dry_run"] is True
    assert "already at" in doc["message"] and "nothing changed" in doc["message"]
    before = len(resize_lab.nova.actions(h.server_id(resize_lab, NODE)))
    with recording(resize_lab) as events:
        code, doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", flavor, "--yes")
    assert code == 0, err
    assert doc["status"] == "nothing-to-do" and doc["plan"]["steps"] == []
    assert f"already at flavor {flavor}" in doc["message"], doc
    assert not cordoned(events, NODE) and not h.node_obj(resize_lab)["spec"].get("unschedulable")
    assert pods_gone(events) == []
    assert len(resize_lab.nova.actions(h.server_id(resize_lab, NODE))) == before
    assert h.journals(tmp_path) == [] and h.audit_entries(tmp_path) == []


def test_stale_kubelet_on_a_nova_vm_gets_only_the_kubelet_steps(resize_lab, tmp_path, scale_up, h):
    """The server has its flavor, but the kubelet started while a vCPU was offline in the guest (it counts
    online CPUs at start, reference/scale-up.md 5.1): the plan onlines it and restarts the kubelet — no cordon,
    no drain, no resize."""
    cpus = h.stale_kubelet(resize_lab, NODE)
    flavor = resize_lab.nova.server(h.server_id(resize_lab, NODE)).flavor.name
    code, doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", flavor, "--dry-run")
    assert code == 0, err
    plan = doc["plan"]
    assert plan["kubelet_only"] is True and plan["nothing_to_do"] is None
    assert [s["id"] for s in plan["steps"]] == ["preflight", "online-cpus", "restart-kubelet", "verify-pods"]
    assert plan["evictions"] == []
    before = len(resize_lab.nova.actions(h.server_id(resize_lab, NODE)))
    with recording(resize_lab) as events:
        code, doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", flavor, "--yes")
    assert code == 0, err
    assert h.node_obj(resize_lab)["status"]["capacity"]["cpu"] == str(cpus)
    assert not cordoned(events, NODE) and pods_gone(events) == []
    assert len(resize_lab.nova.actions(h.server_id(resize_lab, NODE))) == before
    actions = {e["action"] for e in h.audit_entries(tmp_path)}
    assert actions == {"runbook.scale-up.online-cpus", "runbook.scale-up.restart-kubelet"}, actions


def test_current_libvirt_size_is_nothing_to_do(live_lab, tmp_path, scale_up, h):
    """--vcpus/--memory equal to the domain's live vCPUs and memory: exit 0, nothing touched."""
    code, doc, err = scale_up(live_lab, tmp_path, NODE, "--vcpus", "12", "--memory", "16Gi", "--dry-run")
    assert code == 0, err
    cur = doc["plan"]["current"]
    args = ("--vcpus", str(cur["vcpus"]), "--memory", f"{cur['memory_mib']}Mi")
    with recording(live_lab) as events:
        code, doc, err = scale_up(live_lab, tmp_path, NODE, *args, "--yes")
    assert code == 0, err
    assert doc["status"] == "nothing-to-do" and "already at" in doc["message"], doc
    assert not cordoned(events, NODE) and pods_gone(events) == []
    assert h.journals(tmp_path) == [] and h.audit_entries(tmp_path) == []
    guest = live_lab.hypervisor.guest(h.server_id(live_lab, NODE))
    assert len(guest.online_cpus) == cur["vcpus"]
