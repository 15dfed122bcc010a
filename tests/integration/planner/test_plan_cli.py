"""`console plan` on the lab's `planner` scenario (issue 13's first acceptance point), one lab for the module.

The test reads the cluster with the kubernetes client and the cloud with openstacksdk itself, and checks the plan
against what it reads: every placement satisfies the pod's nodeSelector / required node affinity
(k8s.io/component-helpers/scheduling/corev1/nodeaffinity), tolerates the node's NoSchedule/NoExecute taints
(k8s.io/api/core/v1/toleration.go ToleratesTaint) and its required pod anti-affinity on hostname, both
directions (kube-scheduler's InterPodAffinity plugin), and fits the grown node; and the plan's total cost equals
the optimum this test finds by enumerating every assignment of the Pending pods and every size of the nodes
(most pods placed first, then least cost: vCPUs plus GiB added, the planner's default weights), bounded by
Nova's quota (`GET /limits`) and Placement's free room per compute host where the cloud serves them.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from labstart import start_lab
from labtools import lab_env
from tuitools import isolated_xdg  # noqa: F401 (an autouse fixture)

from console.cli import main
from console.lab.world import Lab

pytestmark = pytest.mark.lab
MiB, GiB = 2**20, 2**30


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("plan-lab"), clouds_env=True)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def console(lab: Lab, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """`console plan ARGS` in this process (console.cli.main, as `python -m console` runs it), in the lab's env."""
    env = lab_env(lab)
    for var in ("KUBECONFIG", "OS_CLOUD", "OS_CLIENT_CONFIG_FILE", "CONSOLE_LIBVIRT_URI"):
        monkeypatch.setenv(var, env[var])

    def call(*args: str, code: int | None = None) -> Result:
        capsys.readouterr()
        got = main(["plan", *args])
        out, err = capsys.readouterr()
        if code is not None:
            assert got == code, f"exit {got}\nstdout: {out}\nstderr: {err}"
        return Result(got, out, err)

    return call


# -- what the test reads itself ----------------------------------------------------------------------------------
def _cpu(q: str | None) -> int:
    from kubernetes.utils import parse_quantity

    return int(parse_quantity(q) * 1000) if q else 0


def _mem(q: str | None) -> int:
    from kubernetes.utils import parse_quantity

    return int(parse_quantity(q)) if q else 0


_REQUESTS: dict[str, tuple[int, int]] = {}


def _requests(pod: Any) -> tuple[int, int]:
    """Sum of the containers, the largest init container (none of the scenario's pods has a sidecar)."""
    if pod.metadata.uid not in _REQUESTS:
        _REQUESTS[pod.metadata.uid] = _sum_requests(pod)
    return _REQUESTS[pod.metadata.uid]


def _sum_requests(pod: Any) -> tuple[int, int]:
    def of(cs: Any) -> list[tuple[int, int]]:
        return [(_cpu((c.resources.requests or {}).get("cpu")) if c.resources else 0,
                 _mem((c.resources.requests or {}).get("memory")) if c.resources else 0) for c in cs or ()]

    app, init = of(pod.spec.containers), of(pod.spec.init_containers)
    cpu, mem = sum(c for c, _ in app), sum(m for _, m in app)
    return max([cpu, *(c for c, _ in init)]), max([mem, *(m for _, m in init)])


def _expr(e: Any, labels: dict[str, str]) -> bool:
    key, op, values = e.key, e.operator, e.values or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels:
        return int(labels[key]) > int(values[0]) if op == "Gt" else int(labels[key]) < int(values[0])
    return False


def _selects(sel: Any, labels: dict[str, str]) -> bool:
    if sel is None:
        return False
    return (all(labels.get(k) == v for k, v in (sel.match_labels or {}).items())
            and all(_expr(e, labels) for e in sel.match_expressions or ()))


def node_admits(pod: Any, node: Any) -> bool:
    """nodeSelector, required node affinity (terms ORed, expressions ANDed), taints (NoSchedule, NoExecute)."""
    labels = node.metadata.labels or {}
    if any(labels.get(k) != v for k, v in (pod.spec.node_selector or {}).items()):
        return False
    na = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    req = na.required_during_scheduling_ignored_during_execution if na else None
    if req is not None and not any(
            all(_expr(e, labels) for e in t.match_expressions or ())
            and all(e.key == "metadata.name" and _expr(e, {"metadata.name": node.metadata.name})
                    for e in t.match_fields or ()) for t in req.node_selector_terms):
        return False
    if node.spec.unschedulable:
        return False
    for taint in node.spec.taints or ():
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in pod.spec.tolerations or ()):
            return False
    return True


