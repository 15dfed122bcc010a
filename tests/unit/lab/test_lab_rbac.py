"""The lab's RBAC authorizer over a Store, as kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go and
pkg/registry/rbac/validation/rule.go decide: cluster role bindings everywhere, a RoleBinding (to a Role or a
ClusterRole) only in its namespace, subjects by User / Group / ServiceAccount, system:masters bypasses, a binding
to a missing role grants nothing and is reported (SelfSubjectRulesReview `incomplete`, `evaluationError`)."""

from __future__ import annotations

from console.lab.kubeapi.rbac import Attributes, Rules, User
from console.lab.kubeapi.reviews import access_review, rules_review
from console.lab.rbac_policy import bootstrap, lab_users, seed
from console.lab.store import Store

G = "rbac.authorization.k8s.io"


def store() -> Store:
    s = Store()
    for ns in ("default", "team", "kube-system"):
        s.create("namespaces", {"metadata": {"name": ns}})
    seed(s, bootstrap())
    seed(s, lab_users())
    return s


def binding(kind: str, name: str, role_kind: str, role: str, subjects: list[dict], namespace: str = "") -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "roleRef": {"apiGroup": G, "kind": role_kind, "name": role}, "subjects": subjects}


def test_cluster_and_namespace_scopes() -> None:
    s = store()
    s.create(f"rolebindings.{G}", binding("RoleBinding", "ann-view", "ClusterRole", "view",
                                          [{"kind": "User", "name": "ann"}], "team"))
    rules, ann = Rules(s), User("ann")
    assert rules.authorize(ann, Attributes("list", "pods", namespace="team")).allowed
    assert not rules.authorize(ann, Attributes("list", "pods", namespace="default")).allowed
    assert not rules.authorize(ann, Attributes("list", "pods")).allowed  # all namespaces: cluster bindings only
    assert not rules.authorize(ann, Attributes("delete", "pods", namespace="team")).allowed
    assert rules.authorize(ann, Attributes("get", path="/version", resource_request=False)).allowed  # discovery
    assert not rules.authorize(ann, Attributes("get", path="/metrics", resource_request=False)).allowed


def test_subjects_groups_service_accounts_and_masters() -> None:
    s = store()
    s.create(f"roles.{G}", {"metadata": {"name": "lease-rw", "namespace": "team"},
                            "rules": [{"verbs": ["get", "update"], "apiGroups": ["coordination.k8s.io"],
                                       "resources": ["leases"], "resourceNames": ["mine"]}]})
    s.create(f"rolebindings.{G}", binding("RoleBinding", "sa", "Role", "lease-rw",
                                          [{"kind": "ServiceAccount", "name": "bot"},
                                           {"kind": "Group", "name": "ops"}], "team"))
    rules = Rules(s)
    lease = Attributes("update", "leases", "coordination.k8s.io", namespace="team", name="mine")
    assert rules.authorize(User("system:serviceaccount:team:bot"), lease).allowed
    assert not rules.authorize(User("system:serviceaccount:default:bot"), lease).allowed
    assert rules.authorize(User("carl", ("ops", "system:authenticated")), lease).allowed
    other = Attributes("update", "leases", "coordination.k8s.io", namespace="team", name="theirs")
    assert not rules.authorize(User("carl", ("ops",)), other).allowed  # resourceNames
    assert rules.authorize(User("root", ("system:masters",)), Attributes("delete", "nodes", name="x")).allowed


def test_a_binding_to_a_missing_role_grants_nothing_and_says_so() -> None:
    s = store()
    s.create(f"clusterrolebindings.{G}", binding("ClusterRoleBinding", "dangling", "ClusterRole", "gone",
                                                 [{"kind": "User", "name": "dan"}]))
    review = rules_review(Rules(s), User("dan"), {"namespace": "default"})
    assert review["incomplete"] is True and 'clusterrole.rbac.authorization.k8s.io "gone" not found' in \
        review["evaluationError"]
    assert [r for r in review["resourceRules"] if "nodes" in r["resources"]] == []


def test_access_review_reason_names_the_binding() -> None:
    status = access_review(Rules(store()), User("operator"), {"resourceAttributes": {
        "verb": "create", "resource": "pods", "subresource": "eviction", "namespace": "kube-system"}})
    assert status == {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "lab-operator" of '
                                                 'ClusterRole "lab-operator" to User "operator"'}
    assert access_review(Rules(store()), User("viewer"), {"resourceAttributes": {
        "verb": "patch", "resource": "nodes"}}) == {"allowed": False}
