"""coordination.k8s.io/v1 Leases: read, create-if-absent, replace with optimistic concurrency.

The calls client-go's LeaseLock makes (tools/leaderelection/resourcelock/leaselock.go): Get; Create, which
fails with 409 AlreadyExists when another client created the Lease first; Update of the whole object carrying
the resourceVersion it was read at, which fails with 409 Conflict when it changed since. What a holder does
with them (acquire, renew, take over, release) is the caller's (console/runbook/lock.py).

Times are metav1.MicroTime: RFC3339 with exactly six fractional digits (apimachinery's RFC3339Micro). The
kubernetes client's models would send `datetime.isoformat()`, which drops the fraction when it is zero, so
bodies are sent as dicts with the times formatted here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]


class LeaseError(Exception):
    """A Lease call failed (RBAC, namespace, API down); the message says which and what to do."""


class LeaseConflict(LeaseError):
    """409: someone else created or changed the Lease since we read it (re-read and decide again)."""


def micro_time(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Lease:
    namespace: str
    name: str
    holder: str
    duration_s: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int
    resource_version: str
    raw: Obj

    @classmethod
    def from_api(cls, obj: Obj) -> Lease:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        return cls(meta.get("namespace", ""), meta.get("name", ""), spec.get("holderIdentity") or "",
                   int(spec.get("leaseDurationSeconds") or 0), _parse_time(spec.get("acquireTime")),
                   _parse_time(spec.get("renewTime")), int(spec.get("leaseTransitions") or 0),
                   str(meta.get("resourceVersion", "")), obj)

    @property
    def expires(self) -> datetime | None:
        """renewTime + leaseDurationSeconds (None: never renewed)."""
        return self.renew_time + timedelta(seconds=self.duration_s) if self.renew_time else None

    def held(self, now: datetime) -> bool:
        """A holder is named and its last renewal has not run out."""
        return bool(self.holder) and self.expires is not None and self.expires > now


def spec(holder: str, duration_s: int, acquired: datetime, renewed: datetime, transitions: int) -> Obj:
    return {"holderIdentity": holder, "leaseDurationSeconds": duration_s, "acquireTime": micro_time(acquired),
            "renewTime": micro_time(renewed), "leaseTransitions": transitions}


def _coordination(api_client: Any) -> Any:
    from kubernetes import client

    return client.CoordinationV1Api(api_client)


def _call(what: str, namespace: str, fn: Any, *args: Any, **kw: Any) -> Obj | None:
    """Run a client call; JSON dict back, None on 404 for reads, typed errors otherwise."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        resp = fn(*args, _preload_content=False, _request_timeout=30, **kw)
    except ApiException as e:
        if e.status == 409:
            raise LeaseConflict(f"{what}: {_message(e)}") from e
        if e.status == 404 and what.startswith("reading"):
            return None
        if e.status == 403:
            raise LeaseError(f"{what}: forbidden ({_message(e)}); the console needs get/create/update on "
                             f"leases.coordination.k8s.io in namespace {namespace}, or set lease_namespace "
                             "to a namespace where you have them") from e
        if e.status == 404:
            raise LeaseError(f"{what}: {_message(e)} (set lease_namespace to an existing namespace)") from e
        raise LeaseError(f"{what}: HTTP {e.status} {_message(e)}") from e
    except HTTPError as e:
        raise LeaseError(f"{what}: the API server cannot be reached ({e})") from e
    return json.loads(resp.data)


def _message(e: Any) -> str:
    try:
        return str(json.loads(e.body).get("message") or e.reason)
    except (TypeError, ValueError, AttributeError):
        return str(e.reason)


def get(api_client: Any, namespace: str, name: str) -> Lease | None:
    obj = _call(f"reading Lease {namespace}/{name}", namespace,
                _coordination(api_client).read_namespaced_lease, name, namespace)
    return Lease.from_api(obj) if obj is not None else None


def create(api_client: Any, namespace: str, name: str, lease_spec: Obj, labels: dict[str, str] | None = None) -> Lease:
    """Create-if-absent: LeaseConflict (409 AlreadyExists) when another client was first."""
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": lease_spec}
    obj = _call(f"creating Lease {namespace}/{name}", namespace,
                _coordination(api_client).create_namespaced_lease, namespace, body)
    return Lease.from_api(obj or {})


def update(api_client: Any, lease: Lease, lease_spec: Obj) -> Lease:
    """Replace the spec of `lease` as read: LeaseConflict (409) when it changed since (resourceVersion)."""
    body = {**lease.raw, "spec": lease_spec}
    body["metadata"] = {**lease.raw.get("metadata", {}), "resourceVersion": lease.resource_version}
    obj = _call(f"updating Lease {lease.namespace}/{lease.name}", lease.namespace,
                _coordination(api_client).replace_namespaced_lease, lease.name, lease.namespace, body)
    return Lease.from_api(obj or {})
