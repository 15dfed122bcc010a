"""Whether an RBAC PolicyRule (or a SelfSubjectRulesReview ResourceRule / NonResourceRule) allows a request.

As kubernetes pkg/apis/rbac/v1/evaluation_helpers.go: `VerbMatches`, `APIGroupMatches`, `ResourceMatches`
(`*`, the combined `pods/eviction`, and `*/eviction` for a subresource of any resource), `ResourceNameMatches`
(no names: any), `NonResourceURLMatches` (`*`, exact, or a prefix ending in `*`) and rbac.go `RuleAllows`.
Rules are the API's JSON dicts (camelCase keys).
"""

from __future__ import annotations

from typing import Any

Rule = dict[str, Any]


def verb_matches(rule: Rule, verb: str) -> bool:
    verbs = rule.get("verbs") or []
    return "*" in verbs or verb in verbs


def api_group_matches(rule: Rule, group: str) -> bool:
    groups = rule.get("apiGroups") or []
    return "*" in groups or group in groups


def resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    for r in rule.get("resources") or []:
        if r in ("*", combined):
            return True
        if subresource and r == f"*/{subresource}":
            return True
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    names = rule.get("resourceNames") or []
    return not names or name in names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or []:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def resource_allows(rule: Rule, verb: str, group: str, resource: str, subresource: str = "", name: str = "") -> bool:
    """rbac.go RuleAllows for a resource request."""
    combined = f"{resource}/{subresource}" if subresource else resource
    return (verb_matches(rule, verb) and api_group_matches(rule, group)
            and resource_matches(rule, combined, subresource) and resource_name_matches(rule, name))


def path_allows(rule: Rule, verb: str, path: str) -> bool:
    """rbac.go RuleAllows for a non-resource request (`/healthz`, `/metrics`)."""
    return verb_matches(rule, verb) and non_resource_url_matches(rule, path)