def _tolerates(t: Any, taint: Any) -> bool:
    if t.effect and t.effect != taint.effect:
        return False
    if t.operator == "Exists":
        return not t.key or t.key == taint.key
    return t.key == taint.key and (t.value or "") == (taint.value or "")


def _anti_terms(pod: Any) -> list[Any]:
    aff = pod.spec.affinity
    anti = aff.pod_anti_affinity if aff else None
    return list(anti.required_during_scheduling_ignored_during_execution or ()) if anti else []


def anti_affinity_ok(pod: Any, others: list[Any]) -> bool:
    """Hostname anti-affinity both ways against the pods on the same node (the scenario's terms are on hostname)."""
    def clash(a: Any, b: Any) -> bool:
        return any(t.topology_key == "kubernetes.io/hostname"
                   and b.metadata.namespace in (t.namespaces or [a.metadata.namespace])
                   and _selects(t.label_selector, b.metadata.labels or {}) for t in _anti_terms(a))

    return not any(clash(pod, o) or clash(o, pod) for o in others if o.metadata.uid != pod.metadata.uid)


@dataclass
class World:
    nodes: dict[str, Any]
    pending: dict[str, Any]  # "ns/name" → pod
    bound: dict[str, list[Any]]  # node → its non-terminated pods
    flavors: list[Any]
    server_of: dict[str, Any]  # node → Nova server
    cores_left: int | None
    ram_left: int | None
    host_free: dict[str, tuple[int, int]]  # compute host → (vCPUs, MB) free
    sizes: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    prices: dict[str, float] = field(default_factory=dict)  # plan.flavor_prices, when the test sets some


@pytest.fixture(scope="module")
def world(lab: Lab) -> World:
    return read_world(str(lab.state.kubeconfig))


def read_world(kubeconfig: str) -> World:
    """The nodes, pods, flavors, servers, quota and Placement room, read with the real clients."""
    import openstack
    from kubernetes import client, config

    api = config.new_client_from_config(kubeconfig)
    core = client.CoreV1Api(api)
    nodes = {n.metadata.name: n for n in core.list_node().items}
    pods = core.list_pod_for_all_namespaces().items
    pending = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pods
               if p.status.phase == "Pending" and not p.spec.node_name}
    bound: dict[str, list[Any]] = {}
    for p in pods:
        if p.spec.node_name and p.status.phase not in ("Succeeded", "Failed"):
            bound.setdefault(p.spec.node_name, []).append(p)
    api.close()
    conn = openstack.connect(cloud="lab")
    servers = {s.name: s for s in conn.compute.servers(details=True)}
    absolute = conn.compute.get_limits().absolute if _serves(conn.compute.get_limits) else None
    cores = ram = None
    if absolute is not None and absolute.total_cores is not None and absolute.total_cores >= 0:
        cores = absolute.total_cores - absolute.total_cores_used
    if absolute is not None and absolute.total_ram is not None and absolute.total_ram >= 0:
        ram = absolute.total_ram - absolute.total_ram_used
    free: dict[str, tuple[int, int]] = {}
    if _serves(lambda: list(conn.placement.resource_providers())):
        for rp in conn.placement.resource_providers():
            inv = {i.resource_class: i for i in conn.placement.resource_provider_inventories(rp)}
            used = conn.placement.fetch_resource_provider_usages(rp).usages or {}

            def room(rc: str, inv: dict = inv, used: dict = used) -> int:
                i = inv[rc]
                return int((i.total - i.reserved) * i.allocation_ratio) - int(used.get(rc, 0))

            if "VCPU" in inv and "MEMORY_MB" in inv:
                free[rp.name] = (room("VCPU"), room("MEMORY_MB"))
    return World(nodes, pending, bound, list(conn.compute.flavors()), {n: servers[n] for n in nodes if n in servers},
                 cores, ram, free)


def _serves(call: Callable[[], object]) -> bool:
    from openstack import exceptions

    try:
        call()
    except (exceptions.NotFoundException, exceptions.ForbiddenException, exceptions.EndpointNotFound):
        return False
    except exceptions.SDKException as e:  # no such service in the catalog
        if "catalog" in str(e) or "not present" in str(e):
            return False
        raise
    return True


