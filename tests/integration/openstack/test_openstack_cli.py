"""The real `openstack` CLI (python-openstackclient) against the lab's Keystone + Nova."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from console.lab.cloudsyaml import write_clouds_yaml
from console.lab.openstack.nova import Nova
from console.lab.openstack.server import OpenStackAPI

OPENSTACK = Path(sys.executable).with_name("openstack")
W2 = "6f1b6d0e-1c4a-4f5e-9a51-3a1c2b3d4e02"  # kube-worker02 in conftest.SERVER_IDS

pytestmark = pytest.mark.skipif(not OPENSTACK.exists(), reason="python-openstackclient is not installed")


def osc(*args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(OPENSTACK), *args], env=env or dict(os.environ), capture_output=True, text=True,
                          timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"openstack {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def osc_json(*args: str) -> Any:
    return json.loads(osc(*args, "-f", "json").stdout)


def wait_status(nova: Nova, status: str, timeout: float = 10) -> None:
    nova.wait_for(W2, lambda v: v.status == status, timeout)


def test_cli_list_show_resize_confirm_reboot_events(clouds_yaml: Path, nova: Nova, hypervisor: Any,
                                                     password: str, caplog: pytest.LogCaptureFixture) -> None:
    outputs: list[str] = []

    listing = osc("server", "list")
    outputs += [listing.stdout, listing.stderr]
    assert "kube-worker02" in listing.stdout and "ACTIVE" in listing.stdout and "m1.small" in listing.stdout

    shown = osc_json("server", "show", "kube-worker02")
    assert shown["id"] == W2 and shown["status"] == "ACTIVE"
    assert shown["OS-EXT-SRV-ATTR:instance_name"] == "instance-00003351"
    assert shown["OS-EXT-SRV-ATTR:host"] == "cmp02"
    assert shown["flavor"]["original_name"] == "m1.small"

    flavors = osc_json("flavor", "list")
    assert {f["Name"]: f["VCPUs"] for f in flavors} == {"m1.tiny": 1, "m1.small": 2, "m1.medium": 4, "m1.large": 8}

    outputs.append(osc("server", "resize", "--flavor", "m1.large", "kube-worker02").stderr)
    wait_status(nova, "VERIFY_RESIZE")
    assert osc_json("server", "show", "kube-worker02")["status"] == "VERIFY_RESIZE"
    outputs.append(osc("server", "resize", "confirm", "kube-worker02").stderr)
    wait_status(nova, "ACTIVE")
    assert nova.server(W2).flavor.name == "m1.large"

    outputs.append(osc("server", "reboot", "--soft", "kube-worker02").stderr)
    wait_status(nova, "ACTIVE")
    assert hypervisor.calls_for(W2) == [("stop", W2), ("define_from_flavor", W2, "f-large"), ("start", W2),
                                        ("soft_reboot", W2)]

    events = osc_json("server", "event", "list", "kube-worker02")
    assert [e["Action"] for e in events] == ["reboot", "confirmResize", "resize", "create"]
    assert all(e["Server ID"] == W2 for e in events)
    assert not any(password in out for out in outputs)
    assert "POST /identity/v3/auth/tokens -> 201" in caplog.text  # the server's own request log...
    assert password not in caplog.text  # ...never carries the password


def test_cli_confirm_conflict_and_event_show_no_valid_host(clouds_yaml: Path, nova: Nova) -> None:
    conflict = osc("server", "resize", "confirm", "kube-worker02", check=False)
    assert conflict.returncode != 0
    assert f"Cannot 'confirmResize' instance {W2} while it is in vm_state active" in conflict.stderr

    nova.inject_fault(W2, "no-valid-host")
    osc("server", "resize", "--flavor", "m1.large", "kube-worker02")
    deadline = time.monotonic() + 10
    while nova.server(W2).task_state is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    shown = osc_json("server", "show", "kube-worker02")
    assert shown["status"] == "ACTIVE" and shown["flavor"]["original_name"] == "m1.small"
    assert "fault" not in shown or not shown["fault"]
    resize = next(e for e in osc_json("server", "event", "list", "kube-worker02") if e["Action"] == "resize")
    detail = osc_json("server", "event", "show", "kube-worker02", resize["Request ID"])
    assert detail["message"] == "Error"
    (event,) = detail["events"]
    assert event["event"] == "conductor_migrate_server" and event["result"] == "Error"
    assert "No valid host was found." in event["traceback"]


def test_cli_wrong_password(api: OpenStackAPI, tmp_path: Path, password: str) -> None:
    wrong = "wrong-" + password
    bad = write_clouds_yaml(tmp_path / "clouds.yaml", "lab", auth_url=api.auth_url, username="admin",
                            password=wrong, project="admin")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env |= {"OS_CLIENT_CONFIG_FILE": str(bad), "OS_CLOUD": "lab"}
    proc = osc("server", "list", check=False, env=env)
    assert proc.returncode != 0
    assert "The request you have made requires authentication. (HTTP 401)" in proc.stderr
    assert wrong not in proc.stdout + proc.stderr and password not in proc.stdout + proc.stderr
