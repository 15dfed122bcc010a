"""Jobs on upstream's control plane, with real kubectl: the lab's kubelet agents run the pods' commands in the
node's sandbox (console/lab/nodeexec.py runs_to_completion), and kube-controller-manager's Job controller — not
the lab — reads the pods' terminal phases and marks the Job Complete or Failed (k8s.io/kubernetes
pkg/controller/job), retrying per backoffLimit. What each outcome looks like is kubectl's and the controller's own.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labstart import start_lab
from labtools import wait_for

from console.lab.world import Lab

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-drain", tmp_path_factory.mktemp("lab-upstream-job"))


def kubectl(lab: Lab, *args: str, stdin: str | None = None, check: bool = True,
            timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(lab.state.kubeconfig)}
    proc = subprocess.run(["kubectl", *args], env=env, input=stdin, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def get(lab: Lab, *args: str) -> Any:
    return json.loads(kubectl(lab, "get", *args, "-o", "json").stdout)


def job_pods(lab: Lab, job: str) -> list[Any]:
    return list(get(lab, "pods", "-l", f"batch.kubernetes.io/job-name={job}")["items"])


def condition(obj: Any, ctype: str) -> Any:
    return next((c for c in obj["status"].get("conditions") or [] if c["type"] == ctype), None)


def create_job(lab: Lab, name: str, script: str, *, backoff_limit: int, restart: str = "Never") -> None:
    """`kubectl create job` has no --backoff-limit: its manifest (client dry run), edited, then created."""
    manifest = json.loads(kubectl(lab, "create", "job", name, "--image=busybox", "--dry-run=client", "-o", "json",
                                  "--", "sh", "-c", script).stdout)
    manifest["spec"]["backoffLimit"] = backoff_limit
    manifest["spec"]["template"]["spec"]["restartPolicy"] = restart
    assert kubectl(lab, "create", "-f", "-", stdin=json.dumps(manifest)).stdout.strip() == f"job.batch/{name} created"


def test_a_job_runs_its_command_to_completion(lab: Lab) -> None:
    made = kubectl(lab, "create", "job", "hello", "--image=busybox", "--", "sh", "-c", "echo hello from job")
    assert made.stdout.strip() == "job.batch/hello created"
    waited = kubectl(lab, "wait", "--for=condition=complete", "job/hello", "--timeout=120s")
    assert waited.stdout.strip() == "job.batch/hello condition met"
    assert kubectl(lab, "logs", "job/hello").stdout == "hello from job\n"

    job = get(lab, "job", "hello")
    assert job["status"]["succeeded"] == 1 and not job["status"].get("failed")
    assert condition(job, "Complete")["status"] == "True"
    assert job["status"]["completionTime"]
    row = kubectl(lab, "get", "job", "hello", "--no-headers").stdout.split()
    assert row[:3] == ["hello", "Complete", "1/1"]

    [pod] = job_pods(lab, "hello")
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["status"]["phase"] == "Succeeded"
    [status] = pod["status"]["containerStatuses"]
    terminated = status["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert terminated["startedAt"] <= terminated["finishedAt"]
    assert (status["ready"], status["started"], status["restartCount"]) == (False, False, 0)
    ready = condition(pod, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")
    # the pod's row as kubectl prints it (the API server's table: the terminated container's reason)
    assert kubectl(lab, "get", "pod", pod["metadata"]["name"], "--no-headers").stdout.split()[1:3] == \
        ["0/1", "Completed"]


def test_a_failing_job_with_backoff_limit_0_fails_after_one_pod(lab: Lab) -> None:
    create_job(lab, "fail", "echo failing; exit 3", backoff_limit=0)
    waited = kubectl(lab, "wait", "--for=condition=failed", "job/fail", "--timeout=120s")
    assert waited.stdout.strip() == "job.batch/fail condition met"

    job = get(lab, "job", "fail")
    failed = condition(job, "Failed")
    assert (failed["status"], failed["reason"], failed["message"]) == (
        "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert job["status"]["failed"] == 1 and not job["status"].get("succeeded")
    assert kubectl(lab, "get", "job", "fail", "--no-headers").stdout.split()[:3] == ["fail", "Failed", "0/1"]

    [pod] = job_pods(lab, "fail")  # no retry
    assert pod["status"]["phase"] == "Failed"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    ready = condition(pod, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PodFailed")
    assert kubectl(lab, "logs", pod["metadata"]["name"]).stdout == "failing\n"
    assert kubectl(lab, "get", "pod", pod["metadata"]["name"], "--no-headers").stdout.split()[2] == "Error"


def test_a_never_job_gets_a_new_pod_per_failure_up_to_its_backoff_limit(lab: Lab) -> None:
    create_job(lab, "retry", "exit 1", backoff_limit=1)
    kubectl(lab, "wait", "--for=condition=failed", "job/retry", "--timeout=120s")
    job = get(lab, "job", "retry")
    assert job["status"]["failed"] == 2
    pods = job_pods(lab, "retry")
    assert len(pods) == 2 and {p["status"]["phase"] for p in pods} == {"Failed"}


def test_an_onfailure_job_restarts_its_container_until_it_succeeds(lab: Lab) -> None:
    """restartPolicy OnFailure: the kubelet starts the failed container again in the same pod (the first time at
    once); the node's /tmp outlives the first run, so the second succeeds."""
    mark = f"/tmp/tried-{secrets.token_hex(4)}"
    create_job(lab, "again", f"if [ -e {mark} ]; then echo second; else touch {mark}; echo first; exit 1; fi",
               backoff_limit=3, restart="OnFailure")
    kubectl(lab, "wait", "--for=condition=complete", "job/again", "--timeout=120s")
    job = get(lab, "job", "again")
    assert job["status"]["succeeded"] == 1 and not job["status"].get("failed")
    [pod] = job_pods(lab, "again")
    [status] = pod["status"]["containerStatuses"]
    assert status["restartCount"] == 1
    assert (status["lastState"]["terminated"]["exitCode"], status["lastState"]["terminated"]["reason"]) == (1, "Error")
    assert status["state"]["terminated"]["exitCode"] == 0
    assert pod["status"]["phase"] == "Succeeded"


def _processes_with(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker in proc.joinpath("cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def test_deleting_a_running_command_pod_takes_its_grace_period_then_kills_the_command(lab: Lab) -> None:
    """A pod meant to end (restartPolicy Never) whose command is still running: a delete with --grace-period=5
    keeps it Terminating for about that long (the command, PID 1 of its container, ignores SIGTERM), then the
    kubelet removes it and its process is gone."""
    marker = f"sleeper-{secrets.token_hex(4)}"
    kubectl(lab, "run", "sleeper", "--image=busybox", "--restart=Never", "--overrides",
            json.dumps({"spec": {"nodeName": "kube-worker01"}}), "--", "sh", "-c", f"sleep 3600; : {marker}")
    kubectl(lab, "wait", "--for=condition=Ready", "pod/sleeper", "--timeout=60s")
    wait_for(lambda: _processes_with(marker), 30, 0.1, "the pod's command to run on the lab host")
    t0 = time.monotonic()
    gone = kubectl(lab, "delete", "pod", "sleeper", "--grace-period=5")  # waits until the pod is gone
    elapsed = time.monotonic() - t0
    assert gone.stdout.startswith('pod "sleeper" deleted')
    assert 5 <= elapsed < 10, elapsed
    wait_for(lambda: not _processes_with(marker), 10, 0.1, "the command to be killed")