# -- the optimum, by enumeration -----------------------------------------------------------------------------------
def sizes(w: World, node: str) -> list[tuple[str, int, int]]:
    """(flavor, vCPUs, MB): the current one first, then every strictly larger flavor."""
    if node not in w.sizes:
        w.sizes[node] = _sizes(w, node)
    return w.sizes[node]


def _sizes(w: World, node: str) -> list[tuple[str, int, int]]:
    s = w.server_of.get(node)
    if s is None:
        return []
    cur = (s.flavor.original_name or s.flavor.name, s.flavor.vcpus, s.flavor.ram)
    bigger = [(f.name, f.vcpus, f.ram) for f in w.flavors if f.vcpus >= cur[1] and f.ram >= cur[2]
              and (f.vcpus, f.ram) != (cur[1], cur[2]) and f.disk >= (s.flavor.disk or 0)]
    return [cur, *bigger]


def allocatable(w: World, node: str, vcpus: int, ram_mb: int) -> tuple[int, int]:
    """What the kubelet would report on a VM of that size: the node's reserved carried over, the guest kernel's
    share of RAM as it is now."""
    n = w.nodes[node]
    cur = sizes(w, node)[0]
    cap_cpu, cap_mem = _cpu(n.status.capacity["cpu"]), _mem(n.status.capacity["memory"])
    alloc_cpu, alloc_mem = _cpu(n.status.allocatable["cpu"]), _mem(n.status.allocatable["memory"])
    kernel = 1 - cap_mem / (cur[2] * MiB)
    return vcpus * 1000 - (cap_cpu - alloc_cpu), int(ram_mb * MiB * (1 - kernel)) - (cap_mem - alloc_mem)


def optimum(w: World) -> tuple[int, float]:
    """(most pods placed, least cost for that many) over every assignment and every size."""
    keys = sorted(w.pending)
    choices = [[None, *[n for n in w.nodes if node_admits(w.pending[k], w.nodes[n])]] for k in keys]
    best = (0, 0.0)
    for assign in itertools.product(*choices):
        placed = sum(a is not None for a in assign)
        if placed < best[0]:
            continue
        on: dict[str, list[Any]] = {}
        for k, node in zip(keys, assign, strict=True):
            if node is not None:
                on.setdefault(node, []).append(w.pending[k])
        if not all(anti_affinity_ok(p, [*w.bound.get(n, []), *ps]) for n, ps in on.items() for p in ps):
            continue
        cost = cheapest(w, on)
        if cost is not None and (placed > best[0] or cost < best[1]):
            best = (placed, cost)
    return best


def cheapest(w: World, on: dict[str, list[Any]]) -> float | None:
    """The least cost of sizes that fit `on` within the quota and the hosts' room (None: no sizes do)."""
    per_node = []
    for node, pods in on.items():
        need_cpu = sum(_requests(p)[0] for p in [*w.bound.get(node, []), *pods])
        need_mem = sum(_requests(p)[1] for p in [*w.bound.get(node, []), *pods])
        options = []
        now = w.nodes[node].status.allocatable
        for i, (flavor, vcpus, ram) in enumerate(sizes(w, node) or [("", 0, 0)]):
            cpu, mem = allocatable(w, node, vcpus, ram) if i else (_cpu(now["cpu"]), _mem(now["memory"]))
            if cpu >= need_cpu and mem >= need_mem:
                cur = sizes(w, node)[0] if sizes(w, node) else ("", 0, 0)
                priced = flavor in w.prices and cur[0] in w.prices
                cost = w.prices[flavor] - w.prices[cur[0]] if priced else (vcpus - cur[1]) + (ram - cur[2]) / 1024
                options.append((vcpus - cur[1], ram - cur[2], node, cost))
        if not options:
            return None
        per_node.append(options)
    best = None
    for combo in itertools.product(*per_node):
        cores, ram = sum(o[0] for o in combo), sum(o[1] for o in combo)
        if (w.cores_left is not None and cores > w.cores_left) or (w.ram_left is not None and ram > w.ram_left):
            continue
        by_host: dict[str, list[int]] = {}
        for c, r, node, _cost in combo:
            host = getattr(w.server_of[node], "hypervisor_hostname", None) if node in w.server_of else None
            if host and (c or r):
                by_host.setdefault(host, [0, 0])
                by_host[host][0] += c
                by_host[host][1] += r
        if any(h in w.host_free and (c > w.host_free[h][0] or r > w.host_free[h][1]) for h, (c, r) in by_host.items()):
            continue
        cost = sum(o[3] for o in combo)
        best = cost if best is None or cost < best else best
    return best


