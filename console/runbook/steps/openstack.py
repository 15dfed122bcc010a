"""OpenStack resize steps: resize → wait for VERIFY_RESIZE (or the error) → confirm → node back with new capacity."""

from __future__ import annotations

from typing import Any

from console.infra.openstack import PolicyForbidden
from console.infra.protocol import InfraError
from console.kube import nodes_ops
from console.kube.model import NodeInfo
from console.runbook import verify
from console.runbook.engine import Context, Step, StepFailed


def _os(ctx: Context) -> Any:
    return ctx.clients.openstack


def read_server(ctx: Context, sid: str) -> Any:
    """The server's state, read through the run's OpenStack backend (time counted as infra wait)."""
    with ctx.waiting():
        return _os(ctx).server(sid)


def server_snapshot(ctx: Context, sid: str) -> dict[str, Any]:
    """What the audit log records of the server before and after a step."""
    st = read_server(ctx, sid)
    return {"status": st.status, "flavor": st.flavor, "vcpus": st.vcpus, "ram_mib": st.ram_mib}


def steps(plan: Any) -> list[Step]:
    sid = plan.vm.ref
    flavor = plan.flavor
    node = plan.node.name
    timeout = plan.request.resize_timeout

    def server(ctx: Context) -> Any:
        return read_server(ctx, sid)

    def snapshot(ctx: Context) -> dict[str, Any]:
        return server_snapshot(ctx, sid)

    def resize_done(ctx: Context) -> bool:
        """Issued already? The server is resizing or resized to the target, or our request is in the actions."""
        st = server(ctx)
        if st.flavor == flavor.name or st.status in ("RESIZE", "VERIFY_RESIZE"):
            return True
        rid = ctx.facts.get("resize_request_id")
        if ctx.journal.step("resize")["status"] in ("started", "acted"):
            resizes = [a for a in _os(ctx).actions(sid) if a.action == "resize"]
            if rid and any(a.request_id == rid for a in resizes):
                return True
            started = ctx.journal.step("resize")["started"] or ""
            if any(a.start_time.replace("Z", "") >= started[:19] for a in resizes):
                return True  # killed between the POST and writing its request id down
        return False

    def resize(ctx: Context) -> dict[str, Any]:
        try:
            with ctx.waiting():
                rid = _os(ctx).resize(sid, flavor)
        except InfraError as e:
            raise StepFailed(str(e)) from e
        ctx.remember(resize_request_id=rid)
        return {"request_id": rid}

    def node_ready(ctx: Context) -> None:
        try:
            with ctx.waiting():
                nodes_ops.watch_until(ctx.clients.api, "node", node,
                                      lambda o: o is not None and NodeInfo.from_api(o).ready == "True",
                                      plan.request.node_timeout)
        except TimeoutError as e:
            raise StepFailed(f"server {plan.vm.name} is back but node {node} is not Ready: {e}", safe=False) from e

    def recover(ctx: Context, st: Any) -> str:
        """Back to the old flavor, running: revert a finished resize, hard-reboot an ERROR, reset a stuck task."""
        os_ = _os(ctx)
        try:
            with ctx.waiting():
                if st.status == "VERIFY_RESIZE":
                    ctx.emit("reverting the resize")
                    os_.revert(sid)
                    how = "reverted the resize"
                else:
                    if st.status != "ERROR" and st.task_state:  # stuck in a task Nova will never finish
                        ctx.emit(f"server stuck in {st.status} (task {st.task_state}): resetting its state")
                        try:
                            os_.reset_state(sid, "active")
                        except PolicyForbidden as e:  # os-resetState is admin-only (nova/policies/admin_actions.py)
                            raise StepFailed(
                                f"server {plan.vm.name} is stuck in {st.status} (task {st.task_state}) and only "
                                f"a cloud admin can clear that ({e}); ask an admin to run `openstack server set "
                                f"--state active {sid}`, then run `openstack server reboot --hard {sid}` to bring "
                                f"it back on its old flavor", safe=False) from e
                        how = f"reset the server stuck in {st.status} ({st.task_state}) and hard-rebooted it"
                    else:
                        how = "hard-rebooted the server out of ERROR"
                    ctx.emit("hard reboot through Nova (regenerates the VM from its flavor)")
                    os_.hard_reboot(sid)
                back = os_.wait(sid, lambda s: s.status in ("ACTIVE", "SHUTOFF", "ERROR") and s.task_state is None,
                                timeout)
        except (InfraError, TimeoutError) as e:
            raise StepFailed(f"recovering server {plan.vm.name} failed: {e}; ask a cloud admin to check it "
                             f"(openstack server event list {sid})", safe=False) from e
        if back.status == "ERROR":
            raise StepFailed(f"server {plan.vm.name} is still in ERROR after recovery: {back.fault or '-'}",
                             safe=False)
        if back.status == "ACTIVE":
            node_ready(ctx)
        return f"{how}: server {back.name} is {back.status} with flavor {back.flavor}"

    def undo_resize(ctx: Context) -> str | None:
        st = server(ctx)
        if st.status == "ACTIVE" and st.task_state is None and st.flavor != flavor.name:
            return None  # Nova rolled back by itself (NoValidHost)
        if st.status in ("ACTIVE", "SHUTOFF") and st.task_state is None:
            return None
        return recover(ctx, st)

    def wait_verify(ctx: Context) -> dict[str, Any]:
        def settled(s: Any) -> bool:
            if s.status == "VERIFY_RESIZE" or s.status == "ERROR":
                return True
            return s.status in ("ACTIVE", "SHUTOFF") and s.task_state is None  # done, or NoValidHost rollback

        try:
            with ctx.waiting(), ctx.breakable():  # a pure wait: a stop request may cut it, resuming waits again
                st = _os(ctx).wait(sid, settled, timeout)
        except TimeoutError as e:
            raise StepFailed(f"the resize did not reach VERIFY_RESIZE: {e} (raise --resize-timeout if the cloud "
                             f"is just slow; openstack server event list {sid} shows where it stopped)") from e
        except InfraError as e:
            raise StepFailed(f"waiting for VERIFY_RESIZE: {e}", resumable=True) from e
        if st.status == "VERIFY_RESIZE" and st.flavor == flavor.name:
            return {"status": st.status}
        if st.status == "ERROR":
            raise StepFailed(f"the resize failed: server {st.name} went to ERROR: {st.fault or 'no fault message'}")
        if st.flavor == flavor.name:  # auto-confirmed (resize_confirm_window) or confirmed in an earlier run
            return {"status": st.status, "auto_confirmed": True}
        error = next((a.error or a.message for a in _os(ctx).actions(sid) if a.action == "resize"), None)
        raise StepFailed(f"the resize to {flavor.name} failed and Nova rolled back to {st.flavor} "
                         f"(server {st.status}): {error or 'no error recorded in the instance actions'}")

    def confirmed(ctx: Context) -> bool:
        st = server(ctx)
        return st.status in ("ACTIVE", "SHUTOFF") and st.flavor == flavor.name

    def confirm(ctx: Context) -> dict[str, Any]:
        try:
            with ctx.waiting():
                ours = _os(ctx).confirm(sid)  # False: Nova's resize_confirm_window confirmed it first (409)
                st = _os(ctx).wait(sid, lambda s: s.status in ("ACTIVE", "SHUTOFF", "ERROR"), timeout)
        except (InfraError, TimeoutError) as e:
            raise StepFailed(f"confirming the resize: {e}", safe=False) from e
        if not ours and st.flavor != flavor.name:
            raise StepFailed(f"confirming the resize: server {st.name} left VERIFY_RESIZE on flavor {st.flavor}, "
                             f"not {flavor.name} (reverted by someone else?)", safe=False)
        return {} if ours else {"auto_confirmed": True}

    def node_back(ctx: Context) -> dict[str, Any]:
        try:
            with ctx.waiting(), ctx.breakable():
                _, waited = verify.wait_capacity(ctx.clients.api, node, flavor.vcpus, flavor.ram_mib,
                                                 plan.request.node_timeout)
        except TimeoutError as e:
            raise StepFailed(str(e), verify=True) from e
        return {"waited_s": round(waited, 3)}

    target = f"server/{sid}"
    return [
        Step("resize", f"resize server {plan.vm.name} to {flavor.name} ({flavor.size})", resize, done=resize_done,
             undo=undo_resize, audit_target=lambda _c: target, describe=snapshot),
        Step("wait-verify-resize", "wait for VERIFY_RESIZE with the new flavor", wait_verify, mutating=False),
        Step("confirm-resize", "confirm the resize", confirm, done=confirmed, audit_target=lambda _c: target,
             describe=snapshot),
        Step("wait-node", f"wait for {node} Ready with cpu {flavor.vcpus} / ~{flavor.ram_mib} MiB", node_back,
             mutating=False),
    ]
