"""What a container of a program image sees on a lab node, set up as a kubelet and containerd set it up.

The lab's node agent runs the containers of images it has programs for (`images.program_dir`: upstream's
node-feature-discovery built from its Go module) as real processes in the node's sandbox (console/lab/sandbox.py).
This module gives such a process its container's view:

- the image's programs at IMAGE_BIN, first on PATH (the image's /usr/bin; the sandbox's /usr is the lab host's);
- its environment (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables): `value`, `fieldRef`
  (metadata.name/namespace/uid/labels/annotations, spec.nodeName/serviceAccountName, status.hostIP/podIP),
  `resourceFieldRef` (limits/requests of cpu and memory, with the divisor, as pkg/api/v1/resource
  ExtractContainerResourceValue rounds them), `configMapKeyRef`, `secretKeyRef`; `$(VAR)` expanded in values,
  command and args (third_party/forked/golang/expansion); KUBERNETES_SERVICE_HOST/PORT, which the kubelet always
  sets from the `kubernetes` Service: here the API server's own address, as the lab has no kube-proxy to carry a
  ClusterIP to it (the lab's glue);
- its volumes (pkg/volume): hostPath (the node's file or directory; what the node's tree lacks — /usr, /lib — is
  the lab host's, as the sandbox shows it on the node), configMap, secret, downwardAPI, emptyDir and projected
  (serviceAccountToken from the TokenRequest API bound to the pod, as the kubelet's token manager asks for it;
  configMap, secret, downwardAPI items). Their files are where the kubelet keeps them on the node,
  /var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~<plugin>/<volume>, written as its AtomicWriter writes them
  (pkg/volume/util/atomic_writer.go: the data in a `..<timestamp>` directory, `..data` a symlink to it, each key a
  symlink through `..data`), so `refresh` carries a ConfigMap's change to the program as a kubelet's sync does, and
  a program watching the file (nfd-worker's config, fsnotify) sees the same rename;
- mounts ordered by the depth of their path, as containerd's CRI sorts them (so a ConfigMap at a directory does
  not hide a hostPath mounted inside it), each read-only (every volume of the manifests the lab runs is).
"""

from __future__ import annotations

import base64
import contextlib
import decimal
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from console.lab import images
from console.lab.guestroot import GuestRoot
from console.lab.kubeclient import ApiError, KubeClient
from console.lab.store import NotFound, Obj

IMAGE_BIN = "/opt/image/bin"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_SECONDS = 3607  # the ServiceAccount admission plugin's projected token (plugin/pkg/admission/serviceaccount)
# host paths a lab node's tree does not hold: the sandbox shows the lab host's there (console/lab/sandbox.py)
HOST_SHARED = ("/usr", "/lib", "/lib64", "/bin", "/sbin")

Getter = Callable[[str, str | None, str], Obj]  # (resource, namespace, name) -> object, NotFound when absent


class VolumeError(Exception):
    """A volume or variable the container needs cannot be set up (the kubelet's CreateContainerConfigError)."""


@dataclass
class Container:
    """One container's view, ready for sandbox.run."""

    argv: list[str]
    env: dict[str, str]
    binds: dict[str, Path] = field(default_factory=dict)


_SUFFIXES: dict[str, int | decimal.Decimal] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": decimal.Decimal("1e-9"),
    "u": decimal.Decimal("1e-6"),
    "m": decimal.Decimal("1e-3"),
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}


def quantity(text: str) -> decimal.Decimal:
    """A resource quantity (k8s.io/apimachinery/pkg/api/resource) as a number."""
    m = re.fullmatch(r"([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)", text.strip())
    if m is None:
        raise VolumeError(f"quantities must match the regular expression: {text!r}")
    scale = decimal.Decimal(10) ** int(m.group(2)) if m.group(2) else decimal.Decimal(_SUFFIXES[m.group(3) or ""])
    return decimal.Decimal(m.group(1)) * scale


def expand(text: str, env: Mapping[str, str]) -> str:
    """$(VAR) from `env`, `$$` a literal `$`; an undefined reference stays as written (expansion.Expand)."""
    return re.sub(
        r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)",
        lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
        text,
    )


