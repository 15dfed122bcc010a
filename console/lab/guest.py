"""The simulated operating system inside one lab VM (implements `console.lab.vm.Guest`).

The guest sees only what the hypervisor shows it; `LibvirtHost` observes libvirt and feeds each
guest the facts of its domain (`observe`/`observe_stopped`):

- a new QEMU process is a boot: new `boot_id`, every present vCPU online. `reboot()`/`reset()`
  keep the process and are not boots (scale-up.md 3.5);
- vCPUs hot-added later (`setvcpus --live`) are present but OFFLINE until `set_cpu_online(n, True)`
  (scale-up.md 4, field report 2 step 4); cpu0 cannot be offlined;
- MemTotal = balloon target − a kernel overhead that grows with the boot memory `<memory>`
  (`mem_total_kib`), reproducing the field report's numbers.
"""

from __future__ import annotations

import bisect
import logging
import threading
import uuid as uuidlib
from collections.abc import Callable

from console.lab.vm import GuestEventKind

log = logging.getLogger(__name__)

GiB_KIB = 1024 * 1024
# (maximum memory KiB, kernel overhead KiB) measured on the field report's Ubuntu 20.04 workers:
# 4 GiB → MemTotal 4030532, 12 GiB → 12268324, 16 GiB (balloon 16 GiB) → 16396200.
OVERHEAD_POINTS: tuple[tuple[int, int], ...] = (
    (4 * GiB_KIB, 163772),
    (12 * GiB_KIB, 314588),
    (16 * GiB_KIB, 381016),
)


def kernel_overhead_kib(max_memory_kib: int) -> int:
    """Memory the guest kernel keeps for itself (struct pages, reserved ranges), by boot memory size.

    Piecewise linear through OVERHEAD_POINTS, proportional below the first point, the last
    segment's slope beyond the last point.
    """
    if max_memory_kib <= 0:
        return 0
    xs = [x for x, _ in OVERHEAD_POINTS]
    x0, y0 = OVERHEAD_POINTS[0]
    if max_memory_kib <= x0:
        return round(y0 * max_memory_kib / x0)
    i = bisect.bisect_left(xs, max_memory_kib)
    if i >= len(xs):
        i = len(xs) - 1
    (xa, ya), (xb, yb) = OVERHEAD_POINTS[i - 1], OVERHEAD_POINTS[i]
    return round(ya + (yb - ya) * (max_memory_kib - xa) / (xb - xa))


def mem_total_kib(balloon_kib: int, max_memory_kib: int) -> int:
    """/proc/meminfo MemTotal for a guest booted with `max_memory_kib` whose balloon target is `balloon_kib`."""
    return max(0, min(balloon_kib, max_memory_kib) - kernel_overhead_kib(max_memory_kib))


class SimulatedGuest:
    """One VM's guest OS state; thread-safe; callbacks run outside the state lock, in the order of the changes."""

    def __init__(self, uuid: str) -> None:
        self.uuid = uuid
        self._lock = threading.RLock()
        # one change and the delivery of its events at a time, so subscribers get events in the order the
        # changes happened (a poll's "shutdown" delivered after a sync's "boot" left the kubelet stopped)
        self._changing = threading.RLock()
        self._running = False
        self._boot_id = ""
        self._seq = 0  # the newest observation applied (see _stale)
        self._process_key: object = None  # identifies the QEMU process the guest runs in
        self._present = 0
        self._online: set[int] = set()
        self._balloon_kib = 0
        self._max_kib = 0
        self._subs: list[Callable[[GuestEventKind], None]] = []

    # -- the Guest protocol --------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._running

    @property
    def boot_id(self) -> str:
        return self._boot_id

    @property
    def present_vcpus(self) -> int:
        return self._present

    @property
    def online_cpus(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._online)

    @property
    def mem_total_kib(self) -> int:
        with self._lock:
            return mem_total_kib(self._balloon_kib, self._max_kib) if self._running else 0

    @property
    def max_memory_kib(self) -> int:
        return self._max_kib

    @property
    def balloon_kib(self) -> int:
        return self._balloon_kib

    def set_cpu_online(self, cpu: int, online: bool) -> None:
        """`echo 1 > /sys/devices/system/cpu/cpuN/online`."""
        with self._changing:
            with self._lock:
                if not self._running:
                    raise RuntimeError(f"guest {self.uuid} is not running")
                if not 0 <= cpu < self._present:
                    raise ValueError(f"cpu{cpu} is not present (present: 0-{self._present - 1})")
                if cpu == 0 and not online:
                    raise ValueError("cpu0 cannot be offlined (no /sys/devices/system/cpu/cpu0/online)")
                if (cpu in self._online) == online:
                    return
                if online:
                    self._online.add(cpu)
                else:
                    self._online.discard(cpu)
            self._emit(["cpu-online"])

    def subscribe(self, callback: Callable[[GuestEventKind], None]) -> Callable[[], None]:
        with self._lock:
            self._subs.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subs:
                    self._subs.remove(callback)

        return unsubscribe

    # -- fed by the hypervisor -----------------------------------------------------------------
    def _stale(self, seq: int) -> bool:
        """With `seq` (taken before the hypervisor was read), an observation older than one applied already
        is dropped: a poll that read the old QEMU process must not undo the caller's sync of the new one."""
        if not seq:
            return False
        if seq < self._seq:
            return True
        self._seq = seq
        return False

    def observe(self, process_key: object, present_vcpus: int, max_memory_kib: int, balloon_kib: int,
                *, seq: int = 0) -> None:
        """The domain runs in QEMU process `process_key` with these live values."""
        with self._changing:
            events: list[GuestEventKind] = []
            with self._lock:
                if self._stale(seq):
                    return
                if not self._running or process_key != self._process_key:
                    if self._running:  # the old process ended unobserved (e.g. destroy + create between polls)
                        events.append("shutdown")
                    self._running = True
                    self._process_key = process_key
                    self._boot_id = str(uuidlib.uuid4())
                    self._present = present_vcpus
                    self._online = set(range(present_vcpus))
                    self._balloon_kib, self._max_kib = balloon_kib, max_memory_kib
                    events.append("boot")
                else:
                    if present_vcpus != self._present:
                        # hot-added vCPUs arrive offline; unplugged ones disappear
                        self._online = {c for c in self._online if c < present_vcpus}
                        self._present = present_vcpus
                        events.append("vcpus")
                    if (balloon_kib, max_memory_kib) != (self._balloon_kib, self._max_kib):
                        self._balloon_kib, self._max_kib = balloon_kib, max_memory_kib
                        events.append("memory")
            self._emit(events)

    def observe_stopped(self, *, seq: int = 0) -> None:
        with self._changing:
            with self._lock:
                if self._stale(seq) or not self._running:
                    return
                self._running = False
                self._process_key = None
                self._present = 0
                self._online = set()
            self._emit(["shutdown"])

    def _emit(self, events: list[GuestEventKind]) -> None:
        if not events:
            return
        with self._lock:
            subs = list(self._subs)
        for kind in events:
            for cb in subs:
                try:
                    cb(kind)
                except Exception:  # a subscriber's bug must not stop the guest's other observers
                    log.exception("guest %s subscriber failed on %s", self.uuid, kind)
