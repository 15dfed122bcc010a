"""The lab's hypervisor: real libvirt, shared across processes (implements `console.lab.vm.Hypervisor`).

Drivers (`driver=`):

- ``"qemu"``: a session libvirtd of our own (`libvirt_daemon.SessionDaemon`) with the real QEMU
  driver; domains are TCG (`<domain type='qemu'>`, KVM does not work here), diskless and NIC-less,
  written as Nova writes them (`domain_xml.nova_domain_xml`). `virsh -c <uri>` from any process
  reaches them. The QEMU driver enforces the topology check ("CPU topology doesn't match the
  desired vcpu count"), live vCPU hotplug and balloon limits.
- ``"test"``: libvirt's test driver, through the same kind of daemon (`test+unix:///default?socket=`)
  when libvirtd exists — the daemon shares the default test state across clients only while at
  least one client stays connected (the host keeps its connection open) — else in-process
  `test:///default`, which other processes cannot reach. The test driver does NOT check: that a
  new vCPU maximum matches the `<topology>` (it accepts `setvcpus 12 --config --maximum` with
  sockets=8), the guest agent (every VCPU_GUEST call fails with "unsupported flags"), individual
  vCPU or DIMM hotplug (`setVcpu`, `attachDeviceFlags` unsupported), and it has no balloon device:
  `setmem --live` moves `<currentMemory>` directly. See scale-up.md 3.8.
- ``"auto"``: qemu when libvirtd, qemu-system-x86_64 and the QEMU driver module exist, else test.

Nova semantics: `start` = virDomainCreate; `stop` = destroy; `soft_reboot` = Nova's soft reboot
(ACPI shutdown, then create of the existing persistent definition). The diskless guest has no OS to
honour ACPI, so soft_reboot is destroy + create — a new QEMU process, so edited maxima apply.
`define_from_flavor` is Nova's XML regeneration (hard reboot/resize): edits are lost.

Guests: one `SimulatedGuest` per domain, fed from libvirt. Lifecycle events (STARTED/STOPPED) wake
a dispatcher thread; live vCPU count and balloon target changes made by other processes emit no
libvirt event here (no DEVICE_ADDED for vCPUs, BALLOON_CHANGE only when a guest driver moves the
balloon, no TUNABLE), so the dispatcher also polls the few lab domains every `poll_interval`
(0.25 s: one lookup plus one info() per lab domain) and reads the daemon's monitor tap for
balloon targets (see libvirt_daemon). Measured: `virsh setvcpus`/`setmem` show in the guest ~0.2 s
after virsh returns; polling costs ~0.2% CPU here and ~0.4% in libvirtd with 3 guests; an idle
diskless TCG guest uses ~0.6% CPU and ~50 MB RSS whatever its RAM size (4-16 GiB).

Stops: `on_stopped_outside` fires once per STOPPED lifecycle event of a lab domain that this object
did not cause (destroy emits SHUTDOWN then STOPPED; SHUTDOWN alone is ignored so one stop is one
callback). `virsh shutdown`/`reboot` do nothing to the diskless guest (no OS answers ACPI);
`virsh reset` resets the same QEMU process: not a boot for the guest (same boot_id, scale-up.md
3.5). destroy ~0.2 s, create ~0.3 s (the daemon's keeper reaps QEMU at once, see libvirt_daemon).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from console.lab.domain_xml import nova_domain_xml
from console.lab.guest import SimulatedGuest
from console.lab.libvirt_daemon import LIBVIRTD, MonitorTap, SessionDaemon, ensure_event_loop, qemu_available
from console.lab.vm import Flavor, Guest, VMSpec

log = logging.getLogger(__name__)

Driver = Literal["auto", "qemu", "test"]


class LibvirtHost:
    """The lab's libvirt host. `start()` before use, `close()` after (also a context manager)."""

    def __init__(
        self,
        state_dir: Path,
        *,
        driver: Driver = "auto",
        daemon: bool | None = None,
        poll_interval: float = 0.25,
    ) -> None:
        self.state_dir = Path(state_dir)
        if driver == "auto":
            driver = "qemu" if qemu_available() else "test"
        self.driver: Literal["qemu", "test"] = driver
        # the QEMU driver always needs our daemon; the test driver uses one when libvirtd exists
        self._use_daemon = True if driver == "qemu" else (os.path.exists(LIBVIRTD) if daemon is None else daemon)
        self.poll_interval = poll_interval
        self._daemon: SessionDaemon | None = None
        self._tap: MonitorTap | None = None
        self._conn: Any = None  # libvirt.virConnect
        self._uri = ""
        self._lock = threading.RLock()
        self._observations = itertools.count(1)  # numbers each libvirt read (see _sync)
        self._vms: dict[str, VMSpec] = {}
        self._guests: dict[str, SimulatedGuest] = {}
        self._expected_stops: dict[str, int] = {}
        self._stopped_cbs: list[Callable[[str], None]] = []
        self._events: queue.Queue[tuple[str, int, int] | None] = queue.Queue()
        self._callback_ids: list[int] = []
        self._dispatcher: threading.Thread | None = None
        self._closing = False

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, server_id: str | None = None) -> LibvirtHost:
        """`start()` starts the host (daemon, connection, dispatcher) and returns it;
        `start(server_id)` is the Hypervisor call: virDomainCreate of that lab domain."""
        if server_id is not None:
            self._domain(server_id).create()
            self._sync(server_id)
            return self
        return self._start_host()

    def _start_host(self) -> LibvirtHost:
        import libvirt

        ensure_event_loop()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self.driver == "qemu" and not qemu_available():
            raise RuntimeError(
                "the QEMU driver needs libvirtd, qemu-system-x86_64 and libvirt's QEMU module; "
                "install them (see README) or use driver='test'"
            )
        atexit.register(self.close)  # an exit without close() must not leave libvirtd and QEMU running
        try:
            if self._use_daemon:
                self._daemon = SessionDaemon(self.state_dir)
                self._daemon.start()
                self._uri = self._daemon.uri(self.driver)
                if self.driver == "qemu":
                    self._tap = MonitorTap(self._daemon.tap_path)
            else:
                self._uri = "test:///default"
            self._conn = libvirt.open(self._uri)
            self._callback_ids.append(
                self._conn.domainEventRegisterAny(None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._on_lifecycle, None)
            )
        except Exception:
            self.close()
            raise
        self._dispatcher = threading.Thread(target=self._dispatch, name="lab-libvirt-guests", daemon=True)
        self._dispatcher.start()
        return self

    def close(self) -> None:
        """Destroy and undefine every lab domain, stop the daemon (and any QEMU left behind)."""
        import libvirt

        atexit.unregister(self.close)
        self._closing = True
        if self._dispatcher is not None:
            self._events.put(None)
            self._dispatcher.join(timeout=5)
            self._dispatcher = None
        if self._conn is not None:
            for sid in list(self._vms):
                try:
                    dom = self._conn.lookupByUUIDString(sid)
                except libvirt.libvirtError:
                    continue
                try:
                    if dom.isActive():
                        dom.destroy()
                    dom.undefine()
                except libvirt.libvirtError as e:  # the daemon stop below still ends its QEMU
                    log.warning("lab domain %s not cleaned up: %s", sid, e)
                self._guests[sid].observe_stopped()
            for cid in self._callback_ids:
                with contextlib.suppress(libvirt.libvirtError):
                    self._conn.domainEventDeregisterAny(cid)
            self._callback_ids.clear()
            with contextlib.suppress(libvirt.libvirtError):
                self._conn.close()
            self._conn = None
        if self._daemon is not None:
            self._daemon.stop()
            self._daemon = None
        self._vms.clear()

    def __enter__(self) -> LibvirtHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- facts for others ----------------------------------------------------------------------
    @property
    def uri(self) -> str:
        """Reaches the same domains from another process (except in-process `test:///default`)."""
        return self._uri

    @property
    def daemon_pid(self) -> int | None:
        return self._daemon.pid if self._daemon else None

    @property
    def daemon_dir(self) -> Path | None:
        """The daemon's HOME (QEMU logs in cache/libvirt/qemu/log); None without a daemon."""
        return self._daemon.base if self._daemon else None

    def instance_name(self, server_id: str) -> str:
        return self._vm(server_id).instance_name

    def domain_xml(self, server_id: str, *, inactive: bool = False) -> str:
        import libvirt

        flags = libvirt.VIR_DOMAIN_XML_INACTIVE if inactive else 0
        return self._domain(server_id).XMLDesc(flags)

    # -- Hypervisor protocol -------------------------------------------------------------------
    def define_from_flavor(self, vm: VMSpec, flavor: Flavor) -> None:
        import libvirt

        with self._lock:
            self._vms[vm.server_id] = vm
            self._guests.setdefault(vm.server_id, SimulatedGuest(vm.server_id))
        try:
            old = self._conn.lookupByUUIDString(vm.server_id)
        except libvirt.libvirtError:
            old = None
        if old is not None:
            if old.isActive():
                self._destroy(vm.server_id, old)
            old.undefine()
        self._conn.defineXML(nova_domain_xml(vm, flavor, domain_type=self.driver))

    def stop(self, server_id: str) -> None:
        """Power off (destroy) on Nova's behalf."""
        dom = self._domain(server_id)
        if dom.isActive():
            self._destroy(server_id, dom)
        self._sync(server_id)

    def soft_reboot(self, server_id: str) -> None:
        """Nova SOFT reboot of a diskless guest: destroy + create (new QEMU process, edited maxima apply)."""
        dom = self._domain(server_id)
        if dom.isActive():
            self._destroy(server_id, dom)
        dom.create()
        self._sync(server_id)

    def is_running(self, server_id: str) -> bool:
        return bool(self._domain(server_id).isActive())

    def guest(self, server_id: str) -> Guest:
        self._vm(server_id)
        return self._guests[server_id]

    def on_stopped_outside(self, callback: Callable[[str], None]) -> None:
        with self._lock:
            self._stopped_cbs.append(callback)

    def sync(self, server_id: str | None = None) -> None:
        """Observe libvirt now (instead of waiting for the next poll) and update the guests."""
        for sid in [server_id] if server_id else list(self._vms):
            self._sync(sid)

    # -- internals -----------------------------------------------------------------------------
    def _vm(self, server_id: str) -> VMSpec:
        try:
            return self._vms[server_id]
        except KeyError:
            raise KeyError(f"no lab domain for server {server_id}") from None

    def _domain(self, server_id: str) -> Any:  # libvirt.virDomain
        self._vm(server_id)
        return self._conn.lookupByUUIDString(server_id)

    def _destroy(self, server_id: str, dom: Any) -> None:
        with self._lock:
            self._expected_stops[server_id] = self._expected_stops.get(server_id, 0) + 1
        try:
            dom.destroy()
        except Exception:
            with self._lock:
                self._expected_stops[server_id] -= 1
            raise

    def _on_lifecycle(self, conn: Any, dom: Any, event: int, detail: int, opaque: object) -> None:
        # runs in the libvirt event-loop thread: hand over, never call libvirt from here
        self._events.put((dom.UUIDString(), event, detail))

    def _dispatch(self) -> None:
        import libvirt

        while True:
            item: tuple[str, int, int] | tuple[()] | None
            try:
                item = self._events.get(timeout=self.poll_interval)
            except queue.Empty:
                item = ()
            items = [item]
            while True:  # drain what queued up meanwhile
                try:
                    items.append(self._events.get_nowait())
                except queue.Empty:
                    break
            if None in items or self._closing:
                return
            for it in items:
                if it and it[1] == libvirt.VIR_DOMAIN_EVENT_STOPPED:
                    self._stopped(it[0])
            try:
                self._poll()
            except libvirt.libvirtError as e:
                if self._closing:
                    return
                log.warning("lab libvirt poll failed: %s", e)
            except Exception:  # keep observing the other guests; the traceback goes to the lab's log
                log.exception("lab libvirt poll crashed")

    def _stopped(self, server_id: str) -> None:
        with self._lock:
            if server_id not in self._vms:
                return
            if self._expected_stops.get(server_id, 0) > 0:
                self._expected_stops[server_id] -= 1
                return
            cbs = list(self._stopped_cbs)
        for cb in cbs:
            try:
                cb(server_id)
            except Exception:  # the Nova simulator's bug must not stop guest observation
                log.exception("on_stopped_outside callback failed for %s", server_id)

    def _poll(self) -> None:
        if self._tap is not None:
            self._tap.read()
        with self._lock:
            sids = set(self._vms)
        for sid in sids:
            self._sync(sid)

    def _sync(self, server_id: str) -> None:
        """Look the domain up afresh and update its guest.

        Afresh: a virDomain handle caches the domain ID it was looked up with, so a handle taken before a
        destroy + create would keep reporting the old QEMU process. And numbered: the poller and a caller
        (soft_reboot, start) may read libvirt concurrently; the guest drops a read older than one it has
        applied, so a stale read cannot make it "boot" twice (which onlined hot-added vCPUs).
        """
        import libvirt

        seq = next(self._observations)  # before reading libvirt
        try:
            dom = self._conn.lookupByUUIDString(server_id)
        except libvirt.libvirtError:
            dom = None
        self._observe(server_id, dom, seq)

    def _observe(self, server_id: str, dom: Any, seq: int) -> None:
        guest = self._guests.get(server_id)
        if guest is not None:
            observe_domain(guest, dom, seq, self._tap)


