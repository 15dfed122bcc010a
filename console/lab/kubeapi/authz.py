"""Authorization of the lab API server's requests: RBAC (kubeapi/rbac.py) for every user but `system:masters`.

The Status of a refusal is the API server's (k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go
`forbiddenMessage` + apimachinery `NewForbidden`): `nodes is forbidden: User "x" cannot list resource "nodes"
in API group "" at the cluster scope`, reason Forbidden, details {kind: nodes}; for a path,
`forbidden: User "x" cannot get path "/metrics"`. The request's verb is apiserver
pkg/endpoints/request/requestinfo.go's.
"""

from __future__ import annotations

from typing import Any

from console.lab.kubeapi.rbac import Attributes, Rules, User
from console.lab.kubeapi.status import ApiError


def request_verb(method: str, name: str | None, watching: bool) -> str:
    """The RBAC verb of a resource request (apiserver pkg/endpoints/request/requestinfo.go)."""
    if method == "GET":
        return "watch" if watching else ("get" if name else "list")
    if method == "DELETE":
        return "delete" if name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _field_name(query: Any) -> str:
    """requestinfo.go: a list/watch with fieldSelector metadata.name=X is a request on X."""
    for part in (query.get("fieldSelector") or "").split(","):
        key, _, value = part.partition("=")
        if key.strip() == "metadata.name" and value:
            return value.lstrip("=").strip()
    return ""


def resource_attributes(method: str, group: str, resource: str, sub: str | None, namespace: str | None,
                        name: str | None, watching: bool, query: Any) -> Attributes:
    verb = request_verb(method, name, watching)
    if not name and verb in ("list", "watch"):
        name = _field_name(query)
    return Attributes(verb, resource, group, sub or "", namespace or "", name or "")


def check(rules: Rules, user: User, attrs: Attributes) -> None:
    """Raise the API server's 403 when RBAC does not allow `attrs` for `user`."""
    if not rules.authorize(user, attrs).allowed:
        if attrs.resource_request:
            raise forbidden(user.name, attrs.verb, attrs.group, attrs.resource, attrs.subresource or None,
                            attrs.namespace or None, attrs.name or None)
        raise ApiError(403, f'forbidden: User "{user.name}" cannot {attrs.verb} path "{attrs.path}"', "Forbidden", {})


def forbidden(user: str, verb: str, group: str, resource: str, sub: str | None, namespace: str | None,
              name: str | None) -> ApiError:
    res = f"{resource}/{sub}" if sub else resource
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    why = f'User "{user}" cannot {verb} resource "{res}" in API group "{group}" {scope}'
    qualified = f"{resource}.{group}" if group else resource  # NewForbidden's GroupResource: no subresource
    what = f'{qualified} "{name}"' if name else qualified
    details: dict[str, str] = {"kind": resource}
    if group:
        details["group"] = group
    if name:
        details["name"] = name
    return ApiError(403, f"{what} is forbidden: {why}", "Forbidden", details)
