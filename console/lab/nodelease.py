"""Node heartbeat Leases, as a kubelet writes them: kube-node-lease/<node>.

k8s.io/component-helpers/apimachinery/lease/controller.go (the kubelet's lease controller): the Lease is
named after the node, holderIdentity is the node name, leaseDurationSeconds the kubelet's
nodeLeaseDurationSeconds (default 40), an ownerReference points at the Node (so the Lease goes with it), and
spec.renewTime is renewed every 0.25 × the duration (10 s). acquireTime is never set: `kubectl describe node`
prints `AcquireTime: <unset>` (kubectl pkg/describe/describe.go describeNodeLease).

The lab's kubelets renew theirs here; the scale world's nodes, which have no kubelet, have theirs renewed by
console/lab/nodeleases.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

from console.lab.apistore import ApiStore
from console.lab.store import AlreadyExists, NotFound, Obj

LEASES = "leases.coordination.k8s.io"  # the store's key
NAMESPACE = "kube-node-lease"
DURATION_S = 40


def micro_time(when: datetime | None = None) -> str:
    """metav1.MicroTime's JSON form (RFC3339 with six fractional digits)."""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def renew(store: ApiStore, node_name: str) -> None:
    """Create the node's Lease (once the Node exists) or bump its renewTime."""
    stamp = micro_time()

    def bump(lease: Obj) -> None:
        lease.setdefault("spec", {})["renewTime"] = stamp

    try:
        store.mutate(LEASES, NAMESPACE, node_name, bump)
        return
    except NotFound:
        pass
    try:
        node = store.get("nodes", None, node_name)
    except NotFound:
        return  # the kubelet registers its Node first; the next renewal creates the Lease
    lease = {
        "metadata": {"name": node_name, "namespace": NAMESPACE,
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node_name,
                                          "uid": node["metadata"]["uid"]}]},
        "spec": {"holderIdentity": node_name, "leaseDurationSeconds": DURATION_S, "renewTime": stamp},
    }
    try:
        store.create(LEASES, lease)
    except (AlreadyExists, NotFound):  # created meanwhile; or a world without the kube-node-lease namespace
        return
