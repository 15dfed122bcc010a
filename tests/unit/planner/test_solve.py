"""solve(): priorities, limits, the admin's pins and drops, the fleet's order and `plan -o json` (issue 13).

Priorities: most pods placed, then least cost; preferences (no PDB-blocked node, a live scale-up before a
reboot) only break ties. Limits: a hypervisor's free vCPUs/MiB and the project's Nova quota (maxTotalCores −
totalCoresUsed) bound the sum of what the growths add.
"""

from __future__ import annotations

import json

from planner_instances import FLAVORS, node

from console.infra.sizes import GiB
from console.planner.model import (
    LIBVIRT,
    AntiAffinityTerm,
    CostModel,
    HostFree,
    Limits,
    PendingPod,
    PlanInput,
    Preferences,
    Quota,
    Size,
)
from console.planner.solve import solve

SMALL, MEDIUM, LARGE, XLARGE = FLAVORS


def pod(name: str, cpu_m: int, mem: int = GiB, **kw: object) -> PendingPod:
    return PendingPod("default", name, cpu_m, mem, **kw)  # type: ignore[arg-type]


def test_most_pods_first_then_least_cost() -> None:
    # w0 can take both pods only as m1.xlarge (+15 vCPU, +22 GiB = 37); m1.large (cost 14) takes one of them
    inp = PlanInput((node("w0", SMALL, options=(LARGE, XLARGE)),), (pod("a", 6000), pod("b", 6000)))
    plan = solve(inp)
    assert plan.optimal and plan.solver == "exact"
    assert set(plan.placements) == {"default/a", "default/b"}
    assert [(c.node, c.to_size.flavor) for c in plan.nodes] == [("w0", "m1.xlarge")]
    assert plan.cost == 15 + 22


def test_price_overrides_the_weights() -> None:
    prices = {"m1.medium": 10.0, "m1.large": 100.0, "m1.xlarge": 120.0}
    inp = PlanInput((node("w0", MEDIUM, prices=prices),), (pod("a", 3000),), cost=CostModel(vcpu=1, memory_gib=1))
    plan = solve(inp)
    assert (plan.nodes[0].to_size.flavor, plan.cost) == ("m1.large", 90.0)


def test_pdb_preference_only_breaks_ties() -> None:
    blocked = dict(pdb_blocked=("default/db-0",))
    # equal cost: the node without PDB-blocked pods is grown
    tie = PlanInput((node("w0", MEDIUM, **blocked), node("w1", MEDIUM)), (pod("a", 3000),))
    assert [c.node for c in solve(tie).nodes] == ["w1"]
    # the blocked node is cheaper (already m1.large-ready by its price): cost wins, the preference never does
    cheaper = PlanInput((node("w0", MEDIUM, prices={"m1.medium": 0.0, "m1.large": 1.0}, **blocked),
                         node("w1", MEDIUM)), (pod("a", 3000),))
    plan = solve(cheaper)
    assert [c.node for c in plan.nodes] == ["w0"]
    assert any("PodDisruptionBudget" in n for n in plan.nodes[0].notes)
    # and it never costs a pod: when only the blocked node can take it, it is grown
    only = PlanInput((node("w0", MEDIUM, **blocked),), (pod("a", 3000),))
    assert solve(only).placements == {"default/a": "w0"}


def test_live_scale_up_preferred_between_equal_costs() -> None:
    live = node("lv", Size(2, 4096), method=LIBVIRT, max_size=Size(8, 12288))
    inp = PlanInput((node("os", MEDIUM), live), (pod("a", 3000, 3 * GiB),))
    plan = solve(inp)
    # libvirt grows by exactly what is needed (cheaper than the flavor step), so make the costs equal by weights
    assert plan.nodes[0].node == "lv" and plan.nodes[0].method == LIBVIRT
    equal = PlanInput((node("os", MEDIUM, options=(Size(3, 4096, "m1.odd"),)),
                       node("lv", Size(2, 4096), method=LIBVIRT, max_size=Size(3, 4096))), (pod("a", 2000),))
    plan = solve(equal)
    assert plan.cost == 1.0 and [c.node for c in plan.nodes] == ["lv"]
    assert solve(PlanInput(equal.nodes, equal.pods, prefs=Preferences(prefer_live=False))).cost == 1.0


