"""Steps on the Kubernetes side: cordon, drain, uncordon, vCPU onlining, kubelet restart, pod verification."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from console.kube import drain as drains
from console.kube import kubeletinfo, nodes_ops
from console.kube.nodeaccess import NodeAccessError
from console.runbook import cordon as cordons
from console.runbook import verify
from console.runbook.engine import Context, Step, StepFailed

CPU_STATE = "/var/lib/kubelet/cpu_manager_state"
MEMORY_STATE = "/var/lib/kubelet/memory_manager_state"
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"  # kubeadm's --config, read when configz is not reachable
RESIZE_GATE = kubeletinfo.RESIZE_GATES[0]
GUEST_WAIT_S = 20.0  # for hot-added vCPUs and the raised balloon to show in the guest


def _api(ctx: Context) -> Any:
    return ctx.clients.api


def _node(ctx: Context) -> str:
    return ctx.journal.doc["node"]


def _raw_node(ctx: Context) -> dict[str, Any]:
    return nodes_ops.get_node_raw(_api(ctx), _node(ctx))


def _unschedulable(ctx: Context) -> bool:
    return bool((_raw_node(ctx).get("spec") or {}).get("unschedulable"))


def _found_cordoned(ctx: Context, raw: dict[str, Any]) -> None:
    """Journal, once, whether the run found the node cordoned by someone else — a cordon it leaves in place.
    A cordon the console marked (console/runbook/cordon.py: a run that died or whose journal was discarded)
    is not: this run takes it over and uncordons the node at its end."""
    if "was_cordoned" not in ctx.facts:
        owner = cordons.marked_by(raw)
        ctx.remember(was_cordoned=cordons.someone_elses(raw), **({"adopted_cordon_of": owner} if owner else {}))


def cordon_and_drain(plan: Any) -> list[Step]:
    node = plan.node.name

    def cordon(ctx: Context) -> dict[str, Any]:
        raw = _raw_node(ctx)
        _found_cordoned(ctx, raw)
        if not ctx.facts["was_cordoned"]:
            cordons.cordon(_api(ctx), node, ctx.journal.run_id)
        return {}

    def already(ctx: Context) -> bool:
        raw = _raw_node(ctx)
        _found_cordoned(ctx, raw)
        return bool((raw.get("spec") or {}).get("unschedulable"))

    def undo_cordon(ctx: Context) -> str:
        if ctx.facts.get("was_cordoned"):
            return f"{node} left cordoned, as it was before the run"
        cordons.uncordon(_api(ctx), node)
        return f"{node} uncordoned"

    req = plan.request
    flags = {"force": req.force, "delete_emptydir_data": req.delete_emptydir_data}

    def drain(ctx: Context) -> dict[str, Any]:
        try:
            with ctx.waiting():
                items = drains.drain(_api(ctx), node, timeout=req.drain_timeout, on_progress=ctx.emit,
                                     sleep=ctx.sleep, **flags)
        except drains.DrainStuck as e:
            # the node stays cordoned and the VM untouched: the admin fixes the budget, the rerun resumes here
            raise StepFailed(f"drain {node}: {e}", resumable=True) from e
        except (nodes_ops.NodeOpError, TimeoutError) as e:
            raise StepFailed(f"drain {node}: {e}") from e
        return {"evicted": [i.key for i in items if i.action == "evict"],
                "deleted_for_good": [i.key for i in items if i.lost]}

    def drained(ctx: Context) -> bool:
        return not any(i.action in ("evict", "blocked") for i in drains.plan_node(_api(ctx), node, **flags))

    evict = ", ".join(e.key for e in plan.evictions) or "nothing to evict"
    return [
        Step("cordon", f"cordon {node}", cordon, done=already, undo=undo_cordon,
             audit_target=lambda _c: f"node/{node}", describe=lambda c: {"unschedulable": _unschedulable(c)}),
        Step("drain", f"drain {node} ({evict})", drain, done=drained, audit_target=lambda _c: f"node/{node}"),
    ]


def uncordon(plan: Any) -> Step:
    node = plan.node.name

    def act(ctx: Context) -> dict[str, Any]:
        if not ctx.facts.get("was_cordoned"):
            cordons.uncordon(_api(ctx), node)
        return {}

    def done(ctx: Context) -> bool:
        if ctx.facts.get("was_cordoned"):
            return True
        raw = _raw_node(ctx)  # uncordoned by hand (kubectl keeps annotations): the mark still goes
        return not (raw.get("spec") or {}).get("unschedulable") and not cordons.mark_left(raw)

    return Step("uncordon", f"uncordon {node}", act, done=done, audit_target=lambda _c: f"node/{node}",
                describe=lambda c: {"unschedulable": _unschedulable(c)})


def verify_pods(plan: Any) -> Step:
    pods = list(plan.will_fit)
    timeout = plan.request.pods_timeout
    share = plan.request.pods is not None  # a fleet node's share of a plan: interchangeable pods may swap places

    def act(ctx: Context) -> dict[str, Any]:
        # a resumed run re-plans when some pods may already run: verify what the run planned at its start
        started = ctx.facts.get("plan") or {}
        want = started.get("will_fit", pods)
        if share:
            candidates = set(started.get("reasons") or {a.pods[0] for a in plan.advice})
            with ctx.waiting():
                report = verify.wait_share_running(_api(ctx), _node(ctx), want, candidates, timeout,
                                                   sleep=ctx.sleep)
            said = report.texts()
            for line in said:  # what runs where, read from the API server now: never the planned pod for its twin
                ctx.emit(line)
            why = {r.pod: r.said for r in report.rows}
            problems = [f"{p} {why[p]}" for p in report.problems()]
            if problems:
                raise StepFailed("; ".join(problems), verify=True)
            return {"running": report.running(), "report": said}
        with ctx.waiting(), ctx.breakable():
            problems = verify.wait_pods_running(_api(ctx), want, timeout)
        if problems:
            raise StepFailed("; ".join(problems), verify=True)
        return {"running": want}

    if share and pods:
        title = (f"verify {', '.join(pods)} (or {'a pod' if len(pods) == 1 else 'pods'} of the same controller) "
                 f"Running on {plan.node.name}")
    else:
        title = f"verify {', '.join(pods)} Running" if pods else "verify (no Pending pods planned)"
    return Step("verify-pods", title, act, mutating=False)


def _run(ctx: Context, script: str, what: str, timeout: float = 60.0, *, check: bool = True) -> Any:
    """Run `script` on the node; with `check`, an exit status other than 0 fails the step with the output's end."""
    access = ctx.clients.access
    node = _node(ctx)
    try:
        with ctx.waiting():
            for said in access.prepare(node):
                ctx.emit(said)
            res = access.run(node, script, timeout=timeout)
    except NodeAccessError as e:
        raise StepFailed(f"{what}: {e}") from e
    if check and not res.ok:
        status = f"exit {res.exit_code}" if res.exit_code is not None else "no exit status"
        raise StepFailed(f"{what} on {node} failed ({status} from `{script[:120]}` via {access.method}): "
                         f"{res.tail()}")
    return res


