"""The kubeconfig as kubectl loads it, against the lab through the console's real client and kubectl.

Sources: k8s.io/client-go tools/clientcmd/loader.go (every $KUBECONFIG file merged; "the first file to set a
particular map key wins"; current-context from the first file that sets one; missing files skipped) and
`kubectl config --help` ("If the --kubeconfig flag is set, then only that file is loaded"); proxy-url with
socks5 (client-go rest.Config.Proxy / kubernetes-python rest.py SOCKSProxyManager, which needs PySocks).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from labstart import start_lab
from labtools import lab_env, run, wait_for
from socks5 import socks5_proxy

from console import faults
from console.kube.connection import KubeConfigError, connect, contexts
from console.lab import scenarios
from console.lab.tokenissuer import EXEC_USER
from console.lab.world import Lab

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab(scenarios.get("scale", nodes=2, pods_per_node=1), tmp_path_factory.mktemp("kubeconfig-lab"))


def _doc(lab: Lab) -> dict:
    return yaml.safe_load(lab.state.kubeconfig.read_text())


def _write(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path


def _env(kubeconfig: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLE_")}
    return env | {"KUBECONFIG": kubeconfig}


def _namespaces(api: object) -> list[str]:
    from kubernetes import client

    return sorted(n.metadata.name for n in client.CoreV1Api(api).list_namespace().items)


def _decoy(tmp: Path, **extra: object) -> Path:
    """A first file with its own context (on a closed port) and no current-context."""
    return _write(tmp / "a", {"apiVersion": "v1", "kind": "Config",
                              "clusters": [{"name": "decoy", "cluster": {"server": "https://127.0.0.1:9"}}],
                              "users": [{"name": "decoy", "user": {"token": "decoy"}}],
                              "contexts": [{"name": "decoy", "context": {"cluster": "decoy", "user": "decoy"}}],
                              **extra})


def test_kubeconfig_list_with_the_current_context_in_the_second_file(lab: Lab, tmp_path: Path) -> None:
    merged = f"{_decoy(tmp_path)}{os.pathsep}{tmp_path / 'missing'}{os.pathsep}{lab.state.kubeconfig}"
    env = _env(merged)
    kube_current = run(["kubectl", "config", "current-context"], env).stdout.strip()
    kube_names = run(["kubectl", "config", "get-contexts", "-o", "name"], env).stdout.split()
    kube_nodes = run(["kubectl", "get", "nodes", "-o", "name"], env).stdout.split()
    old = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = merged  # the console reads $KUBECONFIG as kubectl does
    try:
        names, current = contexts()
        api, target = connect()
        assert (current, sorted(names)) == (kube_current, sorted(kube_names)) == (
            "lab", ["decoy", "lab", "lab-exec", "lab-operator", "lab-viewer"])
        assert target.context == "lab" and target.server == lab.kube_url
        assert target.files == (str(tmp_path / "a"), str(lab.state.kubeconfig))
        assert "default" in _namespaces(api)
    finally:
        os.environ.pop("KUBECONFIG") if old is None else os.environ.__setitem__("KUBECONFIG", old)
    assert kube_nodes == ["node/node-00000", "node/node-00001"]
    # a headless command: the settings resolve the same context, and it reads the node from the lab (its
    # providerID), past the kubeconfig
    cli_env = lab_env(lab) | env | {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_STATE_HOME": str(tmp_path / "st")}
    proc = subprocess.run([sys.executable, "-m", "console", "scale-up", "node-00000", "--flavor", "m1.large",
                           "--dry-run", "-o", "json"], env=cli_env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    out = json.loads(proc.stdout)  # the scale world's nodes have no server in Nova: refused after reading it
    assert proc.returncode == 2 and out["status"] == "refused", proc.stderr
    assert out["message"].startswith("node node-00000: providerID openstack:///"), out
    # --kubeconfig is one file, no merging: the decoy file alone has no current-context
    with pytest.raises(KubeConfigError, match="sets no current-context: pass --context"):
        connect(str(tmp_path / "a"))


def test_first_file_to_name_a_user_wins_for_kubectl_and_the_console(lab: Lab, tmp_path: Path) -> None:
    """File a defines user lab-admin with a wrong token; b's `lab` context uses lab-admin: both clients use a's
    user (first file wins) and both get 401, and the console's fault names that user and file."""
    first = _decoy(tmp_path, users=[{"name": "lab-admin", "user": {"token": "lab-not-this-one"}}])
    env = _env(f"{first}{os.pathsep}{lab.state.kubeconfig}")
    proc = run(["kubectl", "--context", "lab", "get", "nodes"], env, check=False)
    assert proc.returncode == 1 and "Unauthorized" in proc.stderr
    old = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = env["KUBECONFIG"]
    try:
        api, target = connect(None, "lab")
        from kubernetes.client.exceptions import ApiException

        with pytest.raises(ApiException) as err:
            _namespaces(api)
        fault = faults.classify(err.value, faults.Where("", target.context))
    finally:
        os.environ.pop("KUBECONFIG") if old is None else os.environ.__setitem__("KUBECONFIG", old)
    assert err.value.status == 401
    assert fault is not None and fault.kind == "kube-unauthorized" and fault.exit_code == 6
    assert "user lab-admin in context lab" in fault.message and str(lab.state.kubeconfig) in fault.message