def test_host_capacity_bounds_the_growths_on_it() -> None:
    nodes = (node("w0", MEDIUM, host="cmp1"), node("w1", MEDIUM, host="cmp1"), node("w2", MEDIUM, host="cmp2"))
    pods = (pod("a", 5000), pod("b", 5000), pod("c", 5000))  # one per m1.large
    # a Nova resize in place needs the new flavor free (the old one stays claimed while it runs): cmp1's 10 free
    # vCPUs take one m1.large resize (+6, holding 2 → 8), not two (+12 + 2); cmp2's 8 take one
    limits = Limits({"cmp1": HostFree(vcpus=10, memory_mib=65536), "cmp2": HostFree(vcpus=8, memory_mib=65536)})
    plan = solve(PlanInput(nodes, pods, limits))
    assert len(plan.nodes) == 2 and len(plan.placements) == 2
    assert sorted(c.node for c in plan.nodes)[1] == "w2"
    (unplaced,) = plan.unplaceable
    assert unplaced.reason.startswith(("hypervisor cmp1 has only 2 vCPUs", "hypervisor cmp2 has only 0 vCPUs")), \
        unplaced.reason


def test_a_nova_resize_needs_the_new_flavor_free_on_its_host() -> None:
    """Nova's migration allocations: the resize claims m1.large (8 vCPUs) while m1.medium's 2 stay held, so 7 free
    vCPUs are not enough for +6 (the lab's resize fails NoValidHost); a libvirt live scale-up needs only +6."""
    grow = (pod("a", 5000),)
    assert solve(PlanInput((node("w0", MEDIUM),), grow, Limits({"h1": HostFree(vcpus=7)}))).placements == {}
    assert solve(PlanInput((node("w0", MEDIUM),), grow, Limits({"h1": HostFree(vcpus=8)}))).placements == \
        {"default/a": "w0"}
    live = node("lv", Size(2, 4096), method=LIBVIRT, max_size=Size(8, 4096))
    assert solve(PlanInput((live,), grow, Limits({"h1": HostFree(vcpus=6)}))).placements == {"default/a": "lv"}


def test_project_quota_bounds_openstack_growths_not_libvirt() -> None:
    nodes = (node("w0", MEDIUM), node("w1", MEDIUM),
             node("lv", Size(2, 4096), method=LIBVIRT, max_size=Size(12, 8192), host="kvm"))
    pods = (pod("a", 5000), pod("b", 5000), pod("c", 5000))  # one per m1.large, two on the libvirt VM
    plan = solve(PlanInput(nodes, pods, Limits(quota=Quota(cores=6))))
    assert len(plan.placements) == 3  # one Nova resize (+6 cores) and the libvirt VM (not Nova's quota)
    assert sum(c.to_size.vcpus - c.from_size.vcpus for c in plan.nodes if c.method != LIBVIRT) <= 6
    tight = solve(PlanInput(nodes[:2], pods[:2], Limits(quota=Quota(cores=6))))
    (unplaced,) = tight.unplaceable
    assert unplaced.reason.startswith("project quota: 0 cores"), unplaced.reason


