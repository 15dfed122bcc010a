"""The kubectl commands an admin uses around a drain, on the seed-drain lab, behave as on a cluster.

Sources: kubectl pkg/drain/filters.go (the refusal texts) and pkg/cmd/drain/drain.go (output),
pkg/polymorphichelpers/rollout_status.go (what `rollout status` reads), kubernetes
pkg/registry/core/pod/storage/eviction.go (429 for a PodDisruptionBudget) and
pkg/controller/disruption (PDB status), pkg/printers/internalversion/printers.go (columns).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from labstart import start_lab
from labtools import lab_env, run, wait_for

from console.lab.world import Lab

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def drain_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-drain", tmp_path_factory.mktemp("lab-seed-drain"))


@pytest.fixture(scope="module")
def env(drain_lab: Lab) -> dict[str, str]:
    return lab_env(drain_lab)


def kubectl(env: dict[str, str], *args: str, check: bool = True, timeout: float = 60):
    return run(["kubectl", *args], env, check=check, timeout=timeout)


def get_json(env: dict[str, str], *args: str) -> dict:
    return json.loads(kubectl(env, "get", *args, "-o", "json").stdout)


def _pods_of(lab: Lab, app: str) -> list[dict]:
    pods, _ = lab.store.list("pods", "default", lambda p: (p["metadata"].get("labels") or {}).get("app") == app)
    return pods


def _ready(p: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in p["status"].get("conditions") or [])


def test_get_workloads_and_budgets(drain_lab: Lab, env: dict[str, str]) -> None:
    wait_for(lambda: get_json(env, "pdb", "frontend-pdb", "-n", "default")["status"].get("disruptionsAllowed") == 1,
             what="frontend-pdb to allow one disruption (two Ready frontend pods)")
    heartbeat = ("get", "lease", "-n", "kube-node-lease", "kube-worker02")
    wait_for(lambda: kubectl(env, *heartbeat, check=False).returncode == 0, what="kube-worker02's heartbeat Lease")
    # issue 8's list, leases included (the kubelets' node heartbeats in kube-node-lease)
    out = kubectl(env, "get", "deploy,rs,sts,ds,pdb,leases", "-A").stdout
    for want in ("deployment.apps/frontend", "replicaset.apps/frontend-", "statefulset.apps/db",
                 "daemonset.apps/node-exporter", "poddisruptionbudget.policy/db-pdb",
                 "poddisruptionbudget.policy/frontend-pdb", "lease.coordination.k8s.io/kube-worker02"):
        assert want in out, out
    assert "MIN AVAILABLE" in out and "ALLOWED DISRUPTIONS" in out and "UP-TO-DATE" in out
    db = get_json(env, "pdb", "db-pdb")["status"]
    assert (db["disruptionsAllowed"], db["desiredHealthy"], db["expectedPods"]) == (0, 1, 1)
    assert db["conditions"][0]["reason"] == "InsufficientPods"
    ds = get_json(env, "ds", "node-exporter", "-n", "kube-system")
    wait_for(lambda: get_json(env, "ds", "node-exporter", "-n", "kube-system")["status"].get("numberReady") == 3,
             what="a node-exporter pod Ready on each of the 3 nodes")
    assert ds["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_kubectl_drain_refuses_bare_and_emptydir_pods(drain_lab: Lab, env: dict[str, str]) -> None:
    proc = kubectl(env, "drain", "kube-worker02", "--ignore-daemonsets", "--timeout=30s", check=False)
    assert proc.returncode != 0
    err = proc.stderr
    assert "cannot delete Pods that declare no controller (use --force to override): default/debug-shell" in err
    assert "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/db-0" in err
    # kubectl cordons first, then refuses; the pods are all still there
    assert {p["metadata"]["name"] for p in drain_lab.store.pods_on_node("kube-worker02")} >= {"debug-shell", "db-0"}
    kubectl(env, "uncordon", "kube-worker02")


def test_kubectl_drain_evicts_and_the_replicaset_recreates(drain_lab: Lab, env: dict[str, str]) -> None:
    wait_for(lambda: get_json(env, "pdb", "frontend-pdb")["status"].get("disruptionsAllowed") == 1,
             what="frontend-pdb to allow one disruption")
    before = {p["metadata"]["uid"] for p in _pods_of(drain_lab, "frontend")}
    on_w1 = [p["metadata"]["name"] for p in _pods_of(drain_lab, "frontend") if p["spec"].get("nodeName") ==
             "kube-worker01"]
    out = kubectl(env, "drain", "kube-worker01", "--ignore-daemonsets", "--timeout=60s", timeout=90)
    assert f"pod/{on_w1[0]} evicted" in out.stdout and "node/kube-worker01 drained" in out.stdout
    assert "ignoring DaemonSet-managed Pods: kube-system/node-exporter-" in out.stderr

    def replaced() -> bool:
        pods = _pods_of(drain_lab, "frontend")
        return len(pods) == 2 and len({p["metadata"]["uid"] for p in pods} - before) == 1 and all(map(_ready, pods))

    wait_for(replaced, what="the ReplicaSet to recreate the evicted frontend pod and it to run")
    new = next(p for p in _pods_of(drain_lab, "frontend") if p["metadata"]["uid"] not in before)
    assert new["spec"]["nodeName"] == "kube-worker02"  # kube-worker01 is cordoned
    assert new["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    assert new["metadata"]["ownerReferences"][0]["controller"] is True
    # the DaemonSet pod stays on the cordoned node
    on_node = drain_lab.store.pods_on_node("kube-worker01")
    assert any(p["metadata"]["name"].startswith("node-exporter-") for p in on_node)
    kubectl(env, "uncordon", "kube-worker01")


def test_eviction_refused_by_a_budget_is_a_429(drain_lab: Lab, env: dict[str, str]) -> None:
    """The Eviction API as eviction.go answers when disruptionsAllowed is 0."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config import new_client_from_config

    api = client.CoreV1Api(new_client_from_config(str(drain_lab.state.kubeconfig)))
    body = client.V1Eviction(api_version="policy/v1", kind="Eviction",
                             metadata=client.V1ObjectMeta(name="db-0", namespace="default"))
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_pod_eviction("db-0", "default", body)
    assert exc.value.status == 429
    status = json.loads(exc.value.body)
    assert status["reason"] == "TooManyRequests"
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"] == [{"reason": "DisruptionBudget", "message": "The disruption budget db-pdb "
                                            "needs 1 healthy pods and has 1 currently"}]
    assert drain_lab.store.get("pods", "default", "db-0")


