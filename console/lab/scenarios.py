"""Lab scenarios: the worlds the lab can start.

`seed-resize` and `seed-live` reproduce the two halves of field report 2
(shared/reference/field-reports.md); `default` is what `--lab` opens; `scale`
is the synthetic world for benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from console.lab.vm import Flavor
from console.nfd.versions import CURRENT as NFD_CURRENT

FLAVORS: tuple[Flavor, ...] = (
    Flavor("1", "m1.tiny", 1, 512, 1),
    Flavor("2", "m1.small", 1, 2048, 20),
    Flavor("3", "m1.medium", 2, 4096, 40),
    Flavor("4", "m1.large", 8, 12288, 80),
    Flavor("5", "m1.xlarge", 16, 24576, 160),
)
FLAVOR_BY_NAME = {f.name: f for f in FLAVORS}

MASTER_TAINT = {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}


@dataclass(frozen=True)
class CpuModel:
    """What NFD's cpu source would find on a node (feeds the lab's NodeFeatures)."""

    vendor_id: str
    family: int
    model_id: int
    model_name: str
    flags: tuple[str, ...]


_BASE_FLAGS = ("SSE4", "SSE42", "AESNI", "POPCNT", "CMPXCHG16B", "MOVBE", "RDRAND", "X87", "FXSR", "OSXSAVE")
HASWELL = CpuModel(
    "Intel", 6, 63, "Intel Xeon E5-2690 v3 (Haswell)", (*_BASE_FLAGS, "AVX", "AVX2", "FMA3", "BMI1", "BMI2", "F16C")
)
SKYLAKE = CpuModel(
    "Intel",
    6,
    85,
    "Intel Xeon Gold 6148 (Skylake-SP)",
    (*HASWELL.flags, "ADX", "RDSEED", "AVX512F", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512VL"),
)
ICELAKE = CpuModel(
    "Intel",
    6,
    106,
    "Intel Xeon Platinum 8380 (Ice Lake-SP)",
    (
        *SKYLAKE.flags,
        "AVX512VNNI",
        "AVX512VBMI",
        "AVX512VBMI2",
        "AVX512BITALG",
        "AVX512VPOPCNTDQ",
        "AVX512IFMA",
        "GFNI",
        "VAES",
        "VPCLMULQDQ",
        "SHA",
    ),
)
ZEN3 = CpuModel("AMD", 25, 1, "AMD EPYC 7763 (Zen 3)", (*HASWELL.flags, "ADX", "RDSEED", "SHA", "VAES", "VPCLMULQDQ"))


@dataclass(frozen=True)
class PciDevice:
    """A PCI function as NFD's pci source reads it from sysfs (lower-case hex, class cut to 4 digits)."""

    vendor: str
    device: str
    device_class: str
    subsystem_vendor: str = "1af4"
    subsystem_device: str = "1100"
    sriov_totalvfs: int | None = None


UBUNTU_2004 = """NAME="Ubuntu"
VERSION="20.04.6 LTS (Focal Fossa)"
ID=ubuntu
ID_LIKE=debian
PRETTY_NAME="Ubuntu 20.04.6 LTS"
VERSION_ID="20.04"
VERSION_CODENAME=focal
UBUNTU_CODENAME=focal
"""

UBUNTU_2204 = """PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy
"""


@dataclass(frozen=True)
class HostOs:
    """The nodes' OS image: what NFD's kernel and system sources read (`/proc/sys/kernel/osrelease`, os-release)."""

    kernel_release: str = "5.4.0-165-generic"
    os_release: str = UBUNTU_2004

    @property
    def os_image(self) -> str:
        """PRETTY_NAME, as the kubelet reports it in nodeInfo.osImage."""
        for line in self.os_release.splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.partition("=")[2].strip('"')
        return ""


FOCAL = HostOs("5.4.0-165-generic", UBUNTU_2004)
JAMMY_HWE = HostOs("6.8.0-57-generic", UBUNTU_2204)

# The lab's NFD node groups: hooks and feature files live in ConfigMaps `nfd-hooks-<group>` and
# `nfd-features-<group>` (namespace node-feature-discovery); a node's group is this label's value.
NFD_GROUP_LABEL = "node.console.lab/group"


@dataclass(frozen=True)
class NfdGroup:
    """Hooks (`source.d`) and feature files (`features.d`) shared by the nodes of one group."""

    name: str
    hooks: tuple[tuple[str, str], ...] = ()  # (file name, script text)
    feature_files: tuple[tuple[str, str], ...] = ()  # (file name, content)