def observe_domain(guest: SimulatedGuest, dom: Any, seq: int, tap: MonitorTap | None) -> None:
    """Feed `guest` what libvirt says of its domain now (`dom`: a handle looked up afresh, None when there is
    none): stopped, or running with its domain ID, vCPUs, maximum memory and balloon (the QEMU driver's monitor
    tap has the balloon target; the driver reports the actual balloon, the boot size without a guest driver)."""
    import libvirt

    if dom is None:
        guest.observe_stopped(seq=seq)
        return
    try:
        state, max_kib, cur_kib, nvcpus, _ = dom.info()
        if state == libvirt.VIR_DOMAIN_PAUSED and dom.state()[1] == libvirt.VIR_DOMAIN_PAUSED_STARTING_UP:
            return  # QEMU launched, not yet booted: wait for RUNNING
        domain_id = dom.ID()
    except libvirt.libvirtError as e:
        if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
            guest.observe_stopped(seq=seq)
            return
        raise
    if state in (libvirt.VIR_DOMAIN_SHUTOFF, libvirt.VIR_DOMAIN_CRASHED) or domain_id < 0:
        guest.observe_stopped(seq=seq)
        return
    balloon = cur_kib
    if tap is not None:
        tap.read()
        target = tap.balloon_kib(dom.name())
        if target is not None:
            balloon = target
    guest.observe(domain_id, nvcpus, max_kib, balloon, seq=seq)