# -- the tests -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prices", [None, {"m1.small": 0, "m1.medium": 5, "m1.large": 6, "m1.xlarge": 7}],
                         ids=["weights", "flavor-prices"])
def test_plan_json_places_every_placeable_pod_at_the_optimum_cost(console: Callable[..., Result], world: World,
                                                                   prices: dict[str, float] | None):
    """Without prices a growth costs the vCPUs plus GiB added; with `plan.flavor_prices` the price difference."""
    if prices:
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "console" / "config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"plan": {"flavor_prices": prices}}))  # JSON is YAML
        world = dataclasses.replace(world, prices=prices)
    res = console("-o", "json")
    plan = json.loads(res.stdout)
    assert res.returncode == (3 if plan["unplaceable"] else 0), res.stderr
    grown = {c["node"]: c for c in plan["nodes"]}
    on: dict[str, list[Any]] = {}
    for key, node in plan["placements"].items():
        pod = world.pending[key]
        assert node_admits(pod, world.nodes[node]), f"{key} placed on {node}, which its selector/taints refuse"
        on.setdefault(node, []).append(pod)
    for node, pods in on.items():
        assert all(anti_affinity_ok(p, [*world.bound.get(node, []), *pods]) for p in pods), f"anti-affinity on {node}"
        need = [sum(_requests(p)[i] for p in [*world.bound.get(node, []), *pods]) for i in (0, 1)]
        if node in grown:
            to = grown[node]["to"]
            flavor = next(f for f in world.flavors if f.name == to["flavor"])
            have = allocatable(world, node, flavor.vcpus, flavor.ram)
        else:
            a = world.nodes[node].status.allocatable
            have = (_cpu(a["cpu"]), _mem(a["memory"]))
        assert need[0] <= have[0] and need[1] <= have[1], f"{node} too small for {[p.metadata.name for p in pods]}"
    # the scenario's cloud serves both (its docstring): the optimum below is bounded by them
    assert world.cores_left is not None and {"cmp001", "cmp002", "cmp003"} <= set(world.host_free)
    most, cost = optimum(world)
    assert len(plan["placements"]) == most
    assert math.isclose(plan["cost"], cost, abs_tol=1e-6), (plan["cost"], cost, plan)
    assert math.isclose(sum(c["cost"] for c in plan["nodes"]), plan["cost"], abs_tol=1e-6)
    unplaced = {u["pod"]: u["reason"] for u in plan["unplaceable"]}
    assert set(unplaced) == set(world.pending) - set(plan["placements"])
    assert all(reason.strip() for reason in unplaced.values())
    assert "pci-0302_10de.present" in unplaced["default/inference"]  # the term no node matches, named
    assert "m1.xlarge" in unplaced["default/solver-xl"]  # the largest flavor, named
    assert plan["optimal"] is True and plan["gap"] == 0


def test_plan_table_reads_at_80_columns(console: Callable[..., Result], world: World):
    res = console()
    plan = json.loads(console("-o", "json").stdout)
    lines = res.stdout.splitlines()
    assert res.returncode == (3 if plan["unplaceable"] else 0)
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    text = res.stdout
    for change in plan["nodes"]:
        assert f"{change['node']}: {change['from']['flavor']}" in text and change["to"]["flavor"] in text
    for u in plan["unplaceable"]:
        assert u["pod"] in text
    assert "Total cost" in text and ("optimal" in text)


def test_plan_pods_names_a_pod_that_is_not_pending(console: Callable[..., Result], world: World):
    res = console("--pods", "default/no-such-pod", "-o", "json", code=2)
    assert json.loads(res.stdout)["error"] == "bad-pod" and "default/no-such-pod" in res.stderr
    running = next(f"{p.metadata.namespace}/{p.metadata.name}" for ps in world.bound.values() for p in ps)
    res = console("--pods", running, code=2)
    assert running in res.stderr and "not waiting for a node" in res.stderr


