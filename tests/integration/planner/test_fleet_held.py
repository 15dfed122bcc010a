"""A fleet that meets a node another run holds, on the lab's `planner` scenario (issue 20, point 9).

`console plan --apply --yes --pods …` for two of Job train's three pods grows kube-worker01 and kube-worker03. The
fleet is stopped (SIGSTOP, tests/support/journalsignal.py) the moment its journal records kube-worker01 done;
meanwhile another machine's scale-up run takes kube-worker03: its Lease (coordination.k8s.io/v1, the one
console/runbook/lock.py keeps runs apart with) is created through the kubernetes client, holder and renewTime as
that run writes them. The fleet continues (SIGCONT) and must refuse kube-worker03 as `console scale-up
kube-worker03` refuses it — exit 2, `{"status": "refused", "error": "held", …}` — not stop "needs attention" (4).
Once that run has ended (its Lease deleted), the same command resumes the fleet; its final verify counts the Job's
pods on the two grown nodes, names the node each runs on, and gives every planned pod still Pending the
scheduler's latest FailedScheduling message (the Job's third pod may take a planned node in a planned pod's place).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import journalsignal
import pytest
from fleettools import core, hold_node, journals, plan_cli, release_node
from labstart import start_lab
from labtools import lab_env, wait_for

from console.lab.world import Lab

pytestmark = pytest.mark.lab

HOLDER = "ann@bastion-2/scale-up-kube-worker03-20261205T101500-beef"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("fleet-held-lab"))


@pytest.fixture(scope="module")
def pods(lab: Lab) -> tuple[str, ...]:
    """Two of Job train's three Pending pods (named by the job controller: train-<random>)."""
    made = core(lab).list_namespaced_pod("default", label_selector="job-name=train").items
    names = sorted(f"default/{p.metadata.name}" for p in made)
    assert len(names) == 3, names
    return tuple(names[:2])


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def test_a_node_held_by_another_run_refuses_the_fleet_as_scale_up_does(lab: Lab, tmp_path: Path,
                                                                      pods: tuple[str, ...]):
    env = lab_env(lab) | {"XDG_STATE_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    argv = journalsignal.command("plan", "--pods", *pods, "--apply", "--yes", "-o", "json")
    proc = subprocess.Popen(argv, env=env | journalsignal.env("kube-worker01", "SIGSTOP"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        wait_for(lambda: proc.poll() is not None or _stopped(proc.pid), timeout=240,
                 what="the fleet stopped with kube-worker01 done")
        assert proc.poll() is None, proc.communicate()
        [fleet] = journals(tmp_path, "fleet")
        assert [(n["node"], n["status"]) for n in fleet["nodes"]] == [("kube-worker01", "done"),
                                                                     ("kube-worker03", "pending")]
        hold_node(lab, "kube-worker03", HOLDER)  # another machine's run takes kube-worker03
        os.kill(proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, err
    doc = json.loads(out)
    assert (doc["status"], doc["error"], doc["exit_code"]) == ("refused", "held", 2)
    assert HOLDER in doc["message"] and "nothing was changed on kube-worker03" in doc["message"]
    [fleet] = journals(tmp_path, "fleet")
    assert fleet["status"] == "needs-attention"  # resumable once that run ends
    assert [n["status"] for n in fleet["nodes"]] == ["done", "pending"]
    assert [j["node"] for j in journals(tmp_path, "scale-up")] == ["kube-worker01"]  # none for kube-worker03

    # what `console scale-up kube-worker03` says of the same node: the same code and kind
    up = subprocess.run([sys.executable, "-m", "console", "scale-up", "kube-worker03", "--flavor", "m1.large", "--yes",
                         "-o", "json"], env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert up.returncode == 2, up.stderr
    assert (json.loads(up.stdout)["status"], json.loads(up.stdout)["error"]) == ("refused", "held")

    # that run ends: the same command resumes the fleet and verifies it
    release_node(lab, "kube-worker03")
    rerun = plan_cli(lab, tmp_path, "--pods", *pods, "--apply", "--yes")
    assert rerun.doc.get("fleet_id") == fleet["run_id"], rerun.stderr
    assert rerun.doc["this_run"] == {"scaled_up": ["kube-worker03"], "resumed": [], "done_before": ["kube-worker01"]}
    placements = rerun.doc["plan"]["placements"]
    assert sorted(placements) == sorted(pods) and sorted(placements.values()) == ["kube-worker01", "kube-worker03"]
    api = core(lab)
    train = {f"default/{p.metadata.name}": p for p in api.list_namespaced_pod("default").items
             if p.metadata.name.startswith("train-")}
    on_grown = {k: p.spec.node_name for k, p in train.items()
                if p.status.phase == "Running" and p.spec.node_name in placements.values()}
    assert sorted(on_grown.values()) == ["kube-worker01", "kube-worker03"]  # the Job has a pod on each
    assert rerun.code == 0 and rerun.doc["status"] == "done", rerun.doc["message"]
    by_node = ", ".join(f"{n}: {k.split('/')[1]}" for k, n in sorted(on_grown.items(), key=lambda i: i[1]))
    assert f"2 of 2 pods of job/train Running ({by_node})" in rerun.doc["message"]
    rows = {r["pod"]: r for r in rerun.doc["verify"]}
    for key in pods:
        node = train[key].spec.node_name or ""
        assert rows[key]["runs_on"] == (node if train[key].status.phase == "Running" else "")
        if not node:  # still Pending: the scheduler's own words
            events = [e for e in api.list_namespaced_event("default").items
                      if e.involved_object.name == key.split("/")[1] and e.reason == "FailedScheduling"]
            why = max(events, key=lambda e: e.last_timestamp or e.event_time).message
            assert rows[key]["why"] == f"Pending: {why}"
            assert f"{key.split('/')[1]} Pending: {why}" in rerun.doc["message"]
