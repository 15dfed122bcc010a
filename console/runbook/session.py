"""Wiring a scale-up run from Settings: kube client, backends, node access, journal, engine.

Used by the CLI and meant for the screen: `Session(settings).plan(request)`
then `.run(plan, journal, on_event=...)` in a worker thread.

The journal of a run to resume is checked before anything is planned from it (`journal_to_resume`): its
file usable (console/runbook/journal.py), its cluster this session's (API server URL + kube-system uid, read
once per session: console/runbook/identity.py), no other live process owning it (console/runbook/journal_lock.py),
the rerun's parameters the run's (console/runbook/resume_params.py), and after planning its cloud/hypervisor
and VM the ones the node maps to now. Each refusal is a SessionError naming the journal file; `details`
carry `{"status": "error", "error": "journal", "journal": PATH}` for a journal fault (the `-o json` object).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from console.guard import Guard
from console.runbook.cordon import ending
from console.runbook.engine import Clients, Engine, RunEvent, RunResult
from console.runbook.journal import Journal, JournalError, bad_journal
from console.runbook.journal_lock import JournalBusy, JournalLock
from console.runbook.journal_shape import KINDS
from console.runbook.scaleup import PlanRefused, ScaleUpPlan, ScaleUpRequest, prepare, resumed

if TYPE_CHECKING:
    from console.infra.libvirt import LibvirtBackend
    from console.infra.openstack import OpenStackBackend
    from console.kube.connection import KubeTarget


class SessionError(Exception):
    """Cannot connect, resume or start (the node is held by another run); the message says what to fix.

    `details`: machine-readable facts for `-o json` (the holder of the node's Lease and when it expires)."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


class PermissionsMissing(SessionError):
    """The API server would refuse part of the run to this user: refused at plan time, before any change (exit 2;
    `details`: {"error": "forbidden", "missing": ["patch nodes", ...]})."""


def journal_fault(e: JournalError) -> SessionError:
    """A journal that cannot be used, as the session reports it (exit 2; `-o json`: status error, kind journal)."""
    return SessionError(str(e), {"status": "error", "error": "journal", "journal": str(e.path or "")})


class Session:
    def __init__(self, settings: Any, *, guard: Guard | None = None,
                 connection: tuple[Any, KubeTarget] | None = None, permissions: Any = None) -> None:
        """`connection`: (ApiClient, KubeTarget) already open (the TUI's, console/gateways.py); else one is made
        from the settings' kubeconfig and context. `permissions`: that connection's access review when already
        asked (else asked once, when first needed)."""
        from console.kube.connection import KubeConfigError, connect_for
        from console.kube.nodeaccess import node_access

        self.settings = settings
        try:
            self.api, self.target = connection or connect_for(settings)
        except KubeConfigError as e:
            raise SessionError(str(e)) from e
        # every change the runbooks make goes through it (read-only, audit intent before, outcome after)
        self.guard = guard or Guard.from_settings(settings)
        self.access = node_access(settings.node_access, self.api, settings)
        self._openstack: OpenStackBackend | None = None
        self._libvirt: LibvirtBackend | None = None
        self._cluster: dict[str, Any] | None = None
        self._infra: dict[tuple[str, str], dict[str, Any]] = {}
        self._permissions: Any = permissions

    @property
    def permissions(self) -> Any:
        """What this user may do (console/kube/access.py Access), asked once per session."""
        if self._permissions is None:
            from console.kube.access import review

            self._permissions = review(self.api, self.settings, target=self.target)
        return self._permissions

    def missing(self, action: str) -> list[Any]:
        """The permissions `action` needs that this user is known not to hold (access.Need)."""
        from console.kube.access import action_needs

        return self.permissions.missing(action_needs(action, self.settings))

    def check_permissions(self, action: str) -> None:
        """PermissionsMissing (exit 2, before any change) when the API server would refuse part of `action`."""
        from console.kube.access import MissingPermissions, require

        try:
            require(self.permissions, action, self.settings)
        except MissingPermissions as e:
            raise PermissionsMissing(str(e), e.details()) from e

    @property
    def cluster(self) -> dict[str, Any]:
        """This session's cluster identity (console/runbook/identity.py), read once."""
        if self._cluster is None:
            from console.runbook.identity import cluster_identity

            self._cluster = cluster_identity(self.api, self.target.server)
        return self._cluster

    def infra(self, method: str, vm_ref: str) -> dict[str, Any]:
        """The cloud/hypervisor a run of `method` on VM `vm_ref` acts on (InfraError when it cannot be read)."""
        from console.runbook.identity import infra_identity

        key = (method, vm_ref)
        if key not in self._infra:
            self._infra[key] = infra_identity(method, self.openstack, self.libvirt, vm_ref)
        return self._infra[key]

    def journal_to_resume(self, kind: str, node: str, resume: str | None = None,
                          new: bool = False) -> Journal | None:
        """The journal of the `kind` run of `node` to resume (`resume`, else the newest unfinished one, none with
        `new`), checked: SessionError when a journal of the node is unusable (even with `new`: what it did is
        unknown), of another cluster, or owned by another live process."""
        try:
            for k in KINDS:
                Journal.unfinished(k, node)  # a bad journal of the node refuses any run, new or resumed
            journal = Journal.to_resume(kind, node, resume) if resume or not new else None
        except JournalError as e:
            raise journal_fault(e) from e
        if journal is None:
            return None
        from console.runbook.identity import cluster_problem

        why = cluster_problem(journal.doc["cluster"], self.cluster)
        if why:
            raise journal_fault(bad_journal(journal.path, why, node))
        try:
            JournalLock(journal.path.parent, journal.run_id).check()
        except JournalBusy as e:
            raise SessionError(str(e), e.details) from e
        return journal

    def check_infra(self, journal: Journal, method: str, vm_ref: str) -> None:
        """SessionError (a journal fault) when the run's cloud/hypervisor or VM is not what the node maps to now."""
        from console.infra.protocol import InfraError
        from console.runbook.identity import infra_problem

        try:
            why = infra_problem(journal.doc["infra"], self.infra(method, vm_ref))
        except InfraError as e:
            raise SessionError(f"cannot tell which cloud run {journal.run_id} may resume on: {e}") from e
        if why:
            raise journal_fault(bad_journal(journal.path, why, journal.doc["node"]))

    @property
    def openstack(self) -> OpenStackBackend | None:
        if self._openstack is None and (self.settings.cloud or os.environ.get("OS_CLOUD")
                                        or os.environ.get("OS_AUTH_URL")):  # an openrc, no clouds.yaml cloud
            from console.infra.openstack import OpenStackBackend

            self._openstack = OpenStackBackend(self.settings.cloud)
        return self._openstack

    @property
    def libvirt(self) -> LibvirtBackend | None:
        if self._libvirt is None:
            from console.infra.libvirt import LibvirtBackend, libvirt_uris

            uris = libvirt_uris(self.settings.libvirt_uris)
            if uris:
                self._libvirt = LibvirtBackend(uris)
        return self._libvirt

    def clients(self) -> Clients:
        """What the run's steps call (console/runbook/engine.Clients)."""
        return Clients(self.api, self.openstack, self.libvirt, self.access,
                       getattr(self.settings, "kubelet_unit", None))

    def plan(self, request: ScaleUpRequest, *, resume: str | None = None, new: bool = False,
             dry_run: bool = False) -> tuple[ScaleUpPlan, Journal | None]:
        """The plan, and the journal of the run to resume (explicit, or an unfinished run for this node).

        PermissionsMissing when this user may not do what the plan calls for (a dry run reports it instead:
        `missing(plan_action(plan))`)."""
        from console.infra.protocol import InfraError
        from console.runbook.resume_params import ParamsDiffer, resume_request

        self.cluster  # noqa: B018 — read before anything is planned: a run journals it, a resume compares it
        journal = self.journal_to_resume("scale-up", request.node, resume, new)
        if journal is not None:
            try:
                request = resume_request(journal, request)
            except JournalError as e:
                raise journal_fault(e) from e
            except ParamsDiffer as e:
                raise SessionError(str(e), {"error": "run-differs", "journal": str(journal.path),
                                            "differences": e.differences}) from e
        self.check_node_free(request.node, journal)
        try:
            plan = prepare(request, self.api, self.openstack, self.libvirt, resuming=journal is not None)
            self.infra(plan.method, plan.vm.ref)  # recorded in the journal: read while planning, not mid-run
        except InfraError as e:
            raise PlanRefused(str(e)) from e
        if journal is not None:
            self.check_infra(journal, plan.method, plan.vm.ref)
            plan = resumed(plan, journal.doc["context"].get("plan") or {})
        if not dry_run and not plan.nothing_to_do and not self.guard.read_only:  # read-only refuses the run first
            self.check_permissions(plan_action(plan))
        return plan, journal

    def run(self, plan: ScaleUpPlan, journal: Journal | None = None, *,
            on_event: Callable[[RunEvent], object] | None = None, stop: threading.Event | None = None) -> RunResult:
        """Run the plan under the node's Lease (console/runbook/lock.py): refused with SessionError, before any
        change and before a journal exists, while another run holds the node; released however the run ends."""
        from dataclasses import asdict

        from console.runbook.journal import new_run_id
        from console.runbook.steps import build_steps

        if plan.nothing_to_do:
            raise SessionError(plan.nothing_to_do)
        self.guard.check(f"scale-up of {plan.node.name}")  # ReadOnly before RBAC, the Lease or a journal
        self.check_permissions(plan_action(plan))  # below any UI: before the Lease or a journal exists
        run_id = journal.run_id if journal is not None else new_run_id("scale-up", plan.node.name)
        with self.node_lock(plan.node.name, run_id, journal, on_event) as lock:
            if journal is None:
                journal = Journal.create("scale-up", plan.node.name, asdict(plan.request), plan.steps, run_id=run_id,
                                         cluster=self.cluster, infra=self.infra(plan.method, plan.vm.ref))
                journal.doc["context"]["plan"] = plan.to_dict()
            lock.record(journal)
            steps = lock.guard(build_steps(plan))
            result = Engine(journal, steps, guard=self.guard, on_event=on_event, clients=self.clients(),
                            stop=stop).run()
        result.cordoned = ending(self.api, plan.node.name, journal.doc["context"].get("was_cordoned"), run_id)
        return result

    def check_node_free(self, node: str, journal: Journal | None) -> None:
        """SessionError naming the holder while another run holds the node's Lease (read only; run() takes it)."""
        from console.runbook.journal import new_run_id
        from console.runbook.lock import LockError

        run_id = journal.run_id if journal is not None else new_run_id("scale-up", node)
        try:
            self._run_lock(node, run_id, journal).check()
        except LockError as e:
            raise SessionError(str(e), {"error": "held", **e.details}) from e

    def _run_lock(self, node: str, run_id: str, journal: Journal | None,
                  on_event: Callable[[RunEvent], object] | None = None) -> Any:
        from console.runbook.journal import runbooks_dir
        from console.runbook.lock import RunLock

        emit = on_event or (lambda _e: None)
        return RunLock(self.api, node, run_id, namespace=getattr(self.settings, "lease_namespace", "default"),
                       resuming=journal is not None, journal_dir=journal.path.parent if journal else runbooks_dir(),
                       on_note=lambda m: emit(RunEvent(run_id, "lease", message=m)))

    @contextlib.contextmanager
    def node_lock(self, node: str, run_id: str, journal: Journal | None,
                  on_event: Callable[[RunEvent], object] | None = None) -> Iterator[Any]:
        """The node's Lease for run `run_id` (console/runbook/lock.py), held for the `with` block: every runbook
        on a node (scale-up, revert) runs under it. SessionError, before any change and before a journal exists,
        while another run holds the node; released however the block ends."""
        from console.runbook.lock import LockError

        lock = self._run_lock(node, run_id, journal, on_event)
        try:
            lock.acquire()
        except LockError as e:
            raise SessionError(str(e), {"error": "held", **e.details}) from e
        try:
            yield lock
        finally:
            lock.release()


def plan_action(plan: ScaleUpPlan) -> str:
    """The access.py action a scale-up plan performs: without cordon, drain and VM change when only the kubelet
    has to re-read the capacity."""
    return "kubelet-restart" if plan.kubelet_only else "scale-up"
