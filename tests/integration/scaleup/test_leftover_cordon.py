"""Whose cordon is it (issue 20, point 2): a cordon the console made is the console's to undo, an admin's is not,
and a run that ends with its node cordoned says so.

`kubectl cordon` sets only spec.unschedulable (kubectl pkg/drain/cordon.go: a patch of that one field), so a
cordon carries no author. The console marks its own in the same JSON patch with the node annotation
`console/cordoned-by: <run id>` and removes it in the patch that uncordons — as kured keeps the node's state
before its drain in the node annotation `kured.dev/node-unschedulable-before-drain` (kubereboot/kured
internal/k8soperations/annotations.go), so that what a lost process knew is on the node, not in its memory.

- the issue's sequence: a run killed (SIGKILL) once it waits in VERIFY_RESIZE, its Lease left to expire (its
  renewTime moved back past leaseDurationSeconds through the API, as the clock would after 61 s), its journal
  discarded, then a plain rerun: the leftover cordon is the console's, so the rerun uncordons the node;
- a node the admin cordoned before the run: left cordoned, and the run's final output (text and `-o json`)
  says so;
- (point 10) a resumed resize's plan shows the size before the run, from its journal — not the VM's size now
  (in VERIFY_RESIZE it already runs the target: "8 vCPU / 12Gi → 8 vCPU / 12Gi").
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from crashcases import killed_run
from labtools import lab_env, quick_scheduler_retries, run, wait_for

from console.runbook.lock import DURATION_S, lease_name

pytestmark = pytest.mark.lab

W_ABANDONED, W_ADMIN, W_RESUMED = "lc-abandoned", "lc-admin", "lc-resumed"
MARK = "console/cordoned-by"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, h):
    sc = h.worker_scenario("leftover-cordon", "m1.medium", [W_ABANDONED, W_ADMIN, W_RESUMED])
    for started in h.start_lab(sc, tmp_path_factory.mktemp("leftover-cordon")):
        yield quick_scheduler_retries(started)


def kubectl(lab, *args: str) -> str:
    return run(["kubectl", *args], lab_env(lab)).stdout


def expire_lease(lab, node: str) -> None:
    """The killed run's Lease as it is DURATION_S + 1 seconds after its last renewal: renewTime moved back through
    the API server (a merge patch, as `kubectl patch` sends), so no test waits a minute for the clock."""
    stale = (datetime.now(UTC) - timedelta(seconds=DURATION_S + 1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kubectl(lab, "patch", "lease", lease_name(node), "-n", "default", "--type", "merge",
            "-p", json.dumps({"spec": {"renewTime": stale}}))


def annotations(lab, h, node: str) -> dict[str, str]:
    return h.node_obj(lab, node)["metadata"].get("annotations") or {}


def test_rerun_after_a_discarded_run_undoes_the_consoles_cordon(lab, tmp_path, h):
    """kill -9 at wait-verify-resize, the Lease expired, `--discard RUN_ID --yes`, rerun: exit 0 and the node
    uncordoned (it was `↷ uncordon … already in place` with unschedulable=true: the leftover cordon was taken
    for the admin's)."""
    want = h.add_case_pods(lab, W_ABANDONED, "3", "5Gi")
    args = (W_ABANDONED, "--flavor", "m1.large", "--yes")
    killed = killed_run(h, lab, tmp_path, "wait-verify-resize", *args)
    assert h.node_obj(lab, W_ABANDONED)["spec"].get("unschedulable") is True
    marked = annotations(lab, h, W_ABANDONED).get(MARK)
    described = kubectl(lab, "describe", "node", W_ABANDONED)

    expire_lease(lab, W_ABANDONED)
    code, doc, err = h.scale_up(lab, tmp_path, W_ABANDONED, "--discard", killed["run_id"], "--yes")
    assert code == 0 and doc["status"] == "discarded", err

    code, doc, err = h.scale_up(lab, tmp_path, *args)
    assert code == 0, err
    node = h.node_obj(lab, W_ABANDONED)
    assert not node["spec"].get("unschedulable"), f"the console's own cordon was left in place:\n{err}"
    assert MARK not in (node["metadata"].get("annotations") or {})
    [rerun] = h.journals(tmp_path)
    assert rerun["run_id"] == doc["run_id"] != killed["run_id"]
    assert h.journal_step(rerun, "cordon")["status"] == "skipped"  # the cordon was there: adopted, not made again
    assert h.journal_step(rerun, "uncordon")["status"] == "done"
    assert doc["cordoned"] is None
    # the rerun planned no pod (the grown node fitted it already); the uncordon lets it bind
    wait_for(lambda: h.pod_obj(lab, want)["status"]["phase"] == "Running", 30, what=f"{want} Running")
    assert marked == killed["run_id"]  # set in the cordon's own patch
    assert f"{MARK}: {killed['run_id']}" in described  # an admin sees whose cordon it is
    assert len(h.nova_actions(lab, W_ABANDONED, "resize")) == 1


def test_a_run_that_ends_with_the_node_cordoned_says_so(lab, tmp_path, h):
    """The admin cordoned the node (kubectl cordon) before the run: the run leaves it cordoned — and says so, on
    stderr and in its JSON, instead of a bare "done"."""
    kubectl(lab, "cordon", W_ADMIN)
    code, doc, err = h.scale_up(lab, tmp_path, W_ADMIN, "--flavor", "m1.large", "--yes")
    assert code == 0 and doc["status"] == "done", err
    node = h.node_obj(lab, W_ADMIN)
    assert node["spec"].get("unschedulable") is True  # the admin's cordon: not the console's to undo
    assert MARK not in (node["metadata"].get("annotations") or {})
    said = (f"{W_ADMIN} is left cordoned, as it was before the run: `kubectl uncordon {W_ADMIN}` lets pods "
            "schedule on it")
    assert doc["cordoned"] == {"by": "admin", "message": said}, doc
    assert f"scale-up: {said}" in err.splitlines()


def test_a_resumed_plan_shows_the_size_before_the_run(lab, tmp_path, h):
    """Issue 20, point 10: the plan of a resumed resize said `8 vCPU / 12Gi → 8 vCPU / 12Gi` (the screen's
    capacity table "before 8"): its "before" was read from the VM, which already runs the target."""
    h.add_case_pods(lab, W_RESUMED, "3", "5Gi")
    args = (W_RESUMED, "--flavor", "m1.large")
    killed = killed_run(h, lab, tmp_path, "wait-verify-resize", *args, "--yes")
    assert lab.nova.server(h.server_id(lab, W_RESUMED)).status == "VERIFY_RESIZE"
    before = killed["context"]["plan"]["current"]
    assert before == {"vcpus": 2, "memory_mib": 4096}  # m1.medium, as the run found it
    code, doc, err = h.scale_up(lab, tmp_path, *args, "--dry-run")
    assert code == 0, err
    assert f"resuming run {killed['run_id']}" in err
    assert doc["plan"]["current"] == before, doc["plan"]
