"""Scenario nodes as nfd-worker sees them: NFD Features per node, built-in labels, the local source.

The lab's nodes are QEMU guests on an OpenStack-like cloud (i440fx PCI devices, virtio NIC and disk,
no NUMA, no SMT). Their facts come from the scenario (CPU model and flags, extra kernel modules and
PCI devices per node, the OS image) and the built-in labels come from `console.discovery`'s label
functions applied to these Features, so the lab labels nodes exactly as the engine predicts.

Per NFD version: features that appeared in a later release are left out (`cpu.model.hypervisor`
v0.18, `kernel.enabledmodule` v0.13, ...), labels that appeared later too (`cpu-model.*` v0.11), and
before v0.10 the worker publishes no features at all (it sent labels only over gRPC).
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.discovery.cpu import cpu_labels
from console.discovery.devices import (
    memory_labels,
    network_labels,
    parse_os_release,
    pci_labels,
    storage_labels,
    system_labels,
    usb_labels,
)
from console.discovery.kernel import kernel_labels, parse_kernel_version
from console.lab import nodehardware as NH
from console.lab.nodehardware import BASE_MODULES, BASE_PCI, KCONFIG
from console.lab.scenarios import HostOs, NodeSpec, PciDevice
from console.nfd import versions as V
from console.nfd.featurefile import read_features_dir
from console.nfd.hooks import DEFAULT_MAX_OUTPUT, HookResult, HooksRun, not_executable, run_error, run_hooks
from console.nfd.labels import FEATURE_NS, worker_label_check
from console.nfd.local import LABEL_FEATURE, RAW_FEATURE
from console.nfd.model import Features

# scenario spelling -> klauspost/cpuid name (what NFD labels)
FLAG_ALIASES = {"CMPXCHG16B": "CX16"}

# the nodes' hardware and kernel (console/lab/nodehardware.py: what the real nfd-worker reads from their files)
BUILTIN_MODULES = tuple(path.rsplit("/", 1)[-1] for path in NH.BUILTIN_MODULES)


def _pci_instance(d: PciDevice) -> dict[str, str]:
    inst = {"class": d.device_class[:4].lower(), "vendor": d.vendor.lower(), "device": d.device.lower(),
            "subsystem_vendor": d.subsystem_vendor.lower(), "subsystem_device": d.subsystem_device.lower()}
    if d.sriov_totalvfs is not None:
        inst["sriov_totalvfs"] = str(d.sriov_totalvfs)
    return inst


def node_features(node: NodeSpec, host: HostOs, version: V.NfdVersion | str | None = None) -> Features:
    """The built-in sources' features of one scenario node (no `local.*`), for NFD `version`."""
    v = V.parse_version(version)
    f = Features()
    cpu = node.cpu
    flags = {FLAG_ALIASES.get(x, x) for x in cpu.flags} | {"HYPERVISOR"}
    f.flags["cpu.cpuid"] = flags
    model = {"vendor_id": cpu.vendor_id, "family": str(cpu.family), "id": str(cpu.model_id)}
    if v.at_least(18):
        model["hypervisor"] = "KVM"
    f.attributes["cpu.model"] = model
    topo = {"hardware_multithreading": "false"}
    if v.at_least(15):
        topo["socket_count"] = "1"
    f.attributes["cpu.topology"] = topo

    f.attributes["kernel.version"] = parse_kernel_version(host.kernel_release)
    f.attributes["kernel.config"] = dict(KCONFIG)
    loaded = set(BASE_MODULES) | set(node.kernel_modules)
    f.flags["kernel.loadedmodule"] = loaded
    if v.at_least(13):
        f.flags["kernel.enabledmodule"] = loaded | set(BUILTIN_MODULES)
    f.attributes["kernel.selinux"] = {"enabled": "false"}

    f.attributes["memory.numa"] = {"is_numa": "false", "node_count": "1"}
    f.instances["memory.nv"] = []
    if v.at_least(16):
        f.attributes["memory.swap"] = {"enabled": "false"}
    if v.at_least(18):
        f.attributes["memory.hugepages"] = {"enabled": "false"}

    f.instances["network.device"] = [{"name": "ens3", "operstate": "up", "speed": "-1", "mtu": "1500"}]
    if v.at_least(15):
        f.instances["network.virtual"] = [{"name": "lo", "operstate": "unknown", "mtu": "65536"},
                                          {"name": "cni0", "operstate": "up", "mtu": "1450"}]

    f.instances["pci.device"] = [_pci_instance(d) for d in (*BASE_PCI, *node.pci_devices)]
    f.instances["usb.device"] = []
    f.instances["storage.block"] = [{"name": "vda", "dax": "0", "rotational": "1", "nr_zones": "0", "zoned": "none"}]

    f.attributes["system.osrelease"] = parse_os_release(host.os_release)
    if v.at_least(16):
        f.attributes["system.name"] = {"nodename": node.name}
        dmi = {"sys_vendor": "OpenStack Foundation"}
        if v.at_least(19):
            dmi.update(product_name="OpenStack Nova", bios_vendor="SeaBIOS")
        f.attributes["system.dmiid"] = dmi
    return f