def _field(pod: Obj, path: str, host_ip: str, pod_ip: str) -> str:
    meta, spec = pod.get("metadata", {}), pod.get("spec", {})
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']*)'\]", path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    values = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": host_ip,
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIPs": host_ip,
    }
    if path not in values:
        raise VolumeError(f"unsupported fieldPath: {path}")
    return str(values[path] or "")


def _resource(container: Obj, ref: Obj) -> str:
    """ExtractContainerResourceValue: the value over the divisor, rounded up; an unset limit is the node's
    allocatable in the kubelet — not known here, so unset limits are refused."""
    kind, _, name = str(ref.get("resource", "")).partition(".")
    value = (container.get("resources") or {}).get(kind, {}).get(name)
    if value is None:
        raise VolumeError(f"resourceFieldRef {ref.get('resource')}: the container sets none")
    divisor = quantity(str(ref.get("divisor") or "1"))
    return str(math.ceil(quantity(str(value)) / divisor))


def _key_ref(get: Getter, namespace: str, resource: str, ref: Obj) -> str | None:
    try:
        obj = get(resource, namespace, str(ref.get("name", "")))
    except NotFound:
        if ref.get("optional"):
            return None
        raise VolumeError(f'{resource[:-1]} "{ref.get("name")}" not found') from None
    key = str(ref.get("key", ""))
    if resource == "secrets":
        data = obj.get("data") or {}
        return base64.b64decode(data[key]).decode() if key in data else None
    return (obj.get("data") or {}).get(key)


def environment(
    pod: Obj, container: Obj, get: Getter, *, api_host: str, api_port: int, host_ip: str, pod_ip: str
) -> dict[str, str]:
    """The container's variables, in the kubelet's order (the service variables first, then the container's)."""
    namespace = pod["metadata"].get("namespace", "default")
    node = pod.get("spec", {}).get("nodeName", "")
    env = {
        "HOSTNAME": node if pod.get("spec", {}).get("hostNetwork") else pod["metadata"]["name"],
        "KUBERNETES_SERVICE_HOST": api_host,
        "KUBERNETES_SERVICE_PORT": str(api_port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(api_port),
    }
    for var in container.get("env") or []:
        name, source = str(var.get("name", "")), var.get("valueFrom")
        value: str | None
        if source is None:
            value = expand(str(var.get("value", "")), env)
        elif "fieldRef" in source:
            value = _field(pod, str(source["fieldRef"].get("fieldPath", "")), host_ip, pod_ip)
        elif "resourceFieldRef" in source:
            value = _resource(container, source["resourceFieldRef"])
        elif "configMapKeyRef" in source:
            value = _key_ref(get, namespace, "configmaps", source["configMapKeyRef"])
        elif "secretKeyRef" in source:
            value = _key_ref(get, namespace, "secrets", source["secretKeyRef"])
        else:
            raise VolumeError(f"env {name}: unsupported valueFrom {sorted(source)}")
        if value is not None:
            env[name] = value
    return env


def atomic_write(directory: Path, files: Mapping[str, bytes], modes: Mapping[str, int] | None = None) -> bool:
    """Write `files` (relative path -> content) as the kubelet's AtomicWriter does, each with its mode in `modes`
    (0644 by default, the API's defaultMode); False when unchanged."""
    modes = {rel: (modes or {}).get(rel, DEFAULT_MODE) for rel in files}
    data = directory / "..data"
    if data.is_symlink():
        old = directory / os.readlink(data)
        current = {str(p.relative_to(old)): (p.read_bytes(), p.stat().st_mode & 0o7777)
                   for p in old.rglob("*") if p.is_file()}
        if current == {rel: (content, modes[rel]) for rel, content in files.items()}:
            return False
    directory.mkdir(parents=True, exist_ok=True)
    stamp = directory / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns() % 10**9}"
    stamp.mkdir()
    for rel, content in files.items():
        target = stamp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        target.chmod(modes[rel])
    tmp = directory / "..data_tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    tmp.symlink_to(stamp.name)
    previous = os.readlink(data) if data.is_symlink() else None
    tmp.rename(data)
    tops = {rel.split("/", 1)[0] for rel in files}
    for entry in directory.iterdir():
        if entry.name.startswith(".."):
            continue
        if entry.is_symlink() and entry.name not in tops:
            entry.unlink()
    for top in tops:
        link = directory / top
        if not link.is_symlink() and not link.exists():
            link.symlink_to(f"..data/{top}")
    if previous is not None:
        shutil.rmtree(directory / previous, ignore_errors=True)
    return True


