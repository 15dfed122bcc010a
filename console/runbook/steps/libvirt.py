"""libvirt live scale-up steps: raise maxima → restart the guest (Nova soft reboot or libvirt) → hot-add →
online vCPUs in the guest → restart the kubelet."""

from __future__ import annotations

from typing import Any

from console.infra.protocol import InfraError
from console.runbook import verify
from console.runbook.engine import Context, Step, StepFailed
from console.runbook.steps import kube


def steps(plan: Any) -> list[Step]:
    uri, dom = plan.vm.host, plan.vm.ref
    vcpus, mem = plan.target.vcpus, plan.target.memory_mib
    node = plan.node.name
    nova_id = plan.nova_server_id

    def lv(ctx: Context) -> Any:
        return ctx.clients.libvirt

    def desc(ctx: Context) -> Any:
        with ctx.waiting():
            return lv(ctx).describe_domain(uri, dom)

    def snapshot(ctx: Context) -> dict[str, Any]:
        d = desc(ctx)
        return {k: getattr(d, k) for k in ("vcpus", "vcpus_max_live", "vcpus_max_config", "memory_mib",
                                           "memory_max_mib", "memory_max_config_mib")}

    def maxima_done(ctx: Context) -> bool:
        d = desc(ctx)
        return d.vcpus_max_config >= vcpus and d.memory_max_config_mib >= mem

    def raise_maxima(ctx: Context) -> dict[str, Any]:
        try:
            with ctx.waiting():
                notes = lv(ctx).raise_maxima(uri, dom, vcpus, mem)
        except InfraError as e:
            raise StepFailed(f"{e} (nothing was changed on the running VM)") from e
        for n in notes:
            ctx.emit(n)
        return {"notes": notes}

    def live_maxima(ctx: Context) -> bool:
        d = desc(ctx)
        return d.running and d.vcpus_max_live >= vcpus and d.memory_max_mib >= mem

    def restart_guest(ctx: Context) -> dict[str, Any]:
        try:
            with ctx.waiting():
                if nova_id:
                    ctx.emit("soft reboot through Nova (keeps the edited definition)")
                    os_ = ctx.clients.openstack
                    rid = os_.soft_reboot(nova_id)
                    ctx.remember(reboot_request_id=rid)
                    os_.wait(nova_id, lambda s: s.status == "ACTIVE" and s.task_state is None,
                             plan.request.resize_timeout)
                else:
                    ctx.emit("restart through libvirt (shutdown, then start)")
                    lv(ctx).restart(uri, dom)
        except (InfraError, TimeoutError) as e:
            raise StepFailed(f"restarting the guest: {e}", safe=False) from e
        if not live_maxima(ctx):
            d = desc(ctx)
            raise StepFailed(f"after the reboot the live maxima are {d.vcpus_max_live} vCPUs / {d.memory_max_mib} MiB,"
                             f" not {vcpus} / {mem}: the reboot regenerated the domain (a hard reboot?)", safe=False)
        try:  # the boot restarted the kubelet: wait until the node is back before touching it
            with ctx.waiting():
                verify.wait_capacity(ctx.clients.api, node, d_vcpus(ctx), None, plan.request.node_timeout)
        except TimeoutError as e:
            raise StepFailed(f"after the reboot: {e}", safe=False) from e
        return {"via": "nova" if nova_id else "libvirt"}

    def d_vcpus(ctx: Context) -> int:
        return desc(ctx).vcpus

    def hot_done(ctx: Context) -> bool:
        d = desc(ctx)  # libvirt cannot show the balloon target: trust our own record for memory
        return d.vcpus >= vcpus and ctx.facts.get("balloon_mib", 0) >= mem

    def hot_add(ctx: Context) -> dict[str, Any]:
        try:
            with ctx.waiting():
                lv(ctx).set_live(uri, dom, vcpus, mem)
        except InfraError as e:
            raise StepFailed(str(e)) from e
        ctx.remember(balloon_mib=mem)
        return {}

    target = f"domain/{dom}"
    reboot = "soft reboot through Nova" if nova_id else "restart through libvirt"
    return [
        Step("raise-maxima", f"raise the persistent maxima of {dom} to {vcpus} vCPUs / {mem} MiB", raise_maxima,
             done=maxima_done, audit_target=lambda _c: target, describe=snapshot),
        Step("restart-guest", f"{reboot} so the maxima apply", restart_guest, done=live_maxima,
             audit_target=lambda _c: target, describe=snapshot),
        Step("hot-add", f"hot-add to {vcpus} vCPUs and {mem} MiB", hot_add, done=hot_done,
             audit_target=lambda _c: target, describe=snapshot),
        kube.online_cpus(plan),
        kube.restart_kubelet(plan),
    ]
