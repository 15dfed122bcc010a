"""SSH to the lab's nodes: the OpenSSH client against the lab's sshd, the console's SshAccess, its errors,
the guest agent's error through real libvirt, and the seed-live scale-up with `--node-access ssh`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from labtools import lab_env, run

from console.infra.guest_agent import GuestAgentAccess
from console.kube.connection import connect
from console.kube.nodeaccess import NodeAccessError, SshAccess, node_access

pytestmark = pytest.mark.lab

NODE = "kube-worker02"


def ssh(lab, *args, config=None, check=True):
    cfg = config or lab.state.root / "ssh_config"
    return run(["ssh", "-F", str(cfg), "-o", "BatchMode=yes", *args], lab_env(lab), check=check, timeout=30)


def test_state_dir_has_ssh_settings(live_lab):
    env = lab_env(live_lab)
    root = live_lab.state.root
    assert env["CONSOLE_SSH_CONFIG"] == str(root / "ssh_config")
    assert (root / "id_ed25519").stat().st_mode & 0o777 == 0o600
    text = (root / "ssh_config").read_text()
    assert f"Host {NODE} " in text and "StrictHostKeyChecking accept-new" in text
    assert "PRIVATE KEY" not in text


def test_ssh_cli_runs_commands_on_the_node(live_lab):
    proc = ssh(live_lab, NODE, "hostname; nproc; echo oops >&2; exit 7", check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (7, f"{NODE}\n8\n", "oops\n")
    # the node's InternalIP works too (ssh_target: internal-ip), and known_hosts names the node
    ip = next(a["address"] for a in live_lab.store.get("nodes", None, NODE)["status"]["addresses"]
              if a["type"] == "InternalIP")
    assert ssh(live_lab, ip, "hostname").stdout == f"{NODE}\n"
    assert (live_lab.state.root / "known_hosts").read_text().startswith(f"{NODE} ssh-ed25519 ")


def test_console_ssh_access(live_lab):
    settings = type("S", (), {"ssh_config": str(live_lab.state.root / "ssh_config"), "ssh_user": None,
                              "ssh_target": "internal-ip"})()
    api, _ = connect(str(live_lab.state.kubeconfig), None)
    access = node_access("ssh", api, settings)
    res = access.run(NODE, "cat /sys/devices/system/cpu/online; ls /nope", timeout=20)
    assert res.exit_code == 2 and res.output == "0-7\n" and "/nope" in res.stderr
    assert access.argv(NODE, "true")[-2] != NODE  # the InternalIP
    # a blocking kubelet restart does not cut the session: the rest of the script runs and reports
    before = live_lab.kubelets[NODE].restarts
    res = access.run(NODE, "systemctl restart kubelet; echo still-here; systemctl is-active kubelet", timeout=20)
    assert res.ok and res.output == "still-here\nactive\n" and not res.log_cut
    assert live_lab.kubelets[NODE].restarts == before + 1


def test_wrong_key_is_an_auth_error(live_lab, tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    cfg = tmp_path / "ssh_config"
    cfg.write_text((live_lab.state.root / "ssh_config").read_text().replace(
        str(live_lab.state.root / "id_ed25519"), str(tmp_path / "other")))
    cfg.chmod(0o600)
    with pytest.raises(NodeAccessError) as e:
        SshAccess(ssh_config=str(cfg)).run(NODE, "true", timeout=20)
    msg = str(e.value)
    assert "authentication failed" in msg and "Permission denied (publickey)" in msg and "authorized_keys" in msg
    assert "PRIVATE KEY" not in msg


def test_changed_host_key_and_unreachable(live_lab, tmp_path):
    root = live_lab.state.root
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "hk")], check=True)
    known = tmp_path / "known_hosts"
    known.write_text(f"{NODE} " + " ".join((tmp_path / "hk.pub").read_text().split()[:2]) + "\n")
    cfg = tmp_path / "ssh_config"
    cfg.write_text((root / "ssh_config").read_text().replace(str(root / "known_hosts"), str(known)))
    cfg.chmod(0o600)
    with pytest.raises(NodeAccessError) as e:
        SshAccess(ssh_config=str(cfg)).run(NODE, "true", timeout=20)
    assert "does not match known_hosts" in str(e.value) and f"ssh-keygen -R {NODE}" in str(e.value)
    # a port nobody listens on
    port = live_lab.sshd.listeners[NODE].port
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    closed = s.getsockname()[1]
    s.close()
    cfg.write_text((root / "ssh_config").read_text().replace(f"Port {port}\n", f"Port {closed}\n"))
    with pytest.raises(NodeAccessError) as e:
        SshAccess(ssh_config=str(cfg), connect_timeout=5).run(NODE, "true", timeout=20)
    assert "unreachable over SSH" in str(e.value) and "Connection refused" in str(e.value)


def test_guest_agent_missing_is_explained(live_lab):
    api, _ = connect(str(live_lab.state.kubeconfig), None)
    access = GuestAgentAccess(api, [live_lab.libvirt_uri])
    for call in (lambda: access.run(NODE, "true", timeout=5), lambda: access.online_cpus(NODE, "1-7")):
        with pytest.raises(NodeAccessError) as e:
            call()
        msg = str(e.value)
        assert "guest agent" in msg and "qemu-guest-agent" in msg and "hw_qemu_guest_agent=yes" in msg
        assert "org.qemu.guest_agent.0" in msg


def test_scale_up_over_ssh(live_lab, tmp_path):
    env = lab_env(live_lab) | {"XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "console", "scale-up", NODE, "--vcpus", "12", "--memory", "16Gi",
                           "--method", "libvirt", "--node-access", "ssh", "--yes", "-o", "json"], env=env,
                          capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    node = live_lab.store.get("nodes", None, NODE)
    assert (node["status"]["capacity"]["cpu"], node["status"]["capacity"]["memory"]) == ("12", "16396200Ki")
    pod = live_lab.store.get("pods", "default", "nginx-large")
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == NODE
    steps = {s["id"]: s for s in doc["steps"]}
    assert steps["online-cpus"]["data"]["onlined"]
    restart = steps["restart-kubelet"]["data"]
    assert restart["node_access"] == "ssh" and restart["restart_exit"] == 0 and not restart["log_cut"]
    # no node-debug pod was used
    assert not [p for p in live_lab.store.list("pods")[0] if p["metadata"]["name"].startswith("console-node-")]


def scale_up(lab, state, *args):
    env = lab_env(lab) | {"XDG_STATE_HOME": str(state)}
    proc = subprocess.run([sys.executable, "-m", "console", "scale-up", *args, "--yes", "-o", "json"], env=env,
                          capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL)
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout.strip() else {}), proc.stderr


def test_guest_agent_refused_by_the_preflight_then_ssh_does_it(live_lab, tmp_path):
    """kube-worker01 through the runbook with the guest agent: the guest has no agent, so the preflight (the
    runbook's first, non-mutating step) stops the run with the agent's how-to before anything is changed (no
    vCPU hot-added: lscpu over SSH shows none off-line, the node is not cordoned); the same scale-up over SSH
    then finishes."""
    node = "kube-worker01"
    code, doc, err = scale_up(live_lab, tmp_path, node, "--vcpus", "4", "--memory", "6Gi", "--method", "libvirt",
                              "--node-access", "guest-agent")
    assert code == 1, err
    assert doc["message"].startswith("preflight: node access (guest-agent) to kube-worker01: "), doc["message"]
    assert "qemu-guest-agent" in doc["message"] and "hw_qemu_guest_agent=yes" in doc["message"], doc["message"]
    steps = {s["id"]: s for s in doc["steps"]}
    assert steps["preflight"]["status"] == "failed" and steps["hot-add"]["status"] == "pending"
    assert "Off-line" not in ssh(live_lab, node, "lscpu").stdout
    assert not live_lab.store.get("nodes", None, node)["spec"].get("unschedulable")
    code, doc, err = scale_up(live_lab, tmp_path, node, "--vcpus", "4", "--memory", "6Gi", "--method", "libvirt",
                              "--node-access", "ssh")
    assert code == 0, err
    cap = live_lab.store.get("nodes", None, node)["status"]["capacity"]
    assert cap["cpu"] == "4"
    assert "Off-line" not in ssh(live_lab, node, "lscpu").stdout
