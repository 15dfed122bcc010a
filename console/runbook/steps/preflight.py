"""The runbooks' first step: prove the node access works before anything is changed.

A harmless `uname -r` on the target node with the configured method (debug pod,
SSH or guest agent). A debug pod that cannot start (image pull, PodSecurity
admission, RBAC) or an SSH refusal fails here within seconds with the cluster's
or ssh's own reason, instead of after the node was cordoned or the VM resized.
"""

from __future__ import annotations

import time
from typing import Any

from console.runbook.engine import Context, Step
from console.runbook.steps import kube

PREFLIGHT_TIMEOUT_S = 20.0


def preflight(plan: Any) -> Step:
    node = plan.node.name

    def act(ctx: Context) -> dict[str, Any]:
        method = ctx.clients.access.method
        t0 = time.monotonic()
        res = kube._run(ctx, "uname -r", f"preflight: node access ({method}) to {node}", PREFLIGHT_TIMEOUT_S)
        kernel = res.output.strip().splitlines()[-1] if res.output.strip() else ""
        ctx.emit(f"{method} runs commands on {node} (kernel {kernel or '?'})")
        return {"node_access": method, "kernel": kernel, "elapsed_s": round(time.monotonic() - t0, 3)}

    return Step("preflight", f"preflight: run `uname -r` on {node} through the node access", act, mutating=False)