@dataclass(frozen=True)
class NodeSpec:
    name: str
    flavor: str
    role: str = "worker"  # worker | control-plane
    cpu: CpuModel = HASWELL
    compute_host: str = "cmp001"
    labels: tuple[tuple[str, str], ...] = ()
    # the node's kubelet uses the static CPU manager (its state file blocks a restart)
    cpu_manager_static: bool = False
    # NFD facts beyond the image's defaults (console/lab/nfd_features.py): extra loaded kernel modules, PCI devices
    kernel_modules: tuple[str, ...] = ()
    pci_devices: tuple[PciDevice, ...] = ()

    @property
    def nfd_group(self) -> str:
        """The NFD node group: the NFD_GROUP_LABEL label, else by role (`control-plane` / `workers`)."""
        by_role = "control-plane" if self.role == "control-plane" else "workers"
        return dict(self.labels).get(NFD_GROUP_LABEL) or by_role


@dataclass(frozen=True)
class PodSpec:
    name: str
    cpu: str
    memory: str
    node: str | None = None  # None: left to the scheduler
    namespace: str = "default"
    image: str = "nginx:1.21"
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    kubernetes_version: str
    nfd_version: str
    nodes: tuple[NodeSpec, ...]
    pods: tuple[PodSpec, ...] = ()
    flavors: tuple[Flavor, ...] = FLAVORS
    # synthetic scale world: nodes without VMs, pods bound up front
    scale_nodes: int = 0
    scale_pods_per_node: int = 0
    namespaces: tuple[str, ...] = ("default", "kube-system", "kube-node-lease", "node-feature-discovery")
    extra: dict[str, str] = field(default_factory=dict)
    host_os: HostOs = FOCAL
    nfd_groups: tuple[NfdGroup, ...] = ()
    # further API objects at seed time: (store resource, object), e.g. console/lab/workloads.py's
    objects: tuple[tuple[str, dict], ...] = ()


# Field report 1's example hook: selected sysctl values read from the host's /proc. In the lab the
# hook really runs on this machine (the lab's "guest"), so the values are this machine's.
SYSCTL_HOOK = """#!/bin/sh
# my-script: selected sysctl values as node labels (field report 1)
for key in kernel.pid_max kernel.threads-max vm.max_map_count vm.swappiness; do
  f=/proc/sys/$(echo "$key" | tr . /)
  [ -r "$f" ] && echo "$key=$(cat "$f")"
done
exit 0
"""

WORKERS_INVENTORY_V08 = """rack=r1
/lab.inventory=true
"""

WORKERS_INVENTORY = """# written by the site inventory CronJob in a real cluster
# +expiry-time=2099-01-01T00:00:00Z
example.com/rack=r1
storage.tier=ssd
# +no-label
inventory.serial=LAB-0001
"""

CONTROL_PLANE_INVENTORY = """# written by the site inventory CronJob in a real cluster
example.com/rack=r0
"""

_GROUP_WORKERS = ((NFD_GROUP_LABEL, "workers"),)
_GROUP_CONTROL_PLANE = ((NFD_GROUP_LABEL, "control-plane"),)

REPORT_NFD_GROUPS = (
    NfdGroup("workers", hooks=(("my-script", SYSCTL_HOOK),), feature_files=(("inventory", WORKERS_INVENTORY_V08),)),
    NfdGroup("control-plane", hooks=(("my-script", SYSCTL_HOOK),)),
)

DEFAULT_NFD_GROUPS = (
    # hooks are gone since NFD v0.17: the leftover hook shows what the console warns about
    NfdGroup("workers", hooks=(("my-script", SYSCTL_HOOK),), feature_files=(("inventory", WORKERS_INVENTORY),)),
    NfdGroup("control-plane", feature_files=(("inventory", CONTROL_PLANE_INVENTORY),)),
)

# A NVIDIA A100 passed through to one worker (class 0302: the pci source labels class 03 devices)
A100 = PciDevice("10de", "20b5", "0302", "10de", "1533")


def _report_nodes(worker02_flavor: str) -> tuple[NodeSpec, ...]:
    return (
        NodeSpec("kube-controlplane01", "m1.medium", role="control-plane", cpu=HASWELL, labels=_GROUP_CONTROL_PLANE),
        NodeSpec("kube-worker01", "m1.medium", cpu=HASWELL, compute_host="cmp001", labels=_GROUP_WORKERS,
                 kernel_modules=("vfio_pci",)),
        NodeSpec("kube-worker02", worker02_flavor, cpu=SKYLAKE, compute_host="cmp001", labels=_GROUP_WORKERS,
                 kernel_modules=("vfio_pci", "vhost_net")),
    )


SEED_RESIZE = Scenario(
    name="seed-resize",
    description="Field report 2, offline part: nginx (cpu 3, memory 5Gi) Pending on 2 vCPU / 4 GB workers",
    kubernetes_version="v1.21.6",
    nfd_version="v0.8.2",
    nodes=_report_nodes("m1.medium"),
    pods=(PodSpec("nginx", "3", "5Gi"),),
    host_os=FOCAL,
    nfd_groups=REPORT_NFD_GROUPS,
)

