"""The kill-at-every-step-boundary cases of tests/integration/scaleup/test_crash_*.py.

A case is `<step>` (the CLI is killed with SIGKILL the moment its journal records the step done) or
`<step>:acted` (the moment it records a mutating step's action, before it is verified);
tests/support/journalsignal.py follows the journal writes. Each case gets its own worker VM in one lab per
module. `h` is the `h` fixture of tests/integration/scaleup/conftest.py (its helpers).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from labtools import quick_scheduler_retries

from console.lab.world import Lab

# the step ids of the two runbooks (console/runbook/steps/), and the ones that change something
RESIZE_STEPS = ["preflight", "cordon", "drain", "resize", "wait-verify-resize", "confirm-resize", "wait-node",
                "uncordon", "verify-pods"]
RESIZE_MUTATING = ["cordon", "drain", "resize", "confirm-resize", "uncordon"]
LIVE_STEPS = ["preflight", "cordon", "drain", "raise-maxima", "restart-guest", "hot-add", "online-cpus",
              "restart-kubelet", "uncordon", "verify-pods"]
LIVE_MUTATING = LIVE_STEPS[1:-1]


def crash_cases(mutating: list[str], steps: list[str]) -> list[str]:
    """`<step>:acted` for every mutating step, then `<step>` for every step."""
    return [f"{s}:acted" for s in mutating] + steps


def case_workers(cases: list[str], prefix: str) -> dict[str, str]:
    """One worker node name per case: prefix00, prefix01, …"""
    return {case: f"{prefix}{i:02d}" for i, case in enumerate(cases)}


def case_lab(name: str, flavor: str, workers: dict[str, str]) -> Callable[..., Iterator[Lab]]:
    """A module-scoped `lab` fixture: scenario `name` with one worker VM on `flavor` per case, its scheduler
    retrying unschedulable pods every second (labtools.quick_scheduler_retries: each case's Pending pod binds
    right after the uncordon, not after a 10 s backoff)."""

    @pytest.fixture(scope="module", name="lab")
    def lab(tmp_path_factory: pytest.TempPathFactory, h: Any) -> Iterator[Lab]:
        scenario = h.worker_scenario(name, flavor, list(workers.values()))
        for started in h.start_lab(scenario, tmp_path_factory.mktemp(name)):
            yield quick_scheduler_retries(started)

    return lab


def killed_run(h: Any, lab: Lab, state: Path, case: str, *args: str) -> dict[str, Any]:
    """`scale-up ARGS` killed (SIGKILL) the moment its journal records `case`: asserts it was; the run's journal."""
    code, _doc, err = h.scale_up(lab, state, *args, signal_at=case)
    assert code == -signal.SIGKILL, f"the run was not killed at {case}: exit {code}\n{err}"
    [journal] = h.journals(state)
    step = case.split(":")[0]
    assert h.journal_step(journal, step)["status"] == ("acted" if case.endswith(":acted") else "done")
    return journal


def audited_ok(h: Any, state: Path, run_id: str) -> list[str]:
    """The steps of run `run_id` the audit log records as done (result ok), in log order."""
    return [e["action"].rsplit(".", 1)[1] for e in h.audit_entries(state)
            if e.get("run_id") == run_id and e["result"] == "ok"]


def interrupted_run(h: Any, lab: Lab, state: Path, case: str, *args: str, sig: str = "SIGINT") -> tuple[dict, str]:
    """`scale-up ARGS` sent `sig` the moment its journal records `case`: asserts exit 4, the JSON, one
    "interrupted" line naming the resume command and no traceback; (the run's journal, that line)."""
    code, doc, err = h.scale_up(lab, state, *args, signal_at=case, sig=sig)
    assert code == 4, f"exit {code} after {sig} at {case}\n{err}"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    [journal] = h.journals(state)
    assert journal["status"] == "interrupted" and doc["status"] == "interrupted" and doc["exit_code"] == 4
    lines = [line for line in err.splitlines() if "interrupted" in line]
    assert len(lines) == 1, err
    node = args[0]
    assert lines[0].endswith(f"; resume with: python -m console scale-up {node} --resume {journal['run_id']}")
    return journal, lines[0]
