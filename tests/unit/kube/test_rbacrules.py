"""RBAC rule matching, with the cases of kubernetes plugin/pkg/auth/authorizer/rbac/rbac_test.go TestRuleMatches
(star verb / group / resource, tuple expansion, `*/subresource`, non-resource `*` and sub-path) and
pkg/apis/rbac/v1/evaluation_helpers.go (resourceNames: any name when empty)."""

from __future__ import annotations

import pytest

from console.kube import rbacrules


def rule(verbs: list[str], groups: list[str] | None = None, resources: list[str] | None = None,
         names: list[str] | None = None, urls: list[str] | None = None) -> dict:
    out: dict = {"verbs": verbs}
    if groups is not None:
        out["apiGroups"] = groups
    if resources is not None:
        out["resources"] = resources
    if names:
        out["resourceNames"] = names
    if urls:
        out["nonResourceURLs"] = urls
    return out


@pytest.mark.parametrize(("r", "request_", "allowed"), [
    # star verb, exact match other
    (rule(["*"], ["group1"], ["resource1"]), ("verb1", "group1", "resource1"), True),
    (rule(["*"], ["group1"], ["resource1"]), ("verb1", "group2", "resource1"), False),
    (rule(["*"], ["group1"], ["resource1"]), ("verb1", "group1", "resource2"), False),
    # star group, exact match other
    (rule(["verb1"], ["*"], ["resource1"]), ("verb1", "group2", "resource1"), True),
    (rule(["verb1"], ["*"], ["resource1"]), ("verb2", "group1", "resource1"), False),
    # star resource, exact match other
    (rule(["verb1"], ["group1"], ["*"]), ("verb1", "group1", "resource2"), True),
    (rule(["verb1"], ["group1"], ["*"]), ("verb1", "group2", "resource1"), False),
    # tuple expansion
    (rule(["verb1", "verb2"], ["group1", "group2"], ["resource1", "resource2"]), ("verb2", "group2", "resource1"),
     True),
    (rule(["verb1", "verb2"], ["group1", "group2"], ["resource1", "resource2"]), ("verb3", "group1", "resource1"),
     False),
])
def test_rule_matches(r: dict, request_: tuple[str, str, str], allowed: bool) -> None:
    assert rbacrules.resource_allows(r, *request_) is allowed


def test_subresources_match_only_their_combined_name_or_star_slash() -> None:
    evict = rule(["create"], [""], ["pods/eviction"])
    assert rbacrules.resource_allows(evict, "create", "", "pods", "eviction")
    assert not rbacrules.resource_allows(evict, "create", "", "pods")  # the pods themselves are not granted
    assert not rbacrules.resource_allows(rule(["create"], [""], ["pods"]), "create", "", "pods", "eviction")
    star_sub = rule(["get"], ["*"], ["*/scale"])
    assert rbacrules.resource_allows(star_sub, "get", "apps", "deployments", "scale")
    assert not rbacrules.resource_allows(star_sub, "get", "apps", "deployments", "status")
    assert rbacrules.resource_allows(rule(["get"], [""], ["*"]), "get", "", "nodes", "proxy")  # * is everything


def test_resource_names_restrict_to_named_requests() -> None:
    named = rule(["get", "list"], [""], ["configmaps"], names=["foo"])
    assert rbacrules.resource_allows(named, "get", "", "configmaps", name="foo")
    assert not rbacrules.resource_allows(named, "get", "", "configmaps", name="bar")
    assert not rbacrules.resource_allows(named, "list", "", "configmaps")  # a list names nothing
    assert rbacrules.resource_allows(rule(["get"], [""], ["configmaps"]), "get", "", "configmaps", name="x")


@pytest.mark.parametrize(("urls", "path", "allowed"), [
    (["*"], "/foo", True), (["*"], "/foo/bar", True),
    (["/foo"], "/foo", True), (["/foo"], "/foo/bar", False),
    (["/foo/*"], "/foo/", True), (["/foo/*"], "/foo/bar", True), (["/foo/*"], "/foo", False),
    (["/foo/*"], "/foob", False),
])
def test_non_resource_urls(urls: list[str], path: str, allowed: bool) -> None:
    assert rbacrules.path_allows(rule(["get"], urls=urls), "get", path) is allowed
    assert not rbacrules.path_allows(rule(["post"], urls=urls), "get", path)
