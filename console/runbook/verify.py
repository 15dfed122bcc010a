"""Verification: the kubelet's capacity matches the VM, and the planned Pending pods run (or why not)."""

from __future__ import annotations

import time
from typing import Any

from console.kube import nodes_ops
from console.kube.model import NodeInfo, cpu_millis, mem_bytes
from console.kube.retrywatch import WaitTimedOut, poll_again
from console.runbook import placement

MAX_OVERHEAD = 0.06  # guest kernel overhead above this fraction of RAM means memory is missing


def capacity_matches(node: dict[str, Any] | None, vcpus: int, memory_mib: int | None) -> bool:
    """Ready, capacity cpu == vCPUs, and capacity memory within the kernel overhead below the VM's RAM."""
    if node is None:
        return False
    info = NodeInfo.from_api(node)
    if info.ready != "True":
        return False
    cap = (node.get("status") or {}).get("capacity") or {}
    if cpu_millis(cap.get("cpu")) != vcpus * 1000:
        return False
    if memory_mib is None:  # memory not checked (the balloon target is unknown to libvirt)
        return True
    return memory_matches(mem_bytes(cap.get("memory")), memory_mib)


def memory_matches(total_bytes: float, memory_mib: int) -> bool:
    """A guest's MemTotal (= the kubelet's memory capacity) for `memory_mib` of RAM: at most the RAM, at most
    MAX_OVERHEAD below it."""
    ram = memory_mib * 2**20
    return ram * (1 - MAX_OVERHEAD) <= total_bytes <= ram


def describe_capacity(node: dict[str, Any] | None) -> str:
    if node is None:
        return "node not found"
    info = NodeInfo.from_api(node)
    cap = (node.get("status") or {}).get("capacity") or {}
    return f"{info.status}, capacity cpu {cap.get('cpu')} / memory {cap.get('memory')}"


def wait_capacity(
    api: Any, node: str, vcpus: int, memory_mib: int | None, timeout: float
) -> tuple[dict[str, Any], float]:
    """Watch the node until its capacity matches; returns (node, seconds waited). TimeoutError says what it shows."""
    t0 = time.monotonic()
    try:
        obj = nodes_ops.watch_until(api, "node", node, lambda o: capacity_matches(o, vcpus, memory_mib), timeout)
    except WaitTimedOut as e:  # what the watch saw last: the server may be away now
        shows = f"it shows {describe_capacity(e.last)}" if e.seen else "it could not be read"
        raise TimeoutError(
            f"node {node} did not report cpu {vcpus}{f' / ~{memory_mib} MiB' if memory_mib else ''} "
            f"within {timeout:g}s: {shows}{e.outage}"
        ) from None
    return obj or {}, time.monotonic() - t0


def wait_pods_running(api: Any, pods: list[str], timeout: float) -> list[str]:
    """Wait for each "namespace/name" to be Running; returns problems (empty: all running)."""
    problems = []
    deadline = time.monotonic() + timeout
    for key in pods:
        ns, name = key.split("/", 1)

        def running(p: dict[str, Any] | None) -> bool:
            return p is None or (p.get("status") or {}).get("phase") in ("Running", "Succeeded")

        try:
            pod = nodes_ops.watch_until(api, "pod", name, running, max(0.5, deadline - time.monotonic()), namespace=ns)
            if pod is None:
                problems.append(f"{key} was deleted")
        except WaitTimedOut as e:
            if e.outage:  # the server is away: its events cannot be read either
                problems.append(f"{key} not seen Running{e.outage}")
                continue
            why = nodes_ops.latest_failed_scheduling(api, ns, name) or "no FailedScheduling event"
            problems.append(f"{key} still Pending: {why}")
    return problems


def share_report(node: str, want: list[str], pods: dict[str, dict[str, Any] | None], on_node: list[dict[str, Any]],
                 candidates: set[str]) -> placement.Report:
    """Where this run's share of a plan runs (pure; `want`: the pods planned onto `node`, `pods`: their objects as
    read, None when deleted; `on_node`: the pods bound to `node` now).

    A wanted pod's slot on `node` is filled by the pod itself, or by a pod of the same controller that was Pending
    with it (`candidates`): the scheduler takes interchangeable pods (a Job's, a ReplicaSet's) in its own queue
    order (the PrioritySort plugin: priority, then the time queued), not in the plan's. The report names the pod
    that runs there, never the planned one in its place (console/runbook/placement.py); `problems()` are the
    wanted pods still waiting (a wanted pod Running on another node is not one, as the single-node runbook
    accepts it)."""
    spares = [p for p in on_node if placement.key(p) in candidates and placement.key(p) not in want]
    return placement.report(dict.fromkeys(want, node), pods, spares)


def wait_share_running(api: Any, node: str, want: list[str], candidates: set[str], timeout: float,
                       sleep: Any = time.sleep) -> placement.Report:
    """Wait until `share_report` has no problem left (up to `timeout`), reading the pods from the API server each
    time; the last report, with the scheduler's latest FailedScheduling message for each wanted pod still Pending.
    `sleep`: a wait a stop request cuts (ctx.sleep)."""
    deadline = time.monotonic() + timeout
    down = False
    while True:
        try:
            pods = {w: nodes_ops.get_pod_raw(api, *w.split("/", 1)) for w in want}
            report = share_report(node, want, pods, nodes_ops.pods_on_node_raw(api, node), candidates)
        except Exception as e:  # the API server away for a moment: poll again until the deadline, as the watches do
            if not poll_again(e, deadline, f"the pods of {node}", down):
                raise
            down = True
            sleep(1.0)
            continue
        down = False
        if not report.problems() or time.monotonic() >= deadline:
            break
        sleep(1.0)
    return report.explain(failed_scheduling(api, report.pending()))


def failed_scheduling(api: Any, pending: list[str]) -> dict[str, str]:
    """"ns/name" → the scheduler's latest FailedScheduling message (or that there is none) for each pod."""
    return {k: nodes_ops.latest_failed_scheduling(api, *k.split("/", 1)) or "no FailedScheduling event"
            for k in pending}
