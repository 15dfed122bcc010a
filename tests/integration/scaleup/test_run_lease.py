"""One scale-up run per node at a time, through a coordination.k8s.io/v1 Lease (issue 8, deliverable 3).

Semantics from client-go tools/leaderelection (leaderelection.go tryAcquireOrRenew, resourcelock/leaselock.go):
create-if-absent (409 AlreadyExists to the loser), held and unexpired → refused, expired → taken over with
leaseTransitions + 1, released as holder "" / leaseDurationSeconds 1. The node heartbeats follow the kubelet's
lease controller (k8s.io/component-helpers/apimachinery/lease/controller.go) and what `kubectl describe node`
reads (kubectl pkg/describe/describe.go describeNodeLease).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from labtools import lab_env, wait_for

from console.lab import scenarios
from console.lab.faultfiles import FaultFiles
from console.lab.nodelease import LEASES, micro_time
from console.lab.openstack.model import NovaTiming
from console.lab.store import NotFound
from console.lab.world import Lab

pytestmark = pytest.mark.lab

NODE = "kube-worker02"
OTHER = "kube-worker01"
OTHER_MACHINE = "bob@bastion-2/scale-up-kube-worker01-20261201T000000-beef"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    # a resize that stays in RESIZE for a few seconds: the second of two runs started together then always
    # arrives while the first holds the node (the lab's default resize takes under a second)
    lab = Lab(scenarios.get("seed-resize"), tmp_path_factory.mktemp("scaleup-lease"),
              nova_timing=NovaTiming(resize_migrating=4.0), wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


def lease(lab: Lab, node: str) -> dict | None:
    try:
        return lab.store.get(LEASES, "default", f"console-scale-up-{node}")
    except NotFound:
        return None


def put_lease(lab: Lab, node: str, holder: str, renewed: datetime) -> None:
    """Another machine's run: a Lease as client-go would have written it."""
    spec = {"holderIdentity": holder, "leaseDurationSeconds": 60, "acquireTime": micro_time(renewed),
            "renewTime": micro_time(renewed), "leaseTransitions": 3}
    cur = lease(lab, node)
    if cur is None:
        lab.store.create(LEASES, {"metadata": {"name": f"console-scale-up-{node}", "namespace": "default"},
                                    "spec": spec})
    else:
        lab.store.mutate(LEASES, "default", f"console-scale-up-{node}", lambda o: {**o, "spec": spec})


def test_two_runs_started_together_resize_once(lab, tmp_path, h):
    """Two `scale-up kube-worker02 --flavor m1.large --yes` at once, separate state dirs (two machines):
    exactly one Nova resize; one exits 0, the other exits 2 naming the first's holder, before any change."""
    resizes = len(h.nova_actions(lab, NODE, "resize"))
    states = [tmp_path / "a", tmp_path / "b"]
    procs = [h.scale_up_popen(lab, s, NODE, "--flavor", "m1.large", "--yes") for s in states]
    outs = [p.communicate(timeout=240) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], outs
    win, lose = (0, 1) if codes[0] == 0 else (1, 0)
    winner = json.loads(outs[win][0])
    refused = json.loads(outs[lose][0])
    assert refused["status"] == "refused"
    assert refused["holder"].endswith("/" + winner["run_id"]), refused
    assert winner["run_id"] in refused["message"] and "expires" in refused["message"]
    assert len(h.nova_actions(lab, NODE, "resize")) == resizes + 1
    assert h.journals(states[lose]) == [] and h.audit_entries(states[lose]) == []
    held = lease(lab, NODE)
    assert held is not None and held["spec"]["holderIdentity"] == ""  # released when the winner finished
    assert held["spec"]["leaseDurationSeconds"] == 1


def test_unexpired_lease_of_another_machine_refuses_at_once(lab, tmp_path, scale_up, h):
    h.stale_kubelet(lab, OTHER)  # a plan with steps: the VM already has its flavor, the kubelet lags
    flavor = lab.nova.server(h.server_id(lab, OTHER)).flavor.name
    put_lease(lab, OTHER, OTHER_MACHINE, datetime.now(UTC))
    restarts = lab.kubelets[OTHER].restarts
    t0 = time.monotonic()
    code, doc, err = scale_up(lab, tmp_path, OTHER, "--flavor", flavor, "--yes")
    assert code == 2, err
    assert doc["holder"] == OTHER_MACHINE and OTHER_MACHINE in doc["message"] and "expires in" in doc["message"]
    assert time.monotonic() - t0 < 30  # refused at once, not after waiting for the Lease
    assert h.journals(tmp_path) == [] and h.audit_entries(tmp_path) == []
    assert lease(lab, OTHER)["spec"]["holderIdentity"] == OTHER_MACHINE
    assert lab.kubelets[OTHER].restarts == restarts and not h.node_obj(lab, OTHER)["spec"].get("unschedulable")


def test_expired_lease_of_another_holder_is_taken_over(lab, tmp_path, scale_up, h):
    flavor = lab.nova.server(h.server_id(lab, OTHER)).flavor.name
    put_lease(lab, OTHER, OTHER_MACHINE, datetime.now(UTC) - timedelta(minutes=5))
    code, doc, err = scale_up(lab, tmp_path, OTHER, "--flavor", flavor, "--yes")
    assert code == 0, err
    journal = h.journals(tmp_path)[0]
    assert journal["context"]["lease"]["took_over_from"] == OTHER_MACHINE
    assert journal["context"]["lease"]["holder"].endswith("/" + doc["run_id"])
    after = lease(lab, OTHER)["spec"]
    assert after["holderIdentity"] == "" and after["leaseTransitions"] == 4  # one new holder since bob


