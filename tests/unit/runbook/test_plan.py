"""Fit planning with field report 2's numbers."""

from __future__ import annotations

from console.kube.model import NodeInfo, PodInfo, Resources
from console.runbook.plan import FlavorInfo, VmSize, advise, check_target

KiB = 1024
FLAVORS = (
    FlavorInfo("m1.tiny", 1, 512),
    FlavorInfo("m1.small", 1, 2048),
    FlavorInfo("m1.medium", 2, 4096),
    FlavorInfo("m1.large", 8, 12288),
    FlavorInfo("m1.xlarge", 16, 24576),
)
EVICTION = 100 * 2**20  # kubespray v1.21: memory.available<100Mi, nothing reserved


def node(cpu: int, mem_kib: int, **kw) -> NodeInfo:
    return NodeInfo(
        name="kube-worker02", uid="u", resource_version="1", labels={}, roles=(), ready="True",
        unschedulable=kw.get("unschedulable", False),
        capacity=Resources(cpu * 1000, mem_kib * KiB, 110),
        allocatable=Resources(cpu * 1000 - kw.get("reserved_cpu", 0), mem_kib * KiB - EVICTION, 110),
        kubelet_version="v1.21.6", system_uuid="", provider_id="",
    )


def pod(name: str, cpu_m: int, mem: int, node_name: str = "", phase: str = "Pending") -> PodInfo:
    return PodInfo("default", name, node_name, phase, Resources(cpu_m, mem, 1))


def test_offline_report_nginx_needs_m1_large():
    worker = node(2, 4030532)
    nginx = pod("nginx", 3000, 5 * 2**30)
    adv = advise(worker, [], nginx, vm=VmSize(2, 4096), flavors=FLAVORS)
    assert not adv.fits_now
    assert adv.reason == "needs 3 CPU, 2 CPU allocatable; needs 5Gi, 3.7Gi allocatable"
    # 3 vCPU; 5Gi + 100Mi eviction over (1 − 3.9 % kernel overhead) = 5.4Gi → 6 GiB
    assert adv.target == VmSize(3, 6144)
    assert adv.flavor is not None and adv.flavor.name == "m1.large"
    assert 0.038 < adv.overhead_fraction < 0.040
    hints = {f.flavor.name: f for f in adv.flavor_fits}
    assert hints["m1.medium"].current and not hints["m1.medium"].fits
    assert hints["m1.large"].fits and hints["m1.xlarge"].fits
    assert check_target(adv, VmSize(8, 12288)) is None
    assert "needs 3 CPU" in check_target(adv, VmSize(2, 8192))


def test_online_report_nginx_large_needs_9_vcpu_14_gib():
    worker = node(8, 12268324)
    big = pod("nginx-large", 9000, 13 * 2**30)
    adv = advise(worker, [], big, vm=VmSize(8, 12288), flavors=FLAVORS)
    assert not adv.fits_now
    assert adv.reason == "needs 9 CPU, 8 CPU allocatable; needs 13Gi, 11.6Gi allocatable"
    # nothing reserved for CPU → 9 vCPU; memory 13Gi + 100Mi over (1 − 2.5 %) = 13.4Gi → 14 GiB
    assert adv.target == VmSize(9, 14336)
    assert adv.flavor.name == "m1.xlarge"
    # the field report's 12 vCPU / 16 GiB works with room to spare
    assert check_target(adv, VmSize(12, 16384)) is None
    assert check_target(adv, VmSize(9, 13312)) is not None
    assert check_target(adv, VmSize(8, 16384)).startswith("needs 9 CPU")


def test_pods_on_node_and_reservations_count():
    worker = node(8, 12268324, reserved_cpu=500)
    running = pod("web", 2000, 2 * 2**30, node_name="kube-worker02", phase="Running")
    done = pod("job", 4000, 4 * 2**30, node_name="kube-worker02", phase="Succeeded")
    adv = advise(worker, [running, done], pod("p", 6000, 2**30), vm=VmSize(8, 12288), flavors=FLAVORS)
    assert not adv.fits_now
    assert adv.used_cpu_m == 2000 and adv.reserved_cpu_m == 500
    assert "5.5 CPU free (7.5 allocatable − 2 requested)" in adv.reason
    assert adv.target.vcpus == 9  # 6 + 2 + 0.5 → 8.5 → 9
    assert adv.target.memory_mib == 12288  # memory fits: keep it


def test_fits_now_and_unknown_vm():
    worker = node(8, 12268324)
    adv = advise(worker, [], pod("small", 1000, 2**30), flavors=FLAVORS)
    assert adv.fits_now and adv.target is None and adv.flavor is None
    assert adv.reason.startswith("fits now")
    adv = advise(worker, [], pod("big", 9000, 13 * 2**30), flavors=FLAVORS)
    assert adv.target.vcpus == 9 and adv.target.memory_mib >= 14336


def test_no_flavor_large_enough_and_multiple_pods():
    worker = node(2, 4030532, unschedulable=True)
    huge = pod("huge", 32000, 2**30)
    adv = advise(worker, [], huge, vm=VmSize(2, 4096), flavors=FLAVORS)
    assert adv.flavor is None and "no flavor is large enough" in adv.target_reason
    assert any("cordoned" in n for n in adv.notes)
    two = advise(worker, [], [pod("a", 2000, 2**30), pod("b", 2000, 2**30)], vm=VmSize(2, 4096), flavors=FLAVORS)
    assert two.need_cpu_m == 4000 and two.target.vcpus == 4 and two.flavor.name == "m1.large"
