"""Wiring a scale-up run from Settings: kube client, backends, node access, journal, engine.

Used by the CLI and meant for the screen: `Session(settings).plan(request)`
then `.run(plan, journal, on_event=...)` in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from console.guard import Guard
from console.runbook.engine import Engine, RunEvent, RunResult
from console.runbook.journal import Journal, JournalError
from console.runbook.scaleup import PlanRefused, ScaleUpPlan, ScaleUpRequest, prepare, resumed


class SessionError(Exception):
    """Cannot connect, resume or start (the node is held by another run); the message says what to fix.

    `details`: machine-readable facts for `-o json` (the holder of the node's Lease and when it expires)."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


class Session:
    def __init__(self, settings: Any, *, guard: Guard | None = None) -> None:
        from console.kube.connection import KubeConfigError, connect
        from console.kube.nodeaccess import node_access

        self.settings = settings
        try:
            self.api, self.target = connect(settings.kubeconfig, settings.context)
        except KubeConfigError as e:
            raise SessionError(str(e)) from e
        # every change the runbooks make goes through it (read-only, audit intent before, outcome after)
        self.guard = guard or Guard.from_settings(settings)
        self.access = node_access(settings.node_access, self.api, settings)
        self._openstack: Any = None
        self._libvirt: Any = None

    @property
    def openstack(self) -> Any:
        if self._openstack is None and (self.settings.cloud or os.environ.get("OS_CLOUD")
                                        or os.environ.get("OS_AUTH_URL")):  # an openrc, no clouds.yaml cloud
            from console.infra.openstack import OpenStackBackend

            self._openstack = OpenStackBackend(self.settings.cloud)
        return self._openstack

    @property
    def libvirt(self) -> Any:
        if self._libvirt is None:
            from console.infra.libvirt import LibvirtBackend, libvirt_uris

            uris = libvirt_uris(self.settings.libvirt_uris)
            if uris:
                self._libvirt = LibvirtBackend(uris)
        return self._libvirt

    def values(self) -> dict[str, Any]:
        return {"api": self.api, "openstack": self.openstack, "libvirt": self.libvirt, "access": self.access,
                "kubelet_unit": getattr(self.settings, "kubelet_unit", None)}

    def plan(self, request: ScaleUpRequest, *, resume: str | None = None,
             new: bool = False) -> tuple[ScaleUpPlan, Journal | None]:
        """The plan, and the journal of the run to resume (explicit, or an unfinished run for this node)."""
        from console.infra.protocol import InfraError

        journal = None
        if resume or not new:
            try:
                journal = Journal.to_resume("scale-up", request.node, resume)
            except JournalError as e:
                raise SessionError(str(e)) from e
        if journal is not None:
            request = ScaleUpRequest(**{**journal.doc["params"], **_timeouts(request)})
        try:
            plan = prepare(request, self.api, self.openstack, self.libvirt)
        except InfraError as e:
            raise PlanRefused(str(e)) from e
        if journal is not None:
            plan = resumed(plan, journal.doc["context"].get("plan") or {})
        return plan, journal

    def run(self, plan: ScaleUpPlan, journal: Journal | None = None, *,
            on_event: Callable[[RunEvent], None] | None = None, stop: threading.Event | None = None) -> RunResult:
        """Run the plan under the node's Lease (console/runbook/lock.py): refused with SessionError, before any
        change and before a journal exists, while another run holds the node; released however the run ends."""
        from dataclasses import asdict

        from console.runbook.journal import new_run_id
        from console.runbook.steps import build_steps

        if plan.nothing_to_do:
            raise SessionError(plan.nothing_to_do)
        self.guard.check(f"scale-up of {plan.node.name}")  # ReadOnly before the Lease or a journal exists
        run_id = journal.run_id if journal is not None else new_run_id("scale-up", plan.node.name)
        with self.node_lock(plan.node.name, run_id, journal, on_event) as lock:
            if journal is None:
                journal = Journal.create("scale-up", plan.node.name, asdict(plan.request), plan.steps, run_id=run_id)
                journal.doc["context"]["plan"] = plan.to_dict()
            lock.record(journal)
            steps = lock.guard(build_steps(plan, self.values()))
            return Engine(journal, steps, guard=self.guard, on_event=on_event, values=self.values(), stop=stop).run()

    @contextlib.contextmanager
    def node_lock(self, node: str, run_id: str, journal: Journal | None,
                  on_event: Callable[[RunEvent], None] | None = None) -> Iterator[Any]:
        """The node's Lease for run `run_id` (console/runbook/lock.py), held for the `with` block: every runbook
        on a node (scale-up, revert) runs under it. SessionError, before any change and before a journal exists,
        while another run holds the node; released however the block ends."""
        from console.runbook.journal import runbooks_dir
        from console.runbook.lock import LockError, RunLock

        emit = on_event or (lambda _e: None)
        lock = RunLock(self.api, node, run_id, namespace=getattr(self.settings, "lease_namespace", "default"),
                       resuming=journal is not None, journal_dir=journal.path.parent if journal else runbooks_dir(),
                       on_note=lambda m: emit(RunEvent(run_id, "lease", message=m)))
        try:
            lock.acquire()
        except LockError as e:
            raise SessionError(str(e), e.details) from e
        try:
            yield lock
        finally:
            lock.release()


def _timeouts(request: ScaleUpRequest) -> dict[str, float]:
    return {"resize_timeout": request.resize_timeout, "node_timeout": request.node_timeout,
            "pods_timeout": request.pods_timeout, "drain_timeout": request.drain_timeout}
