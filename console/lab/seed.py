"""Turning a scenario into the lab's initial Kubernetes objects and VM specs."""

from __future__ import annotations

import copy
import hashlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.lab.resources import RESOURCES
from console.lab.scenarios import FLAVOR_BY_NAME, MASTER_TAINT, SCALE_NODES_PER_HOST, NodeSpec, PodSpec, Scenario
from console.lab.vm import VMSpec

Obj = dict[str, Any]

# Nova integer ids: kube-worker02 is instance-0000335c, as in the field report.
FIRST_DB_ID = 0x3358
_UUID_NS = uuid.UUID("6f1c2a8e-8d1b-4c55-9a52-3b7d3c1e0a00")


def server_id(scenario: str, node: str) -> str:
    """Stable per scenario and node, so docs and logs read the same on every run."""
    return str(uuid.uuid5(_UUID_NS, f"{scenario}/{node}"))


def vm_specs(scenario: Scenario) -> list[VMSpec]:
    return [
        VMSpec(
            server_id=server_id(scenario.name, n.name),
            db_id=FIRST_DB_ID + 2 * i,
            node_name=n.name,
            compute_host=n.compute_host,
            flavor=FLAVOR_BY_NAME[n.flavor],
        )
        for i, n in enumerate(scenario.nodes)
    ]


def namespace(name: str) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {},
        "status": {"phase": "Active"},
    }


def node_object(spec: NodeSpec, vm: VMSpec | None) -> Obj:
    labels = {
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        **dict(spec.labels),
    }
    node_spec: Obj = {}
    if spec.role == "control-plane":
        # the field report's v1.21 cluster labels and taints its control plane "master"
        labels["node-role.kubernetes.io/master"] = ""
        labels["node-role.kubernetes.io/control-plane"] = ""
    if taints := node_taints(spec):
        node_spec["taints"] = taints
    if vm is not None:
        node_spec["providerID"] = f"openstack:///{vm.server_id}"
        labels["node.kubernetes.io/instance-type"] = vm.flavor.name
    return {"metadata": {"name": spec.name, "labels": labels}, "spec": node_spec, "status": {}}