def test_resume_takes_over_its_own_runs_lease(lab, tmp_path, scale_up, h):
    """A run killed (SIGKILL: no cleanup) while it waits for a kubelet that does not come back leaves its Lease
    held: a new run is refused, naming it; `--resume` of that run takes the Lease over at once."""
    h.stale_kubelet(lab, OTHER)
    flavor = lab.nova.server(h.server_id(lab, OTHER)).flavor.name
    kubelet = lab.kubelets[OTHER]
    kubelet.inject_fault("no-restart")
    try:
        proc = h.scale_up_popen(lab, tmp_path, OTHER, "--flavor", flavor, "--node-timeout", "300", "--yes")
        try:
            wait_for(lambda: proc.poll() is not None or any(
                h.journal_step(j, "restart-kubelet")["status"] in ("started", "acted") for j in h.journals(tmp_path)),
                timeout=120, what="the run to restart the kubelet")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        journal = h.journals(tmp_path)[0]
        assert journal["status"] == "running", journal
        run_id = journal["run_id"]
        held = lease(lab, OTHER)["spec"]
        assert held["holderIdentity"].endswith("/" + run_id)
        code, doc, err = scale_up(lab, tmp_path, OTHER, "--flavor", flavor, "--new", "--yes")
        assert code == 2, err
        assert doc["holder"] == held["holderIdentity"] and run_id in doc["message"]
    finally:
        kubelet.clear_fault("no-restart")
    kubelet.start_service()  # what the admin does on the node
    code, doc, err = scale_up(lab, tmp_path, OTHER, "--resume", run_id, "--yes")
    assert code == 0, err
    assert doc["run_id"] == run_id
    assert h.node_obj(lab, OTHER)["status"]["capacity"]["cpu"] == str(len(kubelet.guest.online_cpus))
    assert lease(lab, OTHER)["spec"]["holderIdentity"] == ""
    assert not list((tmp_path / "console" / "runbooks").glob("*.lock"))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubectl_shows_the_node_heartbeat_leases(lab):
    env = lab_env(lab)

    def kubectl(*args: str) -> str:
        proc = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    rows = [line.split() for line in kubectl("get", "leases", "-A").splitlines()]
    assert rows[0] == ["NAMESPACE", "NAME", "HOLDER", "AGE"]
    assert ["kube-node-lease", NODE, NODE] in [r[:3] for r in rows]
    out = kubectl("describe", "node", NODE)
    assert "Failed to get lease" not in out
    section = out[out.index("Lease:"):].splitlines()[:4]
    assert section[1].split() == ["HolderIdentity:", NODE]
    assert section[2].split() == ["AcquireTime:", "<unset>"]  # the kubelet never sets it
    assert section[3].split()[0] == "RenewTime:"
    obj = json.loads(kubectl("get", "lease", "-n", "kube-node-lease", NODE, "-o", "json"))
    assert obj["spec"]["leaseDurationSeconds"] == 40
    assert obj["metadata"]["ownerReferences"][0]["kind"] == "Node"
    first = obj["spec"]["renewTime"]
    wait_for(lambda: lab.store.get(LEASES, "kube-node-lease", NODE)["spec"]["renewTime"] != first,
             timeout=60, what="the kubelet to renew its node lease")


def test_lease_namespace_that_does_not_exist_is_refused_before_any_change(lab, tmp_path, scale_up, h):
    """lease_namespace set to a namespace the cluster lacks: exit 2 naming it and the setting; nothing changed."""
    h.stale_kubelet(lab, OTHER)
    flavor = lab.nova.server(h.server_id(lab, OTHER)).flavor.name
    restarts = lab.kubelets[OTHER].restarts
    code, doc, err = scale_up(lab, tmp_path, OTHER, "--flavor", flavor, "--yes",
                              extra_env={"CONSOLE_LEASE_NAMESPACE": "no-such-ns"})
    assert code == 2, err
    assert "lease_namespace" in doc["message"] and "no-such-ns" in doc["message"]
    assert h.journals(tmp_path) == [] and h.audit_entries(tmp_path) == []
    assert lab.kubelets[OTHER].restarts == restarts


def test_a_held_node_is_refused_before_its_vm_is_read(lab, tmp_path, scale_up, h):
    """The Lease is looked at before planning reads the VM and the cloud: a run in progress changes both (a
    resizing VM's domain is shut off), so a second run must hear who holds the node, not a fault of the state the
    first run is in the middle of (a CI run saw exit 6 "cannot connect" for a VM mid-resize). Shown here with a
    cloud this run cannot log in to: the refusal names the holder, exit 2, and Keystone is never asked."""
    put_lease(lab, OTHER, OTHER_MACHINE, datetime.now(UTC))
    clouds = str(FaultFiles(lab.state.root / "faults").clouds_yaml)
    code, doc, err = scale_up(lab, tmp_path, OTHER, "--flavor", "m1.large", "--yes",
                              extra_env={"OS_CLIENT_CONFIG_FILE": clouds,
                                         "OS_CLOUD": "lab-wrong-password"})
    assert code == 2, err
    assert doc["status"] == "refused" and doc["holder"] == OTHER_MACHINE, doc
    assert h.journals(tmp_path) == [] and h.audit_entries(tmp_path) == []
    put_lease(lab, OTHER, OTHER_MACHINE, datetime.now(UTC) - timedelta(minutes=5))  # expired: the run may go on
    code, doc, err = scale_up(lab, tmp_path, OTHER, "--flavor", "m1.large", "--yes", "--dry-run",
                              extra_env={"OS_CLIENT_CONFIG_FILE": clouds,
                                         "OS_CLOUD": "lab-wrong-password"})
    assert code == 6 and "clouds.yaml" in err, err  # and then the cloud's fault is what it hears
