"""The console's usage reader (console/kube/metrics.py) and the nodes table / node detail against metrics.k8s.io as
upstream's metrics-server serves it on the lab (console/lab/metricsserver.py), through the kubernetes client and
the real TUI (Pilot): usage next to requests, as kubectl top node prints it (CPU(cores) CPU(%) MEMORY(bytes)
MEMORY(%); kubectl pkg/cmd/top, metricsutil/metrics_printer.go: millicores, Mi, percent of allocatable), and
*absent* — not zero — when the API is not served (404: its APIService deleted, as on a cluster without
metrics-server) or the user may not read it (403).

The lab's kubelets report their usage at its mean (steady_usage): metrics-server's rates are the same numbers at
every scrape, so kubectl and the console agree whenever each reads.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from kubernetes.utils import parse_quantity
from labstart import start_lab
from labtools import lab_env, run, wait_for

from console.kube.metrics import MetricsReader
from console.kube.model import fmt_cpu, fmt_mem
from console.lab.faultfiles import FaultFiles
from console.lab.metricsserver import APISERVICE
from console.lab.world import Lab

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")

FROZEN = 1_800_000_000.0
NODE, POD, PENDING = "kube-worker01", "web-0", "nginx"  # the default scenario's: web-0 requests 500m


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("default", tmp_path_factory.mktemp("lab-usage"), steady_usage=True)


def _top(lab: Lab, *args: str) -> dict[str, list[str]] | None:
    out = subprocess.run(["kubectl", "top", *args], env=lab_env(lab), capture_output=True, text=True, timeout=60)
    return {ln.split()[0]: ln.split()[1:] for ln in out.stdout.splitlines()[1:]} if out.returncode == 0 else None


def _top_nodes(lab: Lab) -> dict[str, list[str]]:
    """kubectl top node, once metrics-server has every node (it answers a node after its second scrape)."""
    nodes = sorted(n.name for n in lab.scenario.nodes)

    def every_node() -> dict[str, list[str]] | None:
        top = _top(lab, "node")
        return top if top and sorted(top) == nodes else None

    return wait_for(every_node, timeout=90, interval=0.5, what="kubectl top node listing every node")


def _pod_metrics(lab: Lab) -> None:
    """Until metrics-server has POD's usage (its second scrape since the pod started)."""
    wait_for(lambda: POD in (_top(lab, "pod", "-n", "default") or {}), timeout=90, interval=0.5,
             what=f"kubectl top pod listing {POD}")


@contextmanager
def _metrics_not_served(lab: Lab) -> Iterator[None]:
    """metrics-server's APIService deleted, as on a cluster without metrics-server (metrics.k8s.io not served: 404),
    then created again as its manifest creates it, and Available."""
    env = lab_env(lab)
    saved = json.loads(run(["kubectl", "get", "apiservice", APISERVICE, "-o", "json"], env).stdout)
    run(["kubectl", "delete", "apiservice", APISERVICE], env)
    try:
        yield
    finally:
        meta = {k: v for k, v in saved["metadata"].items() if k in ("name", "labels", "annotations")}
        body = {"apiVersion": saved["apiVersion"], "kind": saved["kind"], "metadata": meta, "spec": saved["spec"]}
        subprocess.run(["kubectl", "create", "-f", "-"], env=env, input=json.dumps(body), capture_output=True,
                       text=True, timeout=60, check=True)

        def available() -> bool:
            got = subprocess.run(["kubectl", "get", "apiservice", APISERVICE, "-o", "json"], env=env,
                                 capture_output=True, text=True, timeout=60)
            if got.returncode != 0:
                return False
            conds = json.loads(got.stdout).get("status", {}).get("conditions") or []
            return any(c["type"] == "Available" and c["status"] == "True" for c in conds)

        wait_for(available, timeout=60, interval=0.5, what=f"APIService {APISERVICE} Available again")


