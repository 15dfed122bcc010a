"""The console's permission review (console/kube/access.py) and the stores built with it, against kube-apiserver's
RBAC on the lab: its contexts `lab` (system:masters), `lab-viewer` and `lab-operator` (console/lab/rbac_policy.py)
and the fault file's `lab-nobody` (authenticated, no binding).

What real clusters answer: SelfSubjectRulesReview and SelfSubjectReview (kubernetes plugin/pkg/auth/authorizer/
rbac/rbac.go RulesFor, pkg/registry/authentication/selfsubjectreview).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from labstart import start_lab

from console.lab.faultfiles import FaultFiles
from console.lab.store import NotFound
from console.lab.world import Lab

NFR = "nodefeaturerules.nfd.k8s-sigs.io"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("default", tmp_path_factory.mktemp("lab-access"), metrics=False)


@pytest.fixture
def gpu_rule(lab: Lab) -> Iterator[str]:
    """A NodeFeatureRule the cluster has (created by the lab's own user)."""
    lab.store.create(NFR, {"metadata": {"name": "gpu-rule"}, "spec": {"rules": [
        {"name": "gpu", "labels": {"example.com/gpu": "true"},
         "matchFeatures": [{"feature": "kernel.loadedmodule", "matchExpressions": {"nvidia": {"op": "Exists"}}}]}]}})
    try:
        yield "gpu-rule"
    finally:
        with contextlib.suppress(NotFound):
            lab.store.delete(NFR, None, "gpu-rule")


def _client(kubeconfig: Path, context: str | None = None) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig), context=context)


def test_console_access_review_against_the_lab(lab: Lab) -> None:
    """console/kube/access.review through the kubernetes client: rules reviews per namespace, the user's name from
    a SelfSubjectReview, and the missing needs of a scale-up named for the viewer; none for the operator."""
    from console.kube.access import Need, review

    settings = SimpleNamespace(node_access="debug-pod", node_debug_namespace="default", lease_namespace="default",
                               hook_store="cluster")
    for context, user in (("lab-viewer", "viewer"), ("lab-operator", "operator"), ("lab", "lab-admin")):
        api = _client(lab.state.kubeconfig, context)
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
    api = _client(FaultFiles(lab.state.root / "faults").forbidden)
    try:
        nobody = review(api, settings)
    finally:
        api.close()
    assert nobody.cannot_read("nodes") == "cannot list nodes, watch nodes (forbidden for lab-nobody)"


def test_stores_refuse_unsent_what_rbac_does_not_allow(lab: Lab, gpu_rule: str, tmp_path: Path) -> None:
    """Below any UI: the NodeFeatureRule store and the ConfigMap file target built with the user's Access refuse a
    write this user may not make before the guard logs an intent or a request is sent (nfdstore.py,
    nfdfiles_cm.py)."""
    from console.audit import AuditLog
    from console.guard import Guard
    from console.kube.access import Need, review
    from console.kube.nfdfiles_cm import ConfigMapTarget
    from console.kube.nfdstore import RuleStore, StoreForbidden
    from console.nfd.deployment import Mount, NfdDeployment, Workload

    api = _client(lab.state.kubeconfig, "lab-viewer")
    log = tmp_path / "audit.log"
    seen = len(lab.api_requests())
    try:
        # the ConfigMap a DaemonSet volume names: its namespace's permissions reviewed too (as `nfd files` does)
        access = review(api, SimpleNamespace(hook_store="cluster"),
                        extra=[Need(v, "configmaps", namespace="node-feature-discovery") for v in ("get", "update")])
        guard = Guard(read_only=False, audit=AuditLog(log))
        rules = RuleStore(api, guard=guard, access=access)
        assert [r["metadata"]["name"] for r in rules.list()] == [gpu_rule]  # reads still work
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
    writes = [r for r in lab.api_requests()[seen:] if not r.startswith("GET ") and not r.startswith(
        ("POST /apis/authorization.k8s.io/", "POST /apis/authentication.k8s.io/"))]
    assert writes == []  # the API server saw the permission reviews and reads only: no refused write was sent
    assert {r["metadata"]["name"] for r in lab.store.list(NFR)[0]} == {gpu_rule}
