"""The console killed at each step boundary of the OpenStack resize runbook, then rerun.

For each step the CLI is killed (SIGKILL) the moment its journal records the step
done, and (`<step>:acted`) the moment it records a mutating step's action, before it
is verified (tests/support/journalsignal.py). A plain rerun must find the unfinished run,
resume it and finish, and the server must have been resized exactly once.
One worker VM per case in one lab.
"""

from __future__ import annotations

import pytest
from crashcases import RESIZE_MUTATING, RESIZE_STEPS, audited_ok, case_lab, case_workers, crash_cases, killed_run

pytestmark = pytest.mark.lab

STEPS = RESIZE_STEPS
MUTATING = RESIZE_MUTATING
CASES = crash_cases(MUTATING, STEPS)
WORKERS = case_workers(CASES, "crr")
lab = case_lab("crash-resize", "m1.medium", WORKERS)


@pytest.mark.parametrize("case", CASES)
def test_killed_run_resumes_and_resizes_once(lab, tmp_path, h, case):
    node = WORKERS[case]
    want = h.add_case_pods(lab, node, "3", "5Gi")
    args = (node, "--flavor", "m1.large", "--yes")

    journal = killed_run(h, lab, tmp_path, case, *args)
    assert journal["status"] == "running"

    code, doc, err = h.scale_up(lab, tmp_path, *args)
    assert code == 0, err
    assert f"resuming run {journal['run_id']}" in err
    assert doc["run_id"] == journal["run_id"]
    assert len(h.journals(tmp_path)) == 1

    assert len(h.nova_actions(lab, node, "resize")) == 1
    assert len(h.nova_actions(lab, node, "confirmResize")) == 1
    server = lab.nova.server(h.server_id(lab, node))
    assert (server.status, server.flavor.name) == ("ACTIVE", "m1.large")
    n = h.node_obj(lab, node)
    assert n["status"]["capacity"]["cpu"] == "8" and not n["spec"].get("unschedulable")
    pod = h.pod_obj(lab, want)
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == node
    # every mutation is in the audit log once, the interrupted one included
    assert sorted(audited_ok(h, tmp_path, journal["run_id"])) == sorted(MUTATING)
