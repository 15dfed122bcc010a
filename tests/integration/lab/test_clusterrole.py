"""The shipped RBAC (docs/rbac/console-clusterrole.yaml + console-binding-example.yaml) is what the README's
documented actions need: a fresh user bound to it runs each of them headless on the default lab; without the
bindings each is refused (issue 12, acceptance "a user bound to that ClusterRole can run every documented action").

The user is new to the cluster: a token for a subject no binding names, signed as the lab-exec context's
tokens are (on upstream, by the OIDC issuer the API server's JWT authenticator trusts: an OIDC provider hands out
a user the cluster's RBAC knows nothing about), reached through a kubeconfig exec plugin as kubectl would. The
roles are applied with kubectl as the cluster admin, as the README says to. What the API server decides is RBAC
as kube-apiserver evaluates it (rbac.authorization.k8s.io/v1, plugin/pkg/auth/authorizer/rbac), the requests
are the console's real clients'.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from labstart import start_lab
from labtools import lab_env, quick_scheduler_retries, resize_to_verify, run

from console.lab.world import Lab

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[3]
ROLES = ROOT / "docs" / "rbac" / "console-clusterrole.yaml"
BINDINGS = ROOT / "docs" / "rbac" / "console-binding-example.yaml"
USER = "alice"  # the example bindings' subject
CONTEXT = "console-rbac"
NODE = "kube-worker01"

RULE = """apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: console-rbac
spec:
  rules:
  - name: always
    labels:
      example.com/rbac: "true"
    matchFeatures:
    - feature: kernel.version
      matchExpressions:
        major: {op: Exists}
"""
NODEFEATURE = """apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeature
metadata:
  name: n1
spec:
  features:
    attributes:
      kernel.version:
        elements: {major: "6", minor: "1"}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The default lab; its scheduler retries every second, so the Pending nginx the scale-up makes fit binds right
    after the uncordon (labtools.quick_scheduler_retries), not after a 10 s backoff."""
    for started in start_lab("default", tmp_path_factory.mktemp("lab-clusterrole")):
        yield quick_scheduler_retries(started)


@pytest.fixture(scope="module")
def files(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A context for a user no binding names yet: an exec plugin minting tokens the API server authenticates."""
    from console.lab.kubeconfig import add_context

    d = tmp_path_factory.mktemp("clusterrole-files")
    plugin = lab.write_token_plugin(d / "alice-credential", 3600, USER)
    add_context(lab.state.kubeconfig, CONTEXT, USER, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "args": [],
        "interactiveMode": "Never", "provideClusterInfo": False}})
    (d / "rule.yaml").write_text(RULE)
    (d / "nf.yaml").write_text(NODEFEATURE)
    (d / "rack.feature").write_text("rack=r7\n")
    return {"rule": d / "rule.yaml", "nf": d / "nf.yaml", "feature": d / "rack.feature", "dir": d}


