"""The fleet runbook's journal: one JSON file per fleet run, beside the node runs' journals, rewritten atomically.

$XDG_STATE_HOME/console/runbooks/fleet-<UTC time>-<4 hex>.json:

    {"version": 1, "run_id": "fleet-20261202T001500-ab12", "kind": "fleet",
     "cluster": {"server", "kube_system_uid", "note"}, "status": "running" | "done" | "failed" | "needs-attention"
     | "interrupted" | "verify-failed" | "refused", "message": "", "created", "updated",
     "params": {"parallel": 1, "max_unavailable": 1}, "plan": {...Plan.to_json()...},
     "nodes": [{"node", "vm", "method", "host", "flavor", "vcpus", "memory_mib", "pods": ["ns/name", ...],
                "status": "pending" | "running" | "done" | "failed" | "attention",
                "run_id": "<the node's scale-up run>" | null, "exit_code": int | null, "message": "",
                "started": ISO | null, "finished": ISO | null}],
     "verify": [{"pod", "node" (planned), "controller" ("job/train" | ""), "runs_on" ("" unless Running there),
                 "phase", "ok" (fills a slot of its controller: console/runbook/placement.py), "why"}] | null}

The node list is what the fleet carries out, in order; each node's change is the scale-up runbook's own run
(its journal, Lease and audit records are the scale-up's), and the fleet journal keeps that run's id. A fleet
journal is not a node runbook's (no `node`, no steps): the node runbooks' scans (`Journal.scan`, glob
`<kind>-*.json` over journal_shape.KINDS) never see it. It is saved with Journal.save (a temp file of its own,
renamed over the journal, fsync'd) and owned by one process at a time (journal_lock.JournalLock). A file that
cannot be trusted is never resumed nor skipped: FleetJournalError names it, says what is wrong and how to move
it aside.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console.runbook.journal import Journal, now, read_json, runbooks_dir
from console.runbook.journal_shape import _show, fields_problem

KIND = "fleet"
VERSION = 1
STATUSES = ("running", "done", "failed", "needs-attention", "interrupted", "verify-failed", "refused")
UNFINISHED = ("running", "needs-attention", "interrupted")  # a rerun of `plan --apply` continues it
NODE_STATUSES = ("pending", "running", "done", "failed", "attention")
RUN_ID = re.compile(r"^fleet-\d{8}T\d{6}-[0-9a-f]{4}$")
NODE_FIELDS: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("node", (str,)), ("vm", (str,)), ("method", (str,)), ("host", (str,)), ("flavor", (str, type(None))),
    ("vcpus", (int,)), ("memory_mib", (int,)), ("status", (str,)), ("run_id", (str, type(None))),
    ("exit_code", (int, type(None))), ("message", (str,)), ("started", (str, type(None))),
    ("finished", (str, type(None))), ("pods", (list,)))


class FleetJournalError(Exception):
    """A fleet journal cannot be used or resumed; the message names the file and what to do."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


def new_fleet_id() -> str:
    return f"{KIND}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(2)}"


def aside_command(path: Path) -> str:
    return f"mv {path} {path}.discarded"


def bad_fleet_journal(path: Path, why: str) -> FleetJournalError:
    return FleetJournalError(
        f"fleet journal {path} {why}. It is neither resumed nor skipped: check the nodes it names (and their "
        f"scale-up runs: python -m console scale-up NODE --resume RUN_ID), then move it aside with: "
        f"{aside_command(path)}", path)


def problem(doc: Any, stem: str | None = None) -> str | None:
    """What is wrong with `doc` as a version-VERSION fleet journal (None: nothing)."""
    if not isinstance(doc, dict):
        return f"it holds {type(doc).__name__ if doc is not None else 'null'}, not a journal object"
    if why := fields_problem(doc, (("version", (int,)), ("run_id", (str,)), ("kind", (str,)), ("status", (str,)),
                                   ("message", (str,)), ("created", (str,)), ("updated", (str,)),
                                   ("params", (dict,)), ("plan", (dict,)), ("cluster", (dict,)), ("nodes", (list,)),
                                   ("verify", (list, type(None))))):
        return why
    if doc["version"] != VERSION:
        return f"it is a version-{doc['version']} fleet journal; this console reads version {VERSION}"
    if doc["kind"] != KIND:
        return f"kind is {_show(doc['kind'])}, expected {KIND!r}"
    if doc["status"] not in STATUSES:
        return f"status is {_show(doc['status'])}, expected one of {', '.join(STATUSES)}"
    if not RUN_ID.match(doc["run_id"]):
        return f"run_id {_show(doc['run_id'])} is not a fleet run id (fleet-YYYYMMDDTHHMMSS-xxxx)"
    if stem is not None and doc["run_id"] != stem:
        return f"its run_id {_show(doc['run_id'])} is not its file name {stem!r}"
    if why := fields_problem(doc["cluster"], (("server", (str,)), ("kube_system_uid", (str, type(None)))),
                             "cluster."):
        return why
    if why := fields_problem(doc["params"], (("parallel", (int,)), ("max_unavailable", (int,))), "params."):
        return why
    return _nodes_problem(doc["nodes"])


