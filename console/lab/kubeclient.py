"""The lab's own small REST client for the API server it runs: JSON over HTTPS with the lab's admin certificate.

The lab's glue (agents, seeding) talks to the real kube-apiserver through this; it is not the console's client
(console/kube/), which the lab never imports: the lab must not share the code it is used to check.
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import urllib3

Obj = dict[str, Any]


class ApiError(Exception):
    """A Status answer: `code` (HTTP), `reason` (Status.reason) and its message."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason = code, reason


class KubeClient:
    def __init__(self, url: str, *, ca: Path, cert: Path, key: Path, timeout: float = 30) -> None:
        self.url = url.rstrip("/")
        # a connection per open watch (one per informer) besides the requests'
        self._pool = urllib3.PoolManager(ca_certs=str(ca), cert_file=str(cert), key_file=str(key), maxsize=32,
                                         retries=False, timeout=urllib3.Timeout(connect=5, read=timeout))
        self._watches: set[urllib3.BaseHTTPResponse] = set()
        self._closed = False

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) of the API server, the host without an IPv6 literal's brackets (what a pod's
        KUBERNETES_SERVICE_HOST/PORT say)."""
        host, _, port = self.url.split("://", 1)[-1].rpartition(":")
        return host.strip("[]"), int(port)

    def request(self, method: str, path: str, body: Obj | None = None, *,
                content_type: str = "application/json") -> Obj:
        """`content_type` of a PATCH: application/merge-patch+json or application/strategic-merge-patch+json."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        resp = self._pool.request(method, self.url + path, body=data, headers=headers)
        return _answer(resp.status, resp.data)

    def watch(self, path: str, params: dict[str, str], timeout: float = 330) -> Iterator[Obj]:
        """The watch's events, each `{"type": …, "object": …}`, until the server ends it (or a 410 ERROR event)."""
        # the server ends the watch before the read timeout would (bookmarks keep an idle one talking meanwhile)
        query = urllib.parse.urlencode({**params, "watch": "true", "allowWatchBookmarks": "true",
                                        "timeoutSeconds": str(int(timeout * 0.9))})
        resp = self._pool.request("GET", f"{self.url}{path}?{query}", headers={"Accept": "application/json"},
                                  preload_content=False, timeout=urllib3.Timeout(connect=5, read=timeout))
        self._watches.add(resp)
        try:
            if self._closed:  # closed while this watch was starting: close() did not see it
                return
            if resp.status != 200:
                _answer(resp.status, resp.read())
            pending = b""
            for chunk in resp.stream(2**16):  # the server flushes each event: chunks arrive as they happen
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        finally:
            self._watches.discard(resp)
            resp.close()  # a watch left mid-stream must not go back to the pool with its rest unread
            resp.release_conn()

    def close(self) -> None:
        """Ends the open watches too (their reads return at once) and the pooled connections."""
        self._closed = True
        for resp in list(self._watches):
            with contextlib.suppress(OSError, RuntimeError, ValueError):  # ended meanwhile
                resp.shutdown()
        self._pool.clear()


def _answer(status: int, raw: bytes) -> Obj:
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError:
        doc = {"message": raw[:500].decode(errors="replace")}
    if status >= 400:
        raise ApiError(status, str(doc.get("reason", "")), str(doc.get("message", f"HTTP {status}")))
    return doc if isinstance(doc, dict) else {"value": doc}