def _kubelet_config(ctx: Context) -> kubeletinfo.KubeletConfig:
    """The running kubelet's configuration from its configz; else kubeadm's config file on the node."""
    import yaml

    try:
        return kubeletinfo.read_configz(_api(ctx), _node(ctx))
    except kubeletinfo.KubeletInfoError as e:
        ctx.emit(f"kubelet configz not available ({e}); reading {KUBELET_CONFIG} on the node")
        res = _run(ctx, f"cat {KUBELET_CONFIG}", "reading the kubelet config", check=False)
        if not res.ok:
            raise StepFailed(f"cannot read the kubelet's configuration on {_node(ctx)}: {e}; and "
                             f"`cat {KUBELET_CONFIG}`: {res.tail()}. Grant get on nodes/proxy (configz), then "
                             "rerun to resume", resumable=True) from e
        try:
            doc = yaml.safe_load(res.output) or {}
        except yaml.YAMLError as err:
            raise StepFailed(f"{KUBELET_CONFIG} on {_node(ctx)} is not YAML ({err})", resumable=True) from err
        return kubeletinfo.KubeletConfig.from_config(doc if isinstance(doc, dict) else {})


def _await_guest(ctx: Context, probe: Callable[[], str | None], deadline: float, waiting: str) -> str | None:
    """Call `probe` until it returns None (the guest shows what we want) or `deadline` has passed, with backoff
    in between: the guest shows libvirt's changes a moment after libvirt returns. `probe` otherwise returns what
    the guest shows, announced with `waiting`; the last one is returned (None: done)."""
    delay = 0.2
    while (shows := probe()) is not None and time.monotonic() <= deadline:
        ctx.emit(f"guest shows {shows}; {waiting}")
        with ctx.waiting():
            ctx.sleep(delay)
        delay = min(delay * 2, 2.0)
    return shows


