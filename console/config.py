"""Settings: defaults < $XDG_CONFIG_HOME/console/config.yaml < per-context overrides < CONSOLE_* env < flags.

The config file (YAML):

    theme: dark                    # a theme name from themes/ or the user's themes dir
    read_only: false               # hide every mutation
    nfd_version: v0.19.0           # override the NFD version detected on the cluster
    hook_store: configmap          # configmap | directory
    hook_dir: ~/nfd/source.d       # with hook_store: directory
    cloud: mycloud                 # clouds.yaml cloud (default $OS_CLOUD, else an openrc's OS_* variables)
    libvirt_uris: [qemu+ssh://cmp001/system]   # also $CONSOLE_LIBVIRT_URI; the VM column uses them without a cloud
    node_access: debug-pod         # debug-pod | ssh | guest-agent
    ssh_config: ~/.ssh/config      # with node_access: ssh, an OpenSSH client config (-F); env CONSOLE_SSH_CONFIG
    ssh_user: root                 # default: User from ssh_config, else your login name; non-root runs sudo -n
    ssh_target: name               # name | internal-ip: what `ssh` is given for a node
    lease_namespace: default       # where a scale-up run holds its per-node Lease (console-scale-up-<node>)
    node_debug_image: busybox:1.37.0   # with node_access: debug-pod, an image with nsenter the nodes can pull
    node_debug_namespace: default  # where debug pods run (as `kubectl debug node/...`); PodSecurity: privileged
    image_pull_secrets: [regcred]  # secrets in node_debug_namespace for pulling node_debug_image
    node_debug_tolerations:        # extra tolerations of the debug pod (it already tolerates every taint)
      - {key: dedicated, operator: Equal, value: infra, effect: NoSchedule}
    kubelet_unit: kubelet          # the kubelet's systemd unit; default: from node info (kubeadm kubelet,
                                   # k3s server k3s / agent k3s-agent, RKE2 rke2-server / rke2-agent)
    contexts:                      # per kube context overrides of any key above
      prod: {read_only: true, theme: high-contrast}

Environment: CONSOLE_<KEY> for any key (CONSOLE_NODE_DEBUG_IMAGE, CONSOLE_NODE_DEBUG_NAMESPACE,
CONSOLE_IMAGE_PULL_SECRETS="a,b", CONSOLE_NODE_DEBUG_TOLERATIONS as a YAML/JSON list, CONSOLE_KUBELET_UNIT).
Flags of `scale-up`: --node-access, --node-debug-image, --node-debug-namespace, --kubelet-unit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml


class ConfigError(Exception):
    """The config file is unreadable or has a bad value; the message names the file and key."""


# a small public image with nsenter: busybox, what k9s's node shell runs (internal/config/shell_pod.go)
DEFAULT_NODE_DEBUG_IMAGE = "busybox:1.37.0"


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None = None
    context: str | None = None
    theme: str = "dark"
    read_only: bool = False
    nfd_version: str | None = None
    hook_store: str = "configmap"
    hook_dir: str | None = None
    cloud: str | None = None
    libvirt_uris: tuple[str, ...] = ()
    node_access: str = "debug-pod"
    ssh_config: str | None = None
    ssh_user: str | None = None
    ssh_target: str = "name"
    lease_namespace: str = "default"
    node_debug_image: str = DEFAULT_NODE_DEBUG_IMAGE
    node_debug_namespace: str = "default"
    image_pull_secrets: tuple[str, ...] = ()
    node_debug_tolerations: tuple[dict[str, Any], ...] = ()
    kubelet_unit: str | None = None
    key_overrides: dict[str, str] = field(default_factory=dict)  # binding id -> key(s)


ENVVARS_CLOUD = "envvars"  # openstacksdk's name for the cloud made of OS_* variables (config/loader.py)
_CHOICES = {"hook_store": ("configmap", "directory"), "node_access": ("debug-pod", "ssh", "guest-agent"),
            "ssh_target": ("name", "internal-ip")}
_BOOL = {"read_only"}
_LIST = {"libvirt_uris", "image_pull_secrets"}
_TOLERATION_KEYS = {"key", "operator", "value", "effect", "tolerationSeconds"}


def xdg_config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def xdg_state_home() -> Path:
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")


def xdg_data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def config_path() -> Path:
    return xdg_config_home() / "console" / "config.yaml"


def state_dir() -> Path:
    """Audit log, runbook journal and logs."""
    return xdg_state_home() / "console"


def _coerce(key: str, value: Any, where: str) -> Any:
    if key in _BOOL:
        if isinstance(value, str):
            value = value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)
    if key in _LIST:
        if isinstance(value, str):
            value = [v for v in value.replace(",", " ").split() if v]
        return tuple(str(v) for v in value or ())
    if key == "node_debug_tolerations":
        return _tolerations(value, where)
    if key == "key_overrides":
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: key_overrides must be a mapping of binding id to keys")
        return {str(k): str(v) for k, v in value.items()}
    if value is not None and key in _CHOICES and value not in _CHOICES[key]:
        raise ConfigError(f"{where}: {key} must be one of {', '.join(_CHOICES[key])}, not {value!r}")
    return None if value is None else str(value)


def _tolerations(value: Any, where: str) -> tuple[dict[str, Any], ...]:
    """A list of Kubernetes toleration objects (YAML or JSON text from the environment)."""
    if isinstance(value, str):
        try:
            value = yaml.safe_load(value) if value.strip() else []
        except yaml.YAMLError as e:
            raise ConfigError(f"{where}: node_debug_tolerations is not YAML ({e})") from e
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ConfigError(f"{where}: node_debug_tolerations must be a list of tolerations, e.g. "
                          "[{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]")
    for t in value:
        unknown = set(t) - _TOLERATION_KEYS
        if unknown:
            raise ConfigError(f"{where}: node_debug_tolerations: unknown field(s) {', '.join(sorted(unknown))} "
                              f"(a toleration has {', '.join(sorted(_TOLERATION_KEYS))})")
        if t.get("operator", "Equal") not in ("Equal", "Exists"):
            raise ConfigError(f"{where}: node_debug_tolerations: operator must be Equal or Exists, "
                              f"not {t['operator']!r}")
    return tuple(dict(t) for t in value)


def _apply(settings: Settings, values: dict[str, Any], where: str) -> Settings:
    known = {f.name for f in fields(Settings)}
    changes = {}
    for key, value in values.items():
        key = key.replace("-", "_")
        if key not in known:
            raise ConfigError(f"{where}: unknown setting {key!r} (known: {', '.join(sorted(known))})")
        changes[key] = _coerce(key, value, where)
    return replace(settings, **changes)


def load(
    flags: dict[str, Any] | None = None, *, path: Path | None = None, env: dict[str, str] | None = None
) -> Settings:
    """Resolve settings in precedence order; `flags` holds only options the user gave."""
    env = os.environ if env is None else env
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    settings = Settings()
    path = path or config_path()
    doc: dict[str, Any] = {}
    if path.exists():
        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"{path}: cannot read it ({e}); fix or move the file") from e
        if not isinstance(doc, dict):
            raise ConfigError(f"{path}: expected a mapping of settings at the top level")
    per_context = doc.pop("contexts", {}) or {}
    settings = _apply(settings, doc, str(path))
    env_values = {
        k[len("CONSOLE_") :].lower(): v
        for k, v in env.items()
        if k.startswith("CONSOLE_") and k[len("CONSOLE_") :].lower() in {f.name for f in fields(Settings)}
    }
    if "CONSOLE_LIBVIRT_URI" in env:
        env_values["libvirt_uris"] = env["CONSOLE_LIBVIRT_URI"]
    if "OS_CLOUD" in env and "cloud" not in env_values:
        env_values.setdefault("cloud", env["OS_CLOUD"])
    # the context decides which per-context block applies, so resolve it first
    context = flags.get("context") or env_values.get("context") or settings.context
    if context and context in per_context:
        settings = _apply(settings, per_context[context], f"{path} contexts.{context}")
    settings = _apply(settings, env_values, "environment")
    settings = _apply(settings, flags, "command line")
    if not settings.cloud and env.get("OS_AUTH_URL"):  # OS_CLOUD="" names no cloud either
        # an openrc and no named cloud: openstacksdk's loader serves the OS_* variables as this cloud
        settings = replace(settings, cloud=env.get("OS_CLOUD_NAME") or ENVVARS_CLOUD)
    return settings