def console(lab: Lab, state: Path, *args: str, timeout: float = 240) -> tuple[int, dict[str, Any], str]:
    env = lab_env(lab) | {"XDG_STATE_HOME": str(state), "CONSOLE_CONTEXT": CONTEXT}
    proc = subprocess.run([sys.executable, "-m", "console", *args, "-o", "json"], env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except ValueError:
        doc = {"text": proc.stdout}
    return proc.returncode, doc if isinstance(doc, dict) else {"items": doc}, proc.stderr


def actions(f: dict[str, Path]) -> list[list[tuple[str, tuple[str, ...]]]]:
    """The README's headless actions (section "Headless commands"), each as the user would type it, in chains
    that run one after the other inside and side by side between (independent objects, own state dirs)."""
    from console.cli import SUBCOMMANDS

    chains = [
        [("nfd status", ("nfd", "status")),
         ("nfd dryrun --from-cluster", ("nfd", "dryrun", "--from-cluster", "--rule", str(f["rule"]),
                                        "--nodefeature", str(f["nf"]))),
         ("nfd dryrun --from-cluster (every node)", ("nfd", "dryrun", "--from-cluster", "--rule", str(f["rule"]))),
         ("nfd apply", ("nfd", "apply", "-f", str(f["rule"]), "--yes"))],
        [("nfd files list", ("nfd", "files", "list", "--kind", "feature")),
         ("nfd files push", ("nfd", "files", "push", str(f["feature"]), "--kind", "feature", "--node", NODE,
                             "--yes")),
         ("nfd files rm", ("nfd", "files", "rm", "rack.feature", "--kind", "feature", "--node", NODE, "--yes"))],
        [("nfd publish", ("nfd", "publish", "--node", NODE, "--label", "rack=r7", "--yes")),
         ("nfd publish --delete", ("nfd", "publish", "--node", NODE, "--delete", "--yes"))],
        [("scale-up --dry-run", ("scale-up", NODE, "--flavor", "m1.large", "--dry-run"))],
    ]
    if "get" in SUBCOMMANDS:  # `console get` is another slice of issue 12: its cases run once it is registered
        chains[3] += [("get nodes", ("get", "nodes")), ("get pending", ("get", "pending")),
                      ("get node", ("get", "node", NODE))]
    return chains


def run_all(lab: Lab, state: Path, chains: list[list[tuple[str, tuple[str, ...]]]]
            ) -> dict[str, tuple[int, dict[str, Any], str]]:
    from concurrent.futures import ThreadPoolExecutor

    def chain(i: int) -> list[tuple[str, tuple[int, dict[str, Any], str]]]:
        return [(name, console(lab, state / str(i), *argv)) for name, argv in chains[i]]

    with ThreadPoolExecutor(len(chains)) as pool:
        return {name: got for part in pool.map(chain, range(len(chains))) for name, got in part}


def test_without_the_bindings_every_action_is_refused(lab: Lab, files: dict[str, Path], tmp_path: Path) -> None:
    """The user authenticates (kubectl auth whoami) but holds nothing: each action ends refused — exit 2 naming
    what is missing before any change, or 6 with the API server's 403 — never 0, and nothing changes."""
    env = lab_env(lab)
    who = run(["kubectl", "--context", CONTEXT, "auth", "whoami", "-o", "json"], env)
    assert json.loads(who.stdout)["status"]["userInfo"]["username"] == USER
    chains = actions(files)
    chains[3].append(("scale-up", ("scale-up", NODE, "--flavor", "m1.large", "--yes")))
    refused = run_all(lab, tmp_path, chains)
    wrong = {}
    for name, (code, doc, err) in refused.items():
        said = json.dumps(doc) + err
        if name == "scale-up --dry-run":  # a dry run reports what a run would be refused for
            ok = (code == 0 and doc.get("error") == "forbidden") or code == 6
        else:
            ok = code in (1, 2, 3, 6) and ("forbidden" in said.lower() or "403" in said)
        if not ok:
            wrong[name] = (code, doc, err)
    assert not wrong, json.dumps(wrong, indent=1, default=str)[:8000]
    rules, _ = lab.store.list("nodefeaturerules.nfd.k8s-sigs.io")
    assert "console-rbac" not in {r["metadata"]["name"] for r in rules}
    assert not lab.store.get("nodes", None, NODE)["spec"].get("unschedulable")


@pytest.fixture(scope="module")
def bound(lab: Lab) -> None:
    """The README's two commands: apply the roles, bind them (the example's subject is the user)."""
    run(["kubectl", "--context", "lab", "apply", "-f", str(ROLES), "-f", str(BINDINGS)], lab_env(lab))
    names = {d["metadata"]["name"] for d in yaml.safe_load_all(ROLES.read_text())}
    assert names == {"console", "console-node-debug", "console-nfd"}


def test_bound_to_the_shipped_roles_every_action_succeeds(lab: Lab, files: dict[str, Path], bound: None,
                                                           tmp_path: Path) -> None:
    env = lab_env(lab)
    results = run_all(lab, tmp_path, actions(files))
    failed = {name: (code, doc, err[-500:]) for name, (code, doc, err) in results.items()
              if code != 0 or "missing" in doc or doc.get("error") is not None}
    assert not failed, json.dumps(failed, indent=1, default=str)[:8000]
    rules, _ = lab.store.list("nodefeaturerules.nfd.k8s-sigs.io")
    assert "console-rbac" in {r["metadata"]["name"] for r in rules}
    assert results["nfd status"][1].get("namespace") == "node-feature-discovery", results["nfd status"][1]
    if "get nodes" in results:
        assert NODE in {n["name"] for n in results["get nodes"][1]["items"]}, results["get nodes"]
    # one real scale-up: an OpenStack resize of the node, drained by eviction, Lease held, configz over the
    # debug pod (the roles grant no nodes/proxy), the kubelet's new capacity verified
    code, doc, err = console(lab, tmp_path / "run", "scale-up", NODE, "--flavor", "m1.large", "--yes", timeout=400)
    assert code == 0, (code, doc, err[-1500:])
    node = lab.store.get("nodes", None, NODE)
    assert node["status"]["capacity"]["cpu"] == "8" and not node["spec"].get("unschedulable"), node["status"]
    can = run(["kubectl", "--context", CONTEXT, "auth", "can-i", "get", "nodes", "--subresource=proxy"], env,
              check=False)
    assert can.stdout.strip() == "no"  # not needed, not granted


def test_bound_user_reverts_a_resize_waiting_in_verify_resize(lab: Lab, files: dict[str, Path], bound: None,
                                                              tmp_path: Path) -> None:
    """`scale-up NODE --revert`: a resize left in VERIFY_RESIZE (made with openstacksdk as the cloud's admin)
    is reverted by the bound user — its own journaled runbook under the node's Lease (kube RBAC) — and Nova
    shows the old flavor again."""
    node = "kube-worker02"
    resize_to_verify(lab, next(vm.server_id for vm in lab.vms if vm.node_name == node), "m1.large")
    code, doc, err = console(lab, tmp_path, "scale-up", node, "--revert", "--yes", timeout=300)
    assert code == 0, (code, doc, err[-1500:])
    server = lab.nova.server(next(vm.server_id for vm in lab.vms if vm.node_name == node))
    assert server.status == "ACTIVE" and server.flavor.name == "m1.medium"
