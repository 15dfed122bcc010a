"""The console killed at each step boundary of the libvirt live scale-up runbook, then rerun.

As in test_crash_resize.py, for every step (and after the action of every mutating
step) the CLI is killed, then rerun: the rerun resumes the journaled run and finishes,
and no mutation already in effect is repeated: one Nova soft reboot, at most one
kubelet restart, every mutating step audited once. One worker VM per case in one lab.
"""

from __future__ import annotations

import pytest
from crashcases import LIVE_MUTATING, LIVE_STEPS, audited_ok, case_lab, case_workers, crash_cases, killed_run

pytestmark = pytest.mark.lab

STEPS = LIVE_STEPS
MUTATING = LIVE_MUTATING
CASES = crash_cases(MUTATING, STEPS)
WORKERS = case_workers(CASES, "crl")
lab = case_lab("crash-live", "m1.large", WORKERS)


@pytest.mark.parametrize("case", CASES)
def test_killed_run_resumes_without_repeating_a_mutation(lab, tmp_path, h, case):
    node = WORKERS[case]
    want = h.add_case_pods(lab, node, "9", "13Gi")
    args = (node, "--vcpus", "12", "--memory", "16Gi", "--method", "libvirt", "--yes")

    journal = killed_run(h, lab, tmp_path, case, *args)
    restarts_before = lab.kubelets[node].restarts

    code, doc, err = h.scale_up(lab, tmp_path, *args)
    assert code == 0, err
    assert f"resuming run {journal['run_id']}" in err and doc["run_id"] == journal["run_id"]

    assert len(h.nova_actions(lab, node, "reboot")) == 1, "the guest was restarted more than once"
    assert not h.nova_actions(lab, node, "resize")
    assert lab.kubelets[node].restarts == 1
    if case == "restart-kubelet:acted":
        assert restarts_before == 1  # the killed run restarted it; the rerun did not again
    n = h.node_obj(lab, node)
    assert (n["status"]["capacity"]["cpu"], n["status"]["capacity"]["memory"]) == ("12", "16396200Ki")
    assert not n["spec"].get("unschedulable")
    pod = h.pod_obj(lab, want)
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == node
    assert sorted(audited_ok(h, tmp_path, journal["run_id"])) == sorted(MUTATING)
