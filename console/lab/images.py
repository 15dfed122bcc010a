"""The images the lab's nodes can pull: the lab's registry list.

Any other image fails as a kubelet with containerd reports it
(pkg/kubelet/images/image_manager.go): Normal `Pulling` `Pulling image "X"`,
Warning `Failed` `Failed to pull image "X": <CRI error>`, Warning `Failed`
`Error: ErrImagePull`, then Normal `BackOff` `Back-off pulling image "X"` and
Warning `Failed` `Error: ImagePullBackOff`; the container waits with reason
ErrImagePull (message: the CRI error), then ImagePullBackOff (message:
`Back-off pulling image "X"`), the pod stays Pending. The CRI error is
containerd's for a tag the registry does not have:
`rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/X": failed to resolve
reference "docker.io/library/X": docker.io/library/X: not found`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from console.lab.upstream import build

# repository (as containerd names it) -> tags the lab's registries serve
REGISTRY: dict[str, frozenset[str]] = {
    # the console's default node-debug image (console/config.py) and kubectl debug's usual picks
    "docker.io/library/busybox": frozenset({"latest", "stable", "1", "1.36", "1.36.1", "1.37", "1.37.0"}),
    "docker.io/library/nginx": frozenset({"latest", "stable", "1", "1.21", "1.25", "1.27", "1.28"}),
    "docker.io/library/ubuntu": frozenset({"latest", "20.04", "22.04", "24.04"}),
    "docker.io/library/alpine": frozenset({"latest", "3", "3.20", "3.21"}),
    # the seed-drain scenario's StatefulSet and DaemonSet
    "docker.io/library/postgres": frozenset({"latest", "16"}),
    "docker.io/prom/node-exporter": frozenset({"latest", "v1.8.2"}),
    # the planner scenario's workloads (console/lab/scenarios.py)
    "docker.io/library/redis": frozenset({"latest", "7.2"}),
    "registry.lab/hpc/train": frozenset({"1"}),
    "registry.lab/hpc/solver": frozenset({"1"}),
    "registry.lab/ml/inference": frozenset({"1"}),
    "registry.lab/etl": frozenset({"1"}),
    # the lab's own registry: the seed's app image and an nsenter image (util-linux)
    "registry.lab/app": frozenset({"1"}),
    "registry.lab/util-linux": frozenset({"2.38"}),
    # NFD's image, per the registry its manifests name (k8s.gcr.io up to v0.11, registry.k8s.io from v0.12)
    "k8s.gcr.io/nfd/node-feature-discovery": frozenset({"v0.8.2", "v0.9.0", "v0.10.1", "v0.11.3"}),
    "registry.k8s.io/nfd/node-feature-discovery": frozenset({"v0.12.1", "v0.13.6", "v0.14.6", "v0.15.7", "v0.16.4",
                                                               "v0.16.6", "v0.17.3", "v0.18.1", "v0.18.3",
                                                               "v0.19.0"}),
}


def normalize(image: str) -> tuple[str, str]:
    """(repository, tag or @digest) with Docker Hub's defaults, as containerd resolves a reference."""
    name, ref = image, "latest"
    if "@" in name:
        name, digest = name.split("@", 1)
        ref = "@" + digest
    else:
        head, _, last = name.rpartition("/")
        if ":" in last:
            last, ref = last.split(":", 1)
            name = f"{head}/{last}" if head else last
    first = name.split("/", 1)[0]
    if "/" not in name or not ("." in first or ":" in first or first == "localhost"):
        name = f"docker.io/{name}" if "/" in name else f"docker.io/library/{name}"
    return name, ref


def full_reference(image: str) -> str:
    repo, ref = normalize(image)
    return f"{repo}{ref}" if ref.startswith("@") else f"{repo}:{ref}"


# repository -> the upstream program whose release tags the lab builds and runs (console/lab/containerfs.py)
PROGRAM_IMAGES = {repo: build.NFD for repo in ("registry.k8s.io/nfd/node-feature-discovery",
                                              "k8s.gcr.io/nfd/node-feature-discovery")}


def _program(image: str) -> build.Program | None:
    repo, ref = normalize(image)
    return PROGRAM_IMAGES.get(repo, {}).get(ref) if can_pull(image) else None


def has_programs(image: str) -> bool:
    """The lab runs this image's programs for real (cheap: nothing is built)."""
    return _program(image) is not None


@functools.cache
def program_dir(image: str) -> Path | None:
    """The directory of the image's programs, built from upstream's module (once; minutes the first time), or
    None for an image the lab only pretends to run."""
    program = _program(image)
    return None if program is None else build.binary(program).parent


def can_pull(image: str) -> bool:
    repo, ref = normalize(image)
    return ref in REGISTRY.get(repo, frozenset())


def pull_error(image: str) -> str:
    """containerd's error for an image the registry does not have."""
    full = full_reference(image)
    return (f'rpc error: code = NotFound desc = failed to pull and unpack image "{full}": '
            f'failed to resolve reference "{full}": {full}: not found')


Event = Callable[[str, str, str], object]  # (type, reason, message) on the container's reference
SetWaiting = Callable[[str, str], None]  # (reason, message) into the container's status


def report_pull_failure(image: str, event: Event, set_waiting: SetWaiting) -> None:
    """What the kubelet records when an image cannot be pulled: events, then ErrImagePull, then ImagePullBackOff."""
    msg = pull_error(image)
    event("Normal", "Pulling", f'Pulling image "{image}"')
    event("Warning", "Failed", f'Failed to pull image "{image}": {msg}')
    event("Warning", "Failed", "Error: ErrImagePull")
    set_waiting("ErrImagePull", msg)
    event("Normal", "BackOff", f'Back-off pulling image "{image}"')
    event("Warning", "Failed", "Error: ImagePullBackOff")
    set_waiting("ImagePullBackOff", f'Back-off pulling image "{image}"')
