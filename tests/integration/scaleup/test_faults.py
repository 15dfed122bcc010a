"""Faults during a run: each ends in a clear message and a safe state (or a resumable journal).

- a resize that ends in ERROR: rolled back by a Nova hard reboot to the old flavor, node uncordoned;
- VERIFY_RESIZE never reached (compute service dies mid-migration): after --resize-timeout the
  server is reset and hard-rebooted back to the old flavor, node uncordoned;
- the OpenStack API going away mid-run: exit 4, nothing rolled back, the journal stays open and a
  plain rerun once the API is back resumes and finishes with exactly one resize;
- a kubelet that does not come back after its restart: exit 4 naming what to check; once the admin
  started it, `--resume RUN_ID` finishes without restarting it again;
- a raised balloon that has not reached the guest yet: the kubelet restart waits for it (a kubelet
  started before would keep the old memory), and if it never comes, exit 4 naming the balloon driver.
One worker VM per case in one lab.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time

import pytest
import yaml
from labtools import wait_for

from console.lab.openstack.server import start_openstack

pytestmark = pytest.mark.lab

W_ERROR, W_STUCK, W_API, W_KUBELET, W_BALLOON = "f-error", "f-stuck", "f-api", "f-kubelet", "f-balloon"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, h):
    sc = h.worker_scenario("faults", "m1.medium", [W_ERROR, W_STUCK, W_API, W_KUBELET, W_BALLOON],
                           {W_KUBELET: "m1.large", W_BALLOON: "m1.large"})
    yield from h.start_lab(sc, tmp_path_factory.mktemp("faults"))


def _ready(node: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or [])


def _assert_back_on_old_flavor(lab, h, node: str, want: str) -> None:
    server = lab.nova.server(h.server_id(lab, node))
    assert (server.status, server.flavor.name) == ("ACTIVE", "m1.medium")
    assert len(h.nova_actions(lab, node, "resize")) == 1
    n = h.node_obj(lab, node)
    assert _ready(n)  # the rollback waited for it
    assert n["status"]["capacity"]["cpu"] == "2"
    assert not n["spec"].get("unschedulable")
    assert h.pod_obj(lab, want)["status"]["phase"] == "Pending"


def test_resize_ending_in_error_is_rolled_back(lab, tmp_path, h):
    want = h.add_case_pods(lab, W_ERROR, "3", "5Gi")
    lab.nova.inject_fault(h.server_id(lab, W_ERROR), "error")
    code, doc, err = h.scale_up(lab, tmp_path, W_ERROR, "--flavor", "m1.large", "--yes")
    assert code == 1, err
    msg = doc["message"]
    assert "went to ERROR" in msg and "Failed to migrate the instance disk" in msg
    assert "Rolled back: hard-rebooted the server out of ERROR" in msg and f"{W_ERROR} uncordoned" in msg
    assert h.journals(tmp_path)[0]["status"] == "failed"
    _assert_back_on_old_flavor(lab, h, W_ERROR, want)


def test_verify_resize_never_reached_times_out_and_recovers(lab, tmp_path, h):
    want = h.add_case_pods(lab, W_STUCK, "3", "5Gi")
    lab.nova.inject_fault(h.server_id(lab, W_STUCK), "stuck")
    t0 = time.monotonic()
    code, doc, err = h.scale_up(lab, tmp_path, W_STUCK, "--flavor", "m1.large", "--yes", "--resize-timeout", "3")
    assert code == 1, err
    assert time.monotonic() - t0 < 30
    msg = doc["message"]
    assert "did not reach VERIFY_RESIZE" in msg and "--resize-timeout" in msg
    assert "reset the server stuck in RESIZE" in msg and f"{W_STUCK} uncordoned" in msg
    _assert_back_on_old_flavor(lab, h, W_STUCK, want)


def test_openstack_api_down_mid_run_then_resumed(lab, tmp_path, h):
    want = h.add_case_pods(lab, W_API, "3", "5Gi")
    timing = lab.nova.timing
    lab.nova.timing = dataclasses.replace(timing, resize_migrating=4.0)  # time to pull the plug while it waits
    api = lab.openstack_api
    try:
        proc = h.scale_up_popen(lab, tmp_path, W_API, "--flavor", "m1.large", "--yes")
        wait_for(lambda: h.journals(tmp_path) and h.journal_step(h.journals(tmp_path)[0], "wait-verify-resize")
                 ["status"] == "started", 30, interval=0.05, what="the run waiting for VERIFY_RESIZE")
        lab._loop.call(api.stop())
        out, err = proc.communicate(timeout=60)
        h.transcript.append(out + err)
        assert proc.returncode == 4, err
        assert "OpenStack API unreachable" in err and "Nothing was rolled back" in err
        assert "--resume" in err
        [journal] = h.journals(tmp_path)
        assert journal["status"] == "needs-attention"
        assert h.node_obj(lab, W_API)["spec"].get("unschedulable")  # left cordoned while the VM is mid-resize
    finally:
        password = yaml.safe_load(lab.state.clouds_yaml.read_text())["clouds"]["lab"]["auth"]["password"]
        lab.openstack_api = lab._loop.call(start_openstack(lab.nova, port=api.port, password=password))
        lab.nova.timing = timing
    code, doc, err = h.scale_up(lab, tmp_path, W_API, "--flavor", "m1.large", "--yes")
    assert code == 0, err
    assert doc["run_id"] == journal["run_id"] and f"resuming run {journal['run_id']}" in err
    assert len(h.nova_actions(lab, W_API, "resize")) == 1
    assert lab.nova.server(h.server_id(lab, W_API)).flavor.name == "m1.large"
    assert h.pod_obj(lab, want)["status"]["phase"] == "Running"


def _live_run_stopped_before_the_kubelet_restart(lab, tmp_path, h, node: str, node_timeout: str):
    """A live scale-up of `node` to 12 vCPUs / 16Gi, killed once the vCPUs are online: (Pending pod, args)."""
    want = h.add_case_pods(lab, node, "9", "13Gi")
    args = (node, "--vcpus", "12", "--memory", "16Gi", "--method", "libvirt", "--yes", "--node-timeout", node_timeout)
    code, _doc, err = h.scale_up(lab, tmp_path, *args, signal_at="online-cpus")  # SIGKILL once journaled
    assert code == -signal.SIGKILL, err
    assert lab.kubelets[node].restarts == 0
    return want, args


def test_kubelet_that_does_not_come_back(lab, tmp_path, h):
    want, args = _live_run_stopped_before_the_kubelet_restart(lab, tmp_path, h, W_KUBELET, "6")
    kubelet = lab.kubelets[W_KUBELET]
    kubelet.inject_fault("no-restart")
    try:
        code, doc, err = h.scale_up(lab, tmp_path, *args)
        assert code == 4, err
        msg = doc["message"]
        assert f"the kubelet on {W_KUBELET} did not come back" in msg and "journalctl -u kubelet" in msg
        assert "Nothing was rolled back" in msg
        assert h.node_obj(lab, W_KUBELET)["spec"].get("unschedulable")
        assert kubelet.state == "dead"
    finally:
        kubelet.clear_fault("no-restart")
    kubelet.start_service()  # what the admin does on the node
    code, doc, err = h.scale_up(lab, tmp_path, *args, "--resume", doc["run_id"])
    assert code == 0, err
    assert kubelet.restarts == 1
    n = h.node_obj(lab, W_KUBELET)
    assert n["status"]["capacity"]["cpu"] == "12" and not n["spec"].get("unschedulable")
    assert h.pod_obj(lab, want)["status"]["phase"] == "Running"


def _set_balloon(lab, h, node: str, mib: int) -> None:
    """`virsh setmem --live` on the node's domain."""
    import libvirt

    conn = libvirt.open(lab.libvirt_uri)
    try:
        conn.lookupByUUIDString(h.server_id(lab, node)).setMemoryFlags(mib * 1024, libvirt.VIR_DOMAIN_MEM_LIVE)
    finally:
        conn.close()