def pod_object(spec: PodSpec) -> Obj:
    container = {
        "name": spec.name.split("-")[0],
        "image": spec.image,
        "resources": {"requests": {"cpu": spec.cpu, "memory": spec.memory}},
    }
    pod: Obj = {
        "metadata": {"name": spec.name, "namespace": spec.namespace, "labels": dict(spec.labels) or {"app": spec.name}},
        "spec": {
            "containers": [container],
            "schedulerName": "default-scheduler",
            "restartPolicy": "Always",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }
    if spec.node:
        pod["spec"]["nodeName"] = spec.node
    return pod


_JOB_LABELS = ("batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name")


@dataclass
class Placed:
    """A workload whose pods the scenario runs on named nodes: the object as a user creates it, and the node of each
    of those pods in the order its controller makes them (a StatefulSet's by ordinal)."""

    resource: str
    obj: Obj
    nodes: list[str]


@dataclass
class UpstreamSeed:
    """A scenario's workloads for a real cluster, in three rounds (console/lab/placement.py creates them):
    `first` what places none of the scenario's pods by name (DaemonSets, budgets, bare pods already bound to a
    node), `placed` the workloads whose pods run on the nodes the scenario names, `last` what leaves its pods to
    the scheduler (bare Pending pods, a Job's Pending pods), which meets it once the placed pods took their room."""

    first: list[tuple[str, Obj]] = field(default_factory=list)
    placed: list[Placed] = field(default_factory=list)
    last: list[tuple[str, Obj]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.first or self.placed or self.last)

    def __len__(self) -> int:
        return len(self.first) + len(self.placed) + len(self.last)


_CONTROLLERS = ("deployments.apps", "statefulsets.apps", "replicasets.apps", "jobs.batch")


def upstream_objects(objects: tuple[tuple[str, Obj], ...]) -> UpstreamSeed:
    """A scenario's workloads as a user creates them on a real cluster: Deployments, StatefulSets, DaemonSets,
    Jobs, budgets and bare pods, without the ReplicaSets and pods their controllers make (pkg/controller/*: the
    real controllers make them) and without what the server sets (uid, status, a Job's selector and
    controller-uid labels: the API server generates them, pkg/registry/batch/job/strategy.go). Templates stay the
    scenario's: where its pods run is kept by placing them (`Placed`), not by constraints the scenario lacks."""
    owner_of = {o["metadata"]["uid"]: (o["metadata"].get("ownerReferences") or [{}])[0].get("uid", "")
                for r, o in objects if r == "replicasets.apps"}
    nodes: dict[str, list[str]] = {}
    for resource, obj in objects:
        refs = obj["metadata"].get("ownerReferences") or []
        if resource == "pods" and refs and obj.get("spec", {}).get("nodeName"):
            owner = owner_of.get(refs[0]["uid"]) or refs[0]["uid"]
            nodes.setdefault(owner, []).append(obj["spec"]["nodeName"])
    out = UpstreamSeed()
    for resource, obj in objects:
        meta = obj["metadata"]
        if resource == "pods" and meta.get("ownerReferences"):
            continue
        if resource == "replicasets.apps" and meta.get("ownerReferences"):
            continue  # its Deployment's controller makes it
        if _custom(resource):  # NFD's objects come with NFD's CRDs (scenario_nfd_objects)
            continue
        on = nodes.get(meta.get("uid", ""), [])
        obj = copy.deepcopy(obj)
        obj.pop("status", None)
        for key in ("uid", "ownerReferences"):
            obj["metadata"].pop(key, None)
        if resource == "jobs.batch":
            for m in (obj["metadata"], obj["spec"]["template"]["metadata"]):
                m["labels"] = {k: v for k, v in (m.get("labels") or {}).items() if k not in _JOB_LABELS}
            for key in ("selector", "manualSelector"):
                obj["spec"].pop(key, None)
        if on:
            out.placed.append(Placed(resource, obj, on))
        elif resource in _CONTROLLERS or (resource == "pods" and not obj.get("spec", {}).get("nodeName")):
            out.last.append((resource, obj))
        else:
            out.first.append((resource, obj))
    return out


def node_taints(spec: NodeSpec) -> list[Obj]:
    """The taints a scenario's node has: a control plane's `master` one (the field report's v1.21 cluster taints
    its control plane so), then the scenario's own."""
    return [*([dict(MASTER_TAINT)] if spec.role == "control-plane" else []), *(dict(t) for t in spec.taints)]


def _scale_node_name(i: int) -> str:
    return f"node-{i:05d}"


def scale_vm_specs(scenario: Scenario) -> list[VMSpec]:
    """The scale world's nodes as Nova servers (r1.xlarge, SCALE_NODES_PER_HOST per compute host) when it has
    Pending pods: VM sizes the capacity planner reads. No hypervisor runs them."""
    if not scenario.scale_pending:
        return []
    flavor = next(f for f in scenario.flavors if f.name == "r1.xlarge")
    return [VMSpec(server_id=server_id("scale", _scale_node_name(i)), db_id=FIRST_DB_ID + 2 * i,
                   node_name=_scale_node_name(i), compute_host=f"cmp{i // SCALE_NODES_PER_HOST:03d}", flavor=flavor)
            for i in range(scenario.scale_nodes)]


def scale_pending_pods(scenario: Scenario) -> list[Obj]:
    """Pending pods for the planner benchmark, deterministic by index: 17–27 CPUs (more than a node's 16, less
    than what r1.2xlarge's 32 leave beside 30 pods of 100m), 8–40 GiB; every third selects AVX512F nodes (half
    the nodes have it); the first three of every ten are a group with required anti-affinity on hostname; every
    97th wants 40 CPUs (more than any flavor)."""
    pods = []
    for i in range(scenario.scale_pending):
        cpu = 40 if i % 97 == 0 else 17 + (i % 6) * 2
        labels = {"app": f"batch-{i % 10}"}
        spec: Obj = {"schedulerName": "default-scheduler", "restartPolicy": "Never",
                     "containers": [{"name": "work", "image": "registry.lab/app:1", "resources": {
                         "requests": {"cpu": str(cpu), "memory": f"{8 + (i % 5) * 8}Gi"}}}]}
        if i % 3 == 0:
            spec["nodeSelector"] = {"feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true"}
        if i % 10 < 3:
            labels["group"] = f"g{i // 10:04d}"
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"group": labels["group"]}},
                 "topologyKey": "kubernetes.io/hostname"}]}}
        pods.append({"metadata": {"name": f"pending-{i:05d}", "namespace": "default", "labels": labels},
                     "spec": spec, "status": {"phase": "Pending"}})
    return pods


