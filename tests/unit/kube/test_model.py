from console.kube.cluster import ClusterSnapshot
from console.kube.model import NodeInfo, PodInfo, cpu_millis, fmt_cpu, fmt_mem, mem_bytes
from console.tui.screens.nodes import node_rows


def node(name: str, cpu: str, mem: str, *, ready: str = "True", unschedulable: bool = False, role: str = "") -> dict:
    labels = {f"node-role.kubernetes.io/{role}": ""} if role else {}
    return {
        "metadata": {"name": name, "labels": labels, "resourceVersion": "7"},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "capacity": {"cpu": cpu, "memory": mem, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": mem, "pods": "110"},
            "conditions": [{"type": "Ready", "status": ready}],
            "nodeInfo": {"kubeletVersion": "v1.21.6", "systemUUID": "abc"},
        },
    }


def pod(name: str, node_name: str, cpu: str, mem: str, phase: str = "Running", init: dict | None = None) -> dict:
    spec = {
        "nodeName": node_name,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}],
    }
    if init:
        spec["initContainers"] = [{"name": "i", "resources": {"requests": init}}]
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {"phase": phase}}


def test_quantities() -> None:
    assert cpu_millis("500m") == 500 and cpu_millis("3") == 3000 and cpu_millis(None) == 0
    assert mem_bytes("4030532Ki") == 4030532 * 1024 and mem_bytes("5Gi") == 5 * 2**30
    assert fmt_cpu(2500) == "2.5" and fmt_cpu(8000) == "8"
    assert fmt_mem(12268324 * 1024) == "11.7Gi" and fmt_mem(512 * 2**20) == "512Mi"


def test_node_status_and_roles() -> None:
    n = NodeInfo.from_api(node("cp", "2", "4030532Ki", unschedulable=True, role="master"))
    assert n.roles == ("master",) and n.status == "Ready,SchedulingDisabled"
    assert n.capacity.cpu_m == 2000 and n.capacity.memory == 4030532 * 1024 and n.capacity.pods == 110
    assert NodeInfo.from_api(node("w", "2", "1Gi", ready="Unknown")).status == "Unknown"


def test_pod_requests_take_init_containers_max() -> None:
    p = PodInfo.from_api(pod("a", "w", "1", "1Gi", init={"cpu": "2", "memory": "512Mi"}))
    assert p.requests.cpu_m == 2000 and p.requests.memory == 2**30


def test_node_rows_join_pods_once_and_skip_terminated() -> None:
    snap = ClusterSnapshot(
        nodes={
            n["metadata"]["name"]: NodeInfo.from_api(n) for n in (node("w2", "8", "12268324Ki"), node("w1", "2", "4Gi"))
        },
        pods={
            ("default", p["metadata"]["name"]): PodInfo.from_api(p)
            for p in (
                pod("a", "w2", "3", "5Gi"),
                pod("b", "w2", "1", "1Gi", phase="Succeeded"),
                pod("c", "w1", "500m", "256Mi"),
            )
        },
    )
    rows = node_rows(snap)
    assert [r[0] for r in rows] == ["w1", "w2"]
    assert rows[1][3] == "8/8/3" and rows[1][4] == "11.7Gi/11.7Gi/5.0Gi" and rows[1][5] == "1"
    assert rows[0][3] == "2/2/0.5"
