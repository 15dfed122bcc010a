"""The console killed at each step boundary of the libvirt live scale-up runbook, then rerun.

As in test_crash_resize.py, for every step (and after the action of every mutating
step) the CLI is killed, then rerun: the rerun resumes the journaled run and finishes,
and no mutation already in effect is repeated: one Nova soft reboot, at most one
kubelet restart, every mutating step audited once. One worker VM per case in one lab.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.lab

STEPS = ["cordon", "drain", "raise-maxima", "restart-guest", "hot-add", "online-cpus", "restart-kubelet",
         "uncordon", "verify-pods"]
MUTATING = ["cordon", "drain", "raise-maxima", "restart-guest", "hot-add", "online-cpus", "restart-kubelet",
            "uncordon"]
CASES = [f"{s}:acted" for s in MUTATING] + STEPS
WORKERS = {case: f"crl{i:02d}" for i, case in enumerate(CASES)}


@pytest.fixture(scope="module")
def lab(tmp_path_factory, h):
    yield from h.start_lab(h.worker_scenario("crash-live", "m1.large", list(WORKERS.values())),
                           tmp_path_factory.mktemp("crash-live"))


@pytest.mark.parametrize("case", CASES)
def test_killed_run_resumes_without_repeating_a_mutation(lab, tmp_path, h, case):
    node = WORKERS[case]
    want = h.add_case_pods(lab, node, "9", "13Gi")
    step = case.split(":")[0]
    args = (node, "--vcpus", "12", "--memory", "16Gi", "--method", "libvirt", "--yes")

    code, _doc, err = h.scale_up(lab, tmp_path, *args, extra_env={"CONSOLE_RUNBOOK_CRASH_AFTER": case})
    assert code == 86, f"the run was not killed at {case}: exit {code}\n{err}"
    [journal] = h.journals(tmp_path)
    assert h.journal_step(journal, step)["status"] == ("acted" if case.endswith(":acted") else "done")
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
    done = [e["action"].rsplit(".", 1)[1] for e in h.audit_entries(tmp_path)
            if e.get("run_id") == journal["run_id"] and e["result"] == "ok"]
    assert sorted(done) == sorted(MUTATING)
