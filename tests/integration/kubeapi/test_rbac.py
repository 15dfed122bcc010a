"""RBAC in the lab API server, through real kubectl and the kubernetes client.

What real clusters answer (kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go, the Forbidden message of
k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go, kubectl's `auth can-i`, which exits 1 on
"no" — staging/src/k8s.io/kubectl/pkg/cmd/auth/cani.go).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


def kubectl(lab: Any, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["kubectl", *args], env=lab.env(), capture_output=True, text=True, timeout=60)


def test_viewer_cannot_patch_nodes_can_i_says_no(rbac_lab: Any) -> None:
    no = kubectl(rbac_lab, "auth", "can-i", "patch", "nodes", "--context", "lab-viewer")
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    yes = kubectl(rbac_lab, "auth", "can-i", "list", "nodes", "--context", "lab-viewer")
    assert (yes.returncode, yes.stdout.strip()) == (0, "yes")
    admin = kubectl(rbac_lab, "auth", "can-i", "patch", "nodes", "--context", "lab")
    assert (admin.returncode, admin.stdout.strip()) == (0, "yes")


def test_viewer_label_node_is_forbidden_with_the_api_servers_message(rbac_lab: Any) -> None:
    p = kubectl(rbac_lab, "--context", "lab-viewer", "label", "node", "worker-1", "a=b")
    assert p.returncode == 1
    assert p.stderr.strip() == ('Error from server (Forbidden): nodes "worker-1" is forbidden: User "viewer" cannot '
                                'patch resource "nodes" in API group "" at the cluster scope')
    assert "a" not in rbac_lab.store.get("nodes", None, "worker-1")["metadata"]["labels"]
    got = kubectl(rbac_lab, "--context", "lab-viewer", "get", "nodes", "-o", "name")
    assert got.returncode == 0 and "node/worker-1" in got.stdout.split()


def test_can_i_list_shows_the_rules_of_the_namespace(rbac_lab: Any) -> None:
    p = kubectl(rbac_lab, "auth", "can-i", "--list", "--context", "lab-viewer")
    assert p.returncode == 0, p.stderr
    rows = {line.split()[0]: line for line in p.stdout.splitlines()[1:] if line.strip()}
    assert p.stdout.splitlines()[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert "[get list watch]" in rows["nodes"] and "[get list watch]" in rows["pods/log"]
    assert "secrets" not in rows and "nodes/proxy" not in rows
    assert "[create]" in rows["selfsubjectaccessreviews.authorization.k8s.io"]
    admin = kubectl(rbac_lab, "auth", "can-i", "--list", "--context", "lab")
    assert any(line.split()[:1] == ["*.*"] for line in admin.stdout.splitlines())


def test_operator_holds_what_a_scale_up_calls_but_not_nodes_proxy(rbac_lab: Any) -> None:
    def can(*args: str) -> str:
        return kubectl(rbac_lab, "auth", "can-i", *args, "--context", "lab-operator").stdout.strip()

    assert can("patch", "nodes") == "yes"
    assert can("create", "pods", "--subresource=eviction", "-n", "kube-system") == "yes"
    assert can("create", "pods", "-n", "default") == "yes"
    assert can("create", "pods", "-n", "kube-system") == "no"
    assert can("get", "pods", "--subresource=log", "-n", "default") == "yes"
    assert can("update", "leases.coordination.k8s.io", "-n", "default") == "yes"
    assert can("get", "nodes", "--subresource=proxy") == "no"
    assert can("create", "nodefeaturerules.nfd.k8s-sigs.io") == "no"


def test_unbound_user_may_ask_but_read_nothing(rbac_lab: Any) -> None:
    """An authenticated user without bindings holds system:basic-user and system:discovery only."""
    p = kubectl(rbac_lab, "--context", "lab-nobody", "get", "pods", "-n", "default")
    assert p.returncode == 1
    assert ('pods is forbidden: User "lab-nobody" cannot list resource "pods" in API group "" in the namespace '
            '"default"') in p.stderr
    assert kubectl(rbac_lab, "auth", "can-i", "get", "pods", "--context", "lab-nobody").returncode == 1


def test_reviews_through_the_kubernetes_client(rbac_lab: Any) -> None:
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(rbac_lab.kubeconfig), context="lab-operator")
    try:
        authz = client.AuthorizationV1Api(api)
        ssar = authz.create_self_subject_access_review({"spec": {"resourceAttributes": {
            "verb": "create", "resource": "pods", "subresource": "eviction", "namespace": "kube-system"}}})
        assert ssar.status.allowed is True and 'ClusterRole "lab-operator"' in ssar.status.reason
        denied = authz.create_self_subject_access_review({"spec": {"nonResourceAttributes": {
            "verb": "get", "path": "/metrics"}}})
        assert denied.status.allowed is False
        rules = authz.create_self_subject_rules_review({"spec": {"namespace": "default"}})
        assert rules.status.incomplete is False
        flat = {(g, r, v) for rule in rules.status.resource_rules for g in rule.api_groups or [""]
                for r in rule.resources or [] for v in rule.verbs}
        assert ("coordination.k8s.io", "leases", "update") in flat and ("", "pods/log", "get") in flat
        core = client.CoreV1Api(api)
        with pytest.raises(client.ApiException) as err:
            core.connect_get_node_proxy_with_path("worker-1", "configz")
        assert err.value.status == 403
        assert json.loads(err.value.body)["message"] == ('nodes "worker-1" is forbidden: User "operator" cannot get '
                                                         'resource "nodes/proxy" in API group "" at the cluster scope')
    finally:
        api.close()


def test_rbac_objects_are_served_and_a_new_binding_takes_effect(rbac_lab: Any) -> None:
    """ClusterRoles/bindings through the lab's object machinery; a RoleBinding naming a ClusterRole grants it in
    its namespace only (rule.go VisitRulesFor)."""
    p = kubectl(rbac_lab, "--context", "lab", "create", "rolebinding", "nobody-view", "--clusterrole=view",
                "--user=lab-nobody", "-n", "kube-system")
    assert p.returncode == 0, p.stderr
    try:
        assert kubectl(rbac_lab, "--context", "lab-nobody", "get", "pods", "-n", "kube-system").returncode == 0
        assert kubectl(rbac_lab, "--context", "lab-nobody", "get", "pods", "-n", "default").returncode == 1
        roles = json.loads(kubectl(rbac_lab, "--context", "lab", "get", "clusterroles", "-o", "json").stdout)
        assert {"cluster-admin", "view", "lab-viewer", "lab-operator"} <= {r["metadata"]["name"]
                                                                           for r in roles["items"]}
    finally:
        kubectl(rbac_lab, "--context", "lab", "delete", "rolebinding", "nobody-view", "-n", "kube-system")


def test_console_access_review_against_the_lab(rbac_lab: Any) -> None:
    """console/kube/access.review through the kubernetes client: rules reviews per namespace, the user's name from
    a SelfSubjectReview, and the missing needs of a scale-up named for the viewer; none for the operator."""
    from types import SimpleNamespace

    from kubernetes import config

    from console.kube.access import Need, review

    settings = SimpleNamespace(node_access="debug-pod", node_debug_namespace="default", lease_namespace="default",
                               hook_store="cluster")
    for context, user in (("lab-viewer", "viewer"), ("lab-operator", "operator"), ("lab", "lab-admin")):
        api = config.new_client_from_config(config_file=str(rbac_lab.kubeconfig), context=context)
        try:
            access = review(api, settings)
        finally:
            api.close()
        assert access.unknown == "" and access.user == user
        assert access.cannot_read("nodes") == "" and access.cannot_read("pods") == ""
        if context == "lab-viewer":
            missing = [str(n) for n in access.missing([Need("patch", "nodes"), Need("list", "nodes")])]
            assert missing == ["patch nodes"]
            why = access.why_not("scale-up", settings)
            assert "patch nodes" in why and "create pods/eviction" in why and "create pods in default" in why
        else:
            assert access.why_not("scale-up", settings) == "" and access.why_not("revert", settings) == ""
        if context == "lab-operator":
            assert access.why_not("rule-apply", settings) == (
                "rule-apply needs: create nodefeaturerules.nfd.k8s-sigs.io, update nodefeaturerules.nfd.k8s-sigs.io")
    api = config.new_client_from_config(config_file=str(rbac_lab.kubeconfig), context="lab-nobody")
    try:
        nobody = review(api, settings)
    finally:
        api.close()
    assert nobody.cannot_read("nodes") == "cannot list nodes, watch nodes (forbidden for lab-nobody)"


def test_stores_refuse_unsent_what_rbac_does_not_allow(rbac_lab: Any, tmp_path: Any) -> None:
    """Below any UI: the NodeFeatureRule store and the ConfigMap file target built with the user's Access refuse a
    write this user may not make before the guard logs an intent or a request is sent (nfdstore.py,
    nfdfiles_cm.py)."""
    from types import SimpleNamespace

    from kubernetes import config

    from console.audit import AuditLog
    from console.guard import Guard
    from console.kube.access import review
    from console.kube.nfdfiles_cm import ConfigMapTarget
    from console.kube.nfdstore import RuleStore, StoreForbidden
    from console.nfd.deployment import Mount, NfdDeployment, Workload

    api = config.new_client_from_config(config_file=str(rbac_lab.kubeconfig), context="lab-viewer")
    log = tmp_path / "audit.log"
    try:
        from console.kube.access import Need

        # the ConfigMap a DaemonSet volume names: its namespace's permissions reviewed too (as `nfd files` does)
        access = review(api, SimpleNamespace(hook_store="cluster"),
                        extra=[Need(v, "configmaps", namespace="node-feature-discovery") for v in ("get", "update")])
        guard = Guard(read_only=False, audit=AuditLog(log))
        rules = RuleStore(api, guard=guard, access=access)
        assert [r["metadata"]["name"] for r in rules.list()] == ["gpu-rule"]  # reads still work
        with pytest.raises(StoreForbidden) as err:
            rules.create({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
                          "metadata": {"name": "x"}, "spec": {"rules": []}})
        assert err.value.missing == ["create nodefeaturerules.nfd.k8s-sigs.io",
                                     "update nodefeaturerules.nfd.k8s-sigs.io"]
        # an nfd-worker whose features.d is a ConfigMap volume: the viewer may read it, not update it
        worker = Workload("DaemonSet", "node-feature-discovery", "nfd-worker", "nfd-worker", "", (), {})
        mount = Mount("feature", "configMap", "/etc/kubernetes/node-feature-discovery/features.d",
                      volume="features-d", config_map="nfd-features")
        nfd = NfdDeployment("node-feature-discovery", None, "", None, worker, False, {"feature": mount})
        with pytest.raises(StoreForbidden) as cm_err:
            ConfigMapTarget(nfd, "feature", api_client=api, guard=guard, access=access).push("a", "A=1\n", [],
                                                                                             expected={})
        assert cm_err.value.missing == ["update configmaps in node-feature-discovery"]
    finally:
        api.close()
    assert not log.exists() or log.read_text() == ""
    names = {r["metadata"]["name"] for r in rbac_lab.store.list("nodefeaturerules.nfd.k8s-sigs.io")[0]}
    assert names == {"gpu-rule"}


def test_kubectl_auth_whoami_names_the_user_and_groups(rbac_lab: Any) -> None:
    """authentication.k8s.io/v1 SelfSubjectReview (kubectl auth whoami, sent as protobuf)."""
    p = kubectl(rbac_lab, "auth", "whoami", "--context", "lab-viewer", "-o", "json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)["status"]["userInfo"]
    assert info == {"username": "viewer", "groups": ["system:authenticated"]}
