"""The planner scenario (console/lab/scenarios.py `_planner`): its Pending pods wait for the reasons its docstring
gives, with the scheduler's real FailedScheduling texts.

Sources: kubernetes pkg/scheduler/framework/types.go (FitError.Error: "0/N nodes are available: " + sorted
histogram), plugins/tainttoleration ("node(s) had untolerated taint {key: value}"; since v1.34 "node(s) had untolerated
taint(s)"), plugins/nodeaffinity
("node(s) didn't match Pod's node affinity/selector"), plugins/noderesources/fit.go ("Insufficient cpu");
pkg/controller/job (the labels a Job's pods carry); NFD's cpu source (cpu-cpuid.AVX512F on Skylake/Ice Lake).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from labstart import start_lab
from labtools import lab_env, run, wait_for

from console.lab.world import Lab

pytestmark = pytest.mark.lab

AVX512F = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"
MASTER = "1 node(s) had untolerated taint {node-role.kubernetes.io/master: }"
HPC = "4 node(s) had untolerated taint {dedicated: hpc}"
# since v1.34 (kubernetes #134740, backported to release-1.34 in #135023) TaintToleration's reason names no taint,
# so the master's node and the hpc pool's count as one reason
ANY_TAINT = "node(s) had untolerated taint(s)"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("lab-planner"))


@pytest.fixture(scope="module")
def env(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    # kubectl's discovery/OpenAPI cache is per host:port under ~/.kube/cache: another lab that had this port
    # would answer for this one (kubectl >= 1.27 reads KUBECACHEDIR)
    return lab_env(lab) | {"KUBECACHEDIR": str(tmp_path_factory.mktemp("kube-cache"))}


def kubectl_json(env: dict[str, str], *args: str) -> dict:
    return json.loads(run(["kubectl", *args, "-o", "json"], env).stdout)


@pytest.fixture(scope="module")
def named_taints(env: dict[str, str]) -> bool:
    """Whether the cluster's kube-scheduler names the untolerated taint in its reasons (before v1.34)."""
    minor = kubectl_json(env, "version")["serverVersion"]["minor"]
    return int("".join(c for c in minor if c.isdigit())) < 34


def _taints(named: bool, *, hpc: bool = True) -> str:
    """The taint reasons of the control plane's node (and of the hpc pool's 4), in the histogram's order."""
    if not named:
        return f"{5 if hpc else 1} {ANY_TAINT}"
    return f"{MASTER}, {HPC}" if hpc else MASTER


def _unschedulable(env: dict[str, str]) -> dict[str, str]:
    """Pending pods of namespace default → the PodScheduled=False message the scheduler wrote."""
    out = {}
    for p in kubectl_json(env, "get", "pods", "-n", "default")["items"]:
        for c in p["status"].get("conditions") or []:
            if c["type"] == "PodScheduled" and c["status"] == "False":
                out[p["metadata"]["name"]] = c["message"]
    return out


def test_nodes_labels_and_taints(env: dict[str, str]) -> None:
    nodes = {n["metadata"]["name"]: n for n in kubectl_json(env, "get", "nodes")["items"]}
    avx = sorted(n for n, o in nodes.items() if o["metadata"]["labels"].get(AVX512F) == "true")
    assert avx == ["kube-worker01", "kube-worker02", "kube-worker03", "kube-worker04"]
    tainted = sorted(n for n, o in nodes.items()
                     if {"key": "dedicated", "value": "hpc", "effect": "NoSchedule"} in (o["spec"].get("taints") or []))
    assert tainted == avx
    assert {n: o["metadata"]["labels"]["node.kubernetes.io/instance-type"] for n, o in nodes.items()} == {
        "kube-controlplane01": "m1.medium", "kube-worker01": "m1.medium", "kube-worker02": "m1.medium",
        "kube-worker03": "m1.medium", "kube-worker04": "m1.small", "kube-worker05": "m1.large"}


def _train(named: bool) -> str:
    return ("0/6 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
            f"{_taints(named, hpc=False)}, 4 Insufficient cpu, 4 Insufficient memory.")


def _expected(named: bool) -> dict[str, str]:
    return {
        "etl": f"0/6 nodes are available: 1 Insufficient cpu, {_taints(named)}.",
        "solver-xl": f"0/6 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, {_taints(named)}.",
        "inference": f"0/6 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                     f"{_taints(named)}.",
    }


def _as_expected(msgs: dict[str, str], named: bool) -> bool:
    train = [m for n, m in msgs.items() if n.startswith("train-")]
    return len(train) == 3 and all(m.startswith(_train(named)) for m in train) and all(
        msgs.get(name, "").startswith(want) for name, want in _expected(named).items())


def test_pending_pods_and_reasons(env: dict[str, str], named_taints: bool) -> None:
    # the scheduler's first attempts may predate NFD's labels; a label change retries them (as kube-scheduler's
    # queue does on a node update), so the reasons settle on these
    msgs = wait_for(lambda: (m := _unschedulable(env)) and _as_expected(m, named_taints) and m,
                    what="the planner reasons")
    assert len(msgs) == 6, msgs


def test_train_pods_belong_to_a_job(env: dict[str, str]) -> None:
    job = kubectl_json(env, "get", "job", "train", "-n", "default")
    assert job["spec"]["parallelism"] == 3
    pods = kubectl_json(env, "get", "pods", "-n", "default", "-l", "job-name=train")["items"]
    assert len(pods) == 3
    for p in pods:
        ref = p["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("Job", "train", job["metadata"]["uid"],
                                                                            True)
        assert p["spec"]["nodeSelector"] == {AVX512F: "true"}
        anti = p["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert anti == [{"labelSelector": {"matchLabels": {"job-name": "train"}},
                         "topologyKey": "kubernetes.io/hostname"}]


