"""Just enough authorization for an authenticated user with no RBAC bindings: every resource request is 403.

The Status is the API server's (k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go
`forbiddenMessage` + apimachinery `NewForbidden`): `nodes is forbidden: User "x" cannot list resource "nodes"
in API group "" at the cluster scope`, reason Forbidden, details {kind: nodes}. Non-resource paths (discovery,
/version) stay open, as the `system:discovery` ClusterRole grants them to every authenticated user.
"""

from __future__ import annotations

from console.lab.kubeapi.status import ApiError


def request_verb(method: str, name: str | None, watching: bool) -> str:
    """The RBAC verb of a resource request (apiserver pkg/endpoints/request/requestinfo.go)."""
    if method == "GET":
        return "watch" if watching else ("get" if name else "list")
    if method == "DELETE":
        return "delete" if name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def forbidden(user: str, verb: str, group: str, resource: str, sub: str | None, namespace: str | None,
              name: str | None) -> ApiError:
    res = f"{resource}/{sub}" if sub else resource
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    why = f'User "{user}" cannot {verb} resource "{res}" in API group "{group}" {scope}'
    qualified = f"{res}.{group}" if group else res
    what = f'{qualified} "{name}"' if name else qualified
    details: dict[str, str] = {"kind": res}
    if group:
        details["group"] = group
    if name:
        details["name"] = name
    return ApiError(403, f"{what} is forbidden: {why}", "Forbidden", details)
