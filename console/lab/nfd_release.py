"""NFD as its release deploys it: the release's own kustomize overlay, rendered by upstream's kustomize.

For a scenario whose NFD release the lab builds (console/lab/upstream/build.py NFD), the objects the lab creates
through the API server are `kustomize build` of an overlay of the lab's over the release's
deployment/overlays/default (in the release's module source, Go's module cache) — an admin's way of customising it —
which sets what the scenario sets: the namespace, nfd-worker.conf and nfd-master.conf (configMapGenerator, behavior
replace: the release's ConfigMaps with the scenario's data, names hashed as kustomize hashes them), the master's
extra args, and the worker's tolerations (the control plane's, so that node is labelled too, as gpu-operator's NFD
values do, and the scenario's); nfd-master and nfd-gc tolerate and prefer the control plane. The master, worker and
gc pods are then the controllers', run by the lab's node agent as real processes (console/lab/nodeexec.py,
console/lab/containerfs.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from console.lab.resources import RESOURCES
from console.lab.scenarios import Scenario
from console.lab.upstream import build

Obj = dict[str, Any]
# a control plane's taint under both names kubeadm has used (the lab's clusters are of the `master` era)
CONTROL_PLANE_TOLERATIONS = tuple(
    {"key": f"node-role.kubernetes.io/{role}", "operator": "Exists", "effect": "NoSchedule"}
    for role in ("master", "control-plane")
)
OVERLAY = "deployment/overlays/default"


class ReleaseError(Exception):
    """The release's manifests could not be rendered; the message says why."""


def program(scenario: Scenario) -> build.Program | None:
    """The scenario's NFD release when the lab builds that very release (each has a kustomize overlay)."""
    return build.NFD.get(scenario.nfd_version)


def kustomization(scenario: Scenario, release_overlay: Path, work_dir: Path) -> Obj:
    """The lab's overlay over the release's, with its files written into `work_dir`."""
    nfd = scenario.nfd
    doc: Obj = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(release_overlay, work_dir)],
    }  # kustomize refuses absolute roots
    doc["namespace"] = nfd.namespace  # the release's own (`node-feature-discovery`) or the scenario's
    generators: list[Obj] = []
    for name, key, text in (
        ("nfd-worker-conf", "nfd-worker.conf", nfd.worker_config),
        ("nfd-master-conf", "nfd-master.conf", nfd.master_config),
    ):
        if text:
            (work_dir / key).write_text(text)
            generators.append({"name": name, "behavior": "replace", "files": [key]})
    if nfd.features_configmap:  # the NFD article's features.d from a ConfigMap, under the name the scenario gives
        for file_name, text in nfd.features_files:
            (work_dir / file_name).write_text(text)
        generators.append({"name": nfd.features_configmap, "files": [f for f, _ in nfd.features_files],
                           "options": {"disableNameSuffixHash": True}})
    if generators:
        doc["configMapGenerator"] = generators
    tolerations = [*CONTROL_PLANE_TOLERATIONS, *(dict(t) for t in nfd.worker_tolerations)]
    patches = [_add("DaemonSet", "nfd-worker", tolerations=tolerations)]
    if nfd.features_configmap:  # strategic merge: volumes merge by name, null deletes the hostPath
        features_d = {"name": "features-d", "hostPath": None, "configMap": {"name": nfd.features_configmap}}
        patches.append({"target": {"kind": "DaemonSet", "name": "nfd-worker"}, "patch": yaml.safe_dump(
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nfd-worker"},
             "spec": {"template": {"spec": {"volumes": [features_d]}}}})})
    # nfd-master and nfd-gc on the control plane, as the Helm chart's master.tolerations (both taints) place the
    # master; the gc too, so their requests are on one node in every run (kube-scheduler breaks ties at random)
    prefer_cp = {"key": "node-role.kubernetes.io/control-plane", "operator": "In", "values": [""]}
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [prefer_cp]}}
            ]
        }
    }
    for name in ("nfd-master", "nfd-gc"):
        patches.append(_add("Deployment", name, tolerations=list(CONTROL_PLANE_TOLERATIONS), affinity=affinity))
    if nfd.master_args:
        patches.append(_add("Deployment", "nfd-master", **{"containers/0/args": list(nfd.master_args)}))
    doc["patches"] = patches
    return doc


def _add(kind: str, name: str, **fields: Any) -> Obj:
    """A kustomize JSON 6902 patch of `kind`/`name` adding each field under its pod template's spec."""
    ops = [{"op": "add", "path": f"/spec/template/spec/{path}", "value": value} for path, value in fields.items()]
    return {"target": {"kind": kind, "name": name}, "patch": yaml.safe_dump(ops)}


def render(scenario: Scenario, work_dir: Path) -> list[Obj]:
    """`kustomize build` of the lab's overlay for the scenario: the objects, in kustomize's order."""
    prog = program(scenario)
    if prog is None:
        raise ReleaseError(f"the lab does not build NFD {scenario.nfd_version} with its kustomize manifests")
    work_dir.mkdir(parents=True, exist_ok=True)
    doc = kustomization(scenario, build.module_dir(prog, build.NFD_MODULE) / OVERLAY, work_dir)
    (work_dir / "kustomization.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    done = subprocess.run(
        [str(build.binary(build.KUSTOMIZE)), "build", str(work_dir)], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise ReleaseError(f"kustomize build of NFD {scenario.nfd_version} failed: {done.stderr.strip()[-2000:]}")
    return [o for o in yaml.safe_load_all(done.stdout) if o]


def resource_of(obj: Obj) -> str:
    """The lab's resource key for an object's kind (console/lab/resources.py)."""
    group = obj.get("apiVersion", "v1").rpartition("/")[0]
    for key, rt in RESOURCES.items():
        if rt.kind == obj.get("kind") and rt.group == group:
            return key
    raise ReleaseError(f"NFD's manifests hold a {obj.get('kind')} ({obj.get('apiVersion')}) the lab does not create")


def objects(scenario: Scenario, work_dir: Path) -> list[tuple[str, Obj]]:
    """The release's objects as (resource, object) without status, minus a Namespace the scenario already
    creates."""
    out = []
    for obj in render(scenario, work_dir):
        if not scenario.nfd.workloads and obj.get("kind") != "CustomResourceDefinition":
            continue  # a scenario that only serves NFD's API (the planner's scale world labels its nodes itself)
        obj.pop("status", None)  # as `kubectl apply` sends it: the controllers set the status (a CRD's conditions)
        resource = resource_of(obj)
        if resource == "namespaces" and obj["metadata"]["name"] in scenario.namespaces:
            continue
        out.append((resource, obj))
    return out
