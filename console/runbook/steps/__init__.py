"""The scale-up runbook's steps: preflight (preflight.py), per backend (openstack.py, libvirt.py), node (kube.py)."""

from __future__ import annotations

from typing import Any

from console.runbook.engine import Step


def build_steps(plan: Any, values: dict[str, Any]) -> list[Step]:
    from console.runbook.steps import kube, libvirt, openstack
    from console.runbook.steps.preflight import preflight

    if plan.method == "openstack":
        mid = openstack.steps(plan)
        return [preflight(plan), *kube.cordon_and_drain(plan), *mid, kube.uncordon(plan), kube.verify_pods(plan)]
    return [preflight(plan), *kube.cordon_and_drain(plan), *libvirt.steps(plan), kube.uncordon(plan),
            kube.verify_pods(plan)]