def test_create_deployment_and_rollout_status(drain_lab: Lab, env: dict[str, str]) -> None:
    kubectl(env, "create", "deployment", "web", "--image=nginx", "--replicas=2")  # kubectl posts it as protobuf
    out = kubectl(env, "rollout", "status", "deploy/web", "--timeout=60s", timeout=90).stdout
    assert 'deployment "web" successfully rolled out' in out
    dep = get_json(env, "deploy", "web")
    # the protobuf body decoded as kubectl meant it (k8s.io/api apps/v1 generated.proto)
    assert dep["spec"]["replicas"] == 2 and dep["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert (container["name"], container["image"]) == ("nginx", "nginx")
    assert dep["spec"]["template"]["metadata"]["labels"] == {"app": "web"}
    st = dep["status"]
    assert (st["observedGeneration"], st["replicas"], st["updatedReplicas"], st["readyReplicas"],
            st["availableReplicas"]) == (dep["metadata"]["generation"], 2, 2, 2, 2)
    assert {c["type"]: c["reason"] for c in st["conditions"]} == {"Available": "MinimumReplicasAvailable",
                                                                 "Progressing": "NewReplicaSetAvailable"}
    # deleting the Deployment takes its ReplicaSet and pods with it (the garbage collector's cascade)
    kubectl(env, "delete", "deployment", "web")
    wait_for(lambda: not _pods_of(drain_lab, "web"), what="the web pods to be collected")
