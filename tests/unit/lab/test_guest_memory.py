"""The simulated guest: MemTotal model (field report numbers) and CPU online rules."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.lab.guest import OVERHEAD_POINTS, SimulatedGuest, kernel_overhead_kib, mem_total_kib

GiB = 1024 * 1024


@pytest.mark.parametrize(
    ("balloon", "maximum", "expected"),
    [
        (4 * GiB, 4 * GiB, 4030532),  # m1.medium worker
        (12 * GiB, 12 * GiB, 12268324),  # m1.large after the resize
        (12 * GiB, 16 * GiB, 12201896),  # soft-rebooted with max 16 GiB, balloon still 12 GiB
        (16 * GiB, 16 * GiB, 16396200),  # after setmem 16G
    ],
)
def test_field_report_memtotal(balloon: int, maximum: int, expected: int) -> None:
    assert mem_total_kib(balloon, maximum) == expected


def test_overhead_exact_points_and_interpolation() -> None:
    for x, y in OVERHEAD_POINTS:
        assert kernel_overhead_kib(x) == y
    assert kernel_overhead_kib(8 * GiB) == round((163772 + 314588) / 2)
    assert kernel_overhead_kib(2 * GiB) == round(163772 / 2)  # proportional below 4 GiB
    slope = (381016 - 314588) / (4 * GiB)
    assert kernel_overhead_kib(32 * GiB) == round(381016 + slope * 16 * GiB)  # last slope beyond 16 GiB
    assert kernel_overhead_kib(0) == 0


@given(st.integers(min_value=1, max_value=1024 * GiB), st.integers(min_value=1, max_value=1024 * GiB))
def test_overhead_is_monotonic_and_memtotal_bounded(a: int, b: int) -> None:
    lo, hi = sorted((a, b))
    assert kernel_overhead_kib(lo) <= kernel_overhead_kib(hi)
    assert 0 <= mem_total_kib(lo, hi) <= lo
    assert mem_total_kib(hi, lo) == mem_total_kib(lo, lo)  # the balloon never exceeds boot memory


def booted(vcpus: int = 8, mem: int = 12 * GiB) -> tuple[SimulatedGuest, list[str]]:
    g = SimulatedGuest("3f2a7c1e-0000-4000-8000-00000000335c")
    events: list[str] = []
    g.subscribe(events.append)
    g.observe(1, vcpus, mem, mem)
    return g, events


def test_boot_brings_all_present_cpus_online_and_hot_added_ones_stay_offline() -> None:
    g, events = booted()
    assert events == ["boot"] and g.running and g.online_cpus == frozenset(range(8))
    boot = g.boot_id
    g.observe(1, 12, 12 * GiB, 12 * GiB)  # same QEMU process, 4 vCPUs hot-added
    assert g.present_vcpus == 12 and g.online_cpus == frozenset(range(8)) and events[-1] == "vcpus"
    g.set_cpu_online(9, True)
    assert g.online_cpus == frozenset([*range(8), 9]) and events[-1] == "cpu-online"
    assert g.boot_id == boot
    g.observe(2, 12, 12 * GiB, 12 * GiB)  # a new QEMU process is a boot: everything present is online
    assert g.boot_id != boot and g.online_cpus == frozenset(range(12))
    assert events[-2:] == ["shutdown", "boot"]  # the old process ended even if nobody saw it stop


def test_cpu_online_rules() -> None:
    g, events = booted(vcpus=4)
    with pytest.raises(ValueError, match="cpu0"):
        g.set_cpu_online(0, False)
    with pytest.raises(ValueError, match="not present"):
        g.set_cpu_online(4, True)
    g.set_cpu_online(3, False)
    g.set_cpu_online(3, False)  # idempotent, no second event
    assert g.online_cpus == frozenset({0, 1, 2}) and events.count("cpu-online") == 1
    g.observe(1, 2, 12 * GiB, 12 * GiB)  # unplug: gone CPUs leave the online set
    assert g.online_cpus == frozenset({0, 1})
    g.observe_stopped()
    assert not g.running and g.mem_total_kib == 0 and events[-1] == "shutdown"
    with pytest.raises(RuntimeError):
        g.set_cpu_online(1, True)


def test_memory_event_and_unsubscribe() -> None:
    g, events = booted(mem=16 * GiB)
    g.observe(1, 8, 16 * GiB, 12 * GiB)
    assert g.mem_total_kib == 12201896 and events[-1] == "memory"
    unsubscribe = g.subscribe(lambda _k: None)
    unsubscribe()
    unsubscribe()  # twice is harmless
    g.observe(1, 8, 16 * GiB, 16 * GiB)
    assert g.mem_total_kib == 16396200 and events.count("memory") == 2


def test_a_failing_subscriber_does_not_starve_the_others() -> None:
    g = SimulatedGuest("u")
    seen: list[str] = []

    def broken(_kind: str) -> None:
        raise RuntimeError("subscriber bug")

    g.subscribe(broken)
    g.subscribe(seen.append)
    g.observe(1, 2, 4 * GiB, 4 * GiB)
    assert seen == ["boot"]


def test_an_observation_older_than_one_applied_is_dropped() -> None:
    """The host numbers its libvirt reads; a poll that read the old QEMU process before a reboot must not
    be applied after the reboot's own read (it looked like a second boot and onlined hot-added vCPUs)."""
    g = SimulatedGuest("n1")
    g.observe(1, 2, 4 * GiB, 4 * GiB, seq=1)
    boot = g.boot_id
    g.observe(2, 2, 4 * GiB, 4 * GiB, seq=3)  # the reboot's read: new QEMU process
    assert g.boot_id != boot
    rebooted = g.boot_id
    g.observe(1, 2, 4 * GiB, 4 * GiB, seq=2)  # the poller's read from before the reboot, applied late
    g.observe(2, 4, 4 * GiB, 4 * GiB, seq=4)  # then vCPUs hot-added to the new process
    assert g.boot_id == rebooted and g.present_vcpus == 4 and g.online_cpus == frozenset({0, 1})
    g.observe_stopped(seq=2)  # stale too
    assert g.running


def test_subscribers_get_events_in_the_order_of_the_changes() -> None:
    """A poll's stop and a reboot's boot race in two threads: the kubelet must not get "shutdown" after
    "boot" (it stopped for good while the guest ran, and the node never came back)."""
    g = SimulatedGuest("n1")
    g.observe(1, 2, 4 * GiB, 4 * GiB, seq=1)
    got: list[str] = []
    delivering, release = threading.Event(), threading.Event()

    def slow_subscriber(kind: str) -> None:
        if kind == "shutdown":
            delivering.set()
            release.wait(5)  # the stop's delivery is slow (a busy machine)
        got.append(kind)

    g.subscribe(slow_subscriber)
    stop = threading.Thread(target=g.observe_stopped, kwargs={"seq": 2})
    stop.start()
    assert delivering.wait(5)
    boot = threading.Thread(target=g.observe, args=(2, 2, 4 * GiB, 4 * GiB), kwargs={"seq": 3})
    boot.start()
    boot.join(0.5)  # long enough for an unordered boot to overtake the stop's delivery
    release.set()
    stop.join(5)
    boot.join(5)
    assert got == ["shutdown", "boot"]
    assert g.running
