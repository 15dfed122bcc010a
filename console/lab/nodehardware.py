"""A lab node's hardware and kernel as files in its tree: what a program on the node (nfd-worker, lspci-like
scripts, hooks) finds in /sys, /proc, /boot and /lib/modules.

The lab's nodes are QEMU guests on an OpenStack cloud: i440fx PCI devices with virtio NIC, disk and balloon, no
NUMA, no SMT, SeaBIOS; an Ubuntu generic kernel with containerd's and kube-proxy's modules loaded. A scenario adds
kernel modules and PCI devices per node (scenarios.NodeSpec). Files as the kernel lays them out (sysfs:
Documentation/ABI/testing/sysfs-bus-pci, sysfs-block, sysfs-class-net, sysfs-firmware-dmi-entries; /proc/modules:
name size refcount deps state address), so what reads them is upstream's code: nfd-worker v0.19.0 reads
bus/pci/devices/*/{class,vendor,device,subsystem_vendor,subsystem_device,sriov_totalvfs} (source/pci/utils.go),
/proc/modules and lib/modules/<kver>/modules.builtin (source/kernel/modules.go), boot/config-<kver>
(source/kernel/kconfig.go), class/net/* with `device` for a physical interface (source/network), block/*/queue
(source/storage), devices/virtual/dmi/id (source/system), bus/node/devices (source/memory).
"""

from __future__ import annotations

from console.lab.scenarios import HostOs, NodeSpec, PciDevice

# Loaded on every lab node (a kubeadm/kubespray node with containerd and kube-proxy in iptables mode)
BASE_MODULES = (
    "overlay",
    "br_netfilter",
    "bridge",
    "stp",
    "llc",
    "nf_conntrack",
    "nf_nat",
    "nf_defrag_ipv4",
    "nf_defrag_ipv6",
    "xt_conntrack",
    "xt_MASQUERADE",
    "xt_addrtype",
    "iptable_nat",
    "iptable_filter",
    "ip_tables",
    "x_tables",
    "veth",
    "virtio_balloon",
    "psmouse",
)
# modules.builtin of an Ubuntu generic kernel (a few), by their path in the kernel tree
BUILTIN_MODULES = (
    "drivers/virtio/virtio",
    "drivers/virtio/virtio_ring",
    "drivers/virtio/virtio_pci",
    "drivers/net/virtio_net",
    "drivers/block/virtio_blk",
    "fs/ext4/ext4",
    "net/unix/unix",
    "net/ipv6/ipv6",
)
# i440fx machine as Nova/libvirt defines it: host bridge, ISA/IDE/ACPI, std VGA, virtio NIC, disk, balloon
BASE_PCI = (
    PciDevice("8086", "1237", "0600"),
    PciDevice("8086", "7000", "0601"),
    PciDevice("8086", "7010", "0101"),
    PciDevice("8086", "7113", "0680"),
    PciDevice("1234", "1111", "0300"),
    PciDevice("1af4", "1000", "0200", "1af4", "0001"),
    PciDevice("1af4", "1001", "0100", "1af4", "0002"),
    PciDevice("1af4", "1002", "00ff", "1af4", "0005"),
)
# kernel config options the lab's images set (a subset of Ubuntu's generic config)
KCONFIG = {
    "NO_HZ": "y",
    "NO_HZ_IDLE": "y",
    "NO_HZ_COMMON": "y",
    "PREEMPT_VOLUNTARY": "y",
    "KVM_GUEST": "y",
    "PARAVIRT": "y",
    "VIRTIO_NET": "y",
    "VIRTIO_BLK": "y",
    "VFIO": "m",
    "VFIO_PCI": "m",
    "VHOST_NET": "m",
    "CGROUPS": "y",
    "MEMCG": "y",
    "HZ": "250",
    "LOCALVERSION": "",
}
# SMBIOS as QEMU gives it to a Nova guest (nova/virt/libvirt/driver.py _get_guest_config_sysinfo; SeaBIOS)
DMI = {
    "sys_vendor": "OpenStack Foundation",
    "product_name": "OpenStack Nova",
    "product_family": "Virtual Machine",
    "product_version": "23.2.2",
    "bios_vendor": "SeaBIOS",
    "bios_version": "1.15.0-1",
    "bios_date": "04/01/2014",
    "chassis_vendor": "QEMU",
    "chassis_type": "1",
    "chassis_version": "pc-i440fx-6.2",
    "chassis_asset_tag": "",
}
# ens3: the virtio NIC (a PCI device: `device` links to it); lo and the CNI bridge are virtual
NET = {"ens3": ("up", "-1", "1500", True), "lo": ("unknown", "", "65536", False), "cni0": ("up", "", "1450", False)}


def _kconfig_value(value: str) -> str:
    """As .config spells it: tristates and numbers bare, strings quoted."""
    return value if value in ("y", "m") or value.isdigit() else f'"{value}"'


def kernel_modules(spec: NodeSpec) -> tuple[str, ...]:
    return (*BASE_MODULES, *(m for m in spec.kernel_modules if m not in BASE_MODULES))


def pci_devices(spec: NodeSpec) -> tuple[PciDevice, ...]:
    return (*BASE_PCI, *spec.pci_devices)


def hardware_files(spec: NodeSpec, host: HostOs) -> dict[str, str]:
    """(guest path -> content) of the node's hardware and kernel; directories are the parents of the files."""
    kver = host.kernel_release
    files = {
        "/proc/modules": "".join(f"{m} 16384 0 - Live 0x0000000000000000\n" for m in kernel_modules(spec)),
        # /lib is usr/lib on a merged-/usr system (the tree's `lib` link, console/lab/guestroot.py)
        f"/usr/lib/modules/{kver}/modules.builtin": "".join(f"kernel/{m}.ko\n" for m in BUILTIN_MODULES),
        f"/boot/config-{kver}": "".join(f"CONFIG_{k}={_kconfig_value(v)}\n" for k, v in KCONFIG.items()),
        "/sys/bus/node/devices/node0/online": "1\n",
        "/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
        "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages": "0\n",
        "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": "0\n",
        "/sys/block/vda/queue/rotational": "1\n",
        "/sys/block/vda/queue/dax": "0\n",
        "/sys/block/vda/queue/nr_zones": "0\n",
        "/sys/block/vda/queue/zoned": "none\n",
    }
    for name, value in DMI.items():
        files[f"/sys/devices/virtual/dmi/id/{name}"] = value + "\n"
    for slot, dev in enumerate(pci_devices(spec)):
        base = f"/sys/bus/pci/devices/0000:00:{slot:02x}.0"
        files.update(
            {
                f"{base}/vendor": f"0x{dev.vendor.lower()}\n",
                f"{base}/device": f"0x{dev.device.lower()}\n",
                f"{base}/class": f"0x{dev.device_class.lower():0<6}\n",
                f"{base}/subsystem_vendor": f"0x{dev.subsystem_vendor.lower()}\n",
                f"{base}/subsystem_device": f"0x{dev.subsystem_device.lower()}\n",
            }
        )
        if dev.sriov_totalvfs is not None:
            files[f"{base}/sriov_totalvfs"] = f"{dev.sriov_totalvfs}\n"
    for name, (operstate, speed, mtu, physical) in NET.items():
        base = f"/sys/class/net/{name}"
        files.update({f"{base}/operstate": operstate + "\n", f"{base}/mtu": mtu + "\n"})
        if speed:
            files[f"{base}/speed"] = speed + "\n"
        if physical:
            files[f"{base}/device/vendor"] = "0x1af4\n"
    return files
