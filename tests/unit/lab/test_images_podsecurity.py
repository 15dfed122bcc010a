"""The lab's registry list (containerd's reference rules) and Pod Security admission texts.

Sources: containerd/docker reference normalisation (docker.io/library/ for bare names, :latest by default);
kubernetes/pod-security-admission policy/check_*.go for the reasons and their details.
"""

from __future__ import annotations

import pytest

from console.config import DEFAULT_NODE_DEBUG_IMAGE
from console.lab import images
from console.lab.kubeapi.podsecurity import admit, violations
from console.lab.kubeapi.status import ApiError


def test_references_resolve_like_containerd():
    assert images.normalize("nginx") == ("docker.io/library/nginx", "latest")
    assert images.normalize("library/nginx:1.21") == ("docker.io/library/nginx", "1.21")
    assert images.normalize("registry.lab/app:1") == ("registry.lab/app", "1")
    assert images.normalize("localhost:5000/x") == ("localhost:5000/x", "latest")
    assert images.can_pull(DEFAULT_NODE_DEBUG_IMAGE) and images.can_pull("nginx") and images.can_pull("nginx:1.21")
    assert not images.can_pull("busybox:0.0.404") and not images.can_pull("quay.io/nobody/nothing:1")


DEBUG_POD = {"hostPID": True, "containers": [{"name": "node-shell", "image": "busybox:1.37.0",
                                             "securityContext": {"privileged": True}}]}


def test_baseline_refuses_a_node_debug_pod_with_the_admission_message():
    ns = {"metadata": {"name": "ops", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}
    with pytest.raises(ApiError) as e:
        admit(ns, {"metadata": {"name": "dbg"}, "spec": DEBUG_POD})
    assert e.value.code == 403 and e.value.reason == "Forbidden"
    assert e.value.message == ('pods "dbg" is forbidden: violates PodSecurity "baseline:latest": host namespaces '
                               '(hostPID=true), privileged (container "node-shell" must not set '
                               "securityContext.privileged=true)")


def test_levels():
    assert violations(DEBUG_POD, "privileged") == []
    kubectl_debug = {"hostPID": True, "hostNetwork": True, "containers": [{"name": "debugger"}],
                     "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}]}
    assert violations(kubectl_debug, "baseline") == ["host namespaces (hostNetwork=true, hostPID=true)",
                                                     'hostPath volumes (volume "host-root")']
    plain = {"containers": [{"name": "app"}]}
    assert violations(plain, "baseline") == []
    assert violations(plain, "restricted") == [
        'allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)',
        'unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"])',
        'runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true)',
        'seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" '
        'or "Localhost")']
    ok = {"containers": [{"name": "app", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"}}}]}
    assert violations(ok, "restricted") == []
    admit({"metadata": {"name": "default"}}, {"metadata": {"name": "x"}, "spec": DEBUG_POD})  # no label: privileged
