"""MonitorTap on lines in the exact format libvirtd 9.0 wrote them here (no daemon needed)."""

from __future__ import annotations

from pathlib import Path

from console.lab.libvirt_daemon import MonitorTap

PREFIX = "2026-11-29 15:41:29.574+0000: 7244: "
NAME = "instance-0000335c"


def enter(mon: str, name: str = NAME) -> str:
    return (
        f"{PREFIX}debug : qemuDomainObjEnterMonitorInternal:6107 : "
        f"Entering monitor (mon={mon} vm=0x7ff6a8005df0 name={name})\n"
    )


def send(mon: str, msg: str) -> str:
    return f"{PREFIX}info : qemuMonitorSend:861 : QEMU_MONITOR_SEND_MSG: mon={mon} msg={msg}\r\n fd=-1\n"


def new(mon: str) -> str:
    return f"{PREFIX}info : qemuMonitorOpenInternal:711 : QEMU_MONITOR_NEW: mon={mon} fd=25\n"


def balloon(gib: int, n: int = 407) -> str:
    return f'{{"execute":"balloon","arguments":{{"value":{gib << 30}}},"id":"libvirt-{n}"}}'


def test_balloon_targets_follow_the_current_qemu_process(tmp_path: Path) -> None:
    log = tmp_path / "tap.log"
    log.write_text("old run noise\n" + enter("0x1") + send("0x1", balloon(2)))
    tap = MonitorTap(log)  # starts at the end: the old run's lines are ignored
    assert tap.balloon_kib(NAME) is None

    with log.open("a") as f:
        f.write(new("0x1") + enter("0x1") + send("0x1", '{"execute":"qmp_capabilities","id":"libvirt-1"}'))
        f.write(enter("0x1") + send("0x1", balloon(12)))
        f.write(enter("0x1") + send("0x1", '{"execute":"query-balloon","id":"libvirt-408"}'))
    assert tap.read() == {NAME}
    assert (tap.generation(NAME), tap.balloon_kib(NAME)) == (1, 12 * 1024 * 1024)

    # virsh setmem 16G, written in two pieces: a partial line is kept until its end arrives
    line = enter("0x1") + send("0x1", balloon(16, 425))
    with log.open("a") as f:
        f.write(line[:150])
    tap.read()
    assert tap.balloon_kib(NAME) == 12 * 1024 * 1024
    with log.open("a") as f:
        f.write(line[150:])
    assert tap.read() == {NAME} and tap.balloon_kib(NAME) == 16 * 1024 * 1024

    # a new QEMU process (the monitor address may be reused) resets the target until its boot balloon
    with log.open("a") as f:
        f.write(new("0x1") + enter("0x1"))
    tap.read()
    assert (tap.generation(NAME), tap.balloon_kib(NAME)) == (2, None)
    with log.open("a") as f:
        f.write(send("0x1", balloon(12)))
    tap.read()
    assert tap.balloon_kib(NAME) == 12 * 1024 * 1024


def test_other_domains_and_truncation(tmp_path: Path) -> None:
    log = tmp_path / "tap.log"
    log.write_text("")
    tap = MonitorTap(log)
    with log.open("a") as f:
        f.write(enter("0xa", "instance-00000001") + enter("0xb", "instance-00000002"))
        f.write(send("0xb", balloon(4)) + send("0xa", balloon(6)))
    assert tap.read() == {"instance-00000001", "instance-00000002"}
    assert tap.balloon_kib("instance-00000001") == 6 * 1024 * 1024
    assert tap.balloon_kib("instance-00000002") == 4 * 1024 * 1024
    log.write_text(enter("0xa", "instance-00000001") + send("0xa", balloon(3)))  # truncated and rewritten
    tap.read()
    assert tap.balloon_kib("instance-00000001") == 3 * 1024 * 1024
    assert tap.balloon_kib("instance-99999999") is None
