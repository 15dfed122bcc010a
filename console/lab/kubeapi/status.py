"""Kubernetes `Status` bodies and the error type the handlers raise."""

from __future__ import annotations

from typing import Any

from console.lab.resources import ResourceType
from console.lab.store import StoreError

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    500: "InternalError",
}


class ApiError(Exception):
    """An error that becomes a Status response with `code`."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason if reason is not None else _REASONS.get(code, "")
        self.details = details
        self.meta = meta  # the Status's ListMeta (an expired list's inconsistent `continue`)

    def body(self) -> dict[str, Any]:
        return status_body(self.code, self.message, self.reason, self.details, self.meta)


def status_body(
    code: int, message: str, reason: str = "", details: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": dict(meta or {}),
        "status": "Failure",
        "message": message,
    }
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def success_body(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def object_details(rt: ResourceType, name: str, uid: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    if uid:
        details["uid"] = uid
    return details


def from_store_error(err: StoreError, rt: ResourceType | None, name: str | None) -> ApiError:
    """Map a Store exception onto the Status the real API server would send."""
    details = object_details(rt, name) if rt is not None and name else None
    if err.code == 422 and rt is not None:
        details = object_details(rt, name or "")
        details["kind"] = rt.kind
    return ApiError(err.code, str(err), err.reason, details)


def not_found(rt: ResourceType, name: str) -> ApiError:
    group = f".{rt.group}" if rt.group else ""
    return ApiError(404, f'{rt.plural}{group} "{name}" not found', "NotFound", object_details(rt, name))


def invalid(rt: ResourceType, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; causes are (reason, message, field) like the API's field errors."""
    group = f".{rt.group}" if rt.group else ""
    text = ", ".join(f"{field}: {msg}" for _, msg, field in causes)
    if len(causes) > 1:
        text = f"[{text}]"
    details = {
        "name": name,
        **({"group": rt.group} if rt.group else {}),
        "kind": rt.kind,
        "causes": [{"reason": r, "message": m, "field": f} for r, m, f in causes],
    }
    return ApiError(422, f'{rt.kind}{group} "{name}" is invalid: {text}', "Invalid", details)
