"""Fixtures: the lab's Keystone + Nova on an ephemeral port, driving a call-recording hypervisor."""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from console.lab.cloudsyaml import write_clouds_yaml
from console.lab.loop import LoopThread
from console.lab.openstack.nova import Nova, NovaTiming
from console.lab.openstack.server import OpenStackAPI, start_openstack
from console.lab.vm import Flavor, Guest, VMSpec

FLAVORS = [
    Flavor("f-tiny", "m1.tiny", 1, 2048, 10),
    Flavor("f-small", "m1.small", 2, 4096, 20),
    Flavor("f-medium", "m1.medium", 4, 8192, 20),
    Flavor("f-large", "m1.large", 8, 16384, 40),
]
SERVER_IDS = {
    "kube-worker01": "6f1b6d0e-1c4a-4f5e-9a51-3a1c2b3d4e01",
    "kube-worker02": "6f1b6d0e-1c4a-4f5e-9a51-3a1c2b3d4e02",
    "kube-worker03": "6f1b6d0e-1c4a-4f5e-9a51-3a1c2b3d4e03",
}


class RecordingHypervisor:
    """Implements vm.Hypervisor by recording calls; `stop_outside` plays `virsh destroy`."""

    uri = "test:///default"

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.running: set[str] = set(SERVER_IDS.values())
        self._callbacks: list[Callable[[str], None]] = []
        self.fail_next: dict[str, Exception] = {}  # method name -> exception raised once
        self._lock = threading.Lock()

    def _record(self, *call: str) -> None:
        with self._lock:
            self.calls.append(call)
            exc = self.fail_next.pop(call[0], None)
        if exc is not None:
            raise exc

    def define_from_flavor(self, vm: VMSpec, flavor: Flavor) -> None:
        self._record("define_from_flavor", vm.server_id, flavor.id)
        self.running.discard(vm.server_id)

    def start(self, server_id: str) -> None:
        self._record("start", server_id)
        self.running.add(server_id)

    def stop(self, server_id: str) -> None:
        self._record("stop", server_id)
        self.running.discard(server_id)

    def soft_reboot(self, server_id: str) -> None:
        self._record("soft_reboot", server_id)

    def is_running(self, server_id: str) -> bool:
        return server_id in self.running

    def guest(self, server_id: str) -> Guest:
        raise NotImplementedError("the recording hypervisor has no guests")

    def on_stopped_outside(self, callback: Callable[[str], None]) -> None:
        self._callbacks.append(callback)

    def close(self) -> None:
        self.running.clear()

    def stop_outside(self, server_id: str) -> None:
        self.running.discard(server_id)
        for cb in self._callbacks:
            cb(server_id)

    def calls_for(self, server_id: str) -> list[tuple[str, ...]]:
        with self._lock:
            return [c for c in self.calls if c[1] == server_id]


@pytest.fixture(scope="session")
def lab_loop() -> Iterator[LoopThread]:
    """The lab's HTTP servers run on their own loop while the blocking clients run in the test."""
    lt = LoopThread("openstack-test-loop")
    lt.start()
    yield lt
    lt.stop()


@pytest.fixture
def password() -> str:
    return "pw-" + secrets.token_hex(12)


@pytest.fixture
def hypervisor() -> RecordingHypervisor:
    return RecordingHypervisor()


@pytest.fixture
def timing() -> NovaTiming:
    return NovaTiming()


@pytest.fixture
def nova(hypervisor: RecordingHypervisor, timing: NovaTiming) -> Iterator[Nova]:
    servers = [VMSpec(sid, 0x3350 + i, name, f"cmp0{i % 2 + 1}", FLAVORS[1])
               for i, (name, sid) in enumerate(SERVER_IDS.items())]
    n = Nova(FLAVORS, servers, hypervisor, timing,
             addresses={sid: f"10.0.0.{11 + i}" for i, sid in enumerate(SERVER_IDS.values())})
    yield n
    n.close()


@pytest.fixture
def api(lab_loop: LoopThread, nova: Nova, password: str) -> Iterator[OpenStackAPI]:
    running = lab_loop.call(start_openstack(nova, password=password))
    yield running
    lab_loop.call(running.stop())


@pytest.fixture
def clouds_yaml(tmp_path: Path, api: OpenStackAPI, password: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = write_clouds_yaml(tmp_path / "clouds.yaml", "lab", auth_url=api.auth_url, username="admin",
                             password=password, project="admin")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    monkeypatch.setenv("OS_CLOUD", "lab")
    for var in ("OS_AUTH_URL", "OS_PASSWORD", "OS_USERNAME", "OS_PROJECT_NAME", "OS_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return path


@pytest.fixture
def conn(clouds_yaml: Path) -> Iterator[Any]:
    import openstack

    c = openstack.connect(cloud="lab")
    yield c
    c.close()


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Capture every log record (ours and the clients') so tests can check no password leaks."""
    caplog.set_level(logging.DEBUG)