def test_plan_for_some_pods_only(console: Callable[..., Result], world: World):
    res = console("--pods", "default/inference", "-o", "json", code=3)
    plan = json.loads(res.stdout)
    assert plan["placements"] == {} and [u["pod"] for u in plan["unplaceable"]] == ["default/inference"]


@pytest.mark.parametrize(("env", "kind", "words"), [
    ({"KUBECONFIG": "kubeconfig-unreachable"}, "kube-unreachable", "refused"),
    ({"OS_CLIENT_CONFIG_FILE": "clouds.yaml", "OS_CLOUD": "lab-keystone-down"}, "keystone-unreachable", "Keystone"),
    ({"OS_CLIENT_CONFIG_FILE": "clouds.yaml", "OS_CLOUD": "lab-wrong-password"}, "keystone-auth", "401"),
], ids=["kube-api", "keystone-down", "keystone-password"])
def test_plan_backend_faults_are_exit_6_with_the_error_object(console: Callable[..., Result], lab: Lab,
                                                              monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                                              kind: str, words: str):
    """As every headless command (console/faults.py): one `console:` line naming what failed, the JSON object."""
    for var, value in env.items():
        monkeypatch.setenv(var, str(Path(lab.state.root) / "faults" / value) if var != "OS_CLOUD" else value)
    res = console("-o", "json", code=6)
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["status"] == "error" and doc["error"] == kind and doc["exit_code"] == 6
    assert res.stderr.startswith("console: ") and words in res.stderr and "Traceback" not in res.stderr


def test_libvirt_only_vms_grow_live_up_to_the_hosts_maxima(lab: Lab, monkeypatch: pytest.MonkeyPatch):
    """Without a cloud the domains are the VMs: each may grow live up to its host's CPUs and memory
    (virNodeGetInfo), and the host's room is what its running domains leave (read here with libvirt-python)."""
    import libvirt

    from console.config import load
    from console.kube.connection import connect
    from console.planner.inputs import read_plan_input
    from console.planner.model import LIBVIRT

    env = lab_env(lab)
    monkeypatch.setenv("KUBECONFIG", env["KUBECONFIG"])
    monkeypatch.setenv("CONSOLE_LIBVIRT_URI", uri := env["CONSOLE_LIBVIRT_URI"])
    monkeypatch.setenv("OS_CLOUD", "")
    settings = load({})
    api, _ = connect(settings.kubeconfig, settings.context)
    try:
        inp = read_plan_input(api, settings)
    finally:
        api.close()
    conn = libvirt.open(uri)
    try:
        _model, mem_mib, cpus, *_ = conn.getInfo()
        running = [d.info() for d in conn.listAllDomains() if d.isActive()]
        names = {d.UUIDString().lower(): d.name() for d in conn.listAllDomains()}
    finally:
        conn.close()
    vms = {n.name: n.vm for n in inp.nodes}
    assert all(vm is not None and vm.method == LIBVIRT and vm.host == uri for vm in vms.values()), vms
    assert {vm.ref for vm in vms.values()} <= set(names.values())
    for vm in vms.values():
        assert vm.options == ()  # no flavors without Nova
        top = vm.max_size
        assert top is None or (top.vcpus, top.memory_mib) == (max(cpus, vm.current.vcpus),
                                                              max(mem_mib, vm.current.memory_mib))
    room = inp.limits.hosts[uri]
    assert (room.max_vcpus, room.max_memory_mib) == (cpus, mem_mib)
    assert room.vcpus == max(0, cpus - sum(i[3] for i in running))
    assert room.memory_mib <= max(0, mem_mib - sum(i[1] // 1024 for i in running))


def test_a_project_member_plans_without_placement_and_is_told_so(console: Callable[..., Result],
                                                                  monkeypatch: pytest.MonkeyPatch):
    """Placement's API is admin-only by default (placement/policies: `role:admin`); a member's plan still comes,
    with a note that free capacity per compute host is unknown — never an error."""
    monkeypatch.setenv("OS_CLOUD", "lab-member")
    res = console("-o", "json")
    assert res.returncode in (0, 3), res.stderr
    plan = json.loads(res.stdout)
    assert any("free capacity per compute host is unknown" in n for n in plan["notes"]), plan["notes"]
    assert plan["placements"], "the member's plan places pods too"
