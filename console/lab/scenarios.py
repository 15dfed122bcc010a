"""Lab scenarios: the worlds the lab can start.

`seed-resize` and `seed-live` reproduce the two halves of field report 2
(shared/reference/field-reports.md); `default` is what `--lab` opens; `scale`
is the synthetic world for benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from console.lab.vm import Flavor

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
class NodeSpec:
    name: str
    flavor: str
    role: str = "worker"  # worker | control-plane
    cpu: CpuModel = HASWELL
    compute_host: str = "cmp001"
    labels: tuple[tuple[str, str], ...] = ()
    # the node's kubelet uses the static CPU manager (its state file blocks a restart)
    cpu_manager_static: bool = False


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
    namespaces: tuple[str, ...] = ("default", "kube-system", "node-feature-discovery")
    extra: dict[str, str] = field(default_factory=dict)


def _report_nodes(worker02_flavor: str) -> tuple[NodeSpec, ...]:
    return (
        NodeSpec("kube-controlplane01", "m1.medium", role="control-plane", cpu=HASWELL),
        NodeSpec("kube-worker01", "m1.medium", cpu=HASWELL, compute_host="cmp001"),
        NodeSpec("kube-worker02", worker02_flavor, cpu=SKYLAKE, compute_host="cmp001"),
    )


SEED_RESIZE = Scenario(
    name="seed-resize",
    description="Field report 2, offline part: nginx (cpu 3, memory 5Gi) Pending on 2 vCPU / 4 GB workers",
    kubernetes_version="v1.21.6",
    nfd_version="v0.8.2",
    nodes=_report_nodes("m1.medium"),
    pods=(PodSpec("nginx", "3", "5Gi"),),
)

SEED_LIVE = Scenario(
    name="seed-live",
    description="Field report 2, online part: nginx-large (cpu 9, memory 13Gi) Pending; kube-worker02 on m1.large",
    kubernetes_version="v1.21.6",
    nfd_version="v0.8.2",
    nodes=_report_nodes("m1.large"),
    pods=(PodSpec("nginx-large", "9", "13Gi"),),
)

DEFAULT = Scenario(
    name="default",
    description="Both field reports in one cluster, with NFD labels for several CPU generations",
    kubernetes_version="v1.32.4",
    nfd_version="v0.18.1",
    nodes=(
        NodeSpec("kube-controlplane01", "m1.medium", role="control-plane", cpu=HASWELL),
        NodeSpec("kube-worker01", "m1.medium", cpu=HASWELL, compute_host="cmp001"),
        NodeSpec("kube-worker02", "m1.medium", cpu=SKYLAKE, compute_host="cmp001"),
        NodeSpec("kube-worker03", "m1.large", cpu=ICELAKE, compute_host="cmp002"),
        NodeSpec("kube-worker04", "m1.large", cpu=ZEN3, compute_host="cmp002", cpu_manager_static=True),
    ),
    pods=(
        PodSpec("analytics-0", "6", "8Gi", node="kube-worker03", labels=(("app", "analytics"),)),
        PodSpec("analytics-1", "6", "8Gi", node="kube-worker04", labels=(("app", "analytics"),)),
        PodSpec("web-0", "500m", "512Mi", node="kube-worker01", labels=(("app", "web"),)),
        PodSpec("web-1", "500m", "512Mi", node="kube-worker02", labels=(("app", "web"),)),
        PodSpec("nginx", "3", "5Gi", labels=(("app", "nginx"),)),
    ),
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


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (DEFAULT, SEED_RESIZE, SEED_LIVE)}


def get(name: str, *, nodes: int | None = None, pods_per_node: int | None = None) -> Scenario:
    """A scenario by name; `--nodes/--pods-per-node` select the synthetic scale world."""
    if nodes is not None or name == "scale":
        return scale(nodes or 1000, pods_per_node if pods_per_node is not None else 30)
    try:
        return SCENARIOS[name]
    except KeyError:
        known = ", ".join([*SCENARIOS, "scale"])
        raise ValueError(f"unknown scenario {name!r}; choose one of: {known}") from None
