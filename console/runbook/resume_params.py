"""Resuming a scale-up with the parameters it started with: what a rerun asks for must not change the target.

A resumed run keeps its journal's request (the target it planned, the drain flags it was allowed). A rerun
that names a different target (--flavor, --vcpus, --memory, --method) or adds a drain flag is refused with
the difference, instead of silently finishing the old target; timeouts may differ (they bound the waits,
they are not part of what the run changes).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from console.runbook.journal import Journal, bad_journal, discard_command
from console.runbook.scaleup import ScaleUpRequest

TIMEOUTS = ("resize_timeout", "node_timeout", "pods_timeout", "drain_timeout")
_TYPES: dict[str, tuple[type, ...]] = {
    "node": (str,), "flavor": (str, type(None)), "vcpus": (int, type(None)), "memory_mib": (int, type(None)),
    "method": (str, type(None)), "force": (bool,), "delete_emptydir_data": (bool,),
    **dict.fromkeys(TIMEOUTS, (int, float)), "pods": (list, type(None)),
}


class ParamsDiffer(Exception):
    """The rerun's parameters differ from the run's; the message names each difference and the journal."""

    def __init__(self, message: str, differences: list[str]) -> None:
        super().__init__(message)
        self.differences = differences


def _mib(n: int | None) -> str:
    if n is None:
        return "none"
    return f"{n // 1024}Gi" if n % 1024 == 0 else f"{n}Mi"


def differences(given: ScaleUpRequest, recorded: ScaleUpRequest) -> list[str]:
    """Each parameter the rerun names that the run did not use: "--flavor m1.xlarge differs from the run's m1.large"."""
    out = []
    if given.flavor is not None and given.flavor != recorded.flavor:
        out.append(f"--flavor {given.flavor} differs from the run's {recorded.flavor or 'none (it set vCPUs/memory)'}")
    if given.vcpus is not None and given.vcpus != recorded.vcpus:
        out.append(f"--vcpus {given.vcpus} differs from the run's {recorded.vcpus or 'none (it used a flavor)'}")
    if given.memory_mib is not None and given.memory_mib != recorded.memory_mib:
        out.append(f"--memory {_mib(given.memory_mib)} differs from the run's {_mib(recorded.memory_mib)}")
    if given.method is not None and given.method != recorded.chosen_method:
        out.append(f"--method {given.method} differs from the run's {recorded.chosen_method}")
    for flag, name in (("--force", "force"), ("--delete-emptydir-data", "delete_emptydir_data")):
        if getattr(given, name) and not getattr(recorded, name):
            out.append(f"{flag} was not given to the run (a resumed run keeps its drain rules)")
    return out


def recorded_request(journal: Journal) -> ScaleUpRequest:
    """The request a scale-up journal recorded; JournalError (naming the file) when its params are not one."""
    params = journal.doc["params"]
    names = {f.name for f in fields(ScaleUpRequest)}
    for key, value in params.items():
        if key not in names:
            raise bad_journal(journal.path, f"is not a usable runbook journal: params.{key} is not a scale-up "
                              "parameter", journal.doc["node"])
        want = _TYPES[key]
        if not isinstance(value, want) or (isinstance(value, bool) and bool not in want):
            raise bad_journal(journal.path, f"is not a usable runbook journal: params.{key} is {value!r}",
                              journal.doc["node"])
    if params.get("node") != journal.doc["node"]:
        raise bad_journal(journal.path, "is not a usable runbook journal: params.node is not its node",
                          journal.doc["node"])
    if any(not isinstance(p, str) for p in params.get("pods") or []):
        raise bad_journal(journal.path, "is not a usable runbook journal: params.pods holds a non-string",
                          journal.doc["node"])
    pods = params.get("pods")
    return ScaleUpRequest(**{**params, "pods": tuple(pods) if pods is not None else None})


def resume_request(journal: Journal, given: ScaleUpRequest) -> ScaleUpRequest:
    """The run's own request with the rerun's timeouts; ParamsDiffer when the rerun names another target."""
    recorded = recorded_request(journal)
    diff = differences(given, recorded)
    if diff:
        node = journal.doc["node"]
        raise ParamsDiffer(f"{'; '.join(diff)} (run {journal.run_id}, journal {journal.path}); resume without "
                           f"{'them' if len(diff) > 1 else 'it'}, or check {node} and discard the run with: "
                           f"{discard_command(node, journal.run_id)}", diff)
    timeouts: dict[str, Any] = {k: getattr(given, k) for k in TIMEOUTS}
    return ScaleUpRequest(**{**{f.name: getattr(recorded, f.name) for f in fields(ScaleUpRequest)}, **timeouts})