def test_neighbours_run(env: dict[str, str]) -> None:
    def running() -> dict[str, str]:
        pods = kubectl_json(env, "get", "pods", "-n", "default")["items"]
        return {p["metadata"]["name"].split("-")[0]: p["spec"].get("nodeName", "") for p in pods
                if p["status"].get("phase") == "Running"}

    got = wait_for(lambda: (r := running()) and len(r) == 2 and r, what="api and cache-0 Running")
    assert got == {"api": "kube-worker05", "cache": "kube-worker02"}
    pdb = wait_for(lambda: kubectl_json(env, "get", "pdb", "cache-pdb", "-n", "default")["status"].get(
        "currentHealthy") == 1 and kubectl_json(env, "get", "pdb", "cache-pdb", "-n", "default"), what="cache-pdb")
    assert pdb["status"]["disruptionsAllowed"] == 0


def _probe(name: str, labels: dict[str, str], anti: dict | None = None) -> dict:
    spec: dict = {"nodeSelector": {"kubernetes.io/hostname": "kube-worker05"},
                  "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"],
                                  "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    if anti:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": spec}


def test_pod_anti_affinity_both_directions(env: dict[str, str], tmp_path: Path, named_taints: bool) -> None:
    """kubectl-created pods on kube-worker05 meet InterPodAffinity's two anti-affinity reasons (filtering.go)."""
    guard = _probe("guard", {"team": "a"}, {"labelSelector": {"matchLabels": {"team": "b"}},
                                            "topologyKey": "kubernetes.io/hostname"})
    intruder = _probe("intruder", {"team": "b"})  # the guard's term selects it: existing pods' direction
    shy = _probe("shy", {"team": "c"}, {"labelSelector": {"matchExpressions": [
        {"key": "team", "operator": "In", "values": ["a"]}]}, "topologyKey": "kubernetes.io/hostname"})
    elsewhere = _probe("elsewhere", {"team": "d"}, {"labelSelector": {"matchLabels": {"team": "a"}},
                                                    "namespaces": ["kube-system"],
                                                    "topologyKey": "kubernetes.io/hostname"})
    # --validate=false: the gcloud kubectl dispatcher here sometimes picks a client that wants /openapi/v2
    path = tmp_path / "guard.json"
    path.write_text(json.dumps(guard))
    run(["kubectl", "create", "--validate=false", "-f", str(path)], env)
    wait_for(lambda: kubectl_json(env, "get", "pod", "guard", "-n", "default")["spec"].get("nodeName"),
             what="guard bound to kube-worker05")
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [intruder, shy, elsewhere]}))
    run(["kubectl", "create", "--validate=false", "-f", str(path)], env)
    taints = _taints(named_taints)
    # compared without the final period: v1.30 (kubernetes #123301) ended the doubled one after the preemption part
    want = {"intruder": f"0/6 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules, "
                        f"{taints}. preemption: 0/6 nodes are available: 1 No preemption victims found for "
                        "incoming pod, 5 Preemption is not helpful for scheduling",
            "shy": f"0/6 nodes are available: 1 node(s) didn't match pod anti-affinity rules, {taints}. "
                   "preemption: 0/6 nodes are available: 1 No preemption victims found for incoming pod, "
                   "5 Preemption is not helpful for scheduling"}
    got = wait_for(lambda: (m := _unschedulable(env)) and all(m.get(k, "").rstrip(".") == v for k, v in want.items())
                   and m, what="the anti-affinity reasons")
    assert "elsewhere" not in got  # its term looks in kube-system only: it runs beside the guard
    assert kubectl_json(env, "get", "pod", "elsewhere", "-n", "default")["spec"]["nodeName"] == "kube-worker05"
    events = kubectl_json(env, "get", "events", "-n", "default", "--field-selector",
                          "involvedObject.name=shy,reason=FailedScheduling")["items"]
    assert events and events[-1]["message"].rstrip(".") == want["shy"]


def test_the_job_replaces_a_deleted_pod(env: dict[str, str], named_taints: bool) -> None:
    """pkg/controller/job: a deleted pod of an unfinished Job is replaced (generateName train-, the job's labels)."""
    def names() -> set[str]:
        return {p["metadata"]["name"] for p in kubectl_json(env, "get", "pods", "-n", "default", "-l",
                                                             "job-name=train")["items"]}

    before = names()
    gone = sorted(before)[0]
    run(["kubectl", "delete", "pod", gone, "-n", "default", "--wait=false"], env)
    after = wait_for(lambda: (n := names()) and gone not in n and len(n) == 3 and n, what="a replacement train pod")
    (new,) = after - before
    assert new.startswith("train-")
    msgs = wait_for(lambda: (m := _unschedulable(env)).get(new) and m, what=f"{new} unschedulable")
    assert msgs[new].startswith(_train(named_taints)), msgs[new]
    job = kubectl_json(env, "get", "job", "train", "-n", "default")
    assert job["status"]["active"] == 3 and job["status"]["startTime"]
    # printers.go printJob's columns
    header, row = run(["kubectl", "get", "job", "train", "-n", "default"], env).stdout.splitlines()[:2]
    assert header.split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert row.split()[:3] == ["train", "Running", "0/3"]
