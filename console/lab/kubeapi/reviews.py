"""authorization.k8s.io/v1 SelfSubjectAccessReview and SelfSubjectRulesReview, answered by the lab's RBAC, and
authentication.k8s.io/v1 SelfSubjectReview (`kubectl auth whoami`: the request's user and groups).

As kubernetes pkg/registry/authorization/selfsubjectaccessreview/rest.go (the request's user, spec.resourceAttributes
or spec.nonResourceAttributes, status.allowed + reason) and selfsubjectrulesreview/rest.go (the rules of the
user in spec.namespace: status.resourceRules, nonResourceRules, incomplete, evaluationError). Nothing is stored.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from console.lab.kubeapi.encoding import json_response, read_json
from console.lab.kubeapi.rbac import MASTERS, Attributes, Rules, User
from console.lab.kubeapi.status import ApiError
from console.lab.resources import AUTHENTICATION_GROUP, AUTHORIZATION_GROUP

Obj = dict[str, Any]


def access_review(rules: Rules, user: User, spec: Obj) -> Obj:
    res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if not res and not non:
        raise ApiError(422, 'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
                       "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be "
                       "specified", "Invalid", {"kind": "SelfSubjectAccessReview", "group": AUTHORIZATION_GROUP})
    if res:
        attrs = Attributes(res.get("verb") or "", res.get("resource") or "", res.get("group") or "",
                           res.get("subresource") or "", res.get("namespace") or "", res.get("name") or "")
    else:
        non = non or {}
        attrs = Attributes(non.get("verb") or "", path=non.get("path") or "", resource_request=False)
    decision = rules.authorize(user, attrs)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    if decision.errors:
        status["evaluationError"] = "; ".join(decision.errors)
    return status


def rules_review(rules: Rules, user: User, spec: Obj) -> Obj:
    res, non, errors = rules.rules_for(user, spec.get("namespace") or "")
    if MASTERS in user.groups and not res:  # the privileged group holds everything even without a binding
        res = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
        non = [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
    status: Obj = {"resourceRules": res, "nonResourceRules": non, "incomplete": bool(errors)}
    if errors:
        status["evaluationError"] = "; ".join(errors)
    return status


async def review(request: web.Request, rules: Rules, user: User, resource: str) -> web.Response:
    """POST /apis/authorization.k8s.io/v1/{selfsubjectaccessreviews,selfsubjectrulesreviews} and
    /apis/authentication.k8s.io/v1/selfsubjectreviews."""
    body = await read_json(request)
    if not isinstance(body, dict):
        raise ApiError(400, "the body of the request is not a JSON object", "BadRequest", {})
    if resource == "selfsubjectreviews":
        return json_response({"kind": "SelfSubjectReview", "apiVersion": f"{AUTHENTICATION_GROUP}/v1",
                              "metadata": {"creationTimestamp": None},
                              "status": {"userInfo": {"username": user.name, "groups": list(user.groups)}}}, 201)
    spec = body.get("spec") or {}
    kind = "SelfSubjectAccessReview" if resource == "selfsubjectaccessreviews" else "SelfSubjectRulesReview"
    status = access_review(rules, user, spec) if kind == "SelfSubjectAccessReview" else rules_review(rules, user, spec)
    out = {"kind": kind, "apiVersion": f"{AUTHORIZATION_GROUP}/v1",
           "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
    return json_response(out, 201)
