"""Short-lived exec-plugin credentials (issue 10, acceptance: `lab-exec` with `--token-ttl 5`).

The lab's `lab-exec` context gets its token from an exec plugin in the state dir (ExecCredential
client.authentication.k8s.io/v1 with status.expirationTimestamp, as k8s.io/client-go
plugin/pkg/client/auth/exec/exec.go reads it); the API server accepts a token until it expires, then answers
kube-apiserver's 401 Status. The console (kubernetes-python + console/kube/connection.py) must run the plugin
again before expiry — and on a 401 — so a session of a minute sees several tokens and no fault; kubectl with
the same context works across the expiry.
"""

from __future__ import annotations

import calendar
import json
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from labstart import start_lab
from labtools import lab_env, run, wait_for

from console.kube import rest
from console.kube.cluster import Cluster
from console.lab import scenarios
from console.lab.world import Lab

TTL = 5
NODE = "node-00000"
kubectl_needed = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab(scenarios.get("scale", nodes=3, pods_per_node=2), tmp_path_factory.mktemp("exec-lab"),
                         token_ttl=TTL)


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "soon"])
def test_lab_token_ttl_must_be_positive_seconds(tmp_path: Path, value: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "console", "lab", "--token-ttl", value, "--state-dir",
                           str(tmp_path / "state")], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "--token-ttl" in proc.stderr.strip().splitlines()[-1], proc.stderr
    assert not (tmp_path / "state" / "ready").exists()


def _plugin_token(lab: Lab) -> tuple[str, str]:
    out = subprocess.run([str(lab.state.exec_plugin)], capture_output=True, text=True, check=True, timeout=30)
    cred = json.loads(out.stdout)
    assert cred["apiVersion"] == "client.authentication.k8s.io/v1" and cred["kind"] == "ExecCredential"
    return cred["status"]["token"], cred["status"]["expirationTimestamp"]


def _get(lab: Lab, path: str, token: str) -> tuple[int, dict]:
    ctx = ssl.create_default_context(cadata=lab.kube_ca_pem.decode())
    req = urllib.request.Request(lab.kube_url + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@kubectl_needed
def test_console_stays_live_for_a_minute_through_token_refreshes(lab: Lab) -> None:
    """The console's caches on `lab-exec` for a minute (twelve token lifetimes): reads keep working, the
    bearer token changes several times (the plugin ran again before expiry), no cache goes stale, and a label
    added with kubectl after 30 s shows up through the watch.

    In the same minute (it is a wait anyway), one token the plugin minted at its start: it works until its
    expirationTimestamp, then the server answers 401 with kube-apiserver's Status (apiserver
    pkg/endpoints/filters/authentication.go Unauthorized: apierrors.NewUnauthorized("Unauthorized") — the expiry
    is not told to the client), never before; and kubectl with the `lab-exec` context works across that
    expiry."""
    env = lab_env(lab)
    first = run(["kubectl", "--context", "lab-exec", "get", "nodes", "-o", "name"], env)
    assert f"node/{NODE}" in first.stdout
    token, stamp = _plugin_token(lab)
    expiry = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    status, body = _get(lab, "/api/v1/nodes", token)
    assert status == 200 and len(body["items"]) == 3
    refused: tuple[float, dict] | None = None  # when the minted token was first refused, and the answer
    cluster = Cluster(str(lab.state.kubeconfig), "lab-exec")
    cluster.start()
    try:
        assert cluster.wait_synced(30)
        assert cluster.target.user == "lab-exec"
        tokens: set[str] = set()
        start = time.monotonic()
        labelled = False
        while time.monotonic() - start < 60:
            if refused is None:
                status, body = _get(lab, "/api/v1/nodes", token)
                if status == 401:
                    refused = (time.time(), body)
                    assert _get(lab, "/api/v1/nodes", token + "x")[0] == 401  # a forged signature never works
                    again = run(["kubectl", "--context", "lab-exec", "get", "nodes", "-o", "name"], env)
                    assert again.stdout == first.stdout
                else:
                    assert status == 200, (status, body)
            # a request now, as a screen's
            names = [n["metadata"]["name"] for n in rest.get(cluster.api_client, "/api/v1/namespaces")["items"]]
            assert "default" in names
            tokens.add(cluster.api_client.configuration.api_key["BearerToken"])
            assert cluster.health().down_since is None, cluster.health()
            if not labelled and time.monotonic() - start > 30:
                run(["kubectl", "--context", "lab", "label", "node", NODE, "late=yes"], lab_env(lab))
                wait_for(lambda: cluster.snapshot().nodes[NODE].labels.get("late") == "yes", timeout=10,
                         what="the late label in the console's node cache")
                labelled = True
            time.sleep(1)  # pacing of the reads, not a wait on a condition
        assert labelled
        assert refused is not None, "the token minted at the start still works after a minute"
        assert refused[0] >= expiry - 1  # not refused before the time the plugin announced
        assert refused[1] == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
        assert len(tokens) >= 5, f"only {len(tokens)} tokens in 60 s with a {TTL} s lifetime"
        assert cluster.health().down_since is None and cluster.health().error is None
    finally:
        cluster.stop()