def test_reader_reads_what_kubectl_top_shows(lab: Lab, kube: Any) -> None:
    """The reader's numbers are kubectl top's, read between two of metrics-server's scrapes (kubectl top the same
    before and after the reader's read)."""
    _top_nodes(lab)
    _pod_metrics(lab)
    reader = MetricsReader(kube)

    def between_scrapes() -> tuple[dict[str, list[str]], Any] | None:
        before = _top(lab, "node")
        snap = reader.poll()
        return (before, snap) if before and before == _top(lab, "node") else None

    top, snap = wait_for(between_scrapes, timeout=60, interval=0.5, what="one scrape's numbers on both sides")
    assert snap.state == "live" and snap.reason == ""
    assert sorted(snap.nodes) == sorted(top)
    for name, (cpu, _, mem, _) in top.items():
        usage = snap.node(name)
        assert usage is not None
        assert f"{usage.cpu_m}m" == cpu and f"{usage.memory // (1024 * 1024)}Mi" == mem
    assert snap.pods == {}  # PodMetrics only while a screen shows them
    reader.want_pods(True)
    snap = reader.poll()
    assert snap.pod("default", POD) is not None and snap.pod("default", PENDING) is None  # Pending: none


def test_reader_absent_when_not_served_then_live_again(lab: Lab, kube: Any) -> None:
    _top_nodes(lab)
    reader = MetricsReader(kube)
    assert reader.poll().state == "live"
    with _metrics_not_served(lab):
        snap = reader.poll()
        assert snap.state == "absent" and "not served" in snap.reason
        assert snap.node(NODE) is None  # absent, never a zero usage
        gen = reader.generation
    wait_for(lambda: reader.poll().state == "live", timeout=60, interval=0.5,
             what="live usage once the APIService is back")
    assert reader.snapshot().node(NODE) is not None and reader.generation > gen


def test_reader_forbidden_says_so_with_the_servers_message(lab: Lab) -> None:
    """The lab's `lab-nobody` (authenticated by the API server, no RBAC binding): 403 with kube-apiserver's own
    Forbidden message."""
    from kubernetes import config

    api_client = config.new_client_from_config(config_file=str(FaultFiles(lab.state.root / "faults").forbidden))
    try:
        snap = MetricsReader(api_client).poll()
    finally:
        api_client.close()
    assert snap.state == "forbidden" and snap.node(NODE) is None
    assert snap.reason == ('nodes.metrics.k8s.io is forbidden: User "lab-nobody" cannot list resource "nodes" in API '
                           'group "metrics.k8s.io" at the cluster scope')


def test_reader_failing_when_the_api_server_is_unreachable(lab: Lab) -> None:
    """A kubeconfig naming a port nothing listens on (the lab's fault file): connection refused."""
    from kubernetes import config

    api_client = config.new_client_from_config(config_file=str(FaultFiles(lab.state.root / "faults").unreachable))
    api_client.configuration.retries = False
    try:
        snap = MetricsReader(api_client).poll()
    finally:
        api_client.close()
    assert snap.state == "failing" and snap.reason.startswith("reading metrics.k8s.io failed")
    assert snap.node(NODE) is None


def _app(lab: Lab) -> Any:
    from tuitools import console_app

    from console.config import Settings

    return console_app(Settings(kubeconfig=str(lab.state.kubeconfig), theme="dark"), clock=lambda: FROZEN)


async def _until(pilot: Any, predicate: Any, what: str) -> None:
    from screenshots import wait_until

    await wait_until(pilot, predicate, timeout=30, what=what)


@asynccontextmanager
async def _with_usage(lab: Lab, size: tuple[int, int]) -> AsyncIterator[tuple[Any, Any]]:
    """The console open on the lab until NODE's usage is in the rows."""
    app = _app(lab)
    try:
        async with app.run_test(size=size) as pilot:
            await _until(pilot, lambda: app.view.rows and app.view.rows_by_name[NODE].usage, "usage in rows")
            await pilot.pause()
            yield app, pilot
    finally:
        app.kube.stop()


def _cells(app: Any, node: str) -> dict[str, str]:
    table = app.screen.query_one("#nodes-table")
    i = table.keys.index(node)
    return {col.key: str(cell) for col, cell in zip(table.columns, table.cells[i], strict=False)}


def _requested_of_allocatable(lab: Lab, node: str) -> str:
    """`req/alloc` of the node's CPU as the API server has them: the requests of the pods bound there that have
    not ended, of the node's allocatable."""
    env = lab_env(lab)
    alloc = json.loads(run(["kubectl", "get", "node", node, "-o", "json"], env).stdout)["status"]["allocatable"]
    pods = json.loads(run(["kubectl", "get", "pods", "-A", f"--field-selector=spec.nodeName={node}", "-o", "json"],
                          env).stdout)["items"]
    req = sum(parse_quantity(c.get("resources", {}).get("requests", {}).get("cpu", "0")) for p in pods
              if p["status"].get("phase") not in ("Succeeded", "Failed") for c in p["spec"]["containers"])
    return f"{fmt_cpu(int(req * 1000))}/{fmt_cpu(int(parse_quantity(alloc['cpu']) * 1000))}"