def test_socks5_proxy_url(lab: Lab, tmp_path: Path) -> None:
    with socks5_proxy() as proxy:
        doc = _doc(lab)
        doc["clusters"][0]["cluster"]["proxy-url"] = proxy.url
        path = _write(tmp_path / "kubeconfig-socks", doc)
        api, _ = connect(str(path), "lab")
        assert "default" in _namespaces(api)
        port = int(lab.kube_url.rsplit(":", 1)[1])
        assert ("127.0.0.1", port) in proxy.connects
        seen = len(proxy.connects)
        nodes = run(["kubectl", "--kubeconfig", str(path), "get", "nodes", "-o", "name"], lab_env(lab))
        assert "node/node-00000" in nodes.stdout and len(proxy.connects) > seen  # kubectl went through it too


def _raw_status(lab: Lab, token: str) -> int:
    import ssl
    import urllib.error
    import urllib.request

    ctx = ssl.create_default_context(cadata=lab.kube_ca_pem.decode())
    req = urllib.request.Request(lab.kube_url + "/api", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_rotated_token_file_is_read_again_on_401_then_a_clear_fault(lab: Lab, tmp_path: Path) -> None:
    """A tokenFile user (as a pod's projected service-account token): the file is rewritten with a new token
    and the old one expires; the next request gets 401, the console reads the file again and retries once —
    long before its one-minute re-read. When the file holds only a dead token, the 401 is the fault
    kube-unauthorized naming the user and the token file to renew."""
    token_file = tmp_path / "token"
    token_file.write_text(lab.mint_token(EXEC_USER, 3))  # tokens as the lab's exec plugin mints them
    doc = _doc(lab)
    doc["users"] = [{"name": "rotating", "user": {"tokenFile": str(token_file)}}]
    doc["contexts"] = [{"name": "rot", "context": {"cluster": "lab", "user": "rotating"}}]
    doc["current-context"] = "rot"
    path = _write(tmp_path / "kubeconfig-rot", doc)
    api, _ = connect(str(path))
    assert "default" in _namespaces(api)
    old = token_file.read_text()
    token_file.write_text(lab.mint_token(EXEC_USER, 600))  # rotated
    wait_for(lambda: _raw_status(lab, old) == 401, timeout=30, what="the old token to expire")
    assert "default" in _namespaces(api)  # 401 → file read again → retried

    dead = lab.mint_token(EXEC_USER, 1)
    token_file.write_text(dead)
    wait_for(lambda: _raw_status(lab, dead) == 401, timeout=30, what="the token to expire")
    from kubernetes.client.exceptions import ApiException

    api, _ = connect(str(path))  # a session whose token file holds only the dead token: read again, still 401
    with pytest.raises(ApiException) as err:
        _namespaces(api)
    fault = faults.classify(err.value, faults.Where(str(path), "rot"))
    assert fault is not None and fault.kind == "kube-unauthorized"
    assert "user rotating in context rot" in fault.message and f"token file {token_file}" in fault.message


@pytest.mark.parametrize(("mode", "body", "words"), [
    ("Never", "print('login required: run mylogin', file=sys.stderr); sys.exit(1)",
     ("exec plugin", "of user plug", "exited 1: login required: run mylogin")),
    ("Always", "sys.exit(0)", ("needs a terminal (interactiveMode: Always)", "of user plug")),
])
def test_headless_exec_plugin_faults(lab: Lab, tmp_path: Path, mode: str, body: str, words: tuple[str, ...]) -> None:
    """A plugin that fails, or needs a terminal the headless command (stdin not a TTY) does not have: one
    clear line naming the plugin and user, exit 6, the JSON error — never a traceback; the same at the TUI
    start."""
    script = tmp_path / "plug"
    script.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    script.chmod(0o700)
    doc = _doc(lab)
    doc["users"] = [{"name": "plug", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                       "command": str(script), "interactiveMode": mode}}}]
    doc["contexts"] = [{"name": "plug", "context": {"cluster": "lab", "user": "plug"}}]
    doc["current-context"] = "plug"
    env = lab_env(lab) | _env(str(_write(tmp_path / "kc", doc))) | {"XDG_CONFIG_HOME": str(tmp_path / "xdg"),
                                                                    "XDG_STATE_HOME": str(tmp_path / "st")}
    proc = subprocess.run([sys.executable, "-m", "console", "scale-up", "node-00000", "--flavor", "m1.large",
                           "--dry-run", "-o", "json"], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    out = json.loads(proc.stdout)
    assert proc.returncode == 6 and out["error"] == "kube-exec-plugin", proc.stderr
    for word in words:
        assert word in out["message"], out
    # the TUI start: the same line before any screen is drawn
    tui = subprocess.run([sys.executable, "-m", "console"], env=env, capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)
    assert (tui.returncode, tui.stdout, tui.stderr.strip()) == (6, "", f"console: {out['message']}")


def test_a_hanging_exec_plugin_is_stopped_after_exec_plugin_timeout(lab: Lab, tmp_path: Path) -> None:
    """Issue 20, point 4: an exec plugin that never answers (a login waiting on the network) blocked `get nodes`
    for ever, as kubectl does (client-go waits for a plugin as long as it takes). Without a terminal it is
    stopped after exec_plugin_timeout, with what it started, and the fault names the plugin and what to do:
    exit 6, `kube-exec-plugin`. The setting from the environment, then from the context's block of the file."""
    child = tmp_path / "child.pid"
    script = tmp_path / "hanging-login"
    script.write_text(f"#!/bin/sh\nsleep 1000 &\necho $! > {child}\nwait\n")
    script.chmod(0o700)
    doc = _doc(lab)
    doc["users"] = [{"name": "plug", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                       "command": str(script)}}}]
    doc["contexts"] = [{"name": "plug", "context": {"cluster": "lab", "user": "plug"}}]
    doc["current-context"] = "plug"
    env = lab_env(lab) | _env(str(_write(tmp_path / "kc", doc))) | {"XDG_CONFIG_HOME": str(tmp_path / "xdg"),
                                                                    "XDG_STATE_HOME": str(tmp_path / "st")}
    config = tmp_path / "xdg" / "console" / "config.yaml"
    for extra, bound in (({"CONSOLE_EXEC_PLUGIN_TIMEOUT": "2"}, "2s"), ({}, "1.5s")):
        if not extra:
            config.parent.mkdir(parents=True)
            config.write_text("exec_plugin_timeout: 600\ncontexts:\n  plug: {exec_plugin_timeout: 1.5}\n")
        child.unlink(missing_ok=True)
        proc = subprocess.run([sys.executable, "-m", "console", "get", "nodes", "-o", "json"], env=env | extra,
                              capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        out = json.loads(proc.stdout)
        assert (proc.returncode, out["error"], out["exit_code"]) == (6, "kube-exec-plugin", 6), proc.stderr
        message = out["message"]
        assert f"the exec plugin {script} of user plug gave no credential within {bound}" in message, message
        assert "run it by hand" in message and "exec_plugin_timeout" in message, message
        assert proc.stderr.strip() == f"console: {message}" and "Traceback" not in proc.stderr
        pid = int(child.read_text())  # what the plugin started went with it
        wait_for(lambda pid=pid: not os.path.exists(f"/proc/{pid}"), timeout=10, what="the plugin's child gone")


def test_in_cluster_service_account_rotating_token(lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a pod (KUBERNETES_SERVICE_HOST/PORT, no kubeconfig) the console uses the service account, as
    client-go's rest.InClusterConfig and kubernetes-python's incluster_config.py do; the projected token file
    rotates, and a 401 reads it again. (The mount point is fixed, /var/run/secrets/kubernetes.io/
    serviceaccount: here the same loader reads a directory laid out like it.)"""
    from kubernetes.client import Configuration

    from console.kube.connection import _api_client_class, _in_cluster

    host, port = lab.kube_url.removeprefix("https://").rsplit(":", 1)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    with pytest.raises(KubeConfigError, match=r"in-cluster config .* /var/run/secrets/kubernetes\.io/serviceaccount"):
        connect()  # the real mount point is absent on this machine
    root = tmp_path / "sa"
    root.mkdir()
    (root / "ca.crt").write_bytes(lab.kube_ca_pem)
    old = lab.mint_token(EXEC_USER, 3)
    (root / "token").write_text(old)
    configuration = type.__call__(Configuration)
    credentials = _in_cluster(configuration, root)
    api = _api_client_class()(configuration=configuration)
    api.credentials = credentials
    assert configuration.host == lab.kube_url and "default" in _namespaces(api)
    (root / "token").write_text(lab.mint_token(EXEC_USER, 600))  # the kubelet rotated it
    wait_for(lambda: _raw_status(lab, old) == 401, timeout=30, what="the old token to expire")
    assert "default" in _namespaces(api)
