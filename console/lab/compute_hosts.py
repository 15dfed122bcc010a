"""The lab's compute hosts as the lab's guests see them: one session libvirtd per Nova compute host (its own
socket and URI, as `qemu+ssh://cmpNNN/system` is on a real cloud), where Nova's computes define and start the
domains (console/lab/cloud/virt.py), and one simulated guest per server, fed from whichever host runs its domain.

A resize moves the domain: during VERIFY_RESIZE it is defined on both hosts and runs on the destination only, so
the guest follows the host where the domain is active; none active is a stopped guest. Lifecycle events of any
host make the observer look at once; it also polls (vCPU and balloon changes made with virsh emit no event here,
see console/lab/libvirt_host.py)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from console.lab.guest import SimulatedGuest
from console.lab.libvirt_daemon import MonitorTap, SessionDaemon, ensure_event_loop
from console.lab.libvirt_host import observe_domain
from console.lab.vm import Guest

log = logging.getLogger(__name__)


class _Host:
    def __init__(self, name: str, daemon: SessionDaemon) -> None:
        self.name = name
        self.daemon = daemon
        self.tap: MonitorTap | None = None  # once the daemon runs
        self.conn: Any = None


class ComputeHosts:
    """`start()` before use, `close()` after."""

    def __init__(self, state_dir: Path, names: Sequence[str], *, poll_interval: float = 0.25) -> None:
        self.state_dir = Path(state_dir)
        self.names = list(names)
        self.poll_interval = poll_interval
        self._hosts: dict[str, _Host] = {}
        self._guests: dict[str, SimulatedGuest] = {}
        self._lock = threading.Lock()
        self._observations = itertools.count(1)
        self._wake: queue.Queue[bool] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._closing = False

    def start(self) -> ComputeHosts:
        import libvirt

        ensure_event_loop()
        try:
            for name in self.names:
                (self.state_dir / name).mkdir(parents=True, exist_ok=True)
                daemon = SessionDaemon(self.state_dir / name)
                host = _Host(name, daemon)
                self._hosts[name] = host
                daemon.start()
                host.tap = MonitorTap(daemon.tap_path)
                host.conn = libvirt.open(self.uri(name))
                host.conn.domainEventRegisterAny(
                    None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, lambda *_a: self._wake.put(True), None
                )
        except Exception:
            self.close()
            raise
        self._thread = threading.Thread(target=self._run, name="lab-compute-hosts", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop the daemons (and the QEMU processes they ran)."""
        import libvirt

        self._closing = True
        if self._thread is not None:
            self._wake.put(False)
            self._thread.join(timeout=5)
            self._thread = None
        for guest in self._guests.values():
            guest.observe_stopped()
        for host in self._hosts.values():
            if host.conn is not None:
                with contextlib.suppress(libvirt.libvirtError):
                    host.conn.close()
                host.conn = None
            host.daemon.stop()
        self._hosts.clear()

    # -- facts ------------------------------------------------------------------------------------------
    def uri(self, host: str) -> str:
        return self._hosts[host].daemon.uri("qemu")

    @property
    def uris(self) -> dict[str, str]:
        return {name: self.uri(name) for name in self._hosts}

    def track(self, server_id: str) -> Guest:
        """The guest of a Nova server, observed from now on."""
        with self._lock:
            guest = self._guests.setdefault(server_id, SimulatedGuest(server_id))
        self.sync(server_id)
        return guest

    def guest(self, server_id: str) -> Guest:
        return self._guests[server_id]

    def sync(self, server_id: str | None = None) -> None:
        """Observe libvirt now and update the guests (all, or one)."""
        for sid in [server_id] if server_id else list(self._guests):
            self._sync(sid)

    # -- internals --------------------------------------------------------------------------------------
    def _run(self) -> None:
        import libvirt

        while not self._closing:
            try:
                if self._wake.get(timeout=self.poll_interval) is False:
                    return
            except queue.Empty:
                pass
            while not self._wake.empty():  # what queued up meanwhile is one look
                if self._wake.get_nowait() is False:
                    return
            try:
                self.sync()
            except libvirt.libvirtError as e:
                if self._closing:
                    return
                log.warning("lab compute hosts: libvirt poll failed: %s", e)
            except Exception:  # keep observing the other guests; the traceback goes to the lab's log
                log.exception("lab compute hosts: poll crashed")

    def _sync(self, server_id: str) -> None:
        import libvirt

        guest = self._guests.get(server_id)
        if guest is None:
            return
        seq = next(self._observations)  # before reading libvirt (the guest drops older reads)
        running: tuple[_Host, Any] | None = None
        for host in list(self._hosts.values()):
            try:
                dom = host.conn.lookupByUUIDString(server_id)
                if dom.isActive():
                    running = (host, dom)
                    break
            except libvirt.libvirtError as e:
                if e.get_error_code() != libvirt.VIR_ERR_NO_DOMAIN:
                    raise
        if running is None:
            guest.observe_stopped(seq=seq)
        else:
            observe_domain(guest, running[1], seq, running[0].tap)
