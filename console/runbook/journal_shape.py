"""Is a document a runbook journal this console can resume? The first thing wrong with it, in words.

A journal is read back from the state directory, where anything may have happened to it (a disk that
filled up mid-write on another version, a hand edit, a copy from another machine): every key the runbook
reads is checked for presence and type before a run is built from it, so a bad file is a refusal naming
the key, never a KeyError or TypeError later. Kind-specific `params` are checked where they are turned
into a request (console/runbook/resume_params.py, console/runbook/revert.py).
"""

from __future__ import annotations

import re
from typing import Any

VERSION = 2
KINDS = ("scale-up", "revert")
STATUSES = ("running", "done", "failed", "needs-attention", "interrupted", "reverted", "verify-failed", "refused")
STEP_STATUSES = ("pending", "started", "acted", "done", "skipped", "failed", "undone")
# new_run_id(): <kind>-<node>-<UTC %Y%m%dT%H%M%S>-<4 hex>; node names may contain "-", the suffix is fixed
RUN_ID = re.compile(r"^(?P<kind>scale-up|revert)-(?P<node>.+)-\d{8}T\d{6}-[0-9a-f]{4}$")


def _type(value: Any, want: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in want:  # JSON true is not a number here
        return False
    return isinstance(value, want)


def _name(t: tuple[type, ...]) -> str:
    names = {str: "a string", dict: "an object", list: "a list", bool: "true or false", int: "an integer",
             type(None): "null"}
    return " or ".join(names.get(x, x.__name__) for x in t)


def _field(doc: dict[str, Any], key: str, want: tuple[type, ...], where: str = "") -> str | None:
    if key not in doc:
        return f"{where}{key} is missing"
    if not _type(doc[key], want):
        return f"{where}{key} is {_show(doc[key])}, expected {_name(want)}"
    return None


def fields_problem(obj: dict[str, Any], checks: tuple[tuple[str, tuple[type, ...]], ...],
                   where: str = "") -> str | None:
    """The first of `checks` (key, allowed types) that `obj` fails, in words (None: all hold)."""
    for key, want in checks:
        if why := _field(obj, key, want, where):
            return why
    return None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def node_of(run_id: str) -> tuple[str, str] | None:
    """(kind, node) named by a run id or journal file stem, None when it is not a run id."""
    m = RUN_ID.match(run_id)
    return (m["kind"], m["node"]) if m else None


def problem(doc: Any, stem: str | None = None) -> str | None:
    """What is wrong with `doc` as a version-VERSION journal (None: nothing); `stem`: its file name without
    .json, which must be its run id."""
    if not isinstance(doc, dict):
        return f"it holds {type(doc).__name__ if doc is not None else 'null'}, not a journal object"
    if "version" in doc and doc["version"] != VERSION and _type(doc["version"], (int,)):
        return (f"it is a version-{doc['version']} journal; this console reads version {VERSION}, which also "
                "records the cluster and the cloud/hypervisor of the run")
    checks: list[tuple[str, tuple[type, ...]]] = [
        ("version", (int,)), ("run_id", (str,)), ("kind", (str,)), ("node", (str,)), ("status", (str,)),
        ("params", (dict,)), ("context", (dict,)), ("created", (str,)), ("updated", (str,)), ("message", (str,)),
        ("cluster", (dict,)), ("infra", (dict,)), ("steps", (list,)),
    ]
    for key, want in checks:
        if why := _field(doc, key, want):
            return why
    if not re.fullmatch(r"[a-z][a-z0-9-]*", doc["kind"]):  # KINDS are the console's; others are the engine's tests'
        return f"kind is {_show(doc['kind'])}, expected a runbook kind such as {', '.join(KINDS)}"
    if doc["status"] not in STATUSES:
        return f"status is {_show(doc['status'])}, expected one of {', '.join(STATUSES)}"
    if not doc["node"]:
        return "node is empty"
    if stem is not None and doc["run_id"] != stem:
        return f"its run_id {_show(doc['run_id'])} is not its file name {stem!r}"
    named = node_of(doc["run_id"])
    if named is not None and named != (doc["kind"], doc["node"]):
        return f"its run id names a {named[0]} run of {named[1]}, its content a {doc['kind']} run of {doc['node']}"
    if why := _field(doc["cluster"], "server", (str,), "cluster."):
        return why
    if why := _field(doc["cluster"], "kube_system_uid", (str, type(None)), "cluster."):
        return why
    if "plan" in doc["context"] and not _type(doc["context"]["plan"], (dict,)):
        return f"context.plan is {_show(doc['context']['plan'])}, expected an object"
    return _steps_problem(doc["steps"])


def _steps_problem(steps: list[Any]) -> str | None:
    if not steps:
        return "steps is empty"
    seen: set[str] = set()
    for i, s in enumerate(steps):
        where = f"steps[{i}]."
        if not isinstance(s, dict):
            return f"steps[{i}] is {_show(s)}, expected an object"
        if "mutating" in s and not isinstance(s["mutating"], bool):  # plans' step lists do not always say
            return f"{where}mutating is {_show(s['mutating'])}, expected true or false"
        if why := fields_problem(s, (("id", (str,)), ("title", (str,)), ("status", (str,)),
                                     ("started", (str, type(None))), ("finished", (str, type(None))),
                                     ("data", (dict,)), ("message", (str,))), where):
            return why
        if s["status"] not in STEP_STATUSES:
            return f"{where}status is {_show(s['status'])}, expected one of {', '.join(STEP_STATUSES)}"
        if s["id"] in seen:
            return f"step {s['id']!r} appears twice"
        seen.add(s["id"])
    return None
