"""The one-line NFD status at the top of the rules and hooks screens, against the lab (libvirt test driver).

NFD is deployed here as NFD's Helm chart renders it at v0.16.4 for the NVIDIA GPU operator (namespace
`gpu-operator`, `-extra-label-ns=nvidia.com` on the master; deployment/helm/node-feature-discovery/templates/
master.yaml, worker.yaml), created with the kubernetes client; whatever the lab seeds as NFD is removed first.
The line comes from a thread worker (Gateways.nfd_deployment) reporting by message: the screens do no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static
from tuitools import Host, settle

from console.config import Settings
from console.gateways import Gateways
from console.lab.world import Lab
from console.nfd.deployment import nfd_containers
from console.tui.screens.hooks import HooksScreen
from console.tui.screens.rules import RulesScreen
from console.tui.widgets.nfdstatus import NO_CLUSTER

pytestmark = pytest.mark.lab

NS = "gpu-operator"
IMAGE = "registry.k8s.io/nfd/node-feature-discovery:v0.16.4"
ETC = "/etc/kubernetes/node-feature-discovery"


def _workload(kind: str, name: str, program: str, args: list[str], mounts: list[Any], volumes: list[Any]) -> Any:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": program.removeprefix("nfd-"), "image": IMAGE, "command": [program],
                                         "args": args, "volumeMounts": mounts}], "volumes": volumes}}}}


@pytest.fixture(scope="module")
def gateways(kube_lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateways]:
    from kubernetes import client

    gw = Gateways.connect(Settings(kubeconfig=str(kube_lab.state.kubeconfig)))
    apps, core = client.AppsV1Api(gw.api_client), client.CoreV1Api(gw.api_client)
    for lister, delete in ((apps.list_deployment_for_all_namespaces, apps.delete_namespaced_deployment),
                           (apps.list_daemon_set_for_all_namespaces, apps.delete_namespaced_daemon_set)):
        for obj in json.loads(lister(_preload_content=False).data)["items"]:  # raw: the lab's statuses are partial
            if nfd_containers(obj):
                delete(obj["metadata"]["name"], obj["metadata"]["namespace"], _preload_content=False)
    raw = {"_preload_content": False}
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, **raw)
    core.create_namespaced_config_map(NS, {"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": "nfd-worker-conf", "namespace": NS},
                                           "data": {"nfd-worker.conf": "core:\n  sleepInterval: 30s\n"}}, **raw)
    apps.create_namespaced_deployment(NS, _workload("Deployment", "gpu-operator-node-feature-discovery-master",
                                                    "nfd-master", ["-extra-label-ns=nvidia.com"], [], []), **raw)
    apps.create_namespaced_daemon_set(NS, _workload(
        "DaemonSet", "gpu-operator-node-feature-discovery-worker", "nfd-worker", [],
        [{"name": "conf", "mountPath": ETC}, {"name": "features-d", "mountPath": f"{ETC}/features.d"}],
        [{"name": "conf", "configMap": {"name": "nfd-worker-conf"}},
         {"name": "features-d", "hostPath": {"path": f"{ETC}/features.d"}}]), **raw)
    yield gw
    gw.api_client.close()


EXPECTED = ("NFD v0.16.4 in gpu-operator · master -extra-label-ns=nvidia.com · hooks disabled · "
            "relabel every 30s")


@pytest.mark.parametrize("screen_class, prefix", [(RulesScreen, "rules"), (HooksScreen, "hooks")])
async def test_status_line_names_the_deployed_nfd(gateways: Gateways, tmp_path: Path, monkeypatch: Any,
                                                  screen_class: Any, prefix: str) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    screen = screen_class(gateways=gateways, settings=Settings(hook_store="directory", hook_dir=str(tmp_path)))
    app = Host(screen, screen.settings)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        line = screen.query_one(f"#{prefix}-nfd", Static)
        assert str(line.render()) == EXPECTED
        assert line.region.y < screen.query_one(f"#{prefix}-status", Static).region.y  # at the top


async def test_status_line_without_a_cluster(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    screen = HooksScreen(settings=Settings(hook_store="directory", hook_dir=str(tmp_path)))
    app = Host(screen, screen.settings)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert str(screen.query_one("#hooks-nfd", Static).render()) == NO_CLUSTER


class _Refusing:
    """Gateways whose discovery is refused (what nfddiscovery raises when no namespace can be listed)."""

    def nfd_deployment(self) -> Any:
        from console.kube.nfddiscovery import NfdDiscoveryError

        raise NfdDiscoveryError("cannot find NFD: this user may not list deployments or daemonsets (403 Forbidden)",
                                ("list deployments.apps", "list daemonsets.apps"))


async def test_status_line_says_why_discovery_failed() -> None:
    from textual.screen import Screen

    from console.tui.widgets.nfdstatus import NfdStatusLine

    line = NfdStatusLine(_Refusing())

    class OneLine(Screen[None]):
        def compose(self) -> Any:
            yield line

    app = Host(OneLine(), Settings())
    async with app.run_test(size=(160, 10)) as pilot:
        await settle(pilot)
        assert str(line.render()) == ("NFD: cannot find NFD: this user may not list deployments or daemonsets "
                                      "(403 Forbidden)")


def test_one_discovery_serves_the_screens_for_a_while(gateways: Gateways) -> None:
    """Gateways.nfd_deployment: the answer is kept for NFD_DISCOVERY_TTL_S (both screens' lines, the rules
    screen's version), a new discovery once it is older than max_age."""
    first = gateways.nfd_deployment()
    assert first is not None and first.namespace == NS
    assert gateways.nfd_deployment() is first
    again = gateways.nfd_deployment(max_age=0)
    assert again is not first and again == first
    assert gateways.nfd_version() == "v0.16.4"
