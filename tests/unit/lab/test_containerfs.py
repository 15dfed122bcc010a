"""A program container's view on a lab node (console/lab/containerfs.py): its environment as the kubelet makes it,
its volumes' files as the kubelet's AtomicWriter writes them, its mounts ordered as containerd orders them.

Sources: pkg/kubelet/kubelet_pods.go makeEnvironmentVariables; third_party/forked/golang/expansion (`$(VAR)`,
`$$`); pkg/api/v1/resource ExtractContainerResourceValue (divisor, rounded up); pkg/volume/util/atomic_writer.go
(`..data` symlink, `..<timestamp>` directory, one symlink per key); containerd's CRI sorting mounts by the depth
of their destination.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from console.lab import containerfs
from console.lab.guestroot import GuestRoot
from console.lab.store import NotFound

POD = {
    "metadata": {
        "name": "nfd-worker-x1",
        "namespace": "node-feature-discovery",
        "uid": "u-1",
        "labels": {"app": "nfd-worker"},
    },
    "spec": {"nodeName": "kube-worker01", "serviceAccountName": "nfd-worker"},
}


def _get(objects: dict[tuple[str, str], dict]) -> containerfs.Getter:
    def get(resource: str, namespace: str | None, name: str) -> dict:
        try:
            return objects[(resource, name)]
        except KeyError:
            raise NotFound(f"{resource} {name}") from None

    return get


def test_environment_as_the_kubelet_makes_it() -> None:
    container = {
        "resources": {"limits": {"memory": "512Mi", "cpu": "1500m"}},
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "GOMEMLIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
            {"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
            {"name": "CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {"name": "GREETING", "value": "on $(NODE_NAME), $$(NODE_NAME) and $(UNSET)"},
            {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "level"}}},
            {"name": "MISSING", "valueFrom": {"configMapKeyRef": {"name": "none", "key": "x", "optional": True}}},
        ],
    }
    get = _get({("configmaps", "cfg"): {"data": {"level": "5"}}})
    env = containerfs.environment(
        POD, container, get, api_host="127.0.0.1", api_port=6443, host_ip="198.18.0.2", pod_ip="10.64.1.3"
    )
    assert env["NODE_NAME"] == "kube-worker01" and env["POD_UID"] == "u-1" and env["APP"] == "nfd-worker"
    assert env["GOMEMLIMIT"] == str(512 * 2**20) and env["MEM_MI"] == "512"
    assert env["CPUS"] == "2"  # 1.5 cores rounded up
    assert env["GREETING"] == "on kube-worker01, $(NODE_NAME) and $(UNSET)"
    assert env["LEVEL"] == "5" and "MISSING" not in env
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and env["KUBERNETES_SERVICE_PORT"] == "6443"
    assert env["HOSTNAME"] == "nfd-worker-x1"


def test_a_missing_config_map_or_field_is_a_config_error() -> None:
    with pytest.raises(containerfs.VolumeError, match='configmap "none" not found'):
        containerfs.environment(
            POD,
            {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "none", "key": "k"}}}]},
            _get({}),
            api_host="h",
            api_port=1,
            host_ip="",
            pod_ip="",
        )
    with pytest.raises(containerfs.VolumeError, match="unsupported fieldPath"):
        containerfs.environment(
            POD,
            {"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.nope"}}}]},
            _get({}),
            api_host="h",
            api_port=1,
            host_ip="",
            pod_ip="",
        )
    with pytest.raises(containerfs.VolumeError, match="quantities must match"):
        containerfs.quantity("12 apples")


def test_atomic_write_swaps_the_data_link_and_keeps_one_link_per_key(tmp_path: Path) -> None:
    d = tmp_path / "nfd-worker-conf"
    assert containerfs.atomic_write(d, {"nfd-worker.conf": b"core: {}\n", "extra": b"1"})
    first = os.readlink(d / "..data")
    assert os.readlink(d / "nfd-worker.conf") == "..data/nfd-worker.conf"
    assert (d / "nfd-worker.conf").read_bytes() == b"core: {}\n"
    assert not containerfs.atomic_write(d, {"nfd-worker.conf": b"core: {}\n", "extra": b"1"})  # unchanged: no-op
    assert containerfs.atomic_write(d, {"nfd-worker.conf": b"core:\n  sleepInterval: 2s\n"})
    assert os.readlink(d / "..data") != first and not (d / first).exists()  # the old data is gone
    assert not (d / "extra").exists() and (d / "nfd-worker.conf").read_bytes().endswith(b"2s\n")


def test_file_modes_follow_default_mode_and_item_mode(tmp_path: Path) -> None:
    """core/v1 ConfigMapVolumeSource: files are 0644 unless the volume's defaultMode or an item's mode says
    otherwise (a hook delivered by a ConfigMap needs defaultMode 0755 to run); a mode change alone rewrites."""
    root = GuestRoot(tmp_path / "kube-worker01")
    cm = {"data": {"hook": "#!/bin/sh\n", "conf": "x\n"}}
    get = _get({("configmaps", "hooks"): cm})

    def modes(volume: dict) -> dict[str, int]:
        pod = {**POD, "spec": {**POD["spec"], "volumes": [volume]}}
        path = containerfs.PodVolumes(pod, root, get, client=None, host_ip="", pod_ip="").project()["v"]  # type: ignore[arg-type]
        return {p.name: p.stat().st_mode & 0o7777 for p in path.iterdir() if not p.name.startswith("..")}

    assert modes({"name": "v", "configMap": {"name": "hooks"}}) == {"hook": 0o644, "conf": 0o644}
    assert modes({"name": "v", "configMap": {"name": "hooks", "defaultMode": 0o755}}) == {"hook": 0o755, "conf": 0o755}
    items = [{"key": "hook", "path": "hook", "mode": 0o700}, {"key": "conf", "path": "conf"}]
    assert modes({"name": "v", "configMap": {"name": "hooks", "defaultMode": 0o640, "items": items}}) == {
        "hook": 0o700, "conf": 0o640}


def test_volumes_land_where_the_kubelet_keeps_them_and_mounts_go_by_depth(tmp_path: Path) -> None:
    root = GuestRoot(tmp_path / "kube-worker01")
    pod = {
        **POD,
        "spec": {
            **POD["spec"],
            "volumes": [
                {"name": "conf", "configMap": {"name": "nfd-worker-conf"}},
                {"name": "features-d", "hostPath": {"path": "/etc/kubernetes/node-feature-discovery/features.d/"}},
                {"name": "host-lib", "hostPath": {"path": "/lib"}},
                {"name": "scratch", "emptyDir": {}},
            ],
        },
    }
    get = _get({("configmaps", "nfd-worker-conf"): {"data": {"nfd-worker.conf": "core: {}\n"}}})
    volumes = containerfs.PodVolumes(pod, root, get, client=None, host_ip="", pod_ip="")  # type: ignore[arg-type]
    paths = volumes.project()
    assert paths["conf"] == root.path("/var/lib/kubelet/pods/u-1/volumes/kubernetes.io~configmap/conf")
    assert paths["features-d"] == root.path("/etc/kubernetes/node-feature-discovery/features.d")
    assert paths["host-lib"] == Path("/lib")  # the node's tree has none: the lab host's, as the sandbox shows it
    spec = {
        "image": "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
        "command": ["nfd-worker"],
        "args": ["-v=$(LEVEL)"],
        "volumeMounts": [
            {"name": "features-d", "mountPath": "/etc/kubernetes/node-feature-discovery/features.d/"},
            {"name": "conf", "mountPath": "/etc/kubernetes/node-feature-discovery"},
        ],
    }
    box = containerfs.container(pod, spec, volumes, {"LEVEL": "3"})
    assert box.argv == ["nfd-worker", "-v=3"]
    assert (box.binds[containerfs.IMAGE_BIN] / "nfd-worker").is_file()  # upstream's, built from its module
    assert list(box.binds) == [
        containerfs.IMAGE_BIN,
        "/etc/kubernetes/node-feature-discovery",
        "/etc/kubernetes/node-feature-discovery/features.d",
    ]
    assert (paths["conf"] / "features.d").is_dir()  # the inner mount's point, made in the outer volume
    assert box.env["PATH"].startswith(containerfs.IMAGE_BIN + ":")
    get_changed = _get({("configmaps", "nfd-worker-conf"): {"data": {"nfd-worker.conf": "core: {x: 1}\n"}}})
    volumes.get = get_changed
    assert volumes.refresh() and (paths["conf"] / "nfd-worker.conf").read_text() == "core: {x: 1}\n"
    assert (paths["conf"] / "features.d").is_dir()  # a refresh keeps the mount point
