"""The lab's Nova state machine without HTTP: transitions, thread safety, failures, power sync."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from console.lab.openstack.nova import BadRequest, Conflict, NotFound, Nova, NovaTiming, status_of
from console.lab.vm import Flavor, Guest, VMSpec

SMALL, LARGE = Flavor("f-small", "m1.small", 2, 4096, 20), Flavor("f-large", "m1.large", 8, 16384, 40)
SID = "11111111-2222-3333-4444-555555555555"


class Recorder:
    """vm.Hypervisor that records calls; `fail` makes the next call of a method raise."""

    uri = "test:///default"

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.running = {SID}
        self.fail: dict[str, Exception] = {}
        self.callbacks: list[Callable[[str], None]] = []

    def _call(self, name: str, *args: str) -> None:
        self.calls.append((name, *args))
        if name in self.fail:
            raise self.fail.pop(name)

    def define_from_flavor(self, vm: VMSpec, flavor: Flavor) -> None:
        self._call("define_from_flavor", vm.server_id, flavor.id)
        self.running.discard(vm.server_id)

    def start(self, server_id: str) -> None:
        self._call("start", server_id)
        self.running.add(server_id)

    def stop(self, server_id: str) -> None:
        self._call("stop", server_id)
        self.running.discard(server_id)

    def soft_reboot(self, server_id: str) -> None:
        self._call("soft_reboot", server_id)

    def is_running(self, server_id: str) -> bool:
        return server_id in self.running

    def guest(self, server_id: str) -> Guest:
        raise NotImplementedError

    def on_stopped_outside(self, callback: Callable[[str], None]) -> None:
        self.callbacks.append(callback)

    def close(self) -> None:
        self.running.clear()


@pytest.fixture
def hv() -> Recorder:
    return Recorder()


@pytest.fixture
def make_nova(hv: Recorder) -> Iterator[Callable[..., Nova]]:
    made: list[Nova] = []

    def make(**timing: float) -> Nova:
        n = Nova([SMALL, LARGE], [VMSpec(SID, 0x335C, "kube-worker02", "cmp01", SMALL)], hv, NovaTiming(**timing))
        made.append(n)
        return n

    yield make
    for n in made:
        n.close()


def test_status_map() -> None:
    assert status_of("active", None) == "ACTIVE"
    assert status_of("stopped", "resize_migrating") == "RESIZE"
    assert status_of("resized", None) == "VERIFY_RESIZE"
    assert status_of("resized", "resize_reverting") == "REVERT_RESIZE"
    assert status_of("active", "reboot_started_hard") == "HARD_REBOOT"
    assert status_of("error", "rebooting_hard") == "ERROR"


def test_resize_walks_the_task_states(make_nova: Callable[..., Nova], hv: Recorder) -> None:
    nova = make_nova()
    seen: list[tuple[str, str | None]] = []
    nova.subscribe(lambda v: seen.append((v.status, v.task_state)))
    nova.resize(SID, "f-large")
    view = nova.wait_for(SID, lambda v: v.status == "VERIFY_RESIZE", 5)
    assert view.vm_state == "resized" and view.flavor == LARGE and view.old_flavor == SMALL
    assert view.instance_name == "instance-0000335c"
    deadline = time.monotonic() + 5  # notifications arrive on Nova's notifier thread
    while ("VERIFY_RESIZE", None) not in seen and time.monotonic() < deadline:
        time.sleep(0.01)
    order = [t for i, (_, t) in enumerate(seen) if t and (i == 0 or seen[i - 1][1] != t)]
    assert order == ["resize_prep", "resize_migrating", "resize_migrated", "resize_finish"]
    assert {s for s, t in seen if t} == {"RESIZE"}
    assert hv.calls == [("stop", SID), ("define_from_flavor", SID, "f-large"), ("start", SID)]


def test_concurrent_resizes_only_one_wins(make_nova: Callable[..., Nova]) -> None:
    nova = make_nova(resize_prep=0.3)
    results: list[str] = []
    barrier = threading.Barrier(8)

    def attempt() -> None:
        barrier.wait()
        try:
            nova.resize(SID, "f-large")
            results.append("ok")
        except Conflict as exc:
            assert "task_state resize_prep" in exc.message
            results.append("conflict")

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert sorted(results) == ["conflict"] * 7 + ["ok"]


def test_validation_errors(make_nova: Callable[..., Nova]) -> None:
    nova = make_nova()
    with pytest.raises(BadRequest, match="must change flavor"):
        nova.resize(SID, "f-small")
    with pytest.raises(BadRequest, match="Flavor f-huge could not be found"):
        nova.resize(SID, "f-huge")
    with pytest.raises(NotFound, match="Instance nope could not be found"):
        nova.resize("nope", "f-large")
    with pytest.raises(ValueError, match="unknown fault kind"):
        nova.inject_fault(SID, "meteor")  # type: ignore[arg-type]
    nova.resize(SID, "f-large")
    nova.wait_for(SID, lambda v: v.status == "VERIFY_RESIZE", 5)
    nova.confirm_resize(SID)
    with pytest.raises(BadRequest, match="Instance has not been resized"):
        nova.confirm_resize(SID)  # the first confirm is still running (status VERIFY_RESIZE, migration confirming)


def test_hypervisor_failure_puts_server_in_error(make_nova: Callable[..., Nova], hv: Recorder) -> None:
    nova = make_nova()
    hv.fail["define_from_flavor"] = RuntimeError("virDomainDefineXML failed: no space left")
    rid = nova.resize(SID, "f-large")
    view = nova.wait_for(SID, lambda v: v.status == "ERROR", 5)
    assert view.fault is not None and "no space left" in view.fault.message
    assert view.task_state is None
    action = nova.action(SID, rid)
    assert action.message == "Error"
    finish = next(e for e in action.events if e.event == "compute_finish_resize")
    assert finish.result == "Error" and "builtins.RuntimeError: virDomainDefineXML failed" in (finish.traceback or "")


def test_soft_reboot_falls_back_to_hard(make_nova: Callable[..., Nova], hv: Recorder) -> None:
    nova = make_nova()
    hv.fail["soft_reboot"] = RuntimeError("guest did not shut down")
    nova.reboot(SID, "SOFT")
    nova.wait_for(SID, lambda v: v.status == "ACTIVE", 5)
    assert hv.calls == [("soft_reboot", SID), ("define_from_flavor", SID, "f-small"), ("start", SID)]


def test_power_sync_ignores_a_guest_restarted_in_time(make_nova: Callable[..., Nova], hv: Recorder) -> None:
    nova = make_nova(power_sync=0.3)
    hv.running.discard(SID)
    hv.callbacks[0](SID)
    hv.running.add(SID)  # `virsh start` before Nova's delayed sync runs
    assert nova.wait_idle(5)
    view = nova.server(SID)
    assert (view.status, view.power_state) == ("ACTIVE", 1)
    assert [a.action for a in nova.actions(SID)] == ["create"]


def test_stuck_resize_and_reset_state(make_nova: Callable[..., Nova], hv: Recorder) -> None:
    nova = make_nova()
    nova.inject_fault(SID, "stuck")
    nova.resize(SID, "f-large")
    with pytest.raises(TimeoutError, match="RESIZE/resize_migrating"):
        nova.wait_for(SID, lambda v: v.status == "VERIFY_RESIZE", 0.8)
    nova.reset_state(SID, "error")
    nova.reboot(SID, "HARD")
    view = nova.wait_for(SID, lambda v: v.status == "ACTIVE", 5)
    assert view.flavor == SMALL
    assert hv.calls == [("stop", SID), ("define_from_flavor", SID, "f-small"), ("start", SID)]


def test_close_interrupts_long_phases(make_nova: Callable[..., Nova]) -> None:
    nova = make_nova(resize_prep=30)
    nova.resize(SID, "f-large")
    started = time.monotonic()
    nova.close()
    assert time.monotonic() - started < 2
