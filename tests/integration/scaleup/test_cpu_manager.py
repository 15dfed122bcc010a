"""A node whose kubelet runs the static CPU manager: its state file would block the restart after
the CPU set grows (scale-up.md 5.1); the runbook removes it first and the node comes back bigger."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from console.lab import scenarios
from console.lab.scenarios import NodeSpec, Scenario
from console.lab.world import Lab

pytestmark = pytest.mark.lab

NODE = "kube-worker05"


@pytest.fixture(scope="module")
def static_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = scenarios.SEED_RESIZE
    worker = NodeSpec(NODE, "m1.medium", cpu_manager_static=True, files=base.nodes[1].files)
    scenario = Scenario(
        name="static-cpu-manager",
        description="one worker with cpuManagerPolicy static",
        kubernetes_version="v1.21.6",
        nfd_version=base.nfd_version,
        nodes=(base.nodes[0], worker),
        nfd=base.nfd,
    )
    lab = Lab(scenario, tmp_path_factory.mktemp("scaleup-static"), wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


def test_live_scale_up_clears_the_cpu_manager_state(static_lab, tmp_path, scale_up, h):
    want = h.add_case_pods(static_lab, NODE, "3", "5Gi")
    kubelet = static_lab.kubelets[NODE]
    assert kubelet.cpu_manager_policy == "static"
    restarts = kubelet.restarts

    code, doc, err = scale_up(
        static_lab, tmp_path, NODE, "--vcpus", "4", "--memory", "8Gi", "--method", "libvirt", "--yes"
    )
    assert code == 0, err
    restart = h.journal_step(doc, "restart-kubelet")
    assert restart["status"] == "done" and restart["data"]["cpu_manager_static"] is True
    assert kubelet.restarts > restarts and kubelet.state == "running"  # no crash loop
    node = static_lab.store.get("nodes", None, NODE)
    assert node["status"]["capacity"]["cpu"] == "4"
    pod = static_lab.store.get("pods", "default", want)
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == NODE
