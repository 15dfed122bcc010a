"""List and watch one collection through the ApiClient's own request path, without CoreV1Api.

Importing `kubernetes.client.CoreV1Api` builds a few hundred pydantic models (seconds of CPU at start, on a
loaded machine more): the caches need two URLs, so they ask for them directly and the first node page is
on its way before the generated API class is imported. Auth, TLS, proxies and the pool stay the
ApiClient's (`param_serialize` + `call_api`, as the generated methods call them); the query parameters are
the Kubernetes API's list options (k8s.io/apimachinery pkg/apis/meta/v1 ListOptions).
"""

from __future__ import annotations

from typing import Any

# keyword (as the generated client names it) → query parameter
_QUERY = {
    "_continue": "continue", "limit": "limit", "watch": "watch", "resource_version": "resourceVersion",
    "resource_version_match": "resourceVersionMatch", "timeout_seconds": "timeoutSeconds",
    "allow_watch_bookmarks": "allowWatchBookmarks", "field_selector": "fieldSelector",
    "label_selector": "labelSelector", "send_initial_events": "sendInitialEvents",
}


class Lister:
    """`lister(limit=500, _continue=..., watch=True, ...)` → the raw urllib3 response (`.data`, or lines when
    watching); a non-2xx answer raises the client's ApiException, as `list_node(_preload_content=False)` does."""

    def __init__(self, api_client: Any, path: str) -> None:
        self.api_client = api_client
        self.path = path  # e.g. /api/v1/nodes, /api/v1/pods

    def __call__(self, *, _preload_content: bool = False, _request_timeout: Any = None, **options: Any) -> Any:
        from kubernetes.client.exceptions import ApiException

        query = [(_QUERY[k], v) for k, v in options.items() if v is not None]
        request = self.api_client.param_serialize("GET", self.path, query_params=query,
                                                  header_params={"Accept": "application/json"},
                                                  auth_settings=["BearerToken"])
        response = self.api_client.call_api(*request, _request_timeout=_request_timeout)
        if not 200 <= response.status <= 299:
            response.read()
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        return response.response
