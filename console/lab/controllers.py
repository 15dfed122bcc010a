"""The lab's kube-controller-manager, the parts a drain meets: Deployment → ReplicaSet → Pods, StatefulSet,
DaemonSet, Job, the disruption controller (PodDisruptionBudget status) and the garbage collector's cascade.

One thread, woken by watch events; each event marks the objects it concerns dirty and the loop syncs
them, as the real controllers' work queues do. What each writes follows kubernetes/kubernetes:
- ReplicaSet (pkg/controller/replicaset): pods from the template with `generateName: <rs>-` and a
  controller ownerReference; active pods exclude finished and terminating ones; status replicas,
  fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration.
- Deployment (pkg/controller/deployment): one ReplicaSet per template, named `<deploy>-<pod-template-hash>`
  with the hash in its selector and labels, the old ones scaled to 0 (the rollout is immediate here);
  status observedGeneration, replicas, updatedReplicas, readyReplicas, availableReplicas,
  unavailableReplicas and the Available / Progressing conditions `kubectl rollout status` reads.
- StatefulSet (pkg/controller/statefulset): pods `<sts>-<ordinal>`, created in order, each once the lower
  ones are Running and Ready (OrderedReady), highest ordinal removed first.
- DaemonSet (pkg/controller/daemon): one pod per node whose labels and taints allow it, pinned by node
  affinity on metadata.name (the scheduler binds it) and with the tolerations the controller adds
  (not-ready, unreachable, pressure, unschedulable), so a cordoned node keeps its DaemonSet pods.
- Job (pkg/controller/job): min(parallelism, completions - succeeded) active pods with generateName
  `<job>-` and the job's labels; status active, ready, succeeded, failed, startTime; done once enough pods
  succeeded (SuccessCriteriaMet and Complete, completionTime) or the failures passed backoffLimit (FailureTarget
  and Failed, BackoffLimitExceeded; its active pods deleted).
- PodDisruptionBudget status: console/lab/disruption.py.
Evicted or deleted pods are recreated; when nothing fits they stay Pending (console/lab/scheduler.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import queue
import threading
from typing import Any

from console.lab import disruption, fit
from console.lab.recorder import EventRecorder, object_ref
from console.lab.store import AlreadyExists, NotFound, Obj, Store, WatchEvent, now_iso

log = logging.getLogger(__name__)

DEPLOY, RS, STS, DS, PDB = ("deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps",
                            "poddisruptionbudgets.policy")
JOB = "jobs.batch"
KINDS = {DEPLOY: "Deployment", RS: "ReplicaSet", STS: "StatefulSet", DS: "DaemonSet", JOB: "Job"}
OWNERS = {kind: resource for resource, kind in KINDS.items()}
HASH_LABEL = "pod-template-hash"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand SafeEncodeString
# the tolerations the DaemonSet controller adds to its pods (pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations)
DS_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def template_hash(template: Obj) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:10])


def controller_ref(obj: Obj) -> Obj | None:
    return next((o for o in obj["metadata"].get("ownerReferences") or [] if o.get("controller")), None)


def owner_ref(owner: Obj) -> Obj:
    return {"apiVersion": owner.get("apiVersion", "apps/v1"), "kind": owner["kind"],
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"], "controller": True,
            "blockOwnerDeletion": True}


def _active(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and \
        not pod["metadata"].get("deletionTimestamp")


def _cond(type_: str, status: str, reason: str, message: str, old: list[Obj] | None) -> Obj:
    stamp = now_iso()
    prev = next((c for c in old or [] if c.get("type") == type_), None)
    since = prev["lastTransitionTime"] if prev and prev.get("status") == status else stamp
    updated = prev["lastUpdateTime"] if prev and prev.get("reason") == reason and prev.get("status") == status \
        else stamp
    return {"type": type_, "status": status, "lastUpdateTime": updated, "lastTransitionTime": since,
            "reason": reason, "message": message}



def daemon_pod_placement(ds: Obj, node: Obj) -> tuple[bool, bool]:
    """(should run, should continue running), as pkg/controller/daemon/daemon_controller.go
    NodeShouldRunDaemonPod: a node selector that does not match → neither; an untolerated taint → no new
    pod, but a pod already there keeps running unless the taint is NoExecute (a NotReady node's
    not-ready:NoSchedule does not evict its DaemonSet pods)."""
    pod_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False, False
    tolerations = [*(pod_spec.get("tolerations") or []), *DS_TOLERATIONS]
    taints = (node.get("spec") or {}).get("taints") or []
    if fit.untolerated_taint(taints, tolerations) is None:
        return True, True
    no_execute = [t for t in taints if t.get("effect") == "NoExecute"]
    return False, fit.untolerated_taint(no_execute, tolerations) is None

class Controllers:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.recorders = {k: EventRecorder(store, f"{KINDS[k].lower()}-controller") for k in KINDS}
        self._q: queue.SimpleQueue[tuple[str, WatchEvent | None]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unsubs: list[Any] = []

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        for resource in ("pods", "nodes", DEPLOY, RS, STS, DS, JOB, PDB):
            def queued(ev: WatchEvent, r: str = resource) -> None:
                self._q.put((r, ev))

            self._unsubs.append(self.store.subscribe(resource, queued))
        self._thread = threading.Thread(target=self._run, name="lab-controllers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        for unsub in self._unsubs:
            unsub()
        self._unsubs = []
        self._q.put(("wake", None))
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    # -- loop -------------------------------------------------------------------------------------------
    def _run(self) -> None:
        dirty: set[tuple[str, str, str]] = set(self._everything())
        while not self._stop.is_set():
            for key in sorted(dirty, key=lambda k: (k[0] == PDB, k)):  # PDBs last: they read the pods
                try:
                    self._sync(*key)
                except Exception:  # one bad object must not stop the controllers
                    log.exception("controllers: syncing %s %s/%s failed", *key)
            dirty = set()
            try:
                kind, ev = self._q.get(timeout=1.0)
            except queue.Empty:
                continue
            while True:
                if ev is not None:
                    dirty.update(self._affected(kind, ev))
                try:
                    kind, ev = self._q.get_nowait()
                except queue.Empty:
                    break

    def _everything(self) -> list[tuple[str, str, str]]:
        out: list[tuple[str, str, str]] = []
        for resource in (DEPLOY, RS, STS, DS, JOB, PDB):
            items, _ = self.store.list(resource)
            out.extend((resource, o["metadata"].get("namespace", "default"), o["metadata"]["name"]) for o in items)
        return out

    def _affected(self, kind: str, ev: WatchEvent) -> list[tuple[str, str, str]]:
        obj = ev.object
        ns = obj["metadata"].get("namespace", "default")
        if kind == "nodes":
            items, _ = self.store.list(DS)
            return [(DS, o["metadata"].get("namespace", "default"), o["metadata"]["name"]) for o in items]
        out: list[tuple[str, str, str]] = []
        if ev.type == "DELETED" and kind in KINDS:
            out.append(("gc", ns, obj["metadata"]["uid"]))
        if kind in (DEPLOY, RS, STS, DS, JOB, PDB):
            out.append((kind, ns, obj["metadata"]["name"]))
        ref = controller_ref(obj)
        if ref is not None:
            owner = OWNERS.get(ref.get("kind") or "")
            if owner:
                out.append((owner, ns, ref["name"]))
        if kind == "pods" or kind in (RS, STS):
            pdbs, _ = self.store.list(PDB, ns)
            out.extend((PDB, ns, b["metadata"]["name"]) for b in pdbs)
        return out

    def _sync(self, resource: str, ns: str, name: str) -> None:
        if resource == "gc":
            self._collect(ns, name)
            return
        if resource == PDB:
            disruption.sync(self.store, ns, name)
            return
        try:
            obj = self.store.get(resource, ns, name)
        except NotFound:
            return
        {DEPLOY: self._deployment, RS: self._replicaset, STS: self._statefulset, DS: self._daemonset,
         JOB: self._job}[resource](obj)

    # -- helpers ----------------------------------------------------------------------------------------
    def _owned(self, resource: str, ns: str, uid: str) -> list[Obj]:
        items, _ = self.store.list(resource, ns, lambda o: (controller_ref(o) or {}).get("uid") == uid)
        return items

    def _write_status(self, resource: str, obj: Obj, status: Obj) -> None:
        if obj.get("status") == status:
            return

        def edit(draft: Obj) -> None:
            draft["status"] = status

        with contextlib.suppress(NotFound):
            self.store.mutate(resource, obj["metadata"].get("namespace"), obj["metadata"]["name"], edit)

    def _new_pod(self, owner: Obj, resource: str, *, name: str = "", extra_labels: dict[str, str] | None = None,
                 spec_edit: Any = None) -> Obj | None:
        from console.lab.kubeapi.validation import default_on_create
        from console.lab.resources import RESOURCES

        template = (owner.get("spec") or {}).get("template") or {}
        meta = template.get("metadata") or {}
        pod: Obj = {
            "metadata": {"namespace": owner["metadata"].get("namespace", "default"),
                         "labels": {**(meta.get("labels") or {}), **(extra_labels or {})},
                         "annotations": dict(meta.get("annotations") or {}),
                         "ownerReferences": [owner_ref(owner)]},
            "spec": json.loads(json.dumps(template.get("spec") or {})),
        }
        if name:
            pod["metadata"]["name"] = name
        else:
            pod["metadata"]["generateName"] = f"{owner['metadata']['name']}-"
        if spec_edit:
            spec_edit(pod["spec"])
        default_on_create(RESOURCES["pods"], pod)
        try:
            created = self.store.create("pods", pod)
        except (AlreadyExists, NotFound):
            return None
        self.recorders[resource].event(object_ref(owner), "Normal", "SuccessfulCreate",
                                       f"Created pod: {created['metadata']['name']}")
        return created

    def _delete_pod(self, owner: Obj, resource: str, pod: Obj) -> None:
        try:
            self.store.delete("pods", pod["metadata"].get("namespace"), pod["metadata"]["name"])
        except NotFound:
            return
        self.recorders[resource].event(object_ref(owner), "Normal", "SuccessfulDelete",
                                       f"Deleted pod: {pod['metadata']['name']}")

    def _collect(self, ns: str, uid: str) -> None:
        """The garbage collector's background cascade: dependents of a deleted owner go too."""
        for resource in ("pods", RS):
            for o in self._owned(resource, ns, uid):
                try:
                    gone = self.store.delete(resource, ns, o["metadata"]["name"])
                except NotFound:
                    continue
                if resource == RS:
                    self._collect(ns, gone["metadata"]["uid"])

    # -- ReplicaSet ---------------------------------------------------------------------------------------
    def _replicaset(self, rs: Obj) -> None:
        ns, uid = rs["metadata"].get("namespace", "default"), rs["metadata"]["uid"]
        want = int((rs.get("spec") or {}).get("replicas", 1))
        pods = [p for p in self._owned("pods", ns, uid) if _active(p)]
        if len(pods) < want:
            for _ in range(want - len(pods)):
                made = self._new_pod(rs, RS)
                if made:
                    pods.append(made)
        elif len(pods) > want:
            # unscheduled first, then not ready, then the newest (controller.ActivePods ordering)
            order = sorted(pods, key=lambda p: (bool((p.get("spec") or {}).get("nodeName")), disruption.pod_ready(p),
                                                p["metadata"].get("creationTimestamp", "")), reverse=False)
            for p in order[: len(pods) - want]:
                self._delete_pod(rs, RS, p)
            pods = order[len(pods) - want:]
        ready = sum(1 for p in pods if disruption.pod_ready(p))
        template_labels = (((rs.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
        labelled = sum(1 for p in pods if all((p["metadata"].get("labels") or {}).get(k) == v
                                              for k, v in template_labels.items()))
        self._write_status(RS, rs, {"replicas": len(pods), "fullyLabeledReplicas": labelled, "readyReplicas": ready,
                                    "availableReplicas": ready,
                                    "observedGeneration": rs["metadata"].get("generation", 1)})

    # -- Job ----------------------------------------------------------------------------------------------
    def _job(self, job: Obj) -> None:
        """pkg/controller/job: keep min(parallelism, completions - succeeded) pods active (none while suspended),
        each from the template with generateName `<job>-`; status active / ready / succeeded / failed and the
        startTime of the first sync."""
        ns, uid = job["metadata"].get("namespace", "default"), job["metadata"]["uid"]
        spec = job.get("spec") or {}
        pods = self._owned("pods", ns, uid)
        succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
        failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
        active = [p for p in pods if _active(p)]
        # the API server's defaults (pkg/apis/batch/v1/defaults.go): neither set → both 1; backoffLimit 6
        parallelism = int(spec["parallelism"]) if spec.get("parallelism") is not None else 1
        completions = spec.get("completions")
        if completions is None and spec.get("parallelism") is None:
            completions = 1
        old = job.get("status") or {}
        conditions = list(old.get("conditions") or [])
        done = next((c["type"] for c in conditions if c.get("type") in ("Complete", "Failed")
                     and c.get("status") == "True"), None)
        if done is None:
            # pkg/controller/job/job_controller.go: failures past backoffLimit (restarts of OnFailure pods count,
            # pastBackoffLimitOnFailure), or enough completions (with none set: one success and none active)
            limit = int(spec.get("backoffLimit", 6))
            restarts = sum(int(s.get("restartCount", 0)) for p in active
                           for s in (p.get("status") or {}).get("containerStatuses") or [])
            on_failure = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") == "OnFailure"
            if failed > limit or (on_failure and (restarts > 0 if limit == 0 else restarts >= limit)):
                done = "Failed"
                reason, message = "BackoffLimitExceeded", "Job has reached the specified backoff limit"
            elif succeeded and (succeeded >= int(completions) if completions is not None else not active):
                done = "Complete"
                reason, message = "CompletionsReached", "Reached expected number of succeeded pods"
            if done is not None:
                stamp = now_iso()
                first = "FailureTarget" if done == "Failed" else "SuccessCriteriaMet"
                conditions += [{"type": t, "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp,
                                "reason": reason, "message": message} for t in (first, done)]
                for p in active:
                    with contextlib.suppress(NotFound):
                        self.store.delete("pods", ns, p["metadata"]["name"])
                active = []
        want = 0 if spec.get("suspend") or done else max(0, min(parallelism, int(completions) - succeeded)
                                                         if completions is not None else parallelism)
        for _ in range(want - len(active)):
            made = self._new_pod(job, JOB)
            if made:
                active.append(made)
        status: Obj = {"active": len(active), "ready": sum(1 for p in active if disruption.pod_ready(p)),
                       "terminating": 0, "uncountedTerminatedPods": {},
                       "startTime": old.get("startTime") or now_iso()}
        status |= {k: v for k, v in (("succeeded", succeeded), ("failed", failed)) if v}
        if conditions:
            status["conditions"] = conditions
        if done == "Complete":
            status["completionTime"] = old.get("completionTime") or now_iso()
        self._write_status(JOB, job, {**old, **status})

    # -- Deployment ---------------------------------------------------------------------------------------
    def _deployment(self, dep: Obj) -> None:
        ns, uid, name = dep["metadata"].get("namespace", "default"), dep["metadata"]["uid"], dep["metadata"]["name"]
        spec = dep.get("spec") or {}
        want = int(spec.get("replicas", 1))
        template = spec.get("template") or {}
        h = template_hash(template)
        owned = self._owned(RS, ns, uid)
        new = next((r for r in owned if (r["metadata"].get("labels") or {}).get(HASH_LABEL) == h), None)
        revisions = [int((r["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", 0))
                     for r in owned]
        if new is None:
            tmpl = json.loads(json.dumps(template))
            tmpl.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
            selector = json.loads(json.dumps(spec.get("selector") or {}))
            selector.setdefault("matchLabels", {})[HASH_LABEL] = h
            rs = {"metadata": {"name": f"{name}-{h}", "namespace": ns, "labels": tmpl["metadata"]["labels"],
                               "annotations": {"deployment.kubernetes.io/revision": str(max(revisions, default=0) + 1),
                                               "deployment.kubernetes.io/desired-replicas": str(want),
                                               "deployment.kubernetes.io/max-replicas": str(want + 1)},
                               "ownerReferences": [owner_ref(dep)]},
                  "spec": {"replicas": want, "selector": selector, "template": tmpl}, "status": {"replicas": 0}}
            try:
                new = self.store.create(RS, rs)
            except AlreadyExists:
                return
            self.recorders[DEPLOY].event(object_ref(dep), "Normal", "ScalingReplicaSet",
                                         f"Scaled up replica set {name}-{h} to {want}")
            owned.append(new)
        for r in owned:
            target = want if r is new else 0
            if int((r.get("spec") or {}).get("replicas", 1)) != target:
                def scale(draft: Obj, target: int = target) -> None:
                    draft["spec"]["replicas"] = target
                    draft["metadata"].setdefault("annotations", {})[
                        "deployment.kubernetes.io/desired-replicas"] = str(want)

                try:
                    self.store.mutate(RS, ns, r["metadata"]["name"], scale)
                except NotFound:
                    continue
        fresh = [self.store.get(RS, ns, r["metadata"]["name"]) for r in owned
                 if self._exists(RS, ns, r["metadata"]["name"])]
        st = [r.get("status") or {} for r in fresh]
        new_st = next((r.get("status") or {} for r in fresh if r["metadata"]["uid"] == new["metadata"]["uid"]), {})
        replicas = sum(s.get("replicas", 0) for s in st)
        available = sum(s.get("availableReplicas", 0) for s in st)
        updated = new_st.get("replicas", 0)
        old = (dep.get("status") or {}).get("conditions")
        max_unavailable = self._max_unavailable(spec, want)
        conds = [
            _cond("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", old)
            if available >= want - max_unavailable else
            _cond("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.",
                  old),
            _cond("Progressing", "True", "NewReplicaSetAvailable",
                  f'ReplicaSet "{new["metadata"]["name"]}" has successfully progressed.', old)
            if updated == want and replicas == want and new_st.get("availableReplicas", 0) == want else
            _cond("Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{new["metadata"]["name"]}" is progressing.',
                  old),
        ]
        status = {"observedGeneration": dep["metadata"].get("generation", 1), "replicas": replicas,
                  "updatedReplicas": updated, "readyReplicas": sum(s.get("readyReplicas", 0) for s in st),
                  "availableReplicas": available, "conditions": conds}
        if want - available > 0:
            status["unavailableReplicas"] = want - available
        self._write_status(DEPLOY, dep, status)

    @staticmethod
    def _max_unavailable(spec: Obj, want: int) -> int:
        value = ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable", "25%")
        if isinstance(value, str) and value.endswith("%"):
            return want * int(value[:-1]) // 100
        return int(value)

    def _exists(self, resource: str, ns: str, name: str) -> bool:
        try:
            self.store.get(resource, ns, name)
        except NotFound:
            return False
        return True

    # -- StatefulSet --------------------------------------------------------------------------------------
    def _statefulset(self, sts: Obj) -> None:
        ns, uid, name = sts["metadata"].get("namespace", "default"), sts["metadata"]["uid"], sts["metadata"]["name"]
        spec = sts.get("spec") or {}
        want = int(spec.get("replicas", 1))
        revision = f"{name}-{template_hash(spec.get('template') or {})}"
        ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        pods = {p["metadata"]["name"]: p for p in self._owned("pods", ns, uid) if _active(p)}
        for i in range(want):
            pod_name = f"{name}-{i}"
            p = pods.get(pod_name)
            if p is None:
                def edit(pod_spec: Obj, pod_name: str = pod_name) -> None:
                    pod_spec.setdefault("hostname", pod_name)
                    if spec.get("serviceName"):
                        pod_spec.setdefault("subdomain", spec["serviceName"])

                p = self._new_pod(sts, STS, name=pod_name, spec_edit=edit,
                                  extra_labels={"statefulset.kubernetes.io/pod-name": pod_name,
                                                "apps.kubernetes.io/pod-index": str(i),
                                                "controller-revision-hash": revision})
                if p is not None:
                    pods[pod_name] = p
                if ordered:
                    break
            elif ordered and not ((p.get("status") or {}).get("phase") == "Running" and disruption.pod_ready(p)):
                break
        for pod_name in sorted(pods, key=lambda n: -int(n.rsplit("-", 1)[1]) if n.rsplit("-", 1)[1].isdigit() else 0):
            idx = pod_name.rsplit("-", 1)[1]
            if idx.isdigit() and int(idx) >= want:
                self._delete_pod(sts, STS, pods.pop(pod_name))
                if ordered:
                    break
        ready = sum(1 for p in pods.values() if disruption.pod_ready(p))
        self._write_status(STS, sts, {"observedGeneration": sts["metadata"].get("generation", 1),
                                      "replicas": len(pods), "readyReplicas": ready, "currentReplicas": len(pods),
                                      "updatedReplicas": len(pods), "availableReplicas": ready,
                                      "currentRevision": revision, "updateRevision": revision, "collisionCount": 0})

    # -- DaemonSet ----------------------------------------------------------------------------------------
    def _daemonset(self, ds: Obj) -> None:
        ns, uid, _name = ds["metadata"].get("namespace", "default"), ds["metadata"]["uid"], ds["metadata"]["name"]
        nodes, _ = self.store.list("nodes")
        verdict = {n["metadata"]["name"]: daemon_pod_placement(ds, n) for n in nodes}
        want = {n for n, (run, _keep) in verdict.items() if run}
        keep = {n for n, (_run, cont) in verdict.items() if cont}
        gen = ds["metadata"].get("generation", 1)
        revision = template_hash((ds.get("spec") or {}).get("template") or {})
        by_node: dict[str, Obj] = {}
        for p in self._owned("pods", ns, uid):
            if not _active(p):
                continue
            target = self._pinned(p)
            stale = (p["metadata"].get("labels") or {}).get("controller-revision-hash") != revision
            # a pod of an older template on a node where no new one should run: the RollingUpdate removes it
            if target not in keep or target in by_node or (stale and target not in want):
                self._delete_pod(ds, DS, p)
            else:
                by_node[target] = p
        for node in sorted(want - set(by_node)):
            def pin(pod_spec: Obj, node: str = node) -> None:
                affinity = pod_spec.setdefault("affinity", {})
                affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}
                tol = pod_spec.setdefault("tolerations", [])
                tol.extend(t for t in DS_TOLERATIONS if t not in tol)

            made = self._new_pod(ds, DS, spec_edit=pin, extra_labels={"controller-revision-hash": revision,
                                                                      "pod-template-generation": str(gen)})
            if made:
                by_node[node] = made
        ready = sum(1 for p in by_node.values() if disruption.pod_ready(p))
        scheduled = sum(1 for p in by_node.values() if (p.get("spec") or {}).get("nodeName"))
        self._write_status(DS, ds, {"currentNumberScheduled": scheduled, "desiredNumberScheduled": len(want),
                                    "numberMisscheduled": 0, "numberReady": ready,
                                    "updatedNumberScheduled": scheduled, "numberAvailable": ready,
                                    **({"numberUnavailable": len(want) - ready} if len(want) > ready else {}),
                                    "observedGeneration": gen})

    @staticmethod
    def _pinned(pod: Obj) -> str:
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            return spec["nodeName"]
        terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
                  .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
        for t in terms:
            for f in t.get("matchFields") or []:
                if f.get("key") == "metadata.name" and f.get("values"):
                    return f["values"][0]
        return ""
