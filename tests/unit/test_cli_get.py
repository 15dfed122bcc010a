"""`console get`: quantities, table alignment, the JSON of a node row and the usage errors (pure, no cluster)."""

from __future__ import annotations

import json

import pytest

from console.cli import main
from console.cli_get_data import (
    advice_text,
    cpu_quantity,
    memory_quantity,
    node_cells,
    node_json,
    pending_fits,
    table,
)
from console.infra.sizes import VmSize
from console.infra.vms import VmView
from console.kube.cluster import ClusterSnapshot
from console.kube.clusterview import build_view
from console.kube.metrics import MetricsSnapshot, Usage
from console.kube.model import NodeInfo, PodInfo, Resources
from console.runbook.plan import FlavorInfo

GI = 2**30


@pytest.mark.parametrize(("millis", "text"), [(0, "0"), (4000, "4"), (1500, "1500m"), (6005, "6005m"), (5, "5m")])
def test_cpu_quantity_is_what_the_api_server_writes(millis: int, text: str) -> None:
    """Quantity.String() of a DecimalSI CPU quantity: whole cores bare, else millicores
    (k8s.io/apimachinery pkg/api/resource/quantity.go; `kubectl describe node` shows `6005m`)."""
    assert cpu_quantity(millis) == text


@pytest.mark.parametrize(("n", "text"), [
    (0, "0"), (512, "512"), (1024, "1Ki"), (8 * GI, "8Gi"), (4030532 * 1024, "4030532Ki"),
    (8256 * 2**20, "8256Mi"), (1536 * 2**20, "1536Mi"), (1000, "1000"), (1025, "1025"),
])
def test_memory_quantity_is_canonical_binary_si(n: int, text: str) -> None:
    """CanonicalizeBytes for BinarySI (apimachinery quantity.go): below 1024 plain, else the largest of Ki…Ei that
    divides the value; a kubelet's `4030532Ki` comes back as written."""
    assert memory_quantity(n) == text


def test_table_pads_as_kubectl_tabwriter() -> None:
    """k8s.io/cli-runtime pkg/printers/tabwriter.go: min width 6, padding 3, the last column unpadded."""
    out = table(["NAME", "X", "LAST"], [["a-long-name", "1", "tail"], ["b", "22", ""]])
    # 11 + 3 = 14 for the names; "X" and "22" are padded up to the minimum of 6
    assert out.splitlines() == ["NAME          X     LAST", "a-long-name   1     tail", "b             22    "]


def _node(name: str, cpu: str = "4", memory: str = "8Gi", **kw: object) -> NodeInfo:
    return NodeInfo(name=name, uid=name, resource_version="1", labels=kw.pop("labels", {}),  # type: ignore[arg-type]
                    roles=("worker",), ready="True", unschedulable=False, capacity=Resources.of(cpu, memory, 110),
                    allocatable=Resources.of(cpu, memory, 110), kubelet_version="v1.32.4", system_uuid=name,
                    provider_id="", **kw)  # type: ignore[arg-type]


def test_node_json_has_the_contracts_fields_and_marks_a_stale_vm() -> None:
    """The VM runs 12 vCPU (a libvirt live scale-up), Nova says 8, the kubelet still 4: both markers, as the
    nodes screen's VM column shows them (console/infra/vms.py)."""
    node = _node("w1", labels={"feature.node.kubernetes.io/cpu-x": "true"},
                 annotations={"nfd.node.kubernetes.io/feature-labels": "cpu-x"})
    pod = PodInfo("default", "p", "w1", "Running", Resources.of("1500m", "1Gi", 1))
    vm = VmView("w1", "w1", "ACTIVE", running=VmSize(12, 16384), flavor="m1.large", flavor_size=VmSize(8, 12288),
                host="cmp002")
    snap = ClusterSnapshot({"w1": node}, {("default", "p"): pod})
    view = build_view(snap, {"w1": vm}, MetricsSnapshot("live", "", {"w1": Usage(1000, GI)}))
    doc = node_json(view.rows[0])
    assert doc["requested"] == {"cpu": "1500m", "memory": "1Gi"}
    assert doc["capacity"] == {"cpu": "4", "memory": "8Gi"} and doc["allocatable"] == doc["capacity"]
    assert doc["usage"] == {"cpu": "1", "memory": "1Gi"} and doc["pods"] == 1 and doc["nfdLabels"] == 1
    assert doc["roles"] == ["worker"] and doc["status"] == "Ready"
    assert doc["vm"] == {"name": "w1", "vcpus": 12, "memory": "16Gi", "flavor": "m1.large", "status": "ACTIVE",
                         "host": "cmp002", "backend": "libvirt", "stale": ["nova", "kubelet"], "markers": "*!"}
    cells = node_cells(view.rows[0], wide=False)
    assert cells[3:9] == ["1.5/4", "1.0Gi/8.0Gi", "25%", "12%", "1", "1"] and cells[-1] == "12/16Gi*!"