async def test_nodes_table_and_detail_show_usage_next_to_requests(lab: Lab) -> None:
    top = _top_nodes(lab)
    _pod_metrics(lab)
    async with _with_usage(lab, (80, 24)) as (app, pilot):
        table = app.screen.query_one("#nodes-table")
        shown = [c.key for c in table.visible_columns]
        assert shown[:6] == ["name", "status", "cpu", "mem", "cpu_use", "mem_use"]  # readable at 80×24
        cells = _cells(app, NODE)
        assert cells["cpu_use"] == top[NODE][1] and cells["mem_use"] == top[NODE][3]  # "28%"
        assert cells["cpu"].endswith(_requested_of_allocatable(lab, NODE))  # requested/allocatable beside it
        table.move_to(NODE)
        await pilot.press("enter")
        await _until(pilot, lambda: type(app.screen).__name__ == "NodeDetailScreen", "node detail")
        await _until(pilot, lambda: app.metrics.snapshot().pods, "pod usage")
        web = app.metrics.snapshot().pod("default", POD)
        assert web is not None and 0 < web.cpu_m < 500  # part of its 500m request
        want = f"use {fmt_cpu(web.cpu_m):>4} {fmt_mem(web.memory):>7}"

        def web_line() -> str:
            pods = str(app.screen.query_one("#node-pods").render())
            return next((ln for ln in pods.splitlines() if POD in ln), "")

        await _until(pilot, lambda: web_line().rstrip().endswith(want), f"{POD}'s usage in the pods section")
        resources = str(app.screen.query_one("#node-resources").render())
        assert "in use" in resources
        cpu_line = next(ln for ln in resources.splitlines() if ln.strip().startswith("cpu"))
        assert cpu_line.rstrip().endswith(f"{int(top[NODE][1].rstrip('%')):>3}%")


async def test_nodes_table_shows_absent_usage_when_not_served(lab: Lab) -> None:
    with _metrics_not_served(lab):
        app = _app(lab)
        try:
            async with app.run_test(size=(80, 24)) as pilot:
                await _until(pilot, lambda: app.metrics.snapshot().state == "absent" and app.view.rows,
                             "absent usage")
                await _until(pilot, lambda: app.view.generation[3] == app.metrics.generation,
                             "rows with metrics state")
                await pilot.pause()
                cells = _cells(app, NODE)
                assert cells["cpu_use"] == "–" and cells["mem_use"] == "–"  # absent, not 0%
                status = str(app.screen.query_one("#nodes-status").render())
                assert "usage n/a: metrics.k8s.io is not served" in status
        finally:
            app.kube.stop()


async def test_wide_table_prints_usage_as_kubectl_top_and_rules_read_the_nfd_version_once(lab: Lab) -> None:
    """The requests counted in the API server's audit log (Lab.api_requests): the console's, as the kubeconfig's
    admin. The rules screen's NFD version is the nfd-master image's tag (console/kube/nfddiscovery.py), else one
    `limit=1` NodeFeature: never a list of them."""
    top = _top_nodes(lab)
    async with _with_usage(lab, (160, 30)) as (app, pilot):  # kubectl top's cores once every column fits
        cells = _cells(app, NODE)
        cpu, cpu_pct, mem, mem_pct = top[NODE]
        assert cells["cpu_use"] == f"{cpu} {cpu_pct}" and cells["mem_use"] == f"{mem} {mem_pct}"
        seen = len(lab.api_requests())
        app.run_command_text("rules")
        await _until(pilot, lambda: type(app.screen).__name__ == "RulesScreen", "rules screen")
        await _until(pilot, lambda: any("nodefeaturerules" in r for r in lab.api_requests()[seen:]),
                     "rules listed")
        await _until(pilot, lambda: getattr(app.screen, "version_text", ""), "the NFD version")
        await app.workers.wait_for_complete()
        assert app.screen.version_text == f"NFD {lab.scenario.nfd_version} (detected on the cluster)"
        reads = [r for r in lab.api_requests()[seen:] if "/nodefeatures?" in r or r.endswith("/nodefeatures")]
        assert len(reads) <= 1 and all("limit=1" in r for r in reads)  # at most the version from one NodeFeature
