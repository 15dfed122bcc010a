"""The scale-up runbook's steps: preflight (preflight.py), per backend (openstack.py, libvirt.py), node (kube.py)."""

from __future__ import annotations

from typing import Any

from console.runbook.engine import Step


def build_steps(plan: Any) -> list[Step]:
    from console.runbook.steps import kube, libvirt, openstack
    from console.runbook.steps.preflight import preflight

    if getattr(plan, "nothing_to_do", None):
        return []
    if getattr(plan, "kubelet_only", False):
        # the VM already runs the target, the kubelet reports less: no cordon, drain or VM change. The kubelet
        # counts online CPUs, so vCPUs left offline in the guest are onlined first (a no-op when all are)
        return [preflight(plan), kube.online_cpus(plan), kube.restart_kubelet(plan), kube.verify_pods(plan)]
    if plan.method == "openstack":
        mid = openstack.steps(plan)
        return [preflight(plan), *kube.cordon_and_drain(plan), *mid, kube.uncordon(plan), kube.verify_pods(plan)]
    return [preflight(plan), *kube.cordon_and_drain(plan), *libvirt.steps(plan), kube.uncordon(plan),
            kube.verify_pods(plan)]
