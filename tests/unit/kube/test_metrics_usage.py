"""Pure parts of usage from metrics.k8s.io: units as kubectl top reads them, absent never zero, sort order.

kubectl pkg/cmd/top + metricsutil/metrics_printer.go: CPU printed as Quantity.MilliValue() (rounded up) "m",
memory as Value()/(1024*1024) "Mi", percent = usage / allocatable * 100 truncated.
"""

from __future__ import annotations

from console.kube.cluster import ClusterSnapshot
from console.kube.metrics import MetricsSnapshot, Usage, _why, cpu_millis, node_usage, pod_usage
from console.kube.model import NodeInfo
from console.kube.nodetable import SORT_KEYS, node_rows
from console.tui.widgets.cells import usage_cell, usage_note

from .test_model import node


def test_units_as_kubectl_top() -> None:
    assert cpu_millis("483000001n") == 484 and cpu_millis("250m") == 250 and cpu_millis(None) == 0
    name, u = node_usage({"metadata": {"name": "w"}, "usage": {"cpu": "1124212399n", "memory": "1933940Ki"}})
    assert name == "w" and u == Usage(1125, 1933940 * 1024)
    key, p = pod_usage({"metadata": {"name": "a", "namespace": "ns"},
                        "containers": [{"name": "x", "usage": {"cpu": "1000000n", "memory": "1Mi"}},
                                       {"name": "y", "usage": {"cpu": "2m", "memory": "1024Ki"}}]})
    assert key == ("ns", "a") and p == Usage(3, 2 * 2**20)


def test_failures_are_absent_with_a_reason() -> None:
    assert _why(404, b"{}", "nodes") == ("absent", "metrics.k8s.io is not served (no metrics-server)")
    assert _why(403, b'{"message": "nodes.metrics.k8s.io is forbidden: nope"}', "nodes") == \
        ("forbidden", "nodes.metrics.k8s.io is forbidden: nope")
    state, reason = _why(503, b"not json", "nodes")
    assert state == "failing" and "unavailable" in reason
    gone = MetricsSnapshot("absent", "x", nodes={"w": Usage(1, 1)})
    assert gone.node("w") is None  # values of a snapshot that is not live are never shown
    assert usage_note(None) == "usage n/a" and usage_note(type("R", (), {"snapshot": lambda self: gone})()) == \
        "usage n/a: x"


def test_rows_cells_and_sort_keep_unknown_usage_apart_from_zero() -> None:
    nodes = {n["metadata"]["name"]: NodeInfo.from_api(n) for n in (node("a", "4", "8Gi"), node("b", "4", "8Gi"),
                                                                  node("c", "4", "8Gi"))}
    metrics = MetricsSnapshot("live", nodes={"a": Usage(1000, 2**30), "c": Usage(0, 0)})
    rows = node_rows(ClusterSnapshot(nodes, {}), None, metrics)
    by = {r.name: r for r in rows}
    assert by["a"].usage == Usage(1000, 2**30) and by["b"].usage is None and by["c"].cpu_use_ratio() == 0.0
    assert [r.name for r in sorted(rows, key=SORT_KEYS["cpu-use"])] == ["a", "c", "b"]  # unknown last
    colors: dict[str, str] = {}
    assert str(usage_cell("cpu", 1000, 4000, colors, wide=True)) == "1000m 25%"
    assert str(usage_cell("mem", 2**30, 8 * 2**30, colors, wide=True)) == "1024Mi 12%"
    assert str(usage_cell("cpu", 1000, 4000, colors, wide=False)) == "25%"
    assert str(usage_cell("cpu", None, 4000, colors, wide=False)) == "–"
    assert str(usage_cell("cpu", 0, 4000, colors, wide=False)) == "0%"
