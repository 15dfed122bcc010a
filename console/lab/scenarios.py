"""Lab scenarios: the worlds the lab can start.

`seed-resize` and `seed-live` reproduce the two halves of field report 2
(shared/reference/field-reports.md), with NFD as field report 1 ran it (v0.8.2 there; v0.9.0 here, the oldest
release the lab can build, of the same design: nfd-worker to nfd-master over gRPC, hooks from the nodes'
source.d, no NodeFeature API); `default` is what `--lab` opens (NFD v0.19 from its own manifests, hostPath
features.d); `nfd-configmap` (v0.16, features.d from a ConfigMap volume) and `nfd-gpu-operator` (NFD v0.16.6 in
`gpu-operator`, master with `-extra-label-ns=nvidia.com`) are the other ways clusters run NFD; `scale` is the
synthetic world for benchmarks. Every NFD release named here is one the lab builds and runs (docs/CONTRIBUTING.md,
"Upstream node-feature-discovery").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from console.lab.vm import ComputeHost, Flavor, Quota

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


_BASE_FLAGS = ("SSSE3", "SSE4", "SSE42", "CLMUL", "AESNI", "POPCNT", "CMPXCHG16B", "MOVBE", "RDRAND", "RDTSCP",
               "X87", "FXSR", "OSXSAVE")
HASWELL = CpuModel(
    "Intel", 6, 63, "Intel Xeon E5-2690 v3 (Haswell)",
    (*_BASE_FLAGS, "AVX", "AVX2", "FMA3", "BMI1", "BMI2", "F16C", "LZCNT", "ERMS"),
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

NFD_NEWEST = "v0.19.0"  # the newest NFD release the lab builds (console/lab/upstream/build.py NFD)

# nfd-worker.conf of the lab's scenarios: nfd-worker re-reads its sources every core.sleepInterval (60s by
# default); the lab relabels within seconds so a changed feature file shows up while one waits
LAB_WORKER_CONF = """core:
  sleepInterval: 2s
"""


@dataclass(frozen=True)
class NfdSetup:
    """How a scenario deploys NFD: an overlay of the release's own manifests (console/lab/nfd_release.py)."""

    namespace: str = "node-feature-discovery"
    master_args: tuple[str, ...] = ()  # nfd-master's args beyond the version's manifest
    worker_config: str = LAB_WORKER_CONF  # nfd-worker-conf / nfd-worker.conf
    master_config: str = ""  # nfd-master-conf / nfd-master.conf (v0.13+)
    features_configmap: str = ""  # features.d from this ConfigMap volume; "" = hostPath, as NFD's manifests
    features_files: tuple[tuple[str, str], ...] = ()  # that ConfigMap's data (file name, content)
    workloads: bool = True  # False: only the CRDs
    # nfd-worker's tolerations beyond the control plane's (NFD's Helm chart: worker.tolerations), so a tainted
    # pool is labelled too
    worker_tolerations: tuple[dict, ...] = ()


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
    # the node's hardware beyond the image's defaults (console/lab/nodehardware.py): loaded kernel modules, PCI devices
    kernel_modules: tuple[str, ...] = ()
    pci_devices: tuple[PciDevice, ...] = ()
    # files in the node's filesystem at start (guest path, content): hooks in source.d are made executable
    files: tuple[tuple[str, str], ...] = ()
    taints: tuple[dict, ...] = ()  # beyond the control plane's


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
    # and Pending pods for the capacity planner (console/lab/seed.py scale_pending_pods): then each node is also
    # a Nova server (no hypervisor behind it) on a compute host of SCALE_NODES_PER_HOST nodes
    scale_pending: int = 0
    namespaces: tuple[str, ...] = ("default", "kube-system", "kube-node-lease")
    extra: dict[str, str] = field(default_factory=dict)
    host_os: HostOs = FOCAL
    nfd: NfdSetup = NfdSetup()
    # further API objects at seed time: (store resource, object), e.g. console/lab/workloads.py's
    objects: tuple[tuple[str, dict], ...] = ()
    # Nova's compute hosts (Placement resource providers); a host the nodes name but this omits is
    # console.lab.vm.ROOMY_HOST
    compute_hosts: tuple[ComputeHost, ...] = ()
    quota: Quota = field(default_factory=Quota)


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

