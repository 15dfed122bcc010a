"""Workload objects for scenarios, as a cluster in steady state holds them.

A Deployment comes with the ReplicaSet its controller made (named by the template's pod-template-hash) and its
pods already bound to the given nodes, each with its controller ownerReference; a StatefulSet with its ordinal
pods. UIDs are stable per scenario, so journals and logs read the same on every run. The lab seeds what a user
creates of them (console/lab/seed.py upstream_objects); kube-controller-manager makes the rest.
"""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from typing import Any

Obj = dict[str, Any]
_NS = uuid.UUID("0c5b1f4e-3e0a-4d8e-9a8e-6d1c2b9f7a11")
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand SafeEncodeString's alphabet
HASH_LABEL = "pod-template-hash"


def template_hash(template: Obj) -> str:
    """A ReplicaSet's pod-template-hash: ten characters of the alphabet the Deployment controller's have."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(_SUFFIX[b % len(_SUFFIX)] for b in digest[:10])


def owner_ref(owner: Obj) -> Obj:
    """The controller ownerReference to `owner`, as its controller sets it on what it makes."""
    return {"apiVersion": owner.get("apiVersion", "apps/v1"), "kind": owner["kind"],
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"], "controller": True,
            "blockOwnerDeletion": True}


def uid(*parts: str) -> str:
    return str(uuid.uuid5(_NS, "/".join(parts)))


def _suffix(name: str, i: int) -> str:
    """Five characters as generateName would add, stable per name and index."""
    return "".join(_SUFFIX[b % len(_SUFFIX)] for b in uuid.uuid5(_NS, f"{name}/{i}").bytes[:5])


def template(app: str, image: str = "nginx:1.21", cpu: str = "100m", memory: str = "128Mi",
             volumes: list[Obj] | None = None) -> Obj:
    container: Obj = {"name": app, "image": image, "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    spec: Obj = {"containers": [container], "restartPolicy": "Always", "schedulerName": "default-scheduler"}
    if volumes:
        spec["volumes"] = volumes
        container["volumeMounts"] = [{"name": v["name"], "mountPath": f"/{v['name']}"} for v in volumes]
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def _pod(owner: Obj, name: str, node: str, tmpl: Obj, labels: dict[str, str]) -> Obj:
    spec = copy.deepcopy(tmpl["spec"])
    spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": owner["metadata"]["namespace"],
                         "uid": uid("pod", owner["metadata"]["namespace"], name),
                         "labels": {**tmpl["metadata"]["labels"], **labels}, "ownerReferences": [owner_ref(owner)]},
            "spec": spec, "status": {"phase": "Pending", "qosClass": "Burstable"}}


def deployment(scenario: str, name: str, tmpl: Obj, nodes: list[str], namespace: str = "default"
               ) -> list[tuple[str, Obj]]:
    """(store resource, object) for a Deployment, its ReplicaSet and one pod per entry of `nodes`."""
    replicas = len(nodes)
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "namespace": namespace, "uid": uid(scenario, "deploy", namespace, name),
                        "labels": dict(tmpl["metadata"]["labels"])},
           "spec": {"replicas": replicas, "selector": {"matchLabels": dict(tmpl["metadata"]["labels"])},
                    "template": tmpl, "strategy": {"type": "RollingUpdate",
                                                   "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}},
           "status": {}}
    h = template_hash(tmpl)
    rs_tmpl = copy.deepcopy(tmpl)
    rs_tmpl["metadata"]["labels"][HASH_LABEL] = h
    rs_name = f"{name}-{h}"
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": rs_name, "namespace": namespace, "uid": uid(scenario, "rs", namespace, rs_name),
                       "labels": dict(rs_tmpl["metadata"]["labels"]),
                       "annotations": {"deployment.kubernetes.io/revision": "1"}, "ownerReferences": [owner_ref(dep)]},
          "spec": {"replicas": replicas,
                   "selector": {"matchLabels": {**tmpl["metadata"]["labels"], HASH_LABEL: h}}, "template": rs_tmpl},
          "status": {}}
    pods = [_pod(rs, f"{rs_name}-{_suffix(rs_name, i)}", node, rs_tmpl, {HASH_LABEL: h})
            for i, node in enumerate(nodes)]
    return [("deployments.apps", dep), ("replicasets.apps", rs), *(("pods", p) for p in pods)]


def statefulset(scenario: str, name: str, tmpl: Obj, nodes: list[str], namespace: str = "default"
                ) -> list[tuple[str, Obj]]:
    """(store resource, object) for a StatefulSet and its pods `<name>-<i>` on `nodes`."""
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet",
           "metadata": {"name": name, "namespace": namespace, "uid": uid(scenario, "sts", namespace, name)},
           "spec": {"replicas": len(nodes), "serviceName": name, "podManagementPolicy": "OrderedReady",
                    "selector": {"matchLabels": dict(tmpl["metadata"]["labels"])}, "template": tmpl},
           "status": {}}
    revision = f"{name}-{template_hash(tmpl)}"
    pods = []
    for i, node in enumerate(nodes):
        p = _pod(sts, f"{name}-{i}", node, tmpl, {"statefulset.kubernetes.io/pod-name": f"{name}-{i}",
                                                 "apps.kubernetes.io/pod-index": str(i),
                                                 "controller-revision-hash": revision})
        p["spec"].update(hostname=f"{name}-{i}", subdomain=name)
        pods.append(("pods", p))
    return [("statefulsets.apps", sts), *pods]


def daemonset(name: str, tmpl: Obj, namespace: str = "kube-system", tolerate_all: bool = True) -> list[tuple[str, Obj]]:
    """A DaemonSet; the lab's controller creates its pods (one per node it may run on)."""
    tmpl = copy.deepcopy(tmpl)
    if tolerate_all:  # node agents run on the control plane too
        tmpl["spec"]["tolerations"] = [{"operator": "Exists"}]
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace},
          "spec": {"selector": {"matchLabels": dict(tmpl["metadata"]["labels"])}, "template": tmpl}, "status": {}}
    return [("daemonsets.apps", ds)]


