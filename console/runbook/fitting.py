"""Where a Pending pod would fit — now, or after a scale-up — on each node of a ClusterView (pure).

The Pending screen and `console get pending` both call these, so they give the same advice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from console.kube.model import PodInfo
from console.runbook.plan import FitAdvice, FlavorInfo, VmSize, advise

MAX_CANDIDATES = 200  # fit analysis on the first nodes (sorted: fits now, then smallest scale-up)


def vm_size(vm: Any) -> VmSize | None:
    return VmSize(vm.vcpus, vm.ram_mib) if vm is not None and vm.vcpus and vm.ram_mib else None


def flavor_infos(flavors: Iterable[Any]) -> list[FlavorInfo]:
    """FlavorInfo from what the app loaded: FlavorInfo already, or (name, vcpus, ram MiB) tuples."""
    out = []
    for f in flavors:
        out.append(f if isinstance(f, FlavorInfo) else FlavorInfo(str(f[0]), int(f[1]), int(f[2])))
    return out


def candidate_advice(view: Any, pod: PodInfo, flavors: list[Any]) -> list[FitAdvice]:
    """Advice for every node of `view` (console/kube/clusterview.ClusterView) the pod could land on (untainted
    for NoSchedule), best first."""
    out = []
    for row in view.rows:
        node = row.node
        if any(t.get("effect") in ("NoSchedule", "NoExecute") for t in node.taints) or node.unschedulable:
            continue
        out.append(advise(node, view.pods_by_node.get(node.name, ()), pod, vm=vm_size(row.vm), flavors=flavors))

    def order(a: FitAdvice) -> tuple:
        t = a.target
        return (not a.fits_now, (t.vcpus, t.memory_mib) if t else (0, 0), a.node)

    out.sort(key=order)
    return out[:MAX_CANDIDATES]


def fits_now_on(advice: Iterable[FitAdvice]) -> list[str]:
    """The nodes the pod fits on as they are, best first."""
    return [a.node for a in advice if a.fits_now]


def smallest_scale_up(advice: Iterable[FitAdvice]) -> FitAdvice | None:
    """The node whose scale-up to the smallest size makes the pod fit (the advice is ordered best first)."""
    return next((a for a in advice if not a.fits_now and a.target), None)


def advice_line(advice: list[FitAdvice]) -> tuple[str, str]:
    """The Pending screen's line under the pod and `console get pending`'s ADVICE: ("fits", "Fits now on a, b, c"),
    ("scale-up", "Smallest fitting size: NODE → SIZE (flavor F)"), or ("none", why) when no node can take it."""
    fits, best = fits_now_on(advice), smallest_scale_up(advice)
    if fits:
        return "fits", f"Fits now on {', '.join(fits[:3])}"
    if best is not None:
        return "scale-up", (f"Smallest fitting size: {best.node} → {best.target}"
                            + (f" (flavor {best.flavor.name})" if best.flavor else ""))
    return "none", "no node to fit it on: every node is cordoned or tainted NoSchedule"