def test_pins_and_drops_are_honoured() -> None:
    nodes = (node("w0", MEDIUM), node("w1", MEDIUM))
    # w1 pinned to m1.xlarge even though m1.large would do; w0 dropped: never grown
    prefs = Preferences(dropped=frozenset({"w0"}), pinned={"w1": XLARGE})
    plan = solve(PlanInput(nodes, (pod("a", 3000), pod("b", 3000)), prefs=prefs))
    assert [(c.node, c.to_size.flavor) for c in plan.nodes] == [("w1", "m1.xlarge")]
    assert plan.placements == {"default/a": "w1", "default/b": "w1"}
    only_dropped = solve(PlanInput(nodes[:1], (pod("a", 3000),), prefs=Preferences(dropped=frozenset({"w0"}))))
    assert only_dropped.unplaceable[0].reason.startswith("dropped:"), only_dropped.unplaceable[0].reason


def test_a_pin_beyond_the_host_is_refused_with_a_note() -> None:
    plan = solve(PlanInput((node("w0", MEDIUM, host="cmp1"),), (pod("a", 500),),
                           Limits({"cmp1": HostFree(vcpus=2)}), prefs=Preferences(pinned={"w0": XLARGE})))
    assert plan.nodes == () and plan.placements == {"default/a": "w0"}
    assert any("pin of w0" in n and "cmp1" in n for n in plan.notes)


def test_fleet_order_live_first_reboots_then_pdb_blocked() -> None:
    nodes = (node("a-pdb", MEDIUM, pdb_blocked=("default/db-0",), labels={"x": "1"}, options=(LARGE,)),
             node("b-reboot", MEDIUM), node("c-reboot", MEDIUM),
             node("d-live", Size(2, 4096), method=LIBVIRT, max_size=Size(8, 12288), host="kvm"))
    sel = {"x": "1"}
    pods = (pod("p1", 5000, node_selector=sel), pod("p2", 5000), pod("p3", 5000), pod("p4", 1500),
            pod("p5", 5000))
    plan = solve(PlanInput(nodes, pods))
    order = [c.node for c in plan.nodes]
    assert order[0] == "d-live" and order[-1] == "a-pdb"
    assert set(order[1:-1]) == {"b-reboot", "c-reboot"}


def test_json_shape() -> None:
    anti = (AntiAffinityTerm({"matchLabels": {"job": "j"}}, "kubernetes.io/hostname"),)
    inp = PlanInput((node("w0", MEDIUM), node("w1", MEDIUM)),
                    (pod("j-0", 3000, labels={"job": "j"}, anti_affinity=anti),
                     pod("j-1", 3000, labels={"job": "j"}, anti_affinity=anti),
                     pod("nosel", 100, node_selector={"disk": "nvme"})))
    out = json.loads(json.dumps(solve(inp).to_json()))
    assert set(out) == {"nodes", "placements", "unplaceable", "cost", "optimal", "solver", "gap", "notes"}
    assert out["optimal"] is True and out["gap"] == 0.0 and out["solver"] == "exact"
    assert {n["node"] for n in out["nodes"]} == {"w0", "w1"}
    first = out["nodes"][0]
    assert set(first) == {"node", "vm", "from", "to", "method", "pods", "cost", "notes"}
    assert first["from"] == {"vcpus": 2, "memory": "4Gi", "flavor": "m1.medium"}
    assert first["to"] == {"vcpus": 8, "memory": "12Gi", "flavor": "m1.large"}
    assert out["placements"]["default/j-0"] != out["placements"]["default/j-1"]  # anti-affinity on hostname
    assert out["unplaceable"] == [{"pod": "default/nosel", "reason": "no node matches its nodeSelector disk=nvme"}]
    assert out["cost"] == 28.0


def test_large_instance_goes_to_the_heuristic_with_a_gap() -> None:
    nodes = tuple(node(f"w{i}", MEDIUM, host=f"cmp{i % 4}") for i in range(120))
    pods = tuple(pod(f"p{j}", 1500 + 250 * (j % 5)) for j in range(60))
    plan = solve(PlanInput(nodes, pods))
    assert plan.solver == "heuristic"
    assert len(plan.placements) == 60
    assert plan.gap is not None and 0.0 <= plan.gap <= 1.0
