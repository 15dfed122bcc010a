"""A scenario's workloads on the real control plane, their pods where the scenario runs them.

The scenario says which node each of a workload's pods runs on (console/lab/workloads.py binds them); on a real
cluster the workload's controller makes the pods and kube-scheduler picks their nodes. The templates stay the
scenario's (no node affinity it lacks: a pod evicted later goes wherever the scheduler finds room, as on the
scenario's cluster); each pod is placed instead, one at a time, the way an admin steers a rollout: every other
node carries a NoSchedule taint of the lab's (`STEER_KEY`) while the controller makes that one pod (the workload
created with one replica, then scaled by one), the pod's own node none of the scenario's taints (a pool tainted
after its pods ran, as the planner scenario's cache-0 on a `dedicated=hpc` node). A pod the scheduler bound
before it saw the taints is deleted; its controller makes another. Once every placed pod runs, the lab's taints
go, the scenario's are back, and what the scenario leaves to the scheduler (bare Pending pods, a Job's pods) is
created: those meet a cluster whose running pods already took their room, as on the field reports' clusters.
"""

from __future__ import annotations

import contextlib
import copy
import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from console.lab.seed import Placed, UpstreamSeed
from console.lab.store import NotFound

Obj = dict[str, Any]
Progress = Callable[[str], None]

STEER_KEY = "lab.console/seeding"
STEER_TAINT = {"key": STEER_KEY, "value": "elsewhere", "effect": "NoSchedule"}
# kube-scheduler's count in a FailedScheduling message (the TaintToleration plugin's reason, counted by FitError)
_UNTOLERATED = re.compile(r"(\d+) node\(s\) had untolerated taint")
# the field a workload's pod count is in: one pod placed at a time
_COUNT = {"deployments.apps": "replicas", "statefulsets.apps": "replicas", "replicasets.apps": "replicas",
          "jobs.batch": "parallelism"}


class PlacementError(Exception):
    """A scenario's pod did not come to run where the scenario runs it."""


def _same(a: Obj, b: Obj) -> bool:
    return all(a.get(k) == b.get(k) for k in ("key", "value", "effect"))