def _await_guest_memory(ctx: Context, memory_mib: int) -> None:
    """Wait until the guest's MemTotal shows the raised balloon: a kubelet started before that reads the old size
    and keeps it until its next restart."""
    def memory() -> str | None:
        res = _run(ctx, "cat /proc/meminfo", "reading the guest's memory")
        m = re.search(r"^MemTotal:\s+(\d+) kB", res.output or "", re.M)
        if m is None:
            return "no MemTotal"
        return None if verify.memory_matches(int(m.group(1)) * 1024, memory_mib) else f"MemTotal {m.group(1)} kB"

    shows = _await_guest(ctx, memory, time.monotonic() + GUEST_WAIT_S,
                         f"waiting for ~{memory_mib} MiB before restarting the kubelet")
    if shows is not None:
        raise StepFailed(f"the guest shows {shows}, not ~{memory_mib} MiB, {GUEST_WAIT_S:g}s after the balloon "
                         "was raised; the kubelet was not restarted. Check that the guest's virtio_balloon driver "
                         "is loaded (`lsmod | grep virtio_balloon`), then rerun to resume", resumable=True)


def online_cpus(plan: Any) -> Step:
    n = plan.target.vcpus
    want = f"0-{n - 1}" if n > 1 else "0"

    def online_list(ctx: Context) -> str:
        res = _run(ctx, "cat /sys/devices/system/cpu/online", "reading online CPUs")
        return (res.output or "").strip()

    def act(ctx: Context) -> dict[str, Any]:
        script = (f"for i in $(seq 1 {n - 1}); do f=/sys/devices/system/cpu/cpu$i/online; "
                  f"if [ -f $f ] && [ \"$(cat $f)\" = 0 ]; then echo 1 > $f; echo onlined cpu$i; fi; done; "
                  "cat /sys/devices/system/cpu/online")
        onlined: list[str] = []
        lines: list[str] = []
        deadline = time.monotonic() + GUEST_WAIT_S
        access = ctx.clients.access
        if n > 1 and hasattr(access, "online_cpus"):  # the guest agent: guest-set-vcpus, then check below
            try:
                with ctx.waiting():
                    access.online_cpus(_node(ctx), f"1-{n - 1}")
            except NodeAccessError as e:
                raise StepFailed(f"onlining vCPUs: {e}") from e

        def online() -> str | None:
            res = _run(ctx, script, "onlining vCPUs", check=False)
            if not res.ok:
                raise StepFailed(f"onlining vCPUs on {_node(ctx)} failed (exit {res.exit_code} via "
                                 f"{access.method}): {res.tail()}")
            onlined.extend(re.findall(r"onlined (cpu\d+)", res.output))
            lines[:] = res.output.strip().splitlines()
            return None if lines and lines[-1] == want else f"{lines[-1] if lines else '?'} online"

        _await_guest(ctx, online, deadline, "waiting for the new vCPUs to appear")
        return {"onlined": onlined, "online": lines[-1:]}

    def check(ctx: Context) -> str | None:
        got = online_list(ctx)
        return None if got == want else f"guest shows CPUs {got or '?'} online, expected {want}"

    return Step("online-cpus", f"online vCPUs {want} in the guest", act, done=lambda c: online_list(c) == want,
                verify=check, audit_target=lambda c: f"node/{_node(c)}")


