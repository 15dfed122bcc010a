"""console/kube/access.py: Need wording, the needs of each action, and reading a rules review's answer as the
API server decides (rules in a namespace hold there; cluster-wide rules hold everywhere; incomplete → unknown)."""

from __future__ import annotations

from types import SimpleNamespace

from console.kube.access import READS, Access, Need, action_needs

SETTINGS = SimpleNamespace(node_access="debug-pod", node_debug_namespace="debug", lease_namespace="locks",
                           hook_store="cluster")


def test_need_reads_like_kubectl_auth_can_i() -> None:
    assert str(Need("patch", "nodes")) == "patch nodes"
    assert str(Need("create", "pods", subresource="eviction")) == "create pods/eviction"
    assert str(Need("create", "pods", namespace="kube-system")) == "create pods in kube-system"
    assert str(Need("update", "leases", "coordination.k8s.io", namespace="locks")) == \
        "update leases.coordination.k8s.io in locks"


def test_scale_up_needs_follow_the_settings() -> None:
    needs = action_needs("scale-up", SETTINGS)
    assert Need("patch", "nodes") in needs and Need("create", "pods", subresource="eviction") in needs
    assert Need("create", "pods", namespace="debug") in needs
    assert Need("get", "pods", subresource="log", namespace="debug") in needs
    assert Need("update", "leases", "coordination.k8s.io", namespace="locks") in needs
    assert not any(n.subresource == "proxy" for n in needs)  # configz has a fallback over node access
    assert len(needs) == len(set(needs))
    ssh = action_needs("scale-up", SimpleNamespace(**{**vars(SETTINGS), "node_access": "ssh"}))
    assert not any(n.namespace == "debug" for n in ssh)
    assert action_needs("hook-save", SimpleNamespace(hook_store="directory")) == ()
    assert action_needs("no-such-action", SETTINGS) == ()


VIEW = ({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["nodes", "pods", "events"]},)
DEBUG = ({"verbs": ["create", "get", "list", "watch", "delete"], "apiGroups": [""], "resources": ["pods"]},)


def test_cluster_rules_hold_everywhere_namespace_rules_only_there() -> None:
    access = Access(user="viewer", rules={"": (VIEW, True), "debug": (VIEW + DEBUG, True)})
    assert access.allows(Need("list", "nodes")) is True
    assert access.allows(Need("patch", "nodes")) is False
    assert access.allows(Need("create", "pods", namespace="debug")) is True
    assert access.allows(Need("create", "pods")) is False  # a RoleBinding in debug is not cluster-wide
    assert access.allows(Need("get", "pods", namespace="elsewhere")) is True  # cluster rules hold there
    assert access.allows(Need("create", "pods", namespace="elsewhere")) is None  # that namespace was not reviewed


def test_incomplete_rules_say_unknown_unless_an_access_review_answered() -> None:
    need = Need("patch", "nodes")
    assert Access(rules={"": (VIEW, False)}).allows(need) is None
    assert Access(rules={"": (VIEW, False)}, answers={need: False}).allows(need) is False
    assert Access(rules={"": (VIEW, False)}).allows(Need("list", "nodes")) is True
    assert Access(unknown="no answer").allows(need) is None


def test_why_not_and_cannot_read_name_the_missing_permissions() -> None:
    access = Access(user="viewer", rules={"": (VIEW, True), "debug": (VIEW, True), "locks": (VIEW, True)})
    why = access.why_not("scale-up", SETTINGS)
    assert why.startswith("scale-up needs: ")
    assert "patch nodes" in why and "create pods/eviction" in why and "create pods in debug" in why
    assert "list nodes" not in why
    assert access.why_not("no-such-action", SETTINGS) == ""
    assert access.cannot_read("nodes") == ""
    assert access.cannot_read("nodefeaturerules") == ("cannot list nodefeaturerules.nfd.k8s-sigs.io, watch "
                                                      "nodefeaturerules.nfd.k8s-sigs.io (forbidden for viewer)")
    assert Access(unknown="x").why_not("scale-up", SETTINGS) == ""  # unknown refuses nothing
    assert set(READS) >= {"nodes", "pods", "events", "nodefeatures", "nodefeaturerules", "metrics"}
