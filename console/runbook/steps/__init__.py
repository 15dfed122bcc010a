"""The scale-up runbook's steps, per backend (openstack.py, libvirt.py) and on the node (kube.py)."""

from __future__ import annotations

from typing import Any

from console.runbook.engine import Step


def build_steps(plan: Any, values: dict[str, Any]) -> list[Step]:
    from console.runbook.steps import kube, libvirt, openstack

    if getattr(plan, "nothing_to_do", None):
        return []
    if getattr(plan, "kubelet_only", False):  # the VM already runs the target: no cordon, drain or VM change
        node_steps = [kube.restart_kubelet(plan)] if plan.method == "openstack" else [
            kube.online_cpus(plan), kube.restart_kubelet(plan)]
        return [*node_steps, kube.verify_pods(plan)]
    if plan.method == "openstack":
        mid = openstack.steps(plan)
        return [*kube.cordon_and_drain(plan), *mid, kube.uncordon(plan), kube.verify_pods(plan)]
    return [*kube.cordon_and_drain(plan), *libvirt.steps(plan), kube.uncordon(plan), kube.verify_pods(plan)]
