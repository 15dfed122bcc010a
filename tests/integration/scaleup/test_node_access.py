"""Node access as on a real cluster, through `console scale-up` against the seed-live lab.

- The preflight (first, non-mutating step) refuses within 30 s, with the cluster's own reason and before
  anything is changed, a debug image the nodes cannot pull (kubelet pkg/kubelet/images/image_manager.go:
  ErrImagePull / ImagePullBackOff) and a debug namespace enforcing PodSecurity baseline
  (kubernetes/pod-security-admission: `violates PodSecurity "baseline:latest": ...`).
- Leftover node-debug pods of a killed run are removed before the first node command.
- A node command that exits non-zero fails its step (`systemctl restart <unit>` of a unit the node lacks).
- The kubelet's config comes from configz through the API server's node proxy (`kubectl get --raw`).
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest
from labtools import lab_env, run, wait_for

pytestmark = pytest.mark.lab

NODE = "kube-worker02"
ARGS = (NODE, "--vcpus", "12", "--memory", "16Gi", "--method", "libvirt", "--yes")


def _unchanged(lab, h, state, vcpus_before):
    """Nothing was changed: not cordoned, the guest's vCPUs as before, no audit entry at all."""
    assert not h.node_obj(lab)["spec"].get("unschedulable")
    assert len(lab.kubelets[NODE].guest.online_cpus) == vcpus_before
    assert h.node_obj(lab)["status"]["capacity"]["cpu"] == "8"
    assert h.audit_entries(state) == []


def test_preflight_refuses_an_image_the_nodes_cannot_pull(live_lab, tmp_path, h):
    lab = live_lab
    vcpus = len(lab.kubelets[NODE].guest.online_cpus)
    # a leftover of a killed run: labelled as the console labels its debug pods, stuck on the node
    lab.store.create("pods", {
        "metadata": {"name": "console-node-kube-worker02-dead00", "namespace": "default",
                     "labels": {"app.kubernetes.io/managed-by": "console",
                                "app.kubernetes.io/component": "node-debug"}},
        "spec": {"nodeName": NODE, "restartPolicy": "Never", "containers": [
            {"name": "node-shell", "image": "busybox:0.0.1", "command": ["sleep", "3600"]}]},
        "status": {"phase": "Pending"}})
    t0 = time.monotonic()
    code, doc, err = h.scale_up(lab, tmp_path, *ARGS, "--node-debug-image", "busybox:0.0.404")
    took = time.monotonic() - t0
    assert code == 1, err
    assert took < 30, f"the preflight took {took:.1f}s"
    msg = doc["message"]
    # the watch sees ErrImagePull or, a moment later, ImagePullBackOff; either way the kubelet's texts are quoted
    assert re.match(r"preflight: node access \(debug-pod\) to kube-worker02: the node-debug pod on kube-worker02 "
                    r"cannot start: image 'busybox:0\.0\.404' cannot be pulled \((ErrImagePull|ImagePullBackOff): ",
                    msg), msg
    assert 'failed to pull and unpack image "docker.io/library/busybox:0.0.404"' in msg
    assert 'Failed: Failed to pull image "busybox:0.0.404"' in msg  # the pod's Warning event
    assert "--node-debug-image" in msg
    steps = {s["id"]: s for s in doc["steps"]}
    assert steps["preflight"]["status"] == "failed" and steps["cordon"]["status"] == "pending"
    assert ("removed 1 node-debug pod(s) left on kube-worker02 by an earlier run: "
            "default/console-node-kube-worker02-dead00") in err
    assert [p["metadata"]["name"] for p in lab.store.list("pods", "default")[0]
            if p["metadata"]["name"].startswith("console-node-")] == []  # the failed one is deleted too
    _unchanged(lab, h, tmp_path, vcpus)


def test_preflight_refuses_a_namespace_enforcing_baseline(live_lab, tmp_path, h):
    from kubernetes import client, config

    lab = live_lab
    vcpus = len(lab.kubelets[NODE].guest.online_cpus)
    api = config.new_client_from_config(str(lab.state.kubeconfig))
    client.CoreV1Api(api).create_namespace({"metadata": {"name": "ops-baseline", "labels": {
        "pod-security.kubernetes.io/enforce": "baseline"}}})
    t0 = time.monotonic()
    code, doc, err = h.scale_up(lab, tmp_path, *ARGS, "--node-debug-namespace", "ops-baseline")
    assert code == 1, err
    assert time.monotonic() - t0 < 30
    msg = doc["message"]
    assert 'is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true), privileged ' \
           '(container "node-shell" must not set securityContext.privileged=true)' in msg, msg
    assert ("The namespace ops-baseline enforces PodSecurity level 'baseline' "
            "(pod-security.kubernetes.io/enforce=baseline)") in msg
    assert "--node-debug-namespace" in msg
    _unchanged(lab, h, tmp_path, vcpus)