def restart_kubelet(plan: Any) -> Step:
    node = plan.node.name
    vcpus, mem = plan.target.vcpus, plan.target.memory_mib
    timeout = plan.request.node_timeout

    def matches(ctx: Context) -> bool:
        return verify.capacity_matches(nodes_ops.get_node_raw(_api(ctx), node), vcpus, mem)

    def act(ctx: Context) -> dict[str, Any]:
        deadline = time.monotonic() + timeout  # one budget for the restart and the node's return
        raw = nodes_ops.get_node_raw(_api(ctx), node)
        cfg = _kubelet_config(ctx)
        in_place = cfg.in_place_resize
        static_cpu = cfg.cpu_manager_policy.lower() == "static"
        static_mem = cfg.memory_manager_policy.lower() == "static"
        unit = kubeletinfo.kubelet_unit(raw, ctx.clients.kubelet_unit)
        data: dict[str, Any] = {"in_place_resize": in_place, "cpu_manager_static": static_cpu,
                                "memory_manager_static": static_mem, "kubelet_unit": unit}
        if in_place:
            ctx.emit(f"kubelet has {RESIZE_GATE}: waiting for it to re-read capacity, no restart")
        else:
            if mem:
                _await_guest_memory(ctx, mem)
            removes = [p for p, on in ((CPU_STATE, static_cpu), (MEMORY_STATE, static_mem)) if on]
            # a debug pod's log passes through the kubelet, so it must not wait for the restart; an SSH
            # session or the guest agent is not cut by it and gets systemctl's real exit status
            block = ctx.clients.access.method in ("ssh", "guest-agent")
            restart = f"systemctl restart {unit}" if block else f"systemctl restart --no-block {unit}"
            script = (f"rm -f {' '.join(removes)} && " if removes else "") + restart
            ctx.emit(f"restarting the kubelet ({unit})" + (f", removing {', '.join(removes)}" if removes else ""))
            res = _run(ctx, script, "restarting the kubelet", timeout=max(1.0, min(30.0, timeout / 2)), check=False)
            if res.exit_code not in (0, None):  # None: the status was lost with the kubelet; the wait below tells
                raise StepFailed(f"restarting the kubelet on {node} failed (exit {res.exit_code} from `{script}` "
                                 f"via {ctx.clients.access.method}): {res.tail()}. Check the unit with "
                                 f"`systemctl status {unit}` on the node (or set kubelet_unit), then rerun to "
                                 "resume", resumable=True)
            data["restart_exit"] = res.exit_code
            data["log_cut"] = res.log_cut
            data["node_access"] = ctx.clients.access.method
        try:
            with ctx.waiting():
                verify.wait_capacity(_api(ctx), node, vcpus, mem, max(1.0, deadline - time.monotonic()))
        except TimeoutError as e:
            raise StepFailed(f"the kubelet on {node} did not come back with the new capacity: {e}. "
                             f"Check `journalctl -u {unit}` on the node and start it (`systemctl start {unit}`)",
                             resumable=True) from e
        return data

    return Step("restart-kubelet", f"restart the kubelet on {node} so it reads {vcpus} CPU / {mem} MiB", act,
                done=matches, audit_target=lambda _c: f"node/{node}",
                describe=lambda c: verify.describe_capacity(nodes_ops.get_node_raw(_api(c), node)))
