"""The console's usage reader (console/kube/metrics.py) and the nodes table / node detail against the lab's
metrics.k8s.io, through the kubernetes client and the real TUI (Pilot): usage next to requests, as kubectl top
node prints it (CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%); kubectl pkg/cmd/top, metricsutil/metrics_printer.go:
millicores, Mi, percent of allocatable), and *absent* — not zero — when the API is not served (404, as on a
cluster without metrics-server) or the user may not read it (403).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from console.kube.metrics import MetricsReader
from console.kube.model import fmt_cpu, fmt_mem

KubeLab = Any  # the kube_lab fixture's type, from conftest.py
FROZEN = 1_800_000_000.0


@pytest.fixture
def frozen(kube_lab: KubeLab) -> KubeLab:
    kube_lab.api.metrics.clock = lambda: FROZEN  # one scrape for the whole test: kubectl and the console agree
    return kube_lab


def _top_nodes(lab: KubeLab) -> dict[str, list[str]]:
    out = subprocess.run(["kubectl", "top", "node"], env=lab.env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return {ln.split()[0]: ln.split()[1:] for ln in out.stdout.splitlines()[1:]}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_reader_reads_what_kubectl_top_shows(frozen: KubeLab, kube: Any) -> None:
    reader = MetricsReader(kube)
    snap = reader.poll()
    assert snap.state == "live" and snap.reason == ""
    top = _top_nodes(frozen)
    assert sorted(snap.nodes) == sorted(top)
    for name, (cpu, _, mem, _) in top.items():
        usage = snap.node(name)
        assert usage is not None
        assert f"{usage.cpu_m}m" == cpu and f"{usage.memory // (1024 * 1024)}Mi" == mem
    assert snap.pods == {}  # PodMetrics only while a screen shows them
    reader.want_pods(True)
    snap = reader.poll()
    assert snap.pod("default", "web-1") is not None and snap.pod("default", "big-1") is None  # Pending: none


def test_reader_absent_when_not_served_then_live_again(kube_lab: KubeLab, kube: Any) -> None:
    kube_lab.api.metrics.served = False
    reader = MetricsReader(kube)
    snap = reader.poll()
    assert snap.state == "absent" and "not served" in snap.reason
    assert snap.node("worker-1") is None  # absent, never a zero usage
    kube_lab.api.metrics.served = True
    gen = reader.generation
    assert reader.poll().node("worker-1") is not None and reader.generation == gen + 1


def test_reader_forbidden_says_so_with_the_servers_message(kube_lab: KubeLab) -> None:
    from kubernetes import client

    from console.lab.kubeapi import start_kube_api

    nobody = secrets.token_urlsafe(16)
    api = kube_lab.loop.run(start_kube_api(kube_lab.store, kube_lab.logs, token=kube_lab.token, tls=False,
                                           unbound={nobody: "nobody"}))
    try:
        cfg = client.Configuration()
        cfg.host = api.url
        cfg.api_key = {"authorization": f"Bearer {nobody}"}
        with client.ApiClient(cfg) as api_client:
            snap = MetricsReader(api_client).poll()
    finally:
        kube_lab.loop.run(api.stop())
    assert snap.state == "forbidden" and snap.node("worker-1") is None
    assert snap.reason == ('nodes.metrics.k8s.io is forbidden: User "nobody" cannot list resource "nodes" in API '
                           'group "metrics.k8s.io" at the cluster scope')


def test_reader_failing_when_the_api_server_is_unreachable(kube_lab: KubeLab) -> None:
    from kubernetes import client

    url = kube_lab.api.url
    kube_lab.loop.run(kube_lab.api.close_port())
    cfg = client.Configuration()
    cfg.host, cfg.retries = url.replace("https", "http"), False
    with client.ApiClient(cfg) as api_client:
        snap = MetricsReader(api_client).poll()
    assert snap.state == "failing" and snap.reason.startswith("reading metrics.k8s.io failed")
    assert snap.node("worker-1") is None


def _app(lab: KubeLab) -> Any:
    from tuitools import console_app

    from console.config import Settings

    return console_app(Settings(kubeconfig=str(lab.kubeconfig), theme="dark"), clock=lambda: FROZEN)


async def _until(pilot: Any, predicate: Any, what: str) -> None:
    from screenshots import wait_until

    await wait_until(pilot, predicate, timeout=30, what=what)


@asynccontextmanager
async def _with_usage(lab: KubeLab, size: tuple[int, int]) -> AsyncIterator[tuple[Any, Any]]:
    """The console open on the lab until worker-1's usage is in the rows."""
    app = _app(lab)
    try:
        async with app.run_test(size=size) as pilot:
            await _until(pilot, lambda: app.view.rows and app.view.rows_by_name["worker-1"].usage, "usage in rows")
            await pilot.pause()
            yield app, pilot
    finally:
        app.kube.stop()