def _nodes_problem(nodes: list[Any]) -> str | None:
    if not nodes:
        return "nodes is empty"
    seen: set[str] = set()
    for i, n in enumerate(nodes):
        where = f"nodes[{i}]."
        if not isinstance(n, dict):
            return f"nodes[{i}] is {_show(n)}, expected an object"
        if why := fields_problem(n, NODE_FIELDS, where):
            return why
        if n["status"] not in NODE_STATUSES:
            return f"{where}status is {_show(n['status'])}, expected one of {', '.join(NODE_STATUSES)}"
        if n["method"] not in ("openstack", "libvirt"):
            return f"{where}method is {_show(n['method'])}, expected openstack or libvirt"
        if n["method"] == "openstack" and not n["flavor"]:
            return f"{where}flavor is missing: an OpenStack resize needs the flavor"
        if n["node"] in seen:
            return f"node {n['node']!r} appears twice"
        seen.add(n["node"])
    return None


def read_fleet_doc(path: Path) -> dict[str, Any]:
    """The validated fleet journal at `path` (FileNotFoundError when absent, FleetJournalError when unusable)."""
    doc = read_json(path, bad_fleet_journal)
    if why := problem(doc, path.stem):
        raise bad_fleet_journal(path, f"is not a usable fleet journal: {why}")
    return doc


def node_entry(node: str, vm: str, method: str, host: str, flavor: str | None, vcpus: int,
               memory_mib: int, pods: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """One node of the fleet: its VM, target, the Pending pods the plan puts there, and its progress."""
    return {"node": node, "vm": vm, "method": method, "host": host, "flavor": flavor or None, "vcpus": vcpus,
            "memory_mib": memory_mib, "pods": list(pods), "status": "pending", "run_id": None, "exit_code": None,
            "message": "", "started": None, "finished": None}


class FleetJournal(Journal):
    """A fleet run's journal (Journal.save writes it; `finish` sets its status)."""

    @classmethod
    def create_fleet(cls, plan: dict[str, Any], nodes: list[dict[str, Any]], params: dict[str, Any], *,
                     cluster: dict[str, Any], directory: Path | None = None, run_id: str | None = None
                     ) -> FleetJournal:
        run_id = run_id or new_fleet_id()
        doc = {"version": VERSION, "run_id": run_id, "kind": KIND, "status": "running", "message": "",
               "created": now(), "updated": now(), "params": params, "plan": plan, "cluster": cluster,
               "nodes": nodes, "verify": None}
        j = cls((directory or runbooks_dir()) / f"{run_id}.json", doc)
        j.save()
        return j

    @classmethod
    def load_fleet(cls, run_id: str, directory: Path | None = None) -> FleetJournal:
        if not RUN_ID.match(run_id or ""):
            raise FleetJournalError(f"{run_id!r} is not a fleet run id (fleet runs are named like "
                                    "fleet-20261202T001500-ab12)")
        path = (directory or runbooks_dir()) / f"{run_id}.json"
        try:
            return cls(path, read_fleet_doc(path))
        except FileNotFoundError:
            raise FleetJournalError(f"no fleet journal {path}", path) from None

    @classmethod
    def unfinished_fleets(cls, directory: Path | None = None) -> list[FleetJournal]:
        """The unfinished fleet runs, oldest first; FleetJournalError for the first fleet journal file that
        cannot be used (what it had started is unknown: no new fleet runs beside it)."""
        d = directory or runbooks_dir()
        out = []
        for p in sorted(d.glob(f"{KIND}-*.json")) if d.is_dir() else []:
            try:
                j = cls(p, read_fleet_doc(p))
            except FileNotFoundError:
                continue
            if j.doc["status"] in UNFINISHED:
                out.append(j)
        return out

    def node(self, name: str) -> dict[str, Any]:
        for n in self.doc["nodes"]:
            if n["node"] == name:
                return n
        raise KeyError(name)

    def mark_node(self, name: str, status: str, *, run_id: str | None = None, message: str | None = None,
                  exit_code: int | None = None) -> None:
        n = self.node(name)
        n["status"] = status
        if status == "running" and not n["started"]:
            n["started"] = now()
        if status in ("done", "failed", "attention"):
            n["finished"] = now()
        if run_id:
            n["run_id"] = run_id
        if message is not None:
            n["message"] = message
        if exit_code is not None:
            n["exit_code"] = exit_code
        self.save()