# Field report 1's other example hook: /proc/cpuinfo fields as labels (the first CPU's; awk as on any node)
CPUINFO_HOOK = """#!/bin/sh
# cpuinfo: CPU identification from /proc/cpuinfo as node labels (field report 1)
[ -r /proc/cpuinfo ] || exit 0
awk -F': *' '/^(cpu family|model|stepping)[[:space:]]*:/ && !seen[$1]++ {
  k = $1; sub(/[[:space:]]+$/, "", k); sub(/^cpu /, "", k); print k "=" $2 }' /proc/cpuinfo
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

HOOK = "/etc/kubernetes/node-feature-discovery/source.d/"
FEATURE = "/etc/kubernetes/node-feature-discovery/features.d/"

# A NVIDIA A100 passed through to one worker (class 0302: the pci source labels class 03 devices)
A100 = PciDevice("10de", "20b5", "0302", "10de", "1533")


def _report_nodes(worker02_flavor: str) -> tuple[NodeSpec, ...]:
    # field report 1: the cpuinfo hook on every node (hostPath source.d), an inventory file on the workers;
    # the sysctl hook `my-script` is what the admin pushes (to one node, then more)
    hook = (HOOK + "cpuinfo", CPUINFO_HOOK)
    inventory = (FEATURE + "inventory", WORKERS_INVENTORY_V08)
    return (
        NodeSpec("kube-controlplane01", "m1.medium", role="control-plane", cpu=HASWELL, files=(hook,)),
        NodeSpec("kube-worker01", "m1.medium", cpu=HASWELL, compute_host="cmp001", kernel_modules=("vfio_pci",),
                 files=(hook, inventory)),
        NodeSpec("kube-worker02", worker02_flavor, cpu=SKYLAKE, compute_host="cmp001",
                 kernel_modules=("vfio_pci", "vhost_net"), files=(hook, inventory)),
    )


SEED_RESIZE = Scenario(
    name="seed-resize",
    description="Field report 2, offline part: nginx (cpu 3, memory 5Gi) Pending on 2 vCPU / 4 GB workers",
    kubernetes_version="v1.21.6",
    nfd_version="v0.9.0",
    nodes=_report_nodes("m1.medium"),
    pods=(PodSpec("nginx", "3", "5Gi"),),
    host_os=FOCAL,
)

SEED_LIVE = Scenario(
    name="seed-live",
    description="Field report 2, online part: nginx-large (cpu 9, memory 13Gi) Pending; kube-worker02 on m1.large",
    kubernetes_version="v1.21.6",
    nfd_version="v0.9.0",
    nodes=_report_nodes("m1.large"),
    pods=(PodSpec("nginx-large", "9", "13Gi"),),
    host_os=FOCAL,
)

def _default_objects() -> tuple[tuple[str, dict], ...]:
    from console.lab import workloads as w

    return (
        *w.statefulset("default", "analytics", w.template("analytics", cpu="6", memory="8Gi"),
                       ["kube-worker03", "kube-worker04"]),
        *w.statefulset("default", "web", w.template("web", cpu="500m", memory="512Mi"),
                       ["kube-worker01", "kube-worker02"]),
    )


# hooks are gone since NFD v0.17 (and v0.19's DaemonSet mounts no source.d): the leftover hook on the workers
# shows what the console warns about
_LEFTOVER_HOOK = (HOOK + "my-script", SYSCTL_HOOK)
_WORKER_FILES = (_LEFTOVER_HOOK, (FEATURE + "inventory", WORKERS_INVENTORY))

DEFAULT = Scenario(
    name="default",
    description="Both field reports in one cluster, with NFD labels for several CPU generations",
    kubernetes_version="v1.32.4",
    nfd_version=NFD_NEWEST,
    nodes=(
        NodeSpec("kube-controlplane01", "m1.medium", role="control-plane", cpu=HASWELL,
                 files=((FEATURE + "inventory", CONTROL_PLANE_INVENTORY),)),
        NodeSpec("kube-worker01", "m1.medium", cpu=HASWELL, compute_host="cmp001", files=_WORKER_FILES),
        NodeSpec("kube-worker02", "m1.medium", cpu=SKYLAKE, compute_host="cmp001",
                 kernel_modules=("vfio_pci", "vhost_net"), files=_WORKER_FILES),
        NodeSpec("kube-worker03", "m1.large", cpu=ICELAKE, compute_host="cmp002",
                 kernel_modules=("vfio_pci",), pci_devices=(A100,), files=_WORKER_FILES),
        NodeSpec("kube-worker04", "m1.large", cpu=ZEN3, compute_host="cmp002", cpu_manager_static=True,
                 kernel_modules=("vhost_net",), files=_WORKER_FILES),
    ),
    # the running apps have controllers, as on a real cluster (a scale-up drains them without --force);
    # only the Pending nginx is a bare pod, as in field report 2
    pods=(PodSpec("nginx", "3", "5Gi", labels=(("app", "nginx"),)),),
    host_os=JAMMY_HWE,
    objects=_default_objects(),
)

# The NFD article's alternative: feature files delivered by a ConfigMap mounted at features.d (every node the
# DaemonSet runs on reads the same files); hooks stay on the nodes (hostPath source.d) but NFD v0.16 runs them
# only with sources.local.hooksEnabled: true in nfd-worker.conf, which this worker config leaves unset.
CONFIGMAP_FEATURES = """# delivered by the nfd-features ConfigMap (nfd-worker's features-d volume)
example.com/rack=r7
storage.tier=ssd
"""

NFD_CONFIGMAP = Scenario(
    name="nfd-configmap",
    description="NFD v0.16.6: features.d from the nfd-features ConfigMap volume; hooks off unless the worker "
                "config enables them",
    kubernetes_version="v1.30.6",
    nfd_version="v0.16.6",
    nodes=(
        NodeSpec("kube-controlplane01", "m1.medium", role="control-plane", cpu=HASWELL),
        NodeSpec("kube-worker01", "m1.medium", cpu=HASWELL, compute_host="cmp001", files=(_LEFTOVER_HOOK,)),
        NodeSpec("kube-worker02", "m1.medium", cpu=SKYLAKE, compute_host="cmp001",
                 kernel_modules=("vfio_pci", "vhost_net"), files=(_LEFTOVER_HOOK,)),
    ),
    host_os=JAMMY_HWE,
    nfd=NfdSetup(features_configmap="nfd-features", features_files=(("inventory", CONFIGMAP_FEATURES),)),
)

# NVIDIA's GPU operator deploys NFD (its Helm subchart) in its own namespace, with the master allowing the
# nvidia.com label namespace (gpu-operator values: node-feature-discovery.master.extraLabelNs); NFD v0.16.6 as
# gpu-operator v24.9.0 ships it (its chart's dependency, NVIDIA/gpu-operator stable/index.yaml). gpu-feature-discovery
# writes its labels into features.d (file `gfd`).
GFD_FEATURES = """nvidia.com/gpu.present=true
nvidia.com/gpu.product=NVIDIA-A100-PCIE-40GB
nvidia.com/gpu.count=1
"""

NFD_GPU_OPERATOR = Scenario(
    name="nfd-gpu-operator",
    description="NFD v0.16.6 in namespace gpu-operator, nfd-master run with -extra-label-ns=nvidia.com; "
                "an A100 on kube-worker02 with gpu-feature-discovery's features.d file",
    kubernetes_version="v1.30.6",
    nfd_version="v0.16.6",
    nodes=(
        NodeSpec("kube-controlplane01", "m1.medium", role="control-plane", cpu=HASWELL),
        NodeSpec("kube-worker01", "m1.medium", cpu=HASWELL, compute_host="cmp001"),
        NodeSpec("kube-worker02", "m1.large", cpu=ICELAKE, compute_host="cmp002", kernel_modules=("vfio_pci",),
                 pci_devices=(A100,), files=((FEATURE + "gfd", GFD_FEATURES),)),
    ),
    host_os=FOCAL,
    nfd=NfdSetup(namespace="gpu-operator", master_args=("-extra-label-ns=nvidia.com",)),
)


# the scale world's VM sizes: its nodes report 16 CPUs / 64 GiB (r1.xlarge) and may grow to r1.2xlarge
SCALE_FLAVORS: tuple[Flavor, ...] = (*FLAVORS, Flavor("6", "r1.xlarge", 16, 65536, 160),
                                     Flavor("7", "r1.2xlarge", 32, 131072, 320))
SCALE_NODES_PER_HOST = 50
# a host of 50 r1.xlarge nodes (800 of 1024 vCPUs, 3200 of 4096 GiB) with room for some upsizes to r1.2xlarge:
# by the sum of deltas (+16 vCPUs, +64 GiB each) 14 fit, but a same-host resize claims the whole new flavor
# (32 vCPUs / 128 GiB) beside the old one, so one after the other 13 do
SCALE_HOST = ComputeHost("", vcpus=1024, memory_mb=4 * 1024 * 1024)


def scale(nodes: int, pods_per_node: int, pending: int = 0) -> Scenario:
    """The synthetic scale world; `pending` adds that many Pending pods (console/lab/seed.py
    scale_pending_pods) and makes the nodes Nova servers the planner can size."""
    hosts: tuple[ComputeHost, ...] = ()
    if pending:
        count = -(-nodes // SCALE_NODES_PER_HOST)
        hosts = tuple(ComputeHost(f"cmp{i:03d}", SCALE_HOST.vcpus, SCALE_HOST.memory_mb) for i in range(count))
    more = f", {pending} Pending pods" if pending else ""
    return Scenario(
        name="scale",
        description=f"Synthetic scale world: {nodes} nodes, {pods_per_node} pods per node{more}",
        kubernetes_version="v1.32.4",
        nfd_version="v0.18.3",
        nodes=(),
        scale_nodes=nodes,
        scale_pods_per_node=pods_per_node,
        scale_pending=pending,
        nfd=NfdSetup(workloads=False),
        flavors=SCALE_FLAVORS if pending else FLAVORS,
        compute_hosts=hosts,
    )


HPC_TAINT = {"key": "dedicated", "value": "hpc", "effect": "NoSchedule"}
HPC_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "hpc", "effect": "NoSchedule"}
AVX512F = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"
A100_PRESENT = "feature.node.kubernetes.io/pci-0302_10de.present"  # NFD's pci label of an NVIDIA display controller


def _planner_objects(name: str) -> tuple[tuple[str, dict], ...]:
    from console.lab import workloads as w

    train = w.template("train", image="registry.lab/hpc/train:1", cpu="6", memory="8Gi")
    train["spec"]["nodeSelector"] = {AVX512F: "true"}
    train["spec"]["tolerations"] = [dict(HPC_TOLERATION)]
    train["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"job-name": "train"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    inference = w.template("inference", image="registry.lab/ml/inference:1", cpu="1", memory="2Gi")
    inference["spec"]["nodeSelector"] = {A100_PRESENT: "true"}
    return (
        *w.job(name, "train", train, 3),
        w.pending_pod(name, "etl", w.template("etl", image="registry.lab/etl:1", cpu="4", memory="4Gi")),
        w.pending_pod(name, "solver-xl", w.template("solver-xl", image="registry.lab/hpc/solver:1", cpu="20",
                                                    memory="16Gi")),
        w.pending_pod(name, "inference", inference),
        # what the grown nodes' neighbours run: controllers' pods, drainable without --force
        *w.deployment(name, "api", w.template("api", cpu="5", memory="6Gi"), ["kube-worker05"]),
        # a cache whose budget allows no disruption: kube-worker02's drain is blocked
        *w.statefulset(name, "cache", w.template("cache", image="redis:7.2", cpu="500m", memory="512Mi"),
                       ["kube-worker02"]),
        *w.pdb("cache-pdb", "cache", min_available=1),
    )


def _planner() -> Scenario:
    """The capacity planner's world (issue 13): which VMs to grow, to what, so the Pending pods run.

    Nodes (Kubernetes v1.32.4, NFD current; CPU model → NFD's cpu-cpuid labels; AVX512F on Skylake/Ice Lake):
      node                 flavor     vCPU/MB     host    CPU        taint                 runs (besides NFD)
      kube-controlplane01  m1.medium  2/4096      cmp003  Haswell    master NoSchedule     nfd-master
      kube-worker01        m1.medium  2/4096      cmp001  Skylake    dedicated=hpc         -
      kube-worker02        m1.medium  2/4096      cmp001  Skylake    dedicated=hpc         cache-0 (500m/512Mi,
                                                                                            PDB minAvailable 1)
      kube-worker03        m1.medium  2/4096      cmp002  Ice Lake   dedicated=hpc         -
      kube-worker04        m1.small   1/2048      cmp002  Ice Lake   dedicated=hpc         -
      kube-worker05        m1.large   8/12288     cmp003  Haswell    -                     api (5 cpu/6Gi)
    Flavors: m1.tiny 1/512, m1.small 1/2048, m1.medium 2/4096, m1.large 8/12288, m1.xlarge 16/24576.
    Allocatable: cpu = vCPUs; memory = MemTotal - 100Mi (m1.large ≈ 11.6Gi, m1.xlarge ≈ 23.2Gi). Every node runs
    nfd-worker (5m/64Mi; it tolerates dedicated=hpc).

    Compute hosts (Placement inventories; capacity = (total - reserved) × allocation_ratio 1.0):
      cmp001: VCPU 14, reserved 2 → 12; used 4 (worker01, worker02) → 8 free.  MEMORY_MB 32768 - 512; used 8192
      cmp002: VCPU 32 → 32; used 3 → 29 free.                                      MEMORY_MB 65536 - 512; used 6144
      cmp003: VCPU 32 → 32; used 10 → 22 free.                                     MEMORY_MB 65536 - 512; used 16384
    A resize is in place (same host): Nova's Placement holds the old flavor (migration allocation) while it claims
    the new one, so a resize needs the new flavor's vCPUs/MB free; it fails NoValidHost otherwise.
    Project quota (GET /limits): cores 17 used of 36 (19 left), RAM 30720 of 81920 MB, instances 6 of 10.

    Pending pods (namespace default):
      train-* ×3 (Job train): 6 cpu / 8Gi, nodeSelector AVX512F=true, tolerates dedicated=hpc, required pod
        anti-affinity on kubernetes.io/hostname against job-name=train (one per node);
      etl: 4 cpu / 4Gi, no selector or tolerations (only kube-worker05 admits it);
      solver-xl: 20 cpu / 16Gi (more than m1.xlarge's 16 vCPUs);
      inference: 1 cpu / 2Gi, nodeSelector pci-0302_10de.present=true (no node has an NVIDIA GPU).
    FailedScheduling now: train "0/6 nodes are available: 1 node(s) didn't match Pod's node affinity/selector,
    1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, 4 Insufficient cpu, 4 Insufficient memory."

    Expected optimum (by hand):
      - solver-xl: unplaceable, needs more than the largest flavor (m1.xlarge, 16 vCPUs).
      - inference: unplaceable, no node matches its nodeSelector.
      - train ×3 need three different AVX512F nodes grown to m1.large (m1.medium is too small, m1.large fits even
        beside cache-0): candidates worker01/02 (cmp001) and worker03/04 (cmp002). cmp001's 8 free vCPUs take one
        upsize to m1.large, not two (+6 +6 > 8). So {worker01 or worker02, worker03, worker04}: +6 +6 +7 = 19
        cores, exactly the quota left; +8192 +8192 +10240 MB. worker01 and worker02 cost the same; worker02's
        cache-0 is PDB-blocked, so the preference picks worker01.
      - etl: kube-worker05 m1.large → m1.xlarge (+8 cores) has room on cmp003 but no quota after the job; etl plus
        two train pods would need 8 + 12 = 20 > 19 cores, so three pods is the most, and only the job's three.
      Plan: kube-worker01 m1.medium→m1.large (train), kube-worker03 m1.medium→m1.large (train), kube-worker04
      m1.small→m1.large (train); +19 vCPU, +26 GiB (cost 45 with the default weights); unplaceable: etl (quota:
      cores), solver-xl, inference.
    Anti-affinity is not what binds the optimum (two train pods on one m1.xlarge would cost more cores than the
    quota leaves), but a plan must keep it: on a node grown to m1.large a second train pod is refused for cpu
    first (NodeResourcesFit filters before InterPodAffinity); on an m1.xlarge one with room it would be "node(s)
    didn't match pod anti-affinity rules". A deleted train pod is replaced by the Job controller (new name).
    On a machine with less RAM than 24 GiB and no swap, QEMU cannot start an m1.xlarge guest (Linux's overcommit
    heuristic refuses the 24 GiB allocation): the plan needs only m1.large.
    """
    name = "planner"
    hpc = (dict(HPC_TAINT),)
    return Scenario(
        name=name,
        description="Capacity planner: a 3-pod AVX512F job for a tainted pool with anti-affinity, a nearly full "
                    "hypervisor, a project quota, a pod too big for any flavor and one no node matches",
        kubernetes_version="v1.32.4",
        nfd_version=NFD_NEWEST,
        nodes=(
            NodeSpec("kube-controlplane01", "m1.medium", role="control-plane", cpu=HASWELL, compute_host="cmp003"),
            NodeSpec("kube-worker01", "m1.medium", cpu=SKYLAKE, compute_host="cmp001", taints=hpc,
                     labels=(("pool", "hpc"),)),
            NodeSpec("kube-worker02", "m1.medium", cpu=SKYLAKE, compute_host="cmp001", taints=hpc,
                     labels=(("pool", "hpc"),)),
            NodeSpec("kube-worker03", "m1.medium", cpu=ICELAKE, compute_host="cmp002", taints=hpc,
                     labels=(("pool", "hpc"),)),
            NodeSpec("kube-worker04", "m1.small", cpu=ICELAKE, compute_host="cmp002", taints=hpc,
                     labels=(("pool", "hpc"),)),
            NodeSpec("kube-worker05", "m1.large", cpu=HASWELL, compute_host="cmp003"),
        ),
        host_os=JAMMY_HWE,
        nfd=NfdSetup(worker_tolerations=(dict(HPC_TOLERATION),)),
        objects=_planner_objects(name),
        compute_hosts=(
            ComputeHost("cmp001", vcpus=14, memory_mb=32768, reserved_vcpus=2),
            ComputeHost("cmp002", vcpus=32, memory_mb=65536),
            ComputeHost("cmp003", vcpus=32, memory_mb=65536),
        ),
        quota=Quota(cores=36, ram_mb=81920, instances=10),
    )


PLANNER = _planner()


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
    nfd_version="v0.9.0",
    nodes=_report_nodes("m1.medium"),
    pods=(PodSpec("nginx", "3", "5Gi"), PodSpec("debug-shell", "50m", "64Mi", node="kube-worker02",
                                                image="busybox:1.36")),
    host_os=FOCAL,
    objects=_drain_objects(),
)

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (DEFAULT, SEED_RESIZE, SEED_LIVE, SEED_DRAIN, NFD_CONFIGMAP,
                                                      NFD_GPU_OPERATOR, PLANNER)}


def get(name: str, *, nodes: int | None = None, pods_per_node: int | None = None, pending: int = 0) -> Scenario:
    """A scenario by name; `--nodes/--pods-per-node` (and `pending`) select the synthetic scale world."""
    if nodes is not None or name == "scale":
        return scale(nodes or 1000, pods_per_node if pods_per_node is not None else 30, pending)
    try:
        return SCENARIOS[name]
    except KeyError:
        known = ", ".join([*SCENARIOS, "scale"])
        raise ValueError(f"unknown scenario {name!r}; choose one of: {known}") from None