def scale_objects(scenario: Scenario) -> tuple[list[Obj], list[Obj]]:
    """Nodes with a posted status and pods already Running on them (no VMs, no kubelets)."""
    nodes: list[Obj] = []
    pods: list[Obj] = []
    flags = ("AVX", "AVX2", "FMA3", "AVX512F", "AVX512BW")
    for i in range(scenario.scale_nodes):
        name = _scale_node_name(i)
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
        if scenario.scale_pending:
            labels["node.kubernetes.io/instance-type"] = "r1.xlarge"
        # a spread of CPU generations so label filters have something to find
        for flag in flags[: 2 + i % 4]:
            labels[f"feature.node.kubernetes.io/cpu-cpuid.{flag}"] = "true"
        cap = {"cpu": "16", "memory": "65842860Ki", "pods": "110", "ephemeral-storage": "101445540Ki"}
        nodes.append(
            {
                "metadata": {"name": name, "labels": labels},
                "spec": {"providerID": f"openstack:///{server_id('scale', name)}"},
                "status": {
                    "capacity": cap,
                    "allocatable": cap,
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "message": "kubelet is posting ready status",
                        }
                    ],
                    "nodeInfo": {
                        "kubeletVersion": scenario.kubernetes_version,
                        "systemUUID": server_id("scale", name),
                        "osImage": "Ubuntu 22.04.4 LTS",
                        "architecture": "amd64",
                        "operatingSystem": "linux",
                    },
                },
            }
        )
        for j in range(scenario.scale_pods_per_node):
            pods.append(
                {
                    "metadata": {
                        "name": f"app-{i:05d}-{j:02d}",
                        "namespace": "default",
                        "labels": {"app": f"app-{j % 10}"},
                    },
                    "spec": {
                        "nodeName": name,
                        "containers": [
                            {
                                "name": "app",
                                "image": "registry.lab/app:1",
                                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                            }
                        ],
                    },
                    "status": {"phase": "Running"},
                }
            )
    return nodes, pods + scale_pending_pods(scenario)


def kubelet_statuses(nodes: list[Obj], pods: list[Obj], stamp: str) -> None:
    """The scale world's statuses as kubelets post them (in place), for the real API server, where nodes and pods
    have no kubelet to post them: each node's pressure and Ready conditions with heartbeat times, each bound
    pod's Running status with the conditions and container statuses the kubelet generates
    (pkg/kubelet/kubelet_pods.go generateAPIPodStatus: PodReadyToStartContainers, Initialized, Ready,
    ContainersReady, PodScheduled). Pending pods keep theirs: kube-scheduler writes their PodScheduled."""
    from console.lab.kubelet_status import conditions

    for node in nodes:
        node["status"]["conditions"] = conditions(node, True, stamp)
    ready = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    for pod in pods:
        if not pod["spec"].get("nodeName"):
            continue
        key = f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"
        pod["status"] = {
            "phase": "Running", "startTime": stamp,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": stamp} for t in ready],
            "containerStatuses": [
                {"name": c["name"], "image": c["image"], "imageID": f"{c['image']}@sha256:" + "0" * 64,
                 "containerID": "containerd://" + hashlib.sha256(f"{key}/{c['name']}".encode()).hexdigest(),
                 "ready": True, "started": True, "restartCount": 0, "state": {"running": {"startedAt": stamp}},
                 "lastState": {}}
                for c in pod["spec"]["containers"]],
        }


def write_guest_files(spec: NodeSpec, root: Any) -> None:
    """The scenario's files into a node's tree (`root` a console.lab.guestroot.GuestRoot); source.d ones executable."""
    for guest_path, content in spec.files:
        path: Path = root.path(guest_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        path.chmod(0o755 if "/source.d/" in guest_path else 0o644)


def _custom(resource: str) -> bool:
    rt = RESOURCES.get(resource)
    return rt is not None and rt.custom


def _without_status(objects: Iterable[tuple[str, Obj]]) -> list[tuple[str, Obj]]:
    """Copies as `kubectl apply` sends them: the controllers set the status (a CRD's conditions, a Namespace's
    phase)."""
    out = []
    for resource, obj in objects:
        obj = copy.deepcopy(obj)
        obj.pop("status", None)
        out.append((resource, obj))
    return out


def scenario_nfd_objects(scenario: Scenario) -> list[tuple[str, Obj]]:
    """The scenario's own NFD objects (NodeFeatureRules: custom resources, served once their CRDs are
    established), without status."""
    return _without_status((r, o) for r, o in scenario.objects if _custom(r))
