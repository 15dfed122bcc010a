"""Issue 20 point 7 against the lab's real servers: every command's exits with `-o json` — one JSON document, an error
object with a kind of console/exit_codes.py for every exit but 0 (tests/support/jsonexits.py: the cases and the
contract; tests/unit/test_json_exits.py: the offline cases and the coverage of every command and kind).

Three labs: `default` (NFD v0.19, Nova and libvirt VMs, a Pending nginx), `scale` (no NFD workloads) and
`seed-drain` (NFD v0.8.2, a PodDisruptionBudget that allows no eviction on kube-worker02). What a case needs first
is made through the real APIs (kubectl, the kubernetes client): a Lease another run holds, a Pod no VM can fit,
nfd-master gone, a NodeFeatureRule changed between the preview and the answer (a terminal on stdin). The faults of
the backends come from the lab's fault files (console/lab/faultfiles.py), openstacksdk's own
`compute_endpoint_override` (Keystone answers, Nova's endpoint is a closed port) and a session libvirtd that
requires SASL (libvirt's own auth refusal, VIR_ERR_AUTH_FAILED). Before: 28 of the 81 cases failed on main.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonexits import LAB_DEFAULT, LAB_OLD_NFD, LAB_SCALE, RULE, Case, check, fill
from labstart import start_lab
from labtools import lab_env, wait_for
from ptycli import answer_after

from console.lab import scenarios
from console.lab.faultfiles import FaultFiles
from console.lab.world import Lab

REPO = Path(__file__).resolve().parents[3]
FIX = REPO / "tests" / "fixtures" / "nfd"


@pytest.fixture(scope="module")
def default_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("default", tmp_path_factory.mktemp("json-exits-default"))


@pytest.fixture(scope="module")
def scale_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab(scenarios.get("scale", nodes=2, pods_per_node=1), tmp_path_factory.mktemp("json-exits-scale"))


@pytest.fixture(scope="module")
def old_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-drain", tmp_path_factory.mktemp("json-exits-seed-drain"))


def kubectl(lab: Lab, *args: str, stdin: str = "") -> str:
    p = subprocess.run(["kubectl", *args], env=lab_env(lab), input=stdin, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"kubectl {' '.join(args)}: {p.stderr}"
    return p.stdout


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- what a case needs first (each returns its cleanup) ----------------------------------------------------------


def nova_endpoint_closed(lab: Lab, tmp: Path) -> Callable[[], None]:
    """openstacksdk's `compute_endpoint_override` (clouds.yaml): Keystone answers, Nova's endpoint refuses."""
    clouds = yaml.safe_load(lab.state.clouds_yaml.read_text())
    clouds["clouds"]["lab"]["compute_endpoint_override"] = f"http://127.0.0.1:{_closed_port()}/v2.1"
    (tmp / "clouds.yaml").write_text(yaml.safe_dump(clouds))
    return lambda: None


def libvirt_sasl(lab: Lab, tmp: Path) -> Callable[[], None]:
    """A session libvirtd (the lab's own binary, unprivileged as the lab runs it) whose sockets require SASL: a
    client without credentials is refused with VIR_ERR_AUTH_FAILED (libvirt's remoteDispatchAuthSaslInit)."""
    root = Path(tempfile.mkdtemp(prefix="lvauth-", dir="/tmp"))  # short: a socket path is at most 107 bytes
    (root / "cfg" / "libvirt").mkdir(parents=True)
    (root / "cfg" / "libvirt" / "libvirtd.conf").write_text('auth_unix_rw = "sasl"\nauth_unix_ro = "sasl"\n')
    (root / "run").mkdir()
    for path in [root, *root.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o644)
    env = {"HOME": str(root), "XDG_CONFIG_HOME": str(root / "cfg"), "XDG_RUNTIME_DIR": str(root / "run"),
           "XDG_CACHE_HOME": str(root / "cache"), "XDG_DATA_HOME": str(root / "data"), "PATH": os.environ["PATH"]}
    user = [] if os.getuid() else ["runuser", "-u", "libvirt-qemu", "--"]
    proc = subprocess.Popen([*user, "env", *(f"{k}={v}" for k, v in env.items()), "/usr/sbin/libvirtd"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = root / "run" / "libvirt" / "libvirt-sock"
    wait_for(sock.exists, timeout=30, what="the SASL libvirtd's socket")
    (tmp / "libvirt-uri").write_text(f"qemu+unix:///session?socket={sock}")

    def stop() -> None:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(root, ignore_errors=True)

    return stop


def lease_held(lab: Lab, tmp: Path) -> Callable[[], None]:
    """Another run holds kube-worker02's Lease (console/runbook/lock.py's name and holder form), renewed now."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "console-scale-up-kube-worker02", "namespace": "default"},
             "spec": {"holderIdentity": "alice@bastion-2/scale-up-kube-worker02-20261205T100000-beef",
                      "leaseDurationSeconds": 600, "acquireTime": now, "renewTime": now}}
    kubectl(lab, "apply", "-f", "-", stdin=json.dumps(lease))
    return lambda: kubectl(lab, "delete", "lease", "-n", "default", "console-scale-up-kube-worker02") and None


def huge_pending_pod(lab: Lab, tmp: Path) -> Callable[[], None]:
    """A Pod no VM of the lab can ever fit (500 CPUs)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "json-exits-huge", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                                    "resources": {"requests": {"cpu": "500", "memory": "1Gi"}}}]}}
    kubectl(lab, "apply", "-f", "-", stdin=json.dumps(pod))
    return lambda: kubectl(lab, "delete", "pod", "-n", "default", "json-exits-huge", "--wait=false") and None


