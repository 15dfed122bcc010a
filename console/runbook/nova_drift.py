"""What a plan says about the VM's size when Nova's flavor and the hypervisor disagree.

A libvirt live scale-up of a Nova-managed domain changes what runs, not the flavor. Nova rebuilds the domain
XML from the instance's flavor whenever it (re)creates the guest, so the added vCPUs and memory are lost on:
- a hard reboot: `LibvirtDriver._hard_reboot` destroys the guest and calls `_get_guest_xml`; `power_on`
  (a start after a stop) and `resume_state_on_host_boot` are `_hard_reboot` too;
- a resize or a cold migration: `finish_migration` / `finish_revert_migration` call `_get_guest_xml`;
- an evacuate (rebuild on another host) and an unshelve: `ComputeManager.rebuild_instance` and
  `_unshelve_instance` call `driver.spawn`, which calls `_get_guest_xml`
  (nova/virt/libvirt/driver.py, nova/compute/manager.py; nova master 00a0304);
and placement keeps the allocation of the flavor (`resources_from_flavor` in nova/scheduler/utils.py), so the
scheduler still counts the old size on that host (a live migration keeps the running XML but is placed and
claimed by the flavor).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

REGENERATES = "a hard reboot, resize, migration, evacuate or unshelve (also a start after a stop)"


def nova_regeneration_warning(plan: Any) -> str | None:
    """For a libvirt plan on a Nova-managed domain: what Nova will undo, and what placement still counts."""
    if plan.method != "libvirt" or not plan.nova_server_id:
        return None
    view = plan.vm.view
    flavor = f"flavor {view.flavor} ({view.flavor_size})" if view.flavor and view.flavor_size else "its flavor"
    return (f"Nova manages this domain: it regenerates the domain from {flavor} on {REGENERATES}, losing the "
            f"{plan.target} set here; placement still counts the old flavor for server {plan.nova_server_id}. "
            "Resize the server to a flavor of the new size in a maintenance window to make Nova agree.")


def size_summary(plan: Any) -> str:
    """The VM's size as the plan sees it: "Nova: m1.large · running: 12 vCPU / 16Gi (Nova flavor out of date)"."""
    view = plan.vm.view
    stale = view.staleness(plan.node.capacity)
    return view.size_text() + (f" ({stale.text()})" if stale else "")


def size_doc(plan: Any) -> dict[str, Any]:
    """For the JSON plan: the running size (null where the hypervisor was not read), Nova's flavor, what is stale."""
    view = plan.vm.view
    return {
        "running": asdict(view.running) if view.running else None,
        "nova_flavor": ({"name": view.flavor, **asdict(view.flavor_size)} if view.flavor and view.flavor_size
                        else None),
        "stale": list(view.staleness(plan.node.capacity).sides),
    }
