"""Turning exceptions into one-line messages that say what to do (no tracebacks, no secrets)."""

from __future__ import annotations

import re

_SECRET_RE = re.compile(r"(Bearer\s+|token[=:]\s*|password[=:]\s*)\S+", re.IGNORECASE)


def redact(text: str) -> str:
    return _SECRET_RE.sub(r"\1***", text)


def explain(error: BaseException, *, server: str = "") -> str:
    """A short message naming the problem and the fix."""
    name = type(error).__name__
    status = getattr(error, "status", None)
    where = f" at {server}" if server else ""
    if name in ("KubeConfigError", "VmListError"):
        return redact(str(error))
    if name == "ApiException" and status in (401, 403):
        return (f"the API server{where} refused the credentials (HTTP {status}); "
                "refresh them in your kubeconfig or pick another context with :ctx")
    if name == "ApiException":
        reason = getattr(error, "reason", "") or ""
        return f"the API server{where} answered HTTP {status} {reason}; retry, or check the server's health"
    text = str(error)
    if name in ("MaxRetryError", "NewConnectionError", "ConnectionRefusedError", "ProtocolError") or \
            "Connection refused" in text or "Failed to establish" in text:
        return (f"cannot reach the API server{where}; check the network/VPN, "
                "the server URL in your kubeconfig, or switch context with :ctx")
    if "SSL" in name or "CERTIFICATE" in text.upper():
        return f"TLS to the API server{where} failed ({redact(text)[:120]}); check the CA in your kubeconfig"
    if name.startswith(("Sdk", "Http")) or "keystone" in text.lower():
        return (f"OpenStack: {redact(text)[:160]}; check clouds.yaml and OS_CLOUD, or your openrc's OS_* variables "
                "(VM columns are hidden until it works)")
    return f"{name}: {redact(text)[:200]}"