DEFAULT_MODE = 0o644  # the API server's default defaultMode (420)


class PodVolumes:
    """A pod's volumes on its node: projected once (`project`) and kept current (`refresh`)."""

    def __init__(
        self, pod: Obj, root: GuestRoot, get: Getter, client: KubeClient, *, host_ip: str, pod_ip: str
    ) -> None:
        self.pod, self.root, self.get, self.client = pod, root, get, client
        self.host_ip, self.pod_ip = host_ip, pod_ip
        self.uid = str(pod["metadata"].get("uid", ""))
        self.namespace = str(pod["metadata"].get("namespace", "default"))
        self.paths: dict[str, Path] = {}  # volume name -> host path
        self._token: bytes | None = None

    def _dir(self, plugin: str, name: str) -> Path:
        return self.root.path(f"/var/lib/kubelet/pods/{self.uid}/volumes/kubernetes.io~{plugin}/{name}")

    def project(self) -> dict[str, Path]:
        for volume in self.pod.get("spec", {}).get("volumes") or []:
            self.paths[str(volume["name"])] = self._volume(volume)
        return self.paths

    def refresh(self) -> bool:
        """Write again the volumes whose sources changed (ConfigMaps, Secrets); True if any did."""
        changed = False
        for volume in self.pod.get("spec", {}).get("volumes") or []:
            if any(k in volume for k in ("configMap", "secret", "projected")):
                with contextlib.suppress(VolumeError):
                    changed |= self._write(volume)
        return changed

    def _volume(self, volume: Obj) -> Path:
        name = str(volume["name"])
        if "hostPath" in volume:
            return self._host_path(str(volume["hostPath"].get("path", "")))
        if "emptyDir" in volume:
            path = self._dir("empty-dir", name)
            path.mkdir(parents=True, exist_ok=True)
            return path
        if any(k in volume for k in ("configMap", "secret", "projected", "downwardAPI")):
            self._write(volume)
            return self._dir(_plugin(volume), name)
        raise VolumeError(f"volume {name}: unsupported type {sorted(k for k in volume if k != 'name')}")

    def _host_path(self, path: str) -> Path:
        node = self.root.path(path)
        if node.exists() or not path.startswith(HOST_SHARED):
            if not node.exists():  # type "" or DirectoryOrCreate: the runtime creates a directory
                node.mkdir(parents=True, exist_ok=True)
            return node
        return Path(path)

    def _write(self, volume: Obj) -> bool:
        files = self._files(volume)
        return atomic_write(self._dir(_plugin(volume), str(volume["name"])), files, _modes(volume, files))

    def _files(self, volume: Obj) -> dict[str, bytes]:
        if "configMap" in volume:
            return self._object_files("configmaps", volume["configMap"])
        if "secret" in volume:
            return self._object_files("secrets", {**volume["secret"], "name": volume["secret"].get("secretName")})
        if "downwardAPI" in volume:
            return self._downward(volume["downwardAPI"].get("items") or [])
        files: dict[str, bytes] = {}
        for source in volume["projected"].get("sources") or []:
            if "serviceAccountToken" in source:
                files[str(source["serviceAccountToken"].get("path", "token"))] = self.token(
                    source["serviceAccountToken"]
                )
            elif "configMap" in source:
                files.update(self._object_files("configmaps", source["configMap"]))
            elif "secret" in source:
                files.update(self._object_files("secrets", source["secret"]))
            elif "downwardAPI" in source:
                files.update(self._downward(source["downwardAPI"].get("items") or []))
        return files

    def _object_files(self, resource: str, ref: Obj) -> dict[str, bytes]:
        try:
            obj = self.get(resource, self.namespace, str(ref.get("name", "")))
        except NotFound:
            if ref.get("optional"):
                return {}
            raise VolumeError(f'{resource[:-1]} "{ref.get("name")}" not found') from None
        data = obj.get("data") or {}
        if resource == "configmaps":
            raw = {k: v.encode() for k, v in data.items()}
            raw.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
        else:
            raw = {k: base64.b64decode(v) for k, v in data.items()}
        items = ref.get("items")
        if not items:
            return raw
        return {str(i.get("path", i["key"])): raw[i["key"]] for i in items if i.get("key") in raw}

    def _downward(self, items: list[Obj]) -> dict[str, bytes]:
        out = {}
        for item in items:
            if "fieldRef" in item:
                out[str(item["path"])] = _field(
                    self.pod, str(item["fieldRef"].get("fieldPath", "")), self.host_ip, self.pod_ip
                ).encode()
        return out

    def token(self, source: Obj) -> bytes:
        """A token of the pod's ServiceAccount bound to the pod (TokenRequest), asked for once per pod run."""
        if self._token is None:
            sa = self.pod.get("spec", {}).get("serviceAccountName") or "default"
            spec: Obj = {
                "expirationSeconds": int(source.get("expirationSeconds") or TOKEN_SECONDS),
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": self.pod["metadata"]["name"],
                    "uid": self.uid,
                },
            }
            if source.get("audience"):
                spec["audiences"] = [source["audience"]]
            try:
                answer = self.client.request(
                    "POST",
                    f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{sa}/token",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
                )
            except ApiError as e:
                raise VolumeError(f"failed to fetch token: {e}") from None
            self._token = str(answer.get("status", {}).get("token", "")).encode()
        return self._token


