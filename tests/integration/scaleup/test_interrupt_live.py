"""Ctrl-C (SIGINT) at every step boundary of the libvirt live scale-up, then --resume.

As in test_interrupt_resize.py: the CLI is sent SIGINT the moment its journal records a step done
(tests/support/journalsignal.py); it stops before the next step, exits 4 with one line naming the
resume command and no traceback; `--resume RUN_ID` finishes with exactly one Nova soft reboot and one
kubelet restart, every mutating step audited once. One worker VM per case in one lab.
"""

from __future__ import annotations

import pytest
from crashcases import LIVE_MUTATING, LIVE_STEPS, audited_ok, case_lab, case_workers, interrupted_run

pytestmark = pytest.mark.lab

STEPS = LIVE_STEPS
MUTATING = LIVE_MUTATING
CASES = [*STEPS[:-1], "verify-pods:started"]
WORKERS = case_workers(CASES, "irl")
lab = case_lab("interrupt-live", "m1.large", WORKERS)


@pytest.mark.parametrize("case", CASES)
def test_interrupted_live_run_resumes_with_one_reboot(lab, tmp_path, h, case):
    node = WORKERS[case]
    want = h.add_case_pods(lab, node, "9", "13Gi")
    args = (node, "--vcpus", "12", "--memory", "16Gi", "--method", "libvirt", "--yes")

    journal, line = interrupted_run(h, lab, tmp_path, case, *args)
    step, _, phase = case.partition(":")
    where = f"during {step}" if phase else f"before {STEPS[STEPS.index(step) + 1]}"
    assert line.startswith(f"scale-up: interrupted {where}; the node is "), line
    assert ("cordoned by the console" in line) == bool(h.node_obj(lab, node)["spec"].get("unschedulable")), line

    code, doc, err = h.scale_up(lab, tmp_path, *args, "--resume", journal["run_id"])
    assert code == 0, err
    assert doc["run_id"] == journal["run_id"]
    assert len(h.nova_actions(lab, node, "reboot")) == 1, "the guest was restarted more than once"
    assert lab.kubelets[node].restarts == 1
    n = h.node_obj(lab, node)
    assert (n["status"]["capacity"]["cpu"], n["status"]["capacity"]["memory"]) == ("12", "16396200Ki")
    assert not n["spec"].get("unschedulable")
    assert h.pod_obj(lab, want)["status"]["phase"] == "Running"
    assert sorted(audited_ok(h, tmp_path, journal["run_id"])) == sorted(MUTATING)