def unpullable_pending_pod(lab: Lab, tmp: Path) -> Callable[[], None]:
    """A Pending pod only a bigger kube-worker01 fits (3 CPUs, its hostname), whose image no registry of the lab
    has: the scale-up places it, and it never runs (ErrImagePull, console/lab/images.py), so the verify fails
    whoever is quicker. (The scenario's nginx alone is a race: upstream's kube-scheduler binds it within
    milliseconds of the uncordon, popping it from the backoff queue when the active one is empty —
    pkg/scheduler/backend/queue/active_queue.go, feature SchedulerPopFromBackoffQ — and the lab's kubelet
    agents run it at once.)"""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "json-exits-unpullable", "namespace": "default"},
           "spec": {"nodeSelector": {"kubernetes.io/hostname": "kube-worker01"},
                    "containers": [{"name": "c", "image": "registry.lab/app:no-such-tag",
                                    "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]}}
    kubectl(lab, "apply", "-f", "-", stdin=json.dumps(pod))
    return lambda: kubectl(lab, "delete", "pod", "-n", "default", "json-exits-unpullable", "--wait=false") and None


def no_nfd_master(lab: Lab, tmp: Path) -> Callable[[], None]:
    """nfd-master's Deployment gone (nothing relabels); put back afterwards."""
    saved = json.loads(kubectl(lab, "get", "deployment", "-n", "node-feature-discovery", "nfd-master", "-o", "json"))
    kubectl(lab, "delete", "deployment", "-n", "node-feature-discovery", "nfd-master")
    meta = saved["metadata"]
    saved["metadata"] = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    saved.pop("status", None)
    return lambda: kubectl(lab, "create", "-f", "-", stdin=json.dumps(saved)) and None


def no_nodefeature_crd(lab: Lab, tmp: Path) -> Callable[[], None]:
    """The cluster serves no NodeFeature API (its CRD deleted: an NFD older than v0.12, or none)."""
    crd = "nodefeatures.nfd.k8s-sigs.io"
    if kubectl(lab, "get", "crd", "-o", "name").count(crd):
        kubectl(lab, "delete", "crd", crd)
    return lambda: None


SETUPS: dict[str, Callable[[Lab, Path], Callable[[], None]]] = {
    "nova-endpoint-closed": nova_endpoint_closed, "libvirt-sasl": libvirt_sasl, "lease-held": lease_held,
    "huge-pending-pod": huge_pending_pod, "unpullable-pending-pod": unpullable_pending_pod,
    "no-nfd-master": no_nfd_master, "no-nodefeature-crd": no_nodefeature_crd,
}

# -- running a case --------------------------------------------------------------------------------------------------

RUN_IDS: dict[str, str] = {}  # the seed-drain run a later case resumes and discards


def prepare(lab: Lab, case: Case, tmp: Path) -> tuple[list[str], dict[str, str]]:
    faults = FaultFiles(lab.state.root / "faults")
    values = {"tmp": str(tmp), "fix": str(FIX), "faults": str(faults.root), "run_id": RUN_IDS.get("drain", ""),
              "libvirt_unreachable": faults.libvirt_uri}
    if (tmp / "libvirt-uri").exists():  # written by the libvirt-sasl setup
        values["libvirt_sasl"] = (tmp / "libvirt-uri").read_text()
    for rel, data in case.files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data) if isinstance(data, bytes) else path.write_text(fill(data, values))
        if "hook" in rel:
            path.chmod(0o755)
    env = {k: v for k, v in lab_env(lab).items() if not k.startswith("CONSOLE_") or k == "CONSOLE_LIBVIRT_URI"}
    # one state directory per lab (a run's journal is there for the cases that resume or discard it), unless the
    # case brings its own (an audit log that cannot be written)
    state = tmp / "state" if any(r.startswith("state/") for r in case.files) else lab.state.root / "xdg-state"
    env |= {"XDG_CONFIG_HOME": str(tmp / "cfg"), "XDG_STATE_HOME": str(state), "XDG_DATA_HOME": str(tmp / "data")}
    env |= {k: fill(v, values) for k, v in case.env.items()}
    return [fill(a, values) for a in case.argv] + (["-o", "json"] if case.json else []), env


def run_case(lab: Lab, case: Case, tmp: Path) -> subprocess.CompletedProcess[str]:
    cleanup = SETUPS[case.setup](lab, tmp) if case.setup else None
    try:
        argv, env = prepare(lab, case, tmp)
        cmd = [sys.executable, "-m", "console", *argv]
        if case.driver == "answer-after-someone-else-changed-it":
            return _conflict(lab, cmd, env)
        if case.driver == "sigint-when-ready":
            return _lab_ready(cmd, env, tmp)
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp,
                              stdin=subprocess.DEVNULL)
    finally:
        if cleanup is not None:
            cleanup()


def _conflict(lab: Lab, cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`nfd apply` on a terminal: the rule is changed by someone else (kubectl) between the diff and the answer;
    the write carries the resourceVersion read, the API server answers 409."""
    kubectl(lab, "apply", "-f", "-", stdin=RULE.replace("'true'", "'before'"))
    code, out, err = answer_after(cmd, env, lambda _asked: kubectl(lab, "annotate", "nodefeaturerule", "json-exits",
                                                                   "someone=else"), timeout=120)
    return subprocess.CompletedProcess(cmd, code, out, err)


def _lab_ready(cmd: list[str], env: dict[str, str], tmp: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp)
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()  # the one object, once the lab is ready
        assert json.loads(ready)["status"] == "ready", ready
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(cmd, proc.returncode, ready + out, err)


def _extra(case: Case, doc: Any) -> None:
    """What a case shows beyond the contract."""
    if case.kind in ("forbidden", "kube-forbidden") and case.command != ("get", "nodes"):
        assert doc.get("missing"), doc
    if case.kind == "held":
        assert "alice@bastion-2" in doc["message"], doc
    if case.kind == "needs-attention":
        RUN_IDS["drain"] = doc["run_id"]
    if case.kind == "conflict":
        assert "nothing was overwritten" in doc["message"], doc
    if case.kind == "verify-failed":  # the pod that cannot start
        assert "json-exits-unpullable" in doc["message"], doc


@pytest.mark.parametrize("case", LAB_DEFAULT, ids=[c.id for c in LAB_DEFAULT])
def test_default_lab(default_lab: Lab, case: Case, tmp_path: Path) -> None:
    _extra(case, check(run_case(default_lab, case, tmp_path), case))


@pytest.mark.parametrize("case", LAB_SCALE, ids=[c.id for c in LAB_SCALE])
def test_scale_lab(scale_lab: Lab, case: Case, tmp_path: Path) -> None:
    _extra(case, check(run_case(scale_lab, case, tmp_path), case))


@pytest.mark.parametrize("case", LAB_OLD_NFD, ids=[c.id for c in LAB_OLD_NFD])
def test_seed_drain_lab(old_lab: Lab, case: Case, tmp_path: Path) -> None:
    if "{run_id}" in " ".join(case.argv) and "drain" not in RUN_IDS:
        pytest.fail("the needs-attention case (which starts the run this one uses) did not run first")
    _extra(case, check(run_case(old_lab, case, tmp_path), case))