def builtin_labels(features: Features, version: V.NfdVersion | str | None = None) -> dict[str, str]:
    """Labels of the built-in sources (fully prefixed), as nfd-worker of `version` publishes them."""
    v = V.parse_version(version)
    labels: dict[str, str] = {}
    for part in (cpu_labels(features), kernel_labels(features), memory_labels(features), network_labels(features),
                 pci_labels(features), storage_labels(features), system_labels(features), usb_labels(features)):
        labels.update(part)
    if not v.at_least(11):  # cpu-model.* labels arrived in v0.11
        labels = {k: val for k, val in labels.items() if not k.startswith("cpu-model.")}
    return {f"{FEATURE_NS}/{k}": val for k, val in sorted(labels.items())}


@dataclass
class LocalOutput:
    """One node's local source: what its worker read from features.d and source.d."""

    labels: dict[str, str] = field(default_factory=dict)  # worker-checked, as published in spec.labels
    features: dict[str, dict[str, str]] = field(default_factory=dict)  # local.label / local.feature
    hooks_status: str = "none"
    hooks: list[HookResult] = field(default_factory=list)
    hook_warnings: list[str] = field(default_factory=list)
    file_warnings: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str, str, str]] = field(default_factory=list)  # (key, value, reason, "hook"|"file")


def run_source_d(hooks_dir: Path, version: V.NfdVersion | str | None, *, node: str, enabled: bool | None,
                 timeout: float, max_output: int = DEFAULT_MAX_OUTPUT, root: Any = None) -> HooksRun:
    """Run a node's source.d as its nfd-worker does (the one place the lab runs hooks): each hook in the node's
    sandbox (`root`, its console.lab.guestroot.GuestRoot: real /bin/sh seeing the node's tree at /host-proc,
    /host-sys, …, console/lab/sandbox.run_hook), with `hooks_dir` at source.d; on this machine without one."""
    runner = None if root is None else functools.partial(_sandboxed_hook, root, Path(hooks_dir))
    return run_hooks(hooks_dir, V.parse_version(version), enabled=enabled, timeout=timeout, max_output=max_output,
                     env=hook_env(node), runner=runner)


def _sandboxed_hook(root: Any, hooks_dir: Path, path: Path, *, timeout: float, max_output: int,
                    env: Any = None) -> HookResult:
    """One hook in the node's sandbox, judged as console.nfd.hooks.run_hook judges one run here."""
    from console.lab import sandbox

    res = HookResult(name=path.name, ran=False)
    if error := not_executable(path):
        res.error = error
        return res
    start = time.monotonic()
    try:
        code, out, err, timed_out = sandbox.run_hook(root, f"{sandbox.NFD_SOURCE_D}/{path.name}", timeout=timeout,
                                                     max_output=max_output, env=env, source_d=hooks_dir)
    except sandbox.SandboxError as e:
        res.error = f"cannot start: {e}"
        return res
    res.ran, res.exit_code, res.stdout, res.stderr = True, code, out, err
    res.duration, res.timed_out = round(time.monotonic() - start, 3), timed_out
    res.output_capped = not timed_out and len(out.encode()) >= max_output
    res.error = run_error(res, timeout, max_output)
    return res


def local_output(features_dir: Path | None, hooks: HooksRun | None, version: V.NfdVersion | str | None
                 ) -> LocalOutput:
    """features.d + a source.d run -> what nfd-worker publishes (labels it accepts, `local.*` features).

    Mirrors `console.nfd.local.local_source` up to the worker's output (the master's filtering is left
    to `compute_node_outcome`), keeping hook and feature-file problems apart so they can be reported apart.
    """
    v = V.parse_version(version)
    out = LocalOutput()
    labels: dict[str, str] = {}
    origin: dict[str, str] = {}
    raw: dict[str, str] = {}
    if features_dir is not None:
        fd = read_features_dir(features_dir, v)
        labels.update(fd.labels)
        origin.update(dict.fromkeys(fd.labels, "file"))
        raw.update(fd.features)
        out.file_warnings.extend(w for w in fd.warnings if "does not exist" not in w)
    if hooks is not None:
        out.hooks_status, out.hooks = hooks.status, hooks.results
        out.hook_warnings.extend(w for w in hooks.warnings if "does not exist" not in w)
        labels.update(hooks.labels)  # hooks override feature files
        origin.update(dict.fromkeys(hooks.labels, "hook"))
        raw.update(hooks.features)
    if V.rules_supported(v):  # the FeatureSource model (local.label) dates from v0.10
        out.features[LABEL_FEATURE] = dict(sorted(labels.items()))
        if V.feature_file_no_label_directives(v):
            out.features[RAW_FEATURE] = dict(sorted(raw.items()))
    for k, val in labels.items():
        reason = worker_label_check(k, val)
        if reason:
            out.dropped.append((k, val, reason, origin[k]))
        else:
            out.labels[k] = val
    return out


def worker_publication(builtin: Features, local: LocalOutput, version: V.NfdVersion | str | None
                       ) -> tuple[Features, dict[str, str]]:
    """spec.features and spec.labels of the worker's NodeFeature (local labels win over built-ins)."""
    v = V.parse_version(version)
    labels = builtin_labels(builtin, v)
    labels.update(local.labels)
    if not V.rules_supported(v):
        return Features(), labels  # before v0.10 the worker sent labels only
    features = builtin.copy()
    for name, elems in local.features.items():
        features.attributes[name] = dict(elems)
    return features, labels


def hook_env(node_name: str) -> dict[str, str]:
    """The environment hooks run with: nfd-worker's NODE_NAME (from its DaemonSet's fieldRef) and a PATH."""
    return {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "LANG": "C.UTF-8", "NODE_NAME": node_name}
