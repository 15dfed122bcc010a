"""Requests to the API server by path, through the kubernetes client's ApiClient, without its generated API classes.

Importing `kubernetes.client.CoreV1Api` builds a few hundred pydantic models, and AppsV1Api more: 1.1 s and 0.6 s
of CPU in every process that touches them, on this project's 2-core machine (`python -X importtime -c "from
kubernetes.client.api import core_v1_api"`). A CLI command reads a handful of objects, so it asks for their
URLs directly. Auth, TLS, proxies, the pool and the errors stay the ApiClient's:
`param_serialize` + `call_api`, and a non-2xx answer raises its ApiException, as the generated methods do with
`_preload_content=False` (kubernetes/client/api_client.py `_call_with_legacy_options`). Bodies go as JSON
(its rest.py serialises a dict or list for any `application/*json` content type). The paths and query
parameters are the Kubernetes API's (k8s.io/apimachinery pkg/apis/meta/v1 ListOptions, DeleteOptions).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

LIST_PAGE = 500  # kubectl's --chunk-size default

# keyword (as the generated client names it) → query parameter
_QUERY = {
    "_continue": "continue",
    "limit": "limit",
    "watch": "watch",
    "resource_version": "resourceVersion",
    "resource_version_match": "resourceVersionMatch",
    "timeout_seconds": "timeoutSeconds",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "field_selector": "fieldSelector",
    "label_selector": "labelSelector",
    "send_initial_events": "sendInitialEvents",
    "dry_run": "dryRun",
    "field_manager": "fieldManager",
    "grace_period_seconds": "gracePeriodSeconds",
    "container": "container",
    "tail_lines": "tailLines",
    "limit_bytes": "limitBytes",
    "timestamps": "timestamps",
    "path": "path",
}


def request(
    api_client: Any,
    method: str,
    path: str,
    *,
    params: Mapping[str, str] | None = None,
    body: Any = None,
    content_type: str = "application/json",
    accept: str = "application/json",
    timeout: Any = None,
    **options: Any,
) -> Any:
    """One request; `path` may hold `{name}` parts, filled from `params` and quoted as the generated client
    quotes them. Returns the raw urllib3 response (`.data`; lines when watching)."""
    from kubernetes.client.exceptions import ApiException

    query = [(_QUERY.get(k, k), v) for k, v in options.items() if v is not None]  # a bool goes as "true"/"false"
    headers = {"Accept": accept} | ({"Content-Type": content_type} if body is not None else {})
    serialized = api_client.param_serialize(
        method,
        path,
        path_params=dict(params or {}),
        query_params=query,
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(*serialized, _request_timeout=timeout)
    if not 200 <= response.status <= 299:
        response.read()
        raise ApiException.from_response(http_resp=response, body=None, data=None)
    return response.response


def get(
    api_client: Any, path: str, *, params: Mapping[str, str] | None = None, timeout: Any = None, **options: Any
) -> dict[str, Any]:
    """GET → the JSON object."""
    doc: dict[str, Any] = json.loads(request(api_client, "GET", path, params=params, timeout=timeout, **options).data)
    return doc


def items(
    api_client: Any,
    path: str,
    *,
    params: Mapping[str, str] | None = None,
    page: int = LIST_PAGE,
    timeout: Any = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """Every item of a list, read `page` at a time with limit/continue (kubernetes.io/docs/reference/using-api/
    api-concepts/#retrieving-large-results-sets-in-chunks), so a big answer never arrives as one response."""
    out: list[dict[str, Any]] = []
    token = ""
    while True:
        data = get(api_client, path, params=params, timeout=timeout, limit=page, _continue=token or None, **options)
        out += data.get("items") or []
        token = (data.get("metadata") or {}).get("continue") or ""
        if not token:
            return out


def send(
    api_client: Any,
    method: str,
    path: str,
    body: Any,
    *,
    params: Mapping[str, str] | None = None,
    content_type: str = "application/json",
    timeout: Any = None,
    **options: Any,
) -> dict[str, Any]:
    """POST, PUT, PATCH or DELETE with a JSON body → the JSON answer."""
    data = request(
        api_client, method, path, params=params, body=body, content_type=content_type, timeout=timeout, **options
    ).data
    doc: dict[str, Any] = json.loads(data) if data else {}
    return doc


class Lister:
    """A list+watch callable for one collection, as the caches and waits call the generated `list_*` methods:
    `lister(limit=500, _continue=..., watch=True, ...)` → the raw response."""

    def __init__(self, api_client: Any, path: str, params: Mapping[str, str] | None = None) -> None:
        self.api_client = api_client
        self.path = path  # e.g. /api/v1/nodes, /api/v1/namespaces/{namespace}/pods
        self.params = dict(params or {})

    def __call__(self, *, _preload_content: bool = False, _request_timeout: Any = None, **options: Any) -> Any:
        return request(self.api_client, "GET", self.path, params=self.params, timeout=_request_timeout, **options)
