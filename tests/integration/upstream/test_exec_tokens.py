"""The `lab-exec` context on upstream's control plane: tokens from the lab's exec plugin, checked by the real
kube-apiserver's structured JWT authenticator (--authentication-config, console/lab/tokenissuer.py).

What counts is the server's answer: who `kubectl auth whoami` says the token is, 401 once a token's `exp` has
passed, 403 for another subject signed with the same key on what RBAC does not grant it.
"""

from __future__ import annotations

import calendar
import json
import os
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from labstart import start_lab

from console.lab.world import Lab

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")

TTL = 8
CACHE = 10  # s: kube-apiserver's token success cache (TokenSuccessCacheTTL) may answer for an accepted token


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-resize", tmp_path_factory.mktemp("lab-exec"), token_ttl=TTL)


def kubectl(lab: Lab, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(lab.state.kubeconfig)}
    proc = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def kubectl_token(lab: Lab, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl with nothing but the bearer token (no kubeconfig: no client certificate, no exec plugin)."""
    return subprocess.run(["kubectl", "--kubeconfig", os.devnull, "--server", lab.kube_url,
                           "--certificate-authority", str(lab.control_plane.pki_dir / "ca.crt"), "--token", token,
                           *args], capture_output=True, text=True, timeout=60)


def plugin_credential(lab: Lab) -> dict[str, Any]:
    """What client-go reads from the exec plugin named in the kubeconfig."""
    doc = yaml.safe_load(lab.state.kubeconfig.read_text())
    user = next(c["context"]["user"] for c in doc["contexts"] if c["name"] == "lab-exec")
    exec_ = next(u["user"]["exec"] for u in doc["users"] if u["name"] == user)
    out = subprocess.run([exec_["command"], *exec_.get("args", [])], capture_output=True, text=True, timeout=30,
                         check=True)
    cred: dict[str, Any] = json.loads(out.stdout)
    return cred


def raw_get(lab: Lab, path: str, token: str) -> tuple[int, dict[str, Any]]:
    """A bearer-token request straight to the API server: its status code and Status body."""
    ctx = ssl.create_default_context(cadata=lab.control_plane.ca_pem.decode())
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx))
    req = urllib.request.Request(lab.kube_url + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with opener.open(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_whoami_is_lab_exec_in_system_masters(lab: Lab) -> None:
    review = json.loads(kubectl(lab, "--context", "lab-exec", "auth", "whoami", "-o", "json").stdout)
    info = review["status"]["userInfo"]
    assert info["username"] == "lab-exec"
    assert sorted(info["groups"]) == ["system:authenticated", "system:masters"]


def test_lab_exec_gets_nodes(lab: Lab) -> None:
    out = kubectl(lab, "--context", "lab-exec", "get", "nodes", "-o", "name").stdout.split()
    assert sorted(out) == ["node/kube-controlplane01", "node/kube-worker01", "node/kube-worker02"]
    assert kubectl(lab, "--context", "lab-exec", "auth", "can-i", "delete", "nodes").stdout.strip() == "yes"


def test_plugin_writes_an_exec_credential_of_ttl_seconds(lab: Lab) -> None:
    mode = lab.state.exec_plugin.stat().st_mode & 0o777
    assert mode == 0o700
    cred = plugin_credential(lab)
    assert cred["apiVersion"] == "client.authentication.k8s.io/v1" and cred["kind"] == "ExecCredential"
    stamp = calendar.timegm(time.strptime(cred["status"]["expirationTimestamp"], "%Y-%m-%dT%H:%M:%SZ"))
    assert 0 < stamp - time.time() <= TTL


def test_an_expired_token_gets_401(lab: Lab) -> None:
    token = plugin_credential(lab)["status"]["token"]
    code, _ = raw_get(lab, "/api/v1/nodes", token)
    assert code == 200
    proc = kubectl_token(lab, token, "get", "nodes", "-o", "name")
    assert "node/kube-worker01" in proc.stdout.split(), proc.stderr
    # the token's exp passes after TTL s; an accepted token may be answered from the success cache a while longer
    deadline = time.monotonic() + TTL + CACHE + 10
    while (code := raw_get(lab, "/api/v1/nodes", token)[0]) == 200 and time.monotonic() < deadline:
        time.sleep(0.5)
    code, status = raw_get(lab, "/api/v1/nodes", token)
    assert code == 401, status
    assert status["reason"] == "Unauthorized" and status["message"] == "Unauthorized"
    proc = kubectl_token(lab, token, "get", "nodes")
    assert proc.returncode != 0
    assert "Unauthorized" in proc.stderr
    # the context itself keeps working: client-go runs the plugin again for a fresh token
    assert kubectl(lab, "--context", "lab-exec", "get", "nodes", "-o", "name").stdout.split()


def test_another_subject_with_the_same_key_holds_only_its_rbac(lab: Lab) -> None:
    token, _ = lab.token_issuer.mint("someone-else", 120)
    ctx = ssl.create_default_context(cadata=lab.control_plane.ca_pem.decode())
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx))
    req = urllib.request.Request(
        lab.kube_url + "/apis/authentication.k8s.io/v1/selfsubjectreviews", method="POST",
        data=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with opener.open(req, timeout=10) as resp:
        code, review = resp.status, json.loads(resp.read())
    assert code == 201
    assert review["status"]["userInfo"]["username"] == "someone-else"
    assert review["status"]["userInfo"]["groups"] == ["system:authenticated"]
    code, status = raw_get(lab, "/api/v1/nodes", token)
    assert code == 403, status
    assert status["reason"] == "Forbidden"
    assert 'User "someone-else" cannot list resource "nodes"' in status["message"]
    proc = kubectl_token(lab, token, "get", "secrets", "-n", "kube-system")
    assert proc.returncode != 0 and "Forbidden" in proc.stderr


def test_a_system_subject_with_the_same_key_is_refused(lab: Lab) -> None:
    token, _ = lab.token_issuer.mint("system:kube-scheduler", 120)
    code, status = raw_get(lab, "/api/v1/nodes", token)
    assert code == 401, status


def test_a_token_of_another_key_is_refused(lab: Lab) -> None:
    from console.lab.pki import CA
    from console.lab.tokenissuer import TokenIssuer

    other = TokenIssuer(CA("elsewhere"), port=lab.token_issuer.port)  # same iss, different key
    token, _ = other.mint("lab-exec", 120)
    code, _ = raw_get(lab, "/api/v1/nodes", token)
    assert code == 401