def test_usage_not_known_is_null_and_unknown_never_zero() -> None:
    view = build_view(ClusterSnapshot({"w1": _node("w1")}, {}), None, MetricsSnapshot("absent", "not served"))
    assert node_json(view.rows[0])["usage"] is None and node_json(view.rows[0])["vm"] is None
    assert node_cells(view.rows[0], wide=True)[6:8] == ["<unknown>", "<unknown>"]


def test_pending_advice_is_the_pending_screens() -> None:
    """A pod that fits nowhere now: the smallest scale-up, with the smallest flavor that fits."""
    nodes = {"w1": _node("w1", "2", "4Gi"), "w2": _node("w2", "2", "4Gi")}
    pod = PodInfo("default", "nginx", "", "Pending", Resources.of("3", "5Gi", 1))
    view = build_view(ClusterSnapshot(nodes, {("default", "nginx"): pod}))
    [(got, event, advice)] = pending_fits(view, {}, [FlavorInfo("m1.large", 4, 8192), FlavorInfo("m1.xl", 8, 16384)])
    assert got == pod and event is None and [a.node for a in advice] == ["w1", "w2"]
    assert advice_text(advice) == "Smallest fitting size: w1 → 3 vCPU / 6Gi (flavor m1.large)"


def test_pending_analyses_each_shape_of_requests_once() -> None:
    """1,000 Pending replicas on 2,000 nodes: one analysis per distinct requests, not 2,000,000 (unshared, this takes
    minutes; the bound is generous for a loaded machine)."""
    import time

    nodes = {f"w{i:04}": _node(f"w{i:04}", "2", "4Gi") for i in range(2000)}
    pods = {("batch", f"job-{i}"): PodInfo("batch", f"job-{i}", "", "Pending", Resources.of("3", "5Gi", 1))
            for i in range(1000)}
    view = build_view(ClusterSnapshot(nodes, pods))
    t0 = time.monotonic()
    fits = pending_fits(view, {}, [])
    assert time.monotonic() - t0 < 20
    assert [pod.name for pod, _, _ in fits] == sorted(name for _, name in pods) and fits[0][2] is fits[-1][2]
    assert {advice_text(a) for _, _, a in fits} == {"Smallest fitting size: w0000 → 3 vCPU / 6Gi"}


@pytest.mark.parametrize("selector", ["foo=bar=baz,,(", "", "a in ()"])
def test_a_bad_selector_is_exit_2_with_one_line_before_any_connection(
        selector: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")  # never read: the selector is refused first
    assert main(["get", "nodes", "-l", selector, "-o", "json"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "bad label selector" in err
    doc = json.loads(out)
    assert doc["error"] == "bad-selector" and doc["exit_code"] == 2


def test_get_is_headless() -> None:
    """`console get` never imports the UI (STYLE.md: headless commands for scripts and bastions)."""
    import subprocess
    import sys

    used = ("console.cli_get", "console.cli_get_data", "console.kube.clusterview", "console.runbook.fitting",
            "console.gateways", "console.infra.inventory", "console.kube.connection", "console.kube.events",
            "console.kube.metrics", "console.kube.nfdstore", "console.kube.nodelabels", "console.kube.selector",
            "console.config")  # every module the command imports, at the top or in its functions
    code = (f"import sys, {', '.join(used)}; "
            "print([m for m in sys.modules if m.split('.')[0] in ('textual', 'rich') or m.startswith('console.tui')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
