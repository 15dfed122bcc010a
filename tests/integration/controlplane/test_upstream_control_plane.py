"""The lab's control plane is upstream's v1.37.2, answering real kubectl as a v1.37 cluster does.

Issue 21's first acceptance point. What a v1.37 cluster serves is read from upstream: the built-in API groups
(pkg/controlplane/instance.go's DefaultAPIResourceConfigSource) and the health checks kube-apiserver registers
(k8s.io/apiserver/pkg/server/healthz, the etcd check from pkg/storage/storagebackend/factory).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from labtools import wait_for

from console.lab.controlplane import ControlPlane


def _until(what: str, check: Callable[[], Any], timeout: float = 90) -> Any:
    return wait_for(check, timeout, 0.1, what)


def test_kubectl_version_shows_the_server_as_v1_37_2(kubectl: Any) -> None:
    server = json.loads(kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert server["gitVersion"] == "v1.37.2"
    assert (server["major"], server["minor"]) == ("1", "37")


def test_livez_verbose_lists_etcd(kubectl: Any) -> None:
    out = kubectl("get", "--raw", "/livez?verbose").stdout
    assert "[+]etcd ok" in out
    assert out.rstrip().endswith("livez check passed")


def test_api_resources_are_a_v1_37_clusters(kubectl: Any) -> None:
    out = kubectl("api-resources", "--no-headers", "-o", "wide").stdout
    rows = {(line.split()[0], line.split()[-4] if len(line.split()) > 5 else "") for line in out.splitlines()}
    names = {name for name, _ in rows}
    for resource in ("nodes", "pods", "leases", "poddisruptionbudgets", "deployments", "daemonsets", "jobs",
                     "flowschemas", "prioritylevelconfigurations", "validatingadmissionpolicies",
                     "resourceclaims", "deviceclasses", "apiservices", "customresourcedefinitions",
                     "tokenreviews", "selfsubjectaccessreviews", "selfsubjectreviews"):
        assert resource in names, f"{resource} missing from kubectl api-resources"
    groups = kubectl("api-versions").stdout.split()
    for gv in ("v1", "apps/v1", "batch/v1", "coordination.k8s.io/v1", "policy/v1", "resource.k8s.io/v1",
               "flowcontrol.apiserver.k8s.io/v1", "apiregistration.k8s.io/v1", "admissionregistration.k8s.io/v1"):
        assert gv in groups, f"{gv} missing from kubectl api-versions"


def test_the_controllers_and_the_scheduler_are_upstreams(kubectl: Any) -> None:
    """A Deployment gets its ReplicaSet and pod from kube-controller-manager; with no node, kube-scheduler's own
    FailedScheduling event says so; the service-account controller made the namespace's `default` account."""
    kubectl("create", "namespace", "cp-controllers")
    _until("the default service account", lambda: kubectl(
        "-n", "cp-controllers", "get", "serviceaccount", "default", check=False).returncode == 0)
    kubectl("-n", "cp-controllers", "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10")
    rs = _until("a ReplicaSet", lambda: kubectl("-n", "cp-controllers", "get", "rs", "-o", "name").stdout.strip())
    assert rs.startswith("replicaset.apps/web-")

    def failed_scheduling() -> list[dict[str, Any]]:
        events = json.loads(kubectl("-n", "cp-controllers", "get", "events", "-o", "json").stdout)["items"]
        return [e for e in events if e["reason"] == "FailedScheduling"]

    event = _until("kube-scheduler's FailedScheduling event", failed_scheduling)[0]
    assert event["reportingComponent"] == "default-scheduler"
    # ErrNoNodesAvailable (pkg/scheduler/schedule_one.go): the scheduler says so before filtering any node
    assert event["message"] == "no nodes available to schedule pods"


def test_pod_security_admission_enforces_a_namespace_label(kubectl: Any) -> None:
    kubectl("create", "namespace", "cp-restricted")
    kubectl("label", "namespace", "cp-restricted", "pod-security.kubernetes.io/enforce=restricted")
    proc = kubectl("-n", "cp-restricted", "run", "priv", "--image=registry.k8s.io/pause:3.10",
                   "--overrides", json.dumps({"spec": {"containers": [{
                       "name": "priv", "image": "registry.k8s.io/pause:3.10",
                       "securityContext": {"privileged": True}}]}}), check=False)
    assert proc.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in proc.stderr


def test_rbac_decides_for_a_client_certificate_user(control_plane: ControlPlane, kubectl: Any) -> None:
    """A user with only a namespaced Role can list pods there and nowhere else: the API server's RBAC authorizer
    decides (`kubectl auth can-i` asks it through a SelfSubjectAccessReview)."""
    control_plane.write_kubeconfig(control_plane.root / "cp-reader.kubeconfig",
                                   {"cp-reader": control_plane.user_cert("cp-reader")})
    kubectl("create", "namespace", "cp-rbac")
    kubectl("-n", "cp-rbac", "create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods")
    kubectl("-n", "cp-rbac", "create", "rolebinding", "reader", "--role=pod-reader", "--user=cp-reader")
    assert kubectl("auth", "can-i", "list", "pods", "-n", "cp-rbac", user="cp-reader").stdout.strip() == "yes"
    denied = kubectl("auth", "can-i", "list", "pods", "-n", "default", user="cp-reader", check=False)
    assert (denied.returncode, denied.stdout.strip()) == (1, "no")
    forbidden = kubectl("get", "pods", "-n", "default", user="cp-reader", check=False)
    assert 'User "cp-reader" cannot list resource "pods" in API group "" in the namespace "default"' \
        in forbidden.stderr


def test_a_restarted_api_server_serves_the_same_objects_on_the_same_port(control_plane: ControlPlane,
                                                                          kubectl: Any) -> None:
    kubectl("create", "namespace", "cp-restart")
    kubectl("-n", "cp-restart", "create", "configmap", "kept", "--from-literal=k=v")
    port = control_plane.api_port
    control_plane.apiserver_down()
    refused = kubectl("get", "ns", "cp-restart", check=False)
    assert refused.returncode == 1
    assert f"The connection to the server 127.0.0.1:{port} was refused" in refused.stderr
    control_plane.apiserver_up()
    assert control_plane.api_port == port
    data = json.loads(kubectl("-n", "cp-restart", "get", "configmap", "kept", "-o", "json").stdout)["data"]
    assert data == {"k": "v"}