SEED_LIVE = Scenario(
    name="seed-live",
    description="Field report 2, online part: nginx-large (cpu 9, memory 13Gi) Pending; kube-worker02 on m1.large",
    kubernetes_version="v1.21.6",
    nfd_version="v0.8.2",
    nodes=_report_nodes("m1.large"),
    pods=(PodSpec("nginx-large", "9", "13Gi"),),
    host_os=FOCAL,
    nfd_groups=REPORT_NFD_GROUPS,
)

def _default_objects() -> tuple[tuple[str, dict], ...]:
    from console.lab import workloads as w

    return (
        *w.statefulset("default", "analytics", w.template("analytics", cpu="6", memory="8Gi"),
                       ["kube-worker03", "kube-worker04"]),
        *w.statefulset("default", "web", w.template("web", cpu="500m", memory="512Mi"),
                       ["kube-worker01", "kube-worker02"]),
    )


DEFAULT = Scenario(
    name="default",
    description="Both field reports in one cluster, with NFD labels for several CPU generations",
    kubernetes_version="v1.32.4",
    nfd_version=str(NFD_CURRENT),
    nodes=(
        NodeSpec("kube-controlplane01", "m1.medium", role="control-plane", cpu=HASWELL, labels=_GROUP_CONTROL_PLANE),
        NodeSpec("kube-worker01", "m1.medium", cpu=HASWELL, compute_host="cmp001", labels=_GROUP_WORKERS),
        NodeSpec("kube-worker02", "m1.medium", cpu=SKYLAKE, compute_host="cmp001", labels=_GROUP_WORKERS,
                 kernel_modules=("vfio_pci", "vhost_net")),
        NodeSpec("kube-worker03", "m1.large", cpu=ICELAKE, compute_host="cmp002", labels=_GROUP_WORKERS,
                 kernel_modules=("vfio_pci",), pci_devices=(A100,)),
        NodeSpec("kube-worker04", "m1.large", cpu=ZEN3, compute_host="cmp002", cpu_manager_static=True,
                 labels=_GROUP_WORKERS, kernel_modules=("vhost_net",)),
    ),
    # the running apps have controllers, as on a real cluster (a scale-up drains them without --force);
    # only the Pending nginx is a bare pod, as in field report 2
    pods=(PodSpec("nginx", "3", "5Gi", labels=(("app", "nginx"),)),),
    host_os=JAMMY_HWE,
    nfd_groups=DEFAULT_NFD_GROUPS,
    objects=_default_objects(),
)


def scale(nodes: int, pods_per_node: int) -> Scenario:
    return Scenario(
        name="scale",
        description=f"Synthetic scale world: {nodes} nodes, {pods_per_node} pods per node",
        kubernetes_version="v1.32.4",
        nfd_version="v0.18.1",
        nodes=(),
        scale_nodes=nodes,
        scale_pods_per_node=pods_per_node,
    )


def _drain_objects() -> tuple[tuple[str, dict], ...]:
    from console.lab import workloads as w

    name = "seed-drain"
    return (
        # frontend: a Deployment with a pod on each worker, and a budget that lets one go at a time
        *w.deployment(name, "frontend", w.template("frontend"), ["kube-worker01", "kube-worker02"]),
        *w.pdb("frontend-pdb", "frontend", min_available=1),
        # db: a StatefulSet whose pod keeps data in an emptyDir, and a budget that lets none go
        *w.statefulset(name, "db", w.template("db", image="postgres:16", volumes=[{"name": "data", "emptyDir": {}}]),
                       ["kube-worker02"]),
        *w.pdb("db-pdb", "db", min_available=1),
        # a node agent on every node
        *w.daemonset("node-exporter", w.template("node-exporter", image="prom/node-exporter:v1.8.2", cpu="10m",
                                                 memory="32Mi")),
    )


SEED_DRAIN = Scenario(
    name="seed-drain",
    description="seed-resize plus what a drain meets on kube-worker02: a bare pod, a StatefulSet pod with emptyDir "
                "data behind a PDB allowing no disruption, a Deployment pod behind a PDB allowing one, a DaemonSet",
    kubernetes_version="v1.21.6",
    nfd_version="v0.8.2",
    nodes=_report_nodes("m1.medium"),
    pods=(PodSpec("nginx", "3", "5Gi"), PodSpec("debug-shell", "50m", "64Mi", node="kube-worker02",
                                                image="busybox:1.36")),
    host_os=FOCAL,
    nfd_groups=REPORT_NFD_GROUPS,
    objects=_drain_objects(),
)

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (DEFAULT, SEED_RESIZE, SEED_LIVE, SEED_DRAIN)}


def get(name: str, *, nodes: int | None = None, pods_per_node: int | None = None) -> Scenario:
    """A scenario by name; `--nodes/--pods-per-node` select the synthetic scale world."""
    if nodes is not None or name == "scale":
        return scale(nodes or 1000, pods_per_node if pods_per_node is not None else 30)
    try:
        return SCENARIOS[name]
    except KeyError:
        known = ", ".join([*SCENARIOS, "scale"])
        raise ValueError(f"unknown scenario {name!r}; choose one of: {known}") from None