def test_kubelet_restart_waits_for_the_balloon_to_reach_the_guest(lab, tmp_path, h):
    want, args = _live_run_stopped_before_the_kubelet_restart(lab, tmp_path, h, W_BALLOON, "30")
    kubelet = lab.kubelets[W_BALLOON]
    _set_balloon(lab, h, W_BALLOON, 12 * 1024)  # the guest has not caught up with the hot-add yet
    wait_for(lambda: kubelet.guest.balloon_kib == 12 * 2**20, 10, what="the guest to see the 12 GiB balloon")

    code, doc, err = h.scale_up(lab, tmp_path, *args)  # resumes at the kubelet restart; the balloon never comes
    assert code == 4, err
    msg = doc["message"]
    assert "not ~16384 MiB" in msg and "the kubelet was not restarted" in msg and "virtio_balloon" in msg, msg
    assert kubelet.restarts == 0

    # resumes again; once it says it waits for the balloon, the balloon arrives
    proc = h.scale_up_popen(lab, tmp_path, *args)
    lines: list[str] = []
    waiting = threading.Event()

    def read_progress() -> None:
        for line in proc.stderr:
            lines.append(line)
            if "waiting for ~16384 MiB before restarting the kubelet" in line:
                waiting.set()

    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()
    try:
        assert waiting.wait(120), "".join(lines)
        _set_balloon(lab, h, W_BALLOON, 16 * 1024)
        out = proc.stdout.read()
        code = proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)
    err = "".join(lines)
    h.transcript.append(out + err)
    assert code == 0, err
    assert kubelet.restarts == 1
    n = h.node_obj(lab, W_BALLOON)
    assert (n["status"]["capacity"]["cpu"], n["status"]["capacity"]["memory"]) == ("12", "16396200Ki")
    assert h.pod_obj(lab, want)["status"]["phase"] == "Running"


def test_no_secret_in_output_journal_or_audit(lab, tmp_path_factory, h):
    """The lab's kube credential (the kubeconfig's token, or its client certificate's key) and OpenStack password
    (clouds.yaml) appear nowhere we write."""
    user = yaml.safe_load(lab.state.kubeconfig.read_text())["users"][0]["user"]
    token = user.get("token") or user["client-key-data"]
    password = yaml.safe_load(lab.state.clouds_yaml.read_text())["clouds"]["lab"]["auth"]["password"]
    assert len(token) > 20 and len(password) > 10
    written = [p for p in tmp_path_factory.getbasetemp().rglob("*")
               if p.is_file() and (p.name == "audit.log" or p.parent.name == "runbooks")]
    assert len(h.transcript) >= 7 and len(written) >= 8  # the runs of this module (and any before it)
    for text in [*h.transcript, *(p.read_text() for p in written)]:
        assert token not in text and password not in text
