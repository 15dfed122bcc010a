"""Field report 2, offline part, reproduced with the real CLIs: kubectl and openstack."""

from __future__ import annotations

import json

import pytest
from labtools import lab_env, run, wait_for

pytestmark = pytest.mark.lab

MESSAGE = (
    "0/3 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, "
    "that the pod didn't tolerate, 2 Insufficient cpu, 2 Insufficient memory."
)
# kube-scheduler since v1.34 (kubernetes #134740, in release-1.34 by #135023) names no taint, and a preemption
# part follows the reasons
MESSAGE_V1_34 = ("0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu, "
                 "2 Insufficient memory. preemption: ")


@pytest.fixture(scope="module")
def env(seed_resize_lab):
    return lab_env(seed_resize_lab)


def kubectl_json(env, *args):
    return json.loads(run(["kubectl", *args, "-o", "json"], env).stdout)


def capacity(env, node):
    c = kubectl_json(env, "get", "node", node)["status"]["capacity"]
    return c["cpu"], c["memory"], c["pods"]


def test_state_dir_files(seed_resize_lab):
    d = seed_resize_lab.state
    assert d.ready.exists() and d.ready.read_text() == ""
    env_text = d.env.read_text()
    for key in ("KUBECONFIG=", "OS_CLIENT_CONFIG_FILE=", "OS_CLOUD=lab", "CONSOLE_LIBVIRT_URI="):
        assert key in env_text
    assert "clouds:" in d.clouds_yaml.read_text() and "lab:" in d.clouds_yaml.read_text()


def test_nodes_before_resize(env):
    out = run(["kubectl", "get", "nodes"], env).stdout
    for name in ("kube-controlplane01", "kube-worker01", "kube-worker02"):
        assert name in out
    for worker in ("kube-worker01", "kube-worker02"):
        wait_for(lambda w=worker: capacity(env, w) == ("2", "4030532Ki", "110"), 30, what=f"{worker} capacity")


def test_pending_pod_and_failed_scheduling_message(env):
    pending = kubectl_json(env, "get", "pods", "-A", "--field-selector", "status.phase=Pending")
    assert [p["metadata"]["name"] for p in pending["items"]] == ["nginx"]

    def message():
        events = kubectl_json(
            env, "get", "events", "--field-selector", "involvedObject.name=nginx,reason=FailedScheduling"
        )
        return [e["message"] for e in events["items"]]

    minor = kubectl_json(env, "version")["serverVersion"]["minor"]
    want = MESSAGE if int("".join(c for c in minor if c.isdigit())) < 34 else MESSAGE_V1_34
    assert wait_for(lambda: any(m.startswith(want) for m in message()), 30, what="FailedScheduling event")
    described = run(["kubectl", "describe", "pod", "nginx"], env).stdout
    assert "FailedScheduling" in described and "Insufficient cpu" in described


def test_stale_replace_is_refused_with_conflict(env, tmp_path):
    node = kubectl_json(env, "get", "node", "kube-worker01")
    run(["kubectl", "label", "node", "kube-worker01", "lab.example/touched=1"], env)
    node["metadata"].setdefault("labels", {})["lab.example/stale"] = "1"
    f = tmp_path / "node.json"
    f.write_text(json.dumps(node))
    proc = run(["kubectl", "replace", "-f", str(f)], env, check=False)
    assert proc.returncode != 0
    assert "the object has been modified; please apply your changes to the latest version" in proc.stderr
    labels = kubectl_json(env, "get", "node", "kube-worker01")["metadata"]["labels"]
    assert labels.get("lab.example/touched") == "1" and "lab.example/stale" not in labels


def test_openstack_resize_confirm_schedules_nginx(env):
    os_ = ["openstack"]
    before = json.loads(run([*os_, "server", "show", "kube-worker02", "-f", "json"], env).stdout)
    assert before["status"] == "ACTIVE"
    run([*os_, "server", "resize", "--flavor", "m1.large", "kube-worker02"], env)
    wait_for(
        lambda: (
            json.loads(run([*os_, "server", "show", "kube-worker02", "-f", "json"], env).stdout)["status"]
            == "VERIFY_RESIZE"
        ),
        90,
        what="VERIFY_RESIZE",
    )
    run([*os_, "server", "resize", "confirm", "kube-worker02"], env)
    after = json.loads(run([*os_, "server", "show", "kube-worker02", "-f", "json"], env).stdout)
    assert after["status"] == "ACTIVE"
    wait_for(lambda: capacity(env, "kube-worker02") == ("8", "12268324Ki", "110"), 60, what="new capacity")

    def nginx():
        pod = kubectl_json(env, "get", "pod", "nginx")
        return pod["status"].get("phase") == "Running" and pod["spec"].get("nodeName") == "kube-worker02"

    wait_for(nginx, 60, what="nginx Running on kube-worker02")
    assert capacity(env, "kube-worker01") == ("2", "4030532Ki", "110")
