"""pci, usb, storage, network, memory and system sources (sysfs, /proc, os-release)."""

from __future__ import annotations

from pathlib import Path

from console.discovery.paths import HostPaths, read_attr, read_text
from console.nfd.model import Features

PCI_CLASS_WHITELIST = ("03", "0b40", "12")
PCI_LABEL_FIELDS = ("class", "vendor")
USB_CLASS_WHITELIST = ("0e", "ef", "fe", "ff")
USB_LABEL_FIELDS = ("class", "vendor", "device")


def _hex(v: str | None) -> str | None:
    return None if v is None else v.lower().removeprefix("0x")


def _dirs(p: Path) -> list[Path]:
    try:
        return sorted(x for x in p.iterdir() if x.is_dir())
    except OSError:
        return []


def discover_pci(paths: HostPaths, features: Features, warnings: list[str]) -> None:
    devs = []
    for d in _dirs(paths.sys / "bus" / "pci" / "devices"):
        attrs = {k: _hex(read_attr(d / k)) for k in ("class", "vendor", "device", "subsystem_vendor",
                                                      "subsystem_device")}
        if any(v is None for v in attrs.values()):
            continue
        inst = {k: v for k, v in attrs.items() if v is not None}
        inst["class"] = inst["class"][:4]
        vfs = read_attr(d / "sriov_totalvfs")
        if vfs is not None:
            inst["sriov_totalvfs"] = vfs
        devs.append(inst)
    features.instances["pci.device"] = devs


def pci_labels(features: Features) -> dict[str, str]:
    labels = {}
    for dev in features.instances.get("pci.device", []):
        if not dev["class"].startswith(PCI_CLASS_WHITELIST):
            continue
        name = "_".join(dev[f] for f in PCI_LABEL_FIELDS)
        labels[f"pci-{name}.present"] = "true"
        if "sriov_totalvfs" in dev:
            labels[f"pci-{name}.sriov.capable"] = "true"
    return labels


def discover_usb(paths: HostPaths, features: Features, warnings: list[str]) -> None:
    devs = []
    for d in _dirs(paths.sys / "bus" / "usb" / "devices"):
        if not (d / "idProduct").exists():
            continue
        base = {"vendor": _hex(read_attr(d / "idVendor")) or "", "device": _hex(read_attr(d / "idProduct")) or "",
                "serial": read_attr(d / "serial") or ""}
        cls = _hex(read_attr(d / "bDeviceClass")) or ""
        if cls == "00":  # class defined per interface: one instance per interface
            for itf in _dirs(d):
                ic = _hex(read_attr(itf / "bInterfaceClass"))
                if ic is not None:
                    devs.append({"class": ic, **base})
        else:
            devs.append({"class": cls, **base})
    features.instances["usb.device"] = devs


def usb_labels(features: Features) -> dict[str, str]:
    return {f"usb-{'_'.join(d[f] for f in USB_LABEL_FIELDS)}.present": "true"
            for d in features.instances.get("usb.device", []) if d["class"].startswith(USB_CLASS_WHITELIST)}


def discover_storage(paths: HostPaths, features: Features, warnings: list[str]) -> None:
    devs = []
    for d in _dirs(paths.sys / "block"):
        inst = {"name": d.name}
        for k in ("dax", "rotational", "nr_zones", "zoned"):
            v = read_attr(d / "queue" / k)
            if v is not None:
                inst[k] = v
        devs.append(inst)
    features.instances["storage.block"] = devs


def storage_labels(features: Features) -> dict[str, str]:
    if any(d.get("rotational") == "0" for d in features.instances.get("storage.block", [])):
        return {"storage-nonrotationaldisk": "true"}
    return {}


def discover_network(paths: HostPaths, features: Features, warnings: list[str]) -> None:
    phys, virt = [], []
    for d in _dirs(paths.sys / "class" / "net"):
        if d.name == "bonding_masters":
            continue
        inst = {"name": d.name}
        for k in ("operstate", "speed", "mtu"):
            v = read_attr(d / k)
            if v is not None:
                inst[k] = v
        if (d / "device").exists():
            for k in ("sriov_numvfs", "sriov_totalvfs"):
                v = read_attr(d / "device" / k)
                if v is not None:
                    inst[k] = v
            phys.append(inst)
        else:
            virt.append(inst)
    features.instances["network.device"] = phys
    features.instances["network.virtual"] = virt


def network_labels(features: Features) -> dict[str, str]:
    labels = {}
    for d in features.instances.get("network.device", []):
        if d.get("sriov_totalvfs", "0").isdigit() and int(d.get("sriov_totalvfs", "0")) > 0:
            labels["network-sriov.capable"] = "true"
        if d.get("sriov_numvfs", "0").isdigit() and int(d.get("sriov_numvfs", "0")) > 0:
            labels["network-sriov.configured"] = "true"
    return labels


def discover_memory(paths: HostPaths, features: Features, warnings: list[str]) -> None:
    nodes = [d for d in _dirs(paths.sys / "bus" / "node" / "devices") if d.name.startswith("node")]
    features.attributes["memory.numa"] = {"is_numa": "true" if len(nodes) > 1 else "false",
                                          "node_count": str(len(nodes))}
    swaps = read_text(paths.proc / "swaps")
    enabled = swaps is not None and len([x for x in swaps.splitlines() if x.strip()]) > 1
    features.attributes["memory.swap"] = {"enabled": "true" if enabled else "false"}


def memory_labels(features: Features) -> dict[str, str]:
    labels = {}
    if features.attributes.get("memory.numa", {}).get("is_numa") == "true":
        labels["memory-numa"] = "true"
    if features.attributes.get("memory.swap", {}).get("enabled") == "true":
        labels["memory-swap"] = "true"
    return labels


def parse_os_release(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        k, sep, v = line.strip().partition("=")
        if sep and k and not k.startswith("#"):
            out[k] = v.strip().strip('"').strip("'")
    vid = out.get("VERSION_ID")
    if vid:
        parts = vid.split(".")
        out["VERSION_ID.major"] = parts[0]
        if len(parts) > 1:
            out["VERSION_ID.minor"] = parts[1]
    return out


def discover_system(paths: HostPaths, features: Features, warnings: list[str]) -> None:
    text = read_text(paths.etc / "os-release")
    if text is None:
        text = read_text(paths.root / "usr" / "lib" / "os-release")
    if text is None:
        warnings.append(f"system: {paths.etc / 'os-release'} not readable")
        features.attributes["system.osrelease"] = {}
        return
    features.attributes["system.osrelease"] = parse_os_release(text)


def system_labels(features: Features) -> dict[str, str]:
    osr = features.attributes.get("system.osrelease", {})
    return {f"system-os_release.{k}": osr[k] for k in ("ID", "VERSION_ID", "VERSION_ID.major", "VERSION_ID.minor")
            if k in osr}
