"""RBAC as kube-apiserver evaluates it, over the ClusterRoles, Roles and bindings in the lab's store.

Followed: kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go (`Authorize`, `RuleAllows`, `appliesTo`),
pkg/apis/rbac/v1/evaluation_helpers.go (console/kube/rbacrules.py) and
pkg/registry/rbac/validation/rule.go (`VisitRulesFor`: cluster role bindings everywhere, role bindings in
their namespace; a RoleBinding may name a ClusterRole). The `system:masters` group bypasses RBAC, as
kube-apiserver's privileged-group authorizer does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from console.kube.rbacrules import path_allows, resource_allows
from console.lab.resources import RBAC_GROUP

Obj = dict[str, Any]
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = (AUTHENTICATED,)


@dataclass(frozen=True)
class Attributes:
    """What a request asks (k8s.io/apiserver pkg/authorization/authorizer.AttributesRecord)."""

    verb: str
    resource: str = ""
    group: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""  # a non-resource request's URL path
    resource_request: bool = True


@dataclass
class Decision:
    allowed: bool
    reason: str = ""
    errors: list[str] = field(default_factory=list)


def rule_allows(attrs: Attributes, rule: Obj) -> bool:
    """rbac.go RuleAllows (console/kube/rbacrules.py: evaluation_helpers.go, shared with the console's reading of
    SelfSubjectRulesReviews)."""
    if attrs.resource_request:
        return resource_allows(rule, attrs.verb, attrs.group, attrs.resource, attrs.subresource, attrs.name)
    return path_allows(rule, attrs.verb, attrs.path)


# -- who a binding applies to (rbac.go appliesTo / appliesToUser) ----------------------------------------------
def applies_to(user: User, subject: Obj, binding_namespace: str) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        return subject.get("name") == user.name
    if kind == "Group":
        return subject.get("name") in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return user.name == f"system:serviceaccount:{ns}:{subject.get('name')}"
    return False


# -- the rules a user holds in a namespace (rule.go VisitRulesFor) ---------------------------------------------
@dataclass(frozen=True)
class Source:
    """Where a rule comes from, worded as rbac.go's reason: `ClusterRoleBinding "x" of ClusterRole "y"`."""

    binding_kind: str
    binding: str
    namespace: str
    role_kind: str
    role: str

    def __str__(self) -> str:
        where = f'RoleBinding "{self.binding}/{self.namespace}"' if self.binding_kind == "RoleBinding" \
            else f'ClusterRoleBinding "{self.binding}"'
        return f'{where} of {self.role_kind} "{self.role}"'


class Rules:
    """The RBAC objects of a store: `store.list(key)` of the four rbac.authorization.k8s.io resources."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def _role(self, kind: str, namespace: str, name: str) -> tuple[list[Obj] | None, str]:
        key = f"clusterroles.{RBAC_GROUP}" if kind == "ClusterRole" else f"roles.{RBAC_GROUP}"
        try:
            role = self.store.get(key, None if kind == "ClusterRole" else namespace, name)
        except Exception:  # the store's NotFound: a binding to a role that does not exist grants nothing
            where = f'{kind.lower()}.{RBAC_GROUP} "{name}" not found'
            return None, where
        return list(role.get("rules") or []), ""

    def visit(self, user: User, namespace: str) -> Iterator[tuple[Source, Obj | None, str]]:
        """(source, rule, error) for every rule bound to `user` in `namespace` ("" = cluster scope only)."""
        crbs, _ = self.store.list(f"clusterrolebindings.{RBAC_GROUP}")
        for b in crbs:
            yield from self._binding(user, b, "ClusterRoleBinding", "")
        if namespace:
            rbs, _ = self.store.list(f"rolebindings.{RBAC_GROUP}", namespace)
            for b in rbs:
                yield from self._binding(user, b, "RoleBinding", namespace)

    def _binding(self, user: User, b: Obj, kind: str, namespace: str) -> Iterator[tuple[Source, Obj | None, str]]:
        if not any(applies_to(user, s, namespace) for s in b.get("subjects") or []):
            return
        ref = b.get("roleRef") or {}
        src = Source(kind, b["metadata"]["name"], namespace, ref.get("kind", ""), ref.get("name", ""))
        rules, err = self._role(src.role_kind, namespace, src.role)
        if rules is None:
            yield src, None, err
            return
        for r in rules:
            yield src, r, ""

    def authorize(self, user: User, attrs: Attributes) -> Decision:
        """rbac.go Authorize: allowed by the first rule that allows it; otherwise no opinion (denied)."""
        if MASTERS in user.groups:
            return Decision(True, "")
        errors = []
        for src, rule, err in self.visit(user, attrs.namespace):
            if rule is None:
                errors.append(err)
            elif rule_allows(attrs, rule):
                who = f'User "{user.name}"'
                return Decision(True, f"RBAC: allowed by {src} to {who}")
        return Decision(False, "", errors)

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[Obj], list[str]]:
        """(resourceRules, nonResourceRules, errors) as a SelfSubjectRulesReview reports them."""
        res: list[Obj] = []
        non: list[Obj] = []
        errors: list[str] = []
        for _src, rule, err in self.visit(user, namespace):
            if rule is None:
                errors.append(err)
            elif rule.get("nonResourceURLs"):
                non.append({"verbs": list(rule.get("verbs") or []), "nonResourceURLs": list(rule["nonResourceURLs"])})
            else:
                out = {"verbs": list(rule.get("verbs") or []), "apiGroups": list(rule.get("apiGroups") or []),
                       "resources": list(rule.get("resources") or [])}
                if rule.get("resourceNames"):
                    out["resourceNames"] = list(rule["resourceNames"])
                res.append(out)
        return res, non, errors
