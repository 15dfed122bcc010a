"""PodDisruptionBudgets: the disruption controller's status and the Eviction API's check.

Follows kubernetes/kubernetes pkg/controller/disruption/disruption.go (expected pods, desiredHealthy,
currentHealthy, disruptionsAllowed, the DisruptionAllowed condition, pruning disruptedPods) and
pkg/registry/core/pod/storage/eviction.go (which pods skip the budget, one budget per pod, the 429
"Cannot evict pod as it would violate the pod's disruption budget." with a DisruptionBudget cause,
decrementing disruptionsAllowed and recording the pod in disruptedPods before the delete).
"""

from __future__ import annotations

import contextlib
import math
from datetime import UTC, datetime, timedelta
from typing import Any

from console.lab.fit import _match_expression
from console.lab.store import NotFound, Obj, Store, now_iso

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
DELETION_TIMEOUT = timedelta(minutes=2)  # disruption.go DeletionTimeout for disruptedPods entries


def selects(selector: Obj | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector(...).Matches; an empty selector matches nothing for a PDB."""
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_match_expression(e, labels) for e in selector.get("matchExpressions") or [])


def pod_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _scaled(value: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, str) and value.endswith("%"):
        pct = int(value[:-1])
        return math.ceil(total * pct / 100) if round_up else math.floor(total * pct / 100)
    return int(value)


def _controller_scale(store: Store, ns: str, pod: Obj) -> tuple[str, int] | None:
    """(controller uid, its desired replicas) for a pod of a ReplicaSet/Deployment or StatefulSet."""
    ref = next((o for o in pod["metadata"].get("ownerReferences") or [] if o.get("controller")), None)
    if ref is None:
        return None
    kinds = {"ReplicaSet": "replicasets.apps", "StatefulSet": "statefulsets.apps"}
    if ref.get("kind") not in kinds:
        return None
    try:
        owner = store.get(kinds[ref["kind"]], ns, ref["name"])
    except NotFound:
        return None
    if ref["kind"] == "ReplicaSet":
        dref = next((o for o in owner["metadata"].get("ownerReferences") or []
                     if o.get("controller") and o.get("kind") == "Deployment"), None)
        if dref is not None:
            try:
                dep = store.get("deployments.apps", ns, dref["name"])
                return dep["metadata"]["uid"], int((dep.get("spec") or {}).get("replicas", 1))
            except NotFound:
                pass
    return owner["metadata"]["uid"], int((owner.get("spec") or {}).get("replicas", 1))


def compute_status(store: Store, pdb: Obj) -> Obj:
    """The status the disruption controller writes for `pdb` now."""
    ns = pdb["metadata"].get("namespace", "default")
    spec, old = pdb.get("spec") or {}, pdb.get("status") or {}
    pods, _ = store.list("pods", ns, lambda p: selects(spec.get("selector"), p["metadata"].get("labels") or {}))
    now = datetime.now(UTC)
    disrupted: dict[str, str] = {}
    present = {p["metadata"]["name"]: p for p in pods}
    for name, stamp in (old.get("disruptedPods") or {}).items():
        p = present.get(name)
        try:
            fresh = datetime.fromisoformat(stamp) + DELETION_TIMEOUT > now
        except ValueError:
            fresh = False
        if p is not None and not p["metadata"].get("deletionTimestamp") and fresh:
            disrupted[name] = stamp  # eviction approved, the delete not seen yet: not healthy
    healthy = sum(1 for p in pods if pod_ready(p) and not p["metadata"].get("deletionTimestamp")
                  and p["metadata"]["name"] not in disrupted)
    if "maxUnavailable" in spec or isinstance(spec.get("minAvailable"), str):
        scales = {}
        for p in pods:
            found = _controller_scale(store, ns, p)
            if found:
                scales[found[0]] = found[1]
        expected = sum(scales.values())
        if "maxUnavailable" in spec:
            desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, True))
        else:
            desired = _scaled(spec["minAvailable"], expected, True)
    else:
        expected = len(pods)
        desired = int(spec.get("minAvailable", 0) or 0)
    allowed = max(0, healthy - desired)
    reason, status = ("SufficientPods", "True") if allowed > 0 else ("InsufficientPods", "False")
    prev = next((c for c in old.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
    cond = {"type": "DisruptionAllowed", "status": status, "reason": reason, "message": "",
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "lastTransitionTime": prev["lastTransitionTime"] if prev and prev.get("status") == status
            else now_iso()}
    out: Obj = {"observedGeneration": pdb["metadata"].get("generation", 1), "disruptionsAllowed": allowed,
                "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
                "conditions": [cond]}
    if disrupted:
        out["disruptedPods"] = disrupted
    return out


def sync(store: Store, ns: str, name: str) -> None:
    try:
        pdb = store.get("poddisruptionbudgets.policy", ns, name)
    except NotFound:
        return
    status = compute_status(store, pdb)
    if status != pdb.get("status"):
        def write(draft: Obj) -> None:
            draft["status"] = status

        with contextlib.suppress(NotFound):
            store.mutate("poddisruptionbudgets.policy", ns, name, write)


class EvictionRefused(Exception):
    """The Eviction API's refusal: `code` and a Kubernetes Status `details` (eviction.go)."""

    def __init__(self, code: int, message: str, reason: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.reason, self.details = code, message, reason, details


def _too_many(pdb_name: str, cause: str, retry_after: int = 0) -> EvictionRefused:
    details: Obj = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return EvictionRefused(429, VIOLATION, "TooManyRequests", details)


def check_eviction(store: Store, pod: Obj, *, dry_run: bool = False) -> None:
    """Raise EvictionRefused when a budget forbids evicting `pod`; otherwise take one disruption from it."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed", "Pending") or pod["metadata"].get("deletionTimestamp"):
        return  # canIgnorePDB: it is not running, so deleting it disrupts nothing
    ns, labels = pod["metadata"].get("namespace", "default"), pod["metadata"].get("labels") or {}
    pdbs, _ = store.list("poddisruptionbudgets.policy", ns,
                         lambda b: selects((b.get("spec") or {}).get("selector"), labels))
    if len(pdbs) > 1:
        raise EvictionRefused(500, "This pod has more than one PodDisruptionBudget, which the eviction "
                              "subresource does not support.", "InternalError")
    if not pdbs:
        return
    pdb = pdbs[0]
    name, st = pdb["metadata"]["name"], pdb.get("status") or {}
    if not pod_ready(pod) and st.get("currentHealthy", 0) >= st.get("desiredHealthy", 0) > 0:
        return  # an unready pod does not count towards healthy
    if st.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1):
        raise _too_many(name, f"The disruption budget {name} is still being processed by the server.", 10)
    if st.get("disruptionsAllowed", 0) < 0:
        raise EvictionRefused(403, f'poddisruptionbudgets.policy "{name}" is forbidden: pdb disruptions '
                              "allowed is negative", "Forbidden", {"name": name, "group": "policy",
                                                                   "kind": "poddisruptionbudgets"})
    if st.get("disruptionsAllowed", 0) == 0:
        raise _too_many(name, f"The disruption budget {name} needs {st.get('desiredHealthy', 0)} healthy pods "
                        f"and has {st.get('currentHealthy', 0)} currently")
    if dry_run:
        return
    pod_name = pod["metadata"]["name"]

    def take(draft: Obj) -> None:
        s = draft.setdefault("status", {})
        if s.get("disruptionsAllowed", 0) <= 0:
            raise _too_many(name, f"The disruption budget {name} needs {s.get('desiredHealthy', 0)} healthy "
                            f"pods and has {s.get('currentHealthy', 0)} currently")
        s["disruptionsAllowed"] -= 1
        s.setdefault("disruptedPods", {})[pod_name] = now_iso()
        if s["disruptionsAllowed"] == 0:
            for c in s.get("conditions") or []:
                if c.get("type") == "DisruptionAllowed":
                    c.update(status="False", reason="InsufficientPods", lastTransitionTime=now_iso())

    store.mutate("poddisruptionbudgets.policy", ns, name, take)
