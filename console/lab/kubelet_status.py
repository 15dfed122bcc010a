"""Node objects as the kubelet writes them.

Pure edits of a node dict: the skeleton a kubelet registers and its conditions (pressure + Ready/NotReady); the
keys of the node lifecycle controller's not-ready/unreachable taints.
"""

from __future__ import annotations

from console.lab.store import Obj

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"


def node_skeleton(node_name: str, index: int) -> Obj:
    """A new node object for the `index`-th kubelet of the fleet (its pod CIDR follows from the index)."""
    labels = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": node_name, "kubernetes.io/os": "linux",
    }
    cidr = f"10.{64 + index // 256}.{index % 256}.0/24"
    return {
        "metadata": {"name": node_name, "labels": labels, "annotations": {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        }},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {},
    }


def condition(node: Obj, ctype: str) -> Obj:
    for c in node.get("status", {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return {}


PRESSURE = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)


def conditions(node: Obj, ready: bool, stamp: str) -> list[Obj]:
    wanted = [(t, "False", r, m) for t, r, m in PRESSURE]
    if ready:
        wanted.append(("Ready", "True", "KubeletReady", "kubelet is posting ready status"))
    else:
        wanted.append(("Ready", "False", "KubeletNotReady",
                       "container runtime status check may not have completed yet"))
    out = []
    for ctype, status, reason, message in wanted:
        old = condition(node, ctype)
        since = old.get("lastTransitionTime") if old.get("status") == status else stamp
        out.append({"type": ctype, "status": status, "lastHeartbeatTime": stamp,
                    "lastTransitionTime": since or stamp, "reason": reason, "message": message})
    return out
