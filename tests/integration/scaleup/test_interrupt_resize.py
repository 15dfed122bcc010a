"""Ctrl-C (SIGINT) and SIGTERM during a headless OpenStack resize, at every step boundary, then --resume.

The CLI (`python -m console scale-up`, a subprocess) is sent SIGINT the moment its journal records a step
done (tests/support/journalsignal.py): the run stops before the next step, saves its journal
("interrupted"), prints one line naming the step, the node's state and the resume command, exits 4 with
no traceback; `--resume RUN_ID` then finishes with exactly one Nova resize and one confirm. Inside the
long waits (VERIFY_RESIZE, the node coming back) the signal cuts the wait at once. A closed stdout
(`-o json | head -c1`) ends quietly: https://docs.python.org/3/library/signal.html#note-on-sigpipe.
Nova's resize states: https://docs.openstack.org/api-guide/compute/server_concepts.html (VERIFY_RESIZE).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from crashcases import RESIZE_MUTATING, RESIZE_STEPS, audited_ok, case_lab, case_workers, interrupted_run
from labtools import lab_env

pytestmark = pytest.mark.lab

STEPS = RESIZE_STEPS
MUTATING = RESIZE_MUTATING
# "<step>": SIGINT once it is journaled done (stops before the next); "<step>:started": inside its wait
CASES = [*STEPS[:-1], "wait-verify-resize:started", "wait-node:started", "resize=SIGTERM"]
WORKERS = case_workers([*CASES, "pipe"], "irr")
lab = case_lab("interrupt-resize", "m1.medium", WORKERS)


def _where(case: str) -> str:
    step, _, phase = case.partition(":")
    return f"during {step}" if phase == "started" else f"before {STEPS[STEPS.index(step) + 1]}"


@pytest.mark.parametrize("case", CASES)
def test_interrupted_run_stops_cleanly_and_resumes_with_one_resize(lab, tmp_path, h, case):
    node = WORKERS[case]
    at, _, sig = case.partition("=")
    want = h.add_case_pods(lab, node, "3", "5Gi")
    args = (node, "--flavor", "m1.large", "--yes")

    journal, line = interrupted_run(h, lab, tmp_path, at, *args, sig=sig or "SIGINT")
    assert line.startswith(f"scale-up: interrupted {_where(at)}; the node is "), line
    server = lab.nova.server(h.server_id(lab, node))
    cordoned = bool(h.node_obj(lab, node)["spec"].get("unschedulable"))
    assert ("cordoned by the console" in line) == cordoned, line
    if at == "wait-verify-resize":  # stopped before the confirm: the server waits in VERIFY_RESIZE
        assert server.status == "VERIFY_RESIZE" and "VERIFY_RESIZE" in line

    code, doc, err = h.scale_up(lab, tmp_path, *args, "--resume", journal["run_id"])
    assert code == 0, err
    assert doc["run_id"] == journal["run_id"] and len(h.journals(tmp_path)) == 1
    assert len(h.nova_actions(lab, node, "resize")) == 1
    assert len(h.nova_actions(lab, node, "confirmResize")) == 1
    server = lab.nova.server(h.server_id(lab, node))
    assert (server.status, server.flavor.name) == ("ACTIVE", "m1.large")
    assert not h.node_obj(lab, node)["spec"].get("unschedulable")
    assert h.pod_obj(lab, want)["status"]["phase"] == "Running"
    assert sorted(audited_ok(h, tmp_path, journal["run_id"])) == sorted(MUTATING)


def test_closed_stdout_ends_quietly(lab, tmp_path):
    """`scale-up NODE --dry-run -o json | head -c1`: the reader is gone before the CLI writes."""
    read, write = os.pipe()
    os.close(read)  # every write now fails with EPIPE (Python ignores SIGPIPE: BrokenPipeError)
    try:
        proc = subprocess.run([sys.executable, "-m", "console", "scale-up", WORKERS["pipe"], "--flavor", "m1.large",
                               "--dry-run", "-o", "json"], env=lab_env(lab) | {"XDG_STATE_HOME": str(tmp_path)},
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert "Exception ignored" not in proc.stderr
    assert proc.returncode == 0, proc.stderr