def pdb(name: str, app: str, *, min_available: int | str | None = None, max_unavailable: int | str | None = None,
        namespace: str = "default") -> list[tuple[str, Obj]]:
    spec: Obj = {"selector": {"matchLabels": {"app": app}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return [("poddisruptionbudgets.policy", {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                             "metadata": {"name": name, "namespace": namespace}, "spec": spec,
                                             "status": {}})]


def job(scenario: str, name: str, tmpl: Obj, parallelism: int, namespace: str = "default") -> list[tuple[str, Obj]]:
    """A batch/v1 Job and the `parallelism` Pending pods its controller made (pkg/controller/job): pods named by
    generateName `<job>-`, labelled with the job's controller-uid and job-name (both the batch.kubernetes.io/
    forms and the legacy ones, as v1.27+ write them), restartPolicy Never, a controller ownerReference."""
    job_uid = uid(scenario, "job", namespace, name)
    labels = {"batch.kubernetes.io/controller-uid": job_uid, "batch.kubernetes.io/job-name": name,
              "controller-uid": job_uid, "job-name": name}
    tmpl = copy.deepcopy(tmpl)
    tmpl["metadata"]["labels"] = {**tmpl["metadata"]["labels"], **labels}
    tmpl["spec"]["restartPolicy"] = "Never"
    obj = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": name, "namespace": namespace, "uid": job_uid,
                        "labels": dict(tmpl["metadata"]["labels"])},
           "spec": {"parallelism": parallelism, "completions": parallelism, "backoffLimit": 6,
                    "completionMode": "NonIndexed", "suspend": False, "manualSelector": False,
                    "podReplacementPolicy": "TerminatingOrFailed",
                    "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": job_uid}}, "template": tmpl},
           "status": {"active": parallelism, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}}}
    pods = []
    for i in range(parallelism):
        spec = copy.deepcopy(tmpl["spec"])
        pod_name = f"{name}-{_suffix(name, i)}"
        meta = {"name": pod_name, "namespace": namespace, "generateName": f"{name}-",
                "uid": uid("pod", namespace, pod_name), "labels": dict(tmpl["metadata"]["labels"]),
                "ownerReferences": [owner_ref(obj)]}
        pods.append(("pods", {"metadata": meta, "spec": spec,
                              "status": {"phase": "Pending", "qosClass": "Burstable"}}))
    return [("jobs.batch", obj), *pods]


def pending_pod(scenario: str, name: str, tmpl: Obj, namespace: str = "default") -> tuple[str, Obj]:
    """A bare Pending pod from a template (nodeSelector, tolerations, affinity as the template has them)."""
    return ("pods", {"metadata": {"name": name, "namespace": namespace, "uid": uid(scenario, "pod", namespace, name),
                                  "labels": dict(tmpl["metadata"]["labels"])},
                     "spec": copy.deepcopy(tmpl["spec"]), "status": {"phase": "Pending", "qosClass": "Burstable"}})
