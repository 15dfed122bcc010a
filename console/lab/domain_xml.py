"""Domain XML the way Nova's libvirt driver writes it (scale-up.md 3.1), for a diskless lab guest.

Nova (`_get_guest_xml` → `nova/virt/libvirt/config.py`): `<vcpu>` = flavor vCPUs with current =
maximum, one socket per vCPU, `<memory>` = `<currentMemory>` = flavor RAM, no `<maxMemory>`, SMBIOS
sysinfo naming OpenStack, a virtio memballoon. No guest-agent channel (Nova adds it only for images
with hw_qemu_guest_agent=yes). The lab adds no disk and no NIC: SeaBIOS finds nothing to boot and
the TCG guest idles at ~0% CPU; QEMU allocates RAM lazily, so 16 GiB guests cost ~50 MB RSS.

One element is the lab's own: `<memoryBacking><source type='memfd'/><access mode='shared'/>`. Nova writes no
memoryBacking by default (nova/virt/libvirt/driver.py `_get_guest_memory_backing_config`; with
`[libvirt] file_backed_memory` it writes the same shape, `source type='file'` with shared access, but allocates
immediately). The guest's RAM as a private anonymous mapping is refused by the kernel's overcommit heuristic once it
is larger than the machine (a 24 GiB m1.xlarge here: "cannot set up guest memory 'pc.ram': Cannot allocate
memory"); a shared memfd is not charged to it, so libvirt, Nova and the guest see the flavor's size while the host
backs only the pages the diskless guest touches (two 24 GiB guests at once: ~45 MB RSS each, libvirt 9.0, QEMU
7.2). `virsh setmem --live` and `setvcpus --live` work as before.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Literal

from console.lab.vm import Flavor, VMSpec

QEMU_BINARY = "/usr/bin/qemu-system-x86_64"


def nova_domain_xml(vm: VMSpec, flavor: Flavor, *, domain_type: Literal["qemu", "test"] = "qemu") -> str:
    """The persistent definition Nova would write for `vm` on `flavor` (TCG: KVM does not work here)."""
    kib = flavor.ram_mb * 1024
    n = flavor.vcpus
    sid = vm.server_id
    emulator = f"<emulator>{QEMU_BINARY}</emulator>" if domain_type == "qemu" else ""
    balloon = "<memballoon model='virtio'/>" if domain_type == "qemu" else ""
    backing = ("<memoryBacking><source type='memfd'/><access mode='shared'/></memoryBacking>"
               if domain_type == "qemu" else "")
    machine = " machine='pc'" if domain_type == "qemu" else ""
    return f"""<domain type='{domain_type}'>
  <name>{vm.instance_name}</name>
  <uuid>{sid}</uuid>
  <metadata>
    <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
      <nova:name>{vm.node_name}</nova:name>
      <nova:flavor name="{flavor.name}"><nova:memory>{flavor.ram_mb}</nova:memory>\
<nova:disk>{flavor.disk_gb}</nova:disk><nova:vcpus>{n}</nova:vcpus></nova:flavor>
    </nova:instance>
  </metadata>
  <memory unit='KiB'>{kib}</memory>
  <currentMemory unit='KiB'>{kib}</currentMemory>
  {backing}
  <vcpu placement='static'>{n}</vcpu>
  <sysinfo type='smbios'>
    <system>
      <entry name='manufacturer'>OpenStack Foundation</entry>
      <entry name='product'>OpenStack Nova</entry>
      <entry name='serial'>{sid}</entry>
      <entry name='uuid'>{sid}</entry>
      <entry name='family'>Virtual Machine</entry>
    </system>
  </sysinfo>
  <os>
    <type arch='x86_64'{machine}>hvm</type>
    <smbios mode='sysinfo'/>
  </os>
  <features>
    <acpi/>
    <apic/>
  </features>
  <cpu>
    <topology sockets='{n}' cores='1' threads='1'/>
  </cpu>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    {emulator}
    {balloon}
  </devices>
</domain>
"""


def with_vcpu_maximum(xml: str, maximum: int) -> str:
    """The field report's fix for "CPU topology doesn't match the desired vcpu count" (scale-up.md 3.3).

    Keeps the current vCPU count, raises the maximum and makes the topology one socket per vCPU.
    """
    root = ET.fromstring(xml)
    vcpu = root.find("vcpu")
    if vcpu is None or vcpu.text is None:
        raise ValueError("domain XML has no <vcpu>")
    current = int(vcpu.get("current", vcpu.text))
    if maximum < current:
        raise ValueError(f"maximum {maximum} < current {current}")
    vcpu.set("current", str(current))
    vcpu.text = str(maximum)
    topo = root.find("cpu/topology")
    if topo is not None:
        topo.set("sockets", str(maximum))
        for attr in ("dies", "cores", "threads"):
            if topo.get(attr) is not None:
                topo.set(attr, "1")
    return ET.tostring(root, encoding="unicode")


def vcpu_element(xml: str) -> tuple[int, int]:
    """(current, maximum) from a domain XML's <vcpu>."""
    vcpu = ET.fromstring(xml).find("vcpu")
    if vcpu is None or vcpu.text is None:
        raise ValueError("domain XML has no <vcpu>")
    maximum = int(vcpu.text)
    return int(vcpu.get("current", maximum)), maximum
