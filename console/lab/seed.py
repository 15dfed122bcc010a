"""Turning a scenario into the lab's initial Kubernetes objects and VM specs."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

from console.lab import nfd_deploy
from console.lab.scenarios import FLAVOR_BY_NAME, MASTER_TAINT, SCALE_NODES_PER_HOST, NodeSpec, PodSpec, Scenario
from console.lab.vm import VMSpec
from console.nfd import versions as V

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
        node_spec["taints"] = [dict(MASTER_TAINT)]
    if spec.taints:
        node_spec["taints"] = [*node_spec.get("taints", []), *(dict(t) for t in spec.taints)]
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


def upstream_objects(objects: tuple[tuple[str, Obj], ...]) -> list[tuple[str, Obj]]:
    """A scenario's workloads as a user creates them on a real cluster: Deployments, StatefulSets, DaemonSets,
    Jobs, budgets and bare pods, without the ReplicaSets and pods their controllers make (pkg/controller/*)
    and without what the server sets (uid, status, a Job's selector and controller-uid labels: the API server
    generates them, pkg/registry/batch/job/strategy.go). The nodes the scenario put a workload's pods on become
    its template's node affinity, spread one per node where it names several, for the scheduler to follow."""
    rs_owner = {o["metadata"]["uid"]: o["metadata"]["ownerReferences"][0]["uid"]
                for r, o in objects if r == "replicasets.apps"}
    placed: dict[str, set[str]] = {}
    for resource, obj in objects:
        refs = obj["metadata"].get("ownerReferences") or []
        if resource == "pods" and refs and obj.get("spec", {}).get("nodeName"):
            owner = rs_owner.get(refs[0]["uid"], refs[0]["uid"])
            placed.setdefault(owner, set()).add(obj["spec"]["nodeName"])
    out = []
    for resource, obj in objects:
        meta = obj["metadata"]
        if resource == "replicasets.apps" or (resource == "pods" and meta.get("ownerReferences")):
            continue
        nodes = placed.get(meta.get("uid", ""), set())
        obj = copy.deepcopy(obj)
        obj.pop("status", None)
        for key in ("uid", "ownerReferences"):
            obj["metadata"].pop(key, None)
        if resource == "jobs.batch":
            for m in (obj["metadata"], obj["spec"]["template"]["metadata"]):
                m["labels"] = {k: v for k, v in (m.get("labels") or {}).items() if k not in _JOB_LABELS}
            for key in ("selector", "manualSelector"):
                obj["spec"].pop(key, None)
        if nodes:
            _pin(obj["spec"]["template"], sorted(nodes))
        out.append((resource, obj))
    return out


def _pin(template: Obj, nodes: list[str]) -> None:
    spec = template["spec"]
    affinity = spec.setdefault("affinity", {})
    affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}]}]}}
    if len(nodes) > 1:  # spread, but a replacement may still land beside a sibling when its node drains
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                              "whenUnsatisfiable": "ScheduleAnyway",
                                              "labelSelector": {"matchLabels": dict(template["metadata"]["labels"])}}]


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


def nfd_manifest(scenario: Scenario) -> nfd_deploy.Manifest:
    """The scenario's NFD deployment, for its NFD version."""
    n = scenario.nfd
    return nfd_deploy.Manifest(
        version=V.parse_version(scenario.nfd_version), namespace=n.namespace, master_args=n.master_args,
        worker_config=n.worker_config, master_config=n.master_config, features_configmap=n.features_configmap,
        features_files=n.features_files, workloads=n.workloads,
        worker_tolerations=n.worker_tolerations)


def write_guest_files(spec: NodeSpec, root: Any) -> None:
    """The scenario's files into a node's tree (`root` a console.lab.guestroot.GuestRoot); source.d ones executable."""
    for guest_path, content in spec.files:
        path: Path = root.path(guest_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        path.chmod(0o755 if "/source.d/" in guest_path else 0o644)


def nfd_objects(scenario: Scenario) -> list[tuple[str, Obj]]:
    """NFD's manifests for the scenario, minus a Namespace the scenario already creates."""
    m = nfd_manifest(scenario)
    return [(r, o) for r, o in nfd_deploy.objects(m)
            if not (r == "namespaces" and o["metadata"]["name"] in scenario.namespaces)]
