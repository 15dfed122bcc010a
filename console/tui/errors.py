"""Turning exceptions into one-line messages that say what to do (no tracebacks, no secrets).

The faults of the backends are classified once, in console/faults.py; what is left here is the TUI's wording
for the rest (other API answers, and anything unexpected).
"""

from __future__ import annotations

from console.faults import KUBE_API_ERROR, OPENSTACK_ERRORS, Where, classify, describe, loaded, redact
from console.infra.inventory import VmListError

__all__ = ["explain", "redact"]


def explain(error: BaseException, *, server: str = "", kubeconfig: str = "", context: str = "") -> str:
    """A short message naming the problem and the fix."""
    if isinstance(error, VmListError):  # worded by console/infra/inventory.py: which backend, URI and setting
        return redact(str(error))
    fault = classify(error, Where(kubeconfig, context, server=server))
    if fault is not None:
        return fault.message
    status = getattr(error, "status", None)
    where = f" at {server}" if server else ""
    if isinstance(error, loaded(KUBE_API_ERROR)):
        reason = getattr(error, "reason", "") or ""
        return f"the API server{where} answered HTTP {status} {reason}; retry, or check the server's health"
    text = str(error)
    if isinstance(error, loaded(*OPENSTACK_ERRORS)) or "keystone" in text.lower():
        return (f"OpenStack: {redact(text)[:160]}; check clouds.yaml and OS_CLOUD, or your openrc's OS_* variables "
                "(VM columns are hidden until it works)")
    return describe(error)[:200]