def _cells(app: Any, node: str) -> dict[str, str]:
    table = app.screen.query_one("#nodes-table")
    i = table.keys.index(node)
    return {col.key: str(cell) for col, cell in zip(table.columns, table.cells[i], strict=False)}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
async def test_nodes_table_and_detail_show_usage_next_to_requests(frozen: KubeLab) -> None:
    top = _top_nodes(frozen)
    async with _with_usage(frozen, (80, 24)) as (app, pilot):
        table = app.screen.query_one("#nodes-table")
        shown = [c.key for c in table.visible_columns]
        assert shown[:6] == ["name", "status", "cpu", "mem", "cpu_use", "mem_use"]  # readable at 80×24
        cells = _cells(app, "worker-1")
        assert cells["cpu_use"] == top["worker-1"][1] and cells["mem_use"] == top["worker-1"][3]  # "28%"
        assert cells["cpu"].endswith("1.5/4")  # requested/allocatable beside it
        table.move_to("worker-1")
        await pilot.press("enter")
        await _until(pilot, lambda: type(app.screen).__name__ == "NodeDetailScreen", "node detail")
        await _until(pilot, lambda: app.metrics.snapshot().pods, "pod usage")
        web = app.metrics.snapshot().pod("default", "web-1")
        assert web is not None and 0 < web.cpu_m < 500  # part of its 500m request
        want = f"use {fmt_cpu(web.cpu_m):>4} {fmt_mem(web.memory):>7}"

        def web_line() -> str:
            pods = str(app.screen.query_one("#node-pods").render())
            return next((ln for ln in pods.splitlines() if "web-1" in ln), "")

        await _until(pilot, lambda: web_line().rstrip().endswith(want), "web-1's usage in the pods section")
        resources = str(app.screen.query_one("#node-resources").render())
        assert "in use" in resources
        cpu_line = next(ln for ln in resources.splitlines() if ln.strip().startswith("cpu"))
        assert cpu_line.rstrip().endswith(f"{int(top['worker-1'][1].rstrip('%')):>3}%")


async def test_nodes_table_shows_absent_usage_when_not_served(kube_lab: KubeLab) -> None:
    kube_lab.api.metrics.served = False
    app = _app(kube_lab)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await _until(pilot, lambda: app.metrics.snapshot().state == "absent" and app.view.rows, "absent usage")
            await _until(pilot, lambda: app.view.generation[3] == app.metrics.generation, "rows with metrics state")
            await pilot.pause()
            cells = _cells(app, "worker-1")
            assert cells["cpu_use"] == "–" and cells["mem_use"] == "–"  # absent, not 0%
            status = str(app.screen.query_one("#nodes-status").render())
            assert "usage n/a: metrics.k8s.io is not served" in status
    finally:
        app.kube.stop()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
async def test_wide_table_prints_usage_as_kubectl_top_and_rules_read_the_nfd_version_once(frozen: KubeLab) -> None:
    top = _top_nodes(frozen)
    async with _with_usage(frozen, (160, 30)) as (app, pilot):  # kubectl top's cores once every column fits
        cells = _cells(app, "worker-1")
        cpu, cpu_pct, mem, mem_pct = top["worker-1"]
        assert cells["cpu_use"] == f"{cpu} {cpu_pct}" and cells["mem_use"] == f"{mem} {mem_pct}"
        seen = len(frozen.api.requests())
        app.run_command_text("rules")
        await _until(pilot, lambda: type(app.screen).__name__ == "RulesScreen", "rules screen")
        await _until(pilot, lambda: any("nodefeaturerules" in r for r in frozen.api.requests()[seen:]),
                     "rules listed")
        await app.workers.wait_for_complete()
        reads = [r for r in frozen.api.requests()[seen:] if "/nodefeatures?" in r or r.endswith("/nodefeatures")]
        assert len(reads) == 1 and "limit=1" in reads[0]  # the version from one NodeFeature