def _modes(volume: Obj, files: Mapping[str, bytes]) -> dict[str, int]:
    """Each file's mode as the kubelet sets it: an item's `mode`, else the volume's `defaultMode` (core/v1
    ConfigMapVolumeSource, SecretVolumeSource, ProjectedVolumeSource, DownwardAPIVolumeSource), else 0644."""
    source: Obj = next((volume[k] for k in ("configMap", "secret", "projected", "downwardAPI") if k in volume), {})
    default = source.get("defaultMode")
    modes = {rel: int(default) if isinstance(default, int) else DEFAULT_MODE for rel in files}
    items = list(source.get("items") or [])
    for projection in source.get("sources") or []:
        for sub in projection.values():
            if isinstance(sub, dict):
                items += sub.get("items") or []
    for item in items:
        path = str(item.get("path", item.get("key", "")))
        if path in modes and isinstance(item.get("mode"), int):
            modes[path] = int(item["mode"])
    return modes


def _plugin(volume: Obj) -> str:
    return next(
        p
        for k, p in (
            ("configMap", "configmap"),
            ("secret", "secret"),
            ("projected", "projected"),
            ("downwardAPI", "downward-api"),
        )
        if k in volume
    )


def container(pod: Obj, spec: Obj, volumes: PodVolumes, env: dict[str, str]) -> Container:
    """The container `spec` of `pod` with its volumes projected: argv ($(VAR) expanded), env, binds."""
    program = images.program_dir(str(spec.get("image", "")))
    if program is None:
        raise VolumeError(f"image {spec.get('image')}: the lab has no programs for it")
    env = {**env, "PATH": f"{IMAGE_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    argv = [expand(a, env) for a in (*(spec.get("command") or []), *(spec.get("args") or []))]
    binds: dict[str, Path] = {IMAGE_BIN: program}
    mounts = sorted(spec.get("volumeMounts") or [], key=lambda m: len(Path(str(m["mountPath"])).parts))
    for mount in mounts:
        source = volumes.paths.get(str(mount.get("name")))
        if source is None:
            raise VolumeError(f"volumeMount {mount.get('name')!r}: the pod has no such volume")
        if mount.get("subPath"):
            source = source / str(mount["subPath"])
        inside = str(mount["mountPath"]).rstrip("/") or "/"
        # a mount inside another's directory needs its mount point there (runc makes it in the volume)
        for outer, outer_source in binds.items():
            if inside.startswith(outer + "/") and outer_source.is_dir():
                point = outer_source / inside[len(outer) + 1 :]
                if not point.exists():
                    point.mkdir(parents=True) if source.is_dir() else point.touch()
        binds[inside] = source
    return Container(argv, env, binds)


__all__ = [
    "IMAGE_BIN",
    "Container",
    "PodVolumes",
    "VolumeError",
    "atomic_write",
    "container",
    "environment",
    "expand",
    "quantity",
]