def test_configz_through_the_node_proxy(live_lab):
    """kubectl get --raw /api/v1/nodes/NODE/proxy/configz prints {"kubeletconfig": {...}} (component-base/configz)."""
    out = run(["kubectl", "get", "--raw", f"/api/v1/nodes/{NODE}/proxy/configz"], lab_env(live_lab)).stdout
    cfg = json.loads(out)["kubeletconfig"]
    assert cfg["cpuManagerPolicy"] == "none" and cfg["memoryManagerPolicy"] == "None"
    proc = subprocess.run(["kubectl", "get", "--raw", "/api/v1/nodes/no-such-node/proxy/configz"],
                          env=lab_env(live_lab), capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and 'nodes "no-such-node" not found' in proc.stderr


def test_a_command_that_exits_non_zero_fails_its_step(live_lab, tmp_path, h):
    """`systemctl restart --no-block k3s-agent` on a kubeadm node: exit 5, the restart step fails (resumable)
    with systemd's message; the rerun with the node's own unit (detected: kubelet) resumes and finishes."""
    lab = live_lab
    code, doc, err = h.scale_up(lab, tmp_path, *ARGS, "--kubelet-unit", "k3s-agent")
    assert code == 4, err
    steps = {s["id"]: s for s in doc["steps"]}
    assert steps["restart-kubelet"]["status"] == "failed"
    msg = steps["restart-kubelet"]["message"]
    assert "restarting the kubelet on kube-worker02 failed (exit 5 from " in msg, msg
    assert "Failed to restart k3s-agent.service: Unit k3s-agent.service not found." in msg
    assert lab.kubelets[NODE].restarts == 0
    code, doc, err = h.scale_up(lab, tmp_path, *ARGS)
    assert code == 0, err
    steps = {s["id"]: s for s in doc["steps"]}
    assert steps["restart-kubelet"]["data"]["kubelet_unit"] == "kubelet"
    cap = h.node_obj(lab)["status"]["capacity"]
    assert (cap["cpu"], cap["memory"]) == ("12", "16396200Ki")


def test_kubectl_debug_node_and_pod_security(live_lab):
    """`kubectl debug node/N --image=... -- CMD` as on a cluster: kubectl's typed client POSTs the pod as
    application/vnd.kubernetes.protobuf (client-go), the pod runs on the node (--profile=sysadmin: privileged,
    host namespaces, the host's root at /host; kubectl pkg/cmd/debug/profiles.go) and logs the command's output.
    A namespace enforcing baseline refuses it with the admission's message."""
    env = lab_env(live_lab)
    proc = run(["kubectl", "debug", f"node/{NODE}", "--image=busybox:1.37.0", "--profile=sysadmin", "--",
                "chroot", "/host", "uname", "-r"], env)
    name = re.search(r"Creating debugging pod (\S+) with container", proc.stdout + proc.stderr)[1]
    phase = wait_for(lambda: run(["kubectl", "get", "pod", name, "-o", "jsonpath={.status.phase}"], env).stdout
                     in ("Succeeded", "Failed") and live_lab.store.get("pods", "default", name)["status"]["phase"],
                     30, what="the debug pod to finish")
    assert phase == "Succeeded"
    assert run(["kubectl", "logs", name], env).stdout == live_lab.kubelets[NODE].kernel_version + "\n"
    pod = json.loads(run(["kubectl", "get", "pod", name, "-o", "json"], env).stdout)
    assert pod["spec"]["nodeName"] == NODE and pod["spec"]["hostPID"] is True
    assert pod["spec"]["containers"][0]["securityContext"]["privileged"] is True
    # the host's root its one hostPath volume (a real API server defaults hostPath.type to "" and its
    # ServiceAccount admission adds the projected kube-api-access-* token volume)
    assert [(v["name"], v["hostPath"]["path"]) for v in pod["spec"]["volumes"] if "hostPath" in v] == [
        ("host-root", "/")]
    run(["kubectl", "create", "namespace", "dbg-baseline"], env)  # protobuf too
    run(["kubectl", "label", "namespace", "dbg-baseline", "pod-security.kubernetes.io/enforce=baseline"], env)
    refused = run(["kubectl", "debug", f"node/{NODE}", "-n", "dbg-baseline", "--image=busybox:1.37.0",
                   "--profile=sysadmin", "--", "true"], env, check=False)
    assert refused.returncode != 0
    said = re.search(r'Error from server \(Forbidden\): pods "node-debugger-kube-worker02-\w+" is forbidden: '
                     r'violates PodSecurity "baseline:latest": (.*)', refused.stderr)
    assert said, refused.stderr
    # each check's text; their order is the admission's (since k8s.io/pod-security-admission sorts the checks by
    # ID, policy/registry.go: hostNamespaces, hostPathVolumes, privileged)
    assert sorted(v.rstrip(")") for v in said[1].strip().split("), ")) == sorted([
        "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true",
        'hostPath volumes (volume "host-root"',
        'privileged (container "debugger" must not set securityContext.privileged=true']), said[1]
