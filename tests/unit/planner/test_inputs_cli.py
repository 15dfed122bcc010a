"""console/cli_plan.py's pure parts: --pin parsing and resolution against the nodes' VMs, and the table at 80
columns (a plan built by hand: the solver is another module's)."""

from __future__ import annotations

import pytest

from console.cli_plan import parse_pin, render, resolve_pins
from console.planner.model import (
    OPENSTACK,
    Limits,
    Node,
    NodeChange,
    PendingPod,
    Plan,
    PlanInput,
    Size,
    SizeOption,
    Unplaceable,
    Vm,
)


def test_parse_pin_takes_a_flavor_or_vcpus_and_memory():
    assert parse_pin("w1=m1.large") == ("w1", "m1.large")
    assert parse_pin("w1=8/16Gi") == ("w1", (8, 16384))
    assert parse_pin("w1=4/6144Mi") == ("w1", (4, 6144))
    assert parse_pin("w1=2/1.5Gi") == ("w1", (2, 1536))
    for bad in ("w1", "=m1.large", "w1=", "w1=8/lots", "w1=0/4Gi"):
        with pytest.raises(ValueError, match="--pin"):
            parse_pin(bad)


LARGE = Size(8, 12288, "m1.large")
VM = Vm("srv-1", OPENSTACK, "cmp001", Size(2, 4096, "m1.medium"), options=(SizeOption(LARGE, OPENSTACK),))
INPUT = PlanInput(nodes=(Node("kube-worker01", {}, vm=VM), Node("kube-worker02", {})),
                  pods=tuple(PendingPod("default", f"train-{i}", 6000, 8 * 2**30) for i in range(3)),
                  limits=Limits(notes=("Placement not read (403 Forbidden): free capacity per compute host is "
                                       "unknown (Placement is admin-only by default)",)))


def test_resolve_pins_checks_the_node_and_its_flavors():
    assert resolve_pins(INPUT, [("kube-worker01", "m1.large")]) == {"kube-worker01": LARGE}
    assert resolve_pins(INPUT, [("kube-worker01", (8, 12288))]) == {"kube-worker01": LARGE}  # the flavor named
    with pytest.raises(ValueError, match="no such node"):
        resolve_pins(INPUT, [("nope", "m1.large")])
    with pytest.raises(ValueError, match="no VM"):
        resolve_pins(INPUT, [("kube-worker02", "m1.large")])
    with pytest.raises(ValueError, match=r"larger flavors: m1\.large"):
        resolve_pins(INPUT, [("kube-worker01", "m1.tiny")])


def test_the_table_reads_at_80_columns():
    long_reason = ("needs 20 CPU, more than the largest size any node it may run on can go to (kube-worker05: "
                   "m1.xlarge, 16 vCPU / 24Gi)")
    plan = Plan(nodes=(NodeChange("kube-worker01", "srv-1", VM.current, LARGE, OPENSTACK,
                                  ("default/train-0", "default/train-1"), 14.0, ("the VM reboots",)),),
                placements={"default/train-0": "kube-worker01", "default/train-1": "kube-worker01",
                            "default/etl": "kube-worker05"},
                unplaceable=(Unplaceable("default/train-2", long_reason),), cost=14.0, optimal=True,
                solver="exact", bound=14.0, seconds=0.12)
    lines = render(INPUT, plan)
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    text = "\n".join(lines)
    assert "1. kube-worker01: m1.medium 2/4Gi → m1.large 8/12Gi\n   openstack (resize, reboots), cost 14" in text
    assert "default/train-0, default/train-1" in text
    assert "kube-worker05: default/etl" in text  # placed without growing its node
    assert "default/train-2: needs 20 CPU" in text and "m1.xlarge" in text
    assert "Total cost 14 (optimal; exact, 0.12s)" in text
    assert "Placement is admin-only" in text.replace("\n   ", " ").replace("  ", " ")
    assert render(PlanInput(nodes=(), pods=()), plan) == ["No Pending pods: nothing to plan."]


def test_named_pods_that_no_longer_wait_are_left_out_only_when_asked():
    """`plan --apply --pods …` continuing a fleet: a named pod that no longer waits (a grown node runs it now) is
    left out without asking the API what it is; a malformed name is still a usage error."""
    from console.planner.inputs import PlanInputError, select_pods

    class Api:
        def call_api(self, *args: object, **kwargs: object) -> object:
            raise AssertionError("not asked when left out")

    waiting = [{"metadata": {"namespace": "default", "name": "train-a"}}]
    assert select_pods(waiting, ["default/train-a", "default/train-b"], Api(), waiting_only=True) == waiting
    with pytest.raises(PlanInputError, match="give NAMESPACE/NAME"):
        select_pods(waiting, ["train-b"], Api(), waiting_only=True)
