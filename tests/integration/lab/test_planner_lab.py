"""The planner scenario (console/lab/scenarios.py `_planner`): its Pending pods wait for the reasons its docstring
gives, with the scheduler's real FailedScheduling texts.

Sources: kubernetes pkg/scheduler/framework/types.go (FitError.Error: "0/N nodes are available: " + sorted
histogram), plugins/tainttoleration ("node(s) had untolerated taint {key: value}"), plugins/nodeaffinity
("node(s) didn't match Pod's node affinity/selector"), plugins/noderesources/fit.go ("Insufficient cpu");
pkg/controller/job (the labels a Job's pods carry); NFD's cpu source (cpu-cpuid.AVX512F on Skylake/Ice Lake).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from labstart import start_lab
from labtools import lab_env, run, wait_for

from console.lab.world import Lab

pytestmark = pytest.mark.lab

AVX512F = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"
MASTER = "1 node(s) had untolerated taint {node-role.kubernetes.io/master: }"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("lab-planner"))


@pytest.fixture(scope="module")
def env(lab: Lab) -> dict[str, str]:
    return lab_env(lab)


def kubectl_json(env: dict[str, str], *args: str) -> dict:
    return json.loads(run(["kubectl", *args, "-o", "json"], env).stdout)


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


def test_pending_pods_and_reasons(env: dict[str, str]) -> None:
    msgs = wait_for(lambda: (m := _unschedulable(env)) and len(m) == 6 and m, what="six unschedulable pods")
    train = {n: m for n, m in msgs.items() if n.startswith("train-")}
    assert len(train) == 3
    for m in train.values():
        assert m.startswith("0/6 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                            f"{MASTER}, 4 Insufficient cpu, 4 Insufficient memory."), m
    hpc = "4 node(s) had untolerated taint {dedicated: hpc}"
    assert msgs["etl"].startswith(f"0/6 nodes are available: 1 Insufficient cpu, {MASTER}, {hpc}."), msgs["etl"]
    assert msgs["solver-xl"].startswith(
        f"0/6 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, {MASTER}, {hpc}."), msgs["solver-xl"]
    assert msgs["inference"].startswith(
        f"0/6 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, {MASTER}, {hpc}."
    ), msgs["inference"]


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