def _running(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def _controller_uid(obj: Obj) -> str:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return ""


class Placement:
    """`node_taints`: every scenario node's own taints (console/lab/seed.py node_taints)."""

    def __init__(self, store: Any, node_taints: dict[str, list[Obj]], *, step_timeout: float = 60,
                 progress: Progress = lambda _msg: None) -> None:
        self.store = store
        self.node_taints = node_taints
        self.step_timeout = step_timeout
        self.progress = progress

    def run(self, seed: UpstreamSeed) -> None:
        for resource, obj in seed.first:
            self.store.create(resource, obj)
        self._wait_daemonsets([o for r, o in seed.first if r == "daemonsets.apps"])
        if seed.placed:
            try:
                for item in seed.placed:
                    self._place(item)
            finally:
                self._taint(None)
            for item in seed.placed:  # replicas the scenario left to the scheduler, if any
                if _count(item) > len(item.nodes):
                    self._scale(item, _count(item))
        made = [(resource, self.store.create(resource, obj)) for resource, obj in seed.last]
        self._wait_attempted(made)

    # -- one workload -------------------------------------------------------------------------------------
    def _place(self, item: Placed) -> None:
        meta = item.obj["metadata"]
        self.progress(f"placing {item.resource} {meta['name']} on {', '.join(item.nodes)}")
        uid = ""
        for i, node in enumerate(item.nodes):
            self._taint(node)
            if not uid:
                first = copy.deepcopy(item.obj)
                first["spec"][_COUNT[item.resource]] = 1
                uid = self.store.create(item.resource, first)["metadata"]["uid"]
            else:
                self._scale(item, i + 1)
            self._wait_placed(item, uid, item.nodes[: i + 1])

    def _scale(self, item: Placed, count: int) -> None:
        field = _COUNT[item.resource]

        def edit(draft: Obj) -> None:
            draft["spec"][field] = count

        meta = item.obj["metadata"]
        self.store.mutate(item.resource, meta.get("namespace") or "default", meta["name"], edit)

    def _pods_of(self, namespace: str, uid: str) -> list[Obj]:
        """The pods the workload's controller made (a Deployment's through its ReplicaSets), not being deleted."""
        owners = {uid}
        replicasets, _ = self.store.list("replicasets.apps", namespace, lambda o: _controller_uid(o) == uid)
        owners.update(o["metadata"]["uid"] for o in replicasets)
        pods, _ = self.store.list("pods", namespace, lambda p: _controller_uid(p) in owners
                                  and not p["metadata"].get("deletionTimestamp"))
        return pods

    def _wait_placed(self, item: Placed, uid: str, nodes: list[str]) -> None:
        namespace = item.obj["metadata"].get("namespace") or "default"
        want = Counter(nodes)
        deadline = time.monotonic() + self.step_timeout
        while True:
            pods = self._pods_of(namespace, uid)
            seen: Counter[str] = Counter()
            for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp", "")):
                node = pod.get("spec", {}).get("nodeName")
                if not node:
                    continue
                seen[node] += 1
                if seen[node] > want[node]:  # bound before the scheduler saw the taints: its controller makes another
                    with contextlib.suppress(NotFound):
                        self.store.delete("pods", namespace, pod["metadata"]["name"])
            running = Counter(p["spec"]["nodeName"] for p in pods
                              if p.get("spec", {}).get("nodeName") and _running(p))
            if running == want and len(pods) == len(nodes):
                return
            if time.monotonic() > deadline:
                # with the pod's conditions: a pod Running but not Ready once held a lab's start here, cause unknown
                where = {p["metadata"]["name"]: (p.get("spec", {}).get("nodeName") or "unbound",
                                                 (p.get("status") or {}).get("phase", ""),
                                                 {c.get("type"): (c.get("status"), c.get("reason", ""))
                                                  for c in (p.get("status") or {}).get("conditions") or []})
                         for p in pods}
                raise PlacementError(f"{item.resource} {namespace}/{item.obj['metadata']['name']}: its pods did not "
                                     f"run on {', '.join(nodes)} within {self.step_timeout:.0f}s (now: {where})")
            time.sleep(0.05)

    # -- taints -------------------------------------------------------------------------------------------
    def _taint(self, target: str | None) -> None:
        """Every scenario node but `target` gets the lab's taint; `target` none of its scenario taints; with no
        target, every node its scenario taints again and the lab's gone. Taints others set (the node lifecycle
        controller's) stay."""
        for name, own in self.node_taints.items():
            if target is None:
                wanted = own
            elif name == target:
                wanted = []
            else:
                wanted = [*own, STEER_TAINT]

            def edit(node: Obj, own: list[Obj] = own, wanted: list[Obj] = wanted) -> Obj | None:
                spec = node.setdefault("spec", {})
                current = spec.get("taints") or []
                others = [t for t in current if t.get("key") != STEER_KEY and not any(_same(t, o) for o in own)]
                taints = [*(dict(t) for t in wanted if t.get("key") != STEER_KEY), *others,
                          *(dict(t) for t in wanted if t.get("key") == STEER_KEY)]
                if taints:
                    spec["taints"] = taints
                else:
                    spec.pop("taints", None)
                return node

            try:
                self.store.mutate("nodes", None, name, edit)
            except NotFound:
                continue

    def _wait_attempted(self, made: list[tuple[str, Obj]]) -> None:
        """Until the pods left to the scheduler exist (a controller's as many as it makes at once) and the scheduler
        has tried each once (its PodScheduled condition), as on a cluster they had waited a while."""
        deadline = time.monotonic() + self.step_timeout
        while True:
            waiting = []
            for resource, obj in made:
                meta = obj["metadata"]
                namespace = meta.get("namespace") or "default"
                if resource == "pods":
                    try:
                        pods = [self.store.get("pods", namespace, meta["name"])]
                    except NotFound:
                        pods = []
                    want = 1
                else:
                    pods = self._pods_of(namespace, meta["uid"])
                    want = _at_once(resource, obj)
                tried = [p for p in pods if self._tried_since_steering(p)]
                if len(tried) < want:
                    waiting.append(f"{resource} {namespace}/{meta['name']} ({len(tried)} of {want})")
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise PlacementError(f"pods not tried by the scheduler within {self.step_timeout:.0f}s: "
                                     + ", ".join(waiting))
            time.sleep(0.05)

    def _tried_since_steering(self, pod: Obj) -> bool:
        """The scheduler tried `pod` (its PodScheduled condition) on the nodes as they are now. A finding that
        counts more nodes with untolerated taints than carry a NoSchedule or NoExecute taint now was made while
        the scheduler's cache still had the lab's steering taints (its node informer behind the pod's); it tries
        again once it sees them go (a node's taint change requeues the pod: the TaintToleration plugin's queueing
        hint, pkg/scheduler/framework/plugins/tainttoleration), and the condition's message follows."""
        cond = next((c for c in (pod.get("status") or {}).get("conditions") or []
                     if c.get("type") == "PodScheduled"), None)
        if cond is None:
            return False
        # older releases name each taint ("1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) had …")
        counted = [int(n) for n in _UNTOLERATED.findall(str(cond.get("message") or ""))]
        if cond.get("status") == "True" or not counted:
            return True
        nodes, _ = self.store.list("nodes", None)
        tainted = sum(1 for n in nodes if any(t.get("effect") in ("NoSchedule", "NoExecute")
                                              for t in (n.get("spec") or {}).get("taints") or []))
        return sum(counted) <= tainted

    def _wait_daemonsets(self, daemonsets: list[Obj]) -> None:
        """Until each DaemonSet's pods run on every node it should (its controller's count), as the scenario's
        node agents do from the start."""
        deadline = time.monotonic() + self.step_timeout
        for ds in daemonsets:
            meta = ds["metadata"]
            while True:
                try:
                    cur = self.store.get("daemonsets.apps", meta.get("namespace") or "default", meta["name"])
                except NotFound:
                    cur = {}
                status = cur.get("status") or {}
                if "desiredNumberScheduled" in status and status.get("observedGeneration", 0) >= cur.get(
                        "metadata", {}).get("generation", 1) and status.get("numberReady", 0) >= status[
                        "desiredNumberScheduled"]:
                    break
                if time.monotonic() > deadline:
                    raise PlacementError(f"DaemonSet {meta.get('namespace')}/{meta['name']}: its pods were not "
                                         f"ready on every node within {self.step_timeout:.0f}s (status: {status})")
                time.sleep(0.05)


def _count(item: Placed) -> int:
    return int(item.obj["spec"].get(_COUNT[item.resource], 1))


def _at_once(resource: str, obj: Obj) -> int:
    """How many pods a controller makes without waiting for any to run: a Job its parallelism (at most its
    completions), a ReplicaSet or Deployment its replicas, a StatefulSet the first (OrderedReady) or all."""
    spec = obj.get("spec") or {}
    if resource == "jobs.batch":
        parallelism = int(spec.get("parallelism", 1))
        return min(parallelism, int(spec.get("completions") or parallelism))
    replicas = int(spec.get("replicas", 1))
    if resource == "statefulsets.apps" and spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady":
        return min(1, replicas)
    return replicas
