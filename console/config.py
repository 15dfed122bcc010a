"""Settings: defaults < $XDG_CONFIG_HOME/console/config.yaml < per-context overrides < CONSOLE_* env < flags.

The config file (YAML):

    theme: dark                    # a theme name from themes/ or the user's themes dir
    read_only: false               # hide every mutation and refuse it (true or false)
    nfd_version: v0.19.0           # override the NFD version detected on the cluster
    hook_store: cluster            # cluster (where nfd-worker reads: its DaemonSet volumes) | directory (offline)
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
    key_overrides: {nodes-filter: f}   # remap keys by binding id (press ? in the console to see ids)
    exec_plugin_timeout: 60        # seconds a kubeconfig exec plugin may run without the terminal
    plan:                          # the capacity planner (`console plan`): costs and preferences
      vcpu_weight: 1.0             # cost of a vCPU added (a size without a price)
      memory_gib_weight: 1.0       # cost of a GiB of memory added
      flavor_prices: {m1.large: 0.25, m1.xlarge: 0.5}   # a growth costs price(new) − price(current)
      price_extra_spec: console:price   # or: a flavor extra_spec holding its price
      avoid_pdb_blocked: true      # grow a node whose pods a PDB holds only when nothing else does
      prefer_live: true            # between equal costs, a live libvirt scale-up before a Nova resize
      max_unavailable: 1           # plan --apply: nodes unavailable at once
    contexts:                      # per kube context overrides of any key above, for the context in use:
      prod: {read_only: true, theme: high-contrast}   # --context, else the kubeconfig's current-context

The file is checked against a typed schema: an unknown key, a wrong type (`libvirt_uris: 5`, `theme: [a]`),
a value outside its choices, a bad toleration, a non-mapping `contexts` block, a duplicate key, bad YAML
or non-UTF-8 bytes, or a file over 1 MiB is an error naming the file, line and key (exit 2). Booleans are
YAML booleans: true/false (also YAML 1.1's yes/no, on/off, unquoted, as PyYAML and Kubernetes' YAML read
them); a quoted "true" is a string and an error, as is `read_only: ture`, `maybe` or an empty value.
An empty value (`key:`) of any other key means "not set here" (the default, or the top level for a context).
The context in use is --context, else CONSOLE_CONTEXT, else `context:` in the file, else the kubeconfig's
current-context (--kubeconfig, else CONSOLE_KUBECONFIG / `kubeconfig:`, else the first file of $KUBECONFIG
that sets one, else ~/.kube/config). read_only is decided here only: true if --read-only is given, else
CONSOLE_READ_ONLY, else the context's block, else the top level, else false; the TUI's `:ctx NAME`
resolves again for NAME (a switch into a read-only context makes the session read-only).

Environment: CONSOLE_<KEY> for any key (CONSOLE_NODE_DEBUG_IMAGE, CONSOLE_NODE_DEBUG_NAMESPACE,
CONSOLE_IMAGE_PULL_SECRETS="a,b", CONSOLE_NODE_DEBUG_TOLERATIONS as a YAML/JSON list, CONSOLE_KUBELET_UNIT);
CONSOLE_READ_ONLY takes true/false, 1/0, yes/no, on/off in any case, anything else is an error; an empty
variable is not set.
Flags of `scale-up`: --node-access, --node-debug-image, --node-debug-namespace, --kubelet-unit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from console.config_error import ConfigError
from console.kube.execauth import EXEC_PLUGIN_TIMEOUT_S

# a small public image with nsenter: busybox, what k9s's node shell runs (internal/config/shell_pod.go)
DEFAULT_NODE_DEBUG_IMAGE = "busybox:1.37.0"


@dataclass(frozen=True)
class PlanSettings:
    """`plan:` in the config file (console/config_schema.PlanKeys): the capacity planner's costs and preferences."""

    vcpu_weight: float = 1.0
    memory_gib_weight: float = 1.0
    flavor_prices: Mapping[str, float] = field(default_factory=dict)
    price_extra_spec: str | None = None
    avoid_pdb_blocked: bool = True
    prefer_live: bool = True
    max_unavailable: int = 1


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None = None
    context: str | None = None
    theme: str = "dark"
    read_only: bool = False
    nfd_version: str | None = None
    hook_store: str = "cluster"
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
    exec_plugin_timeout: float = EXEC_PLUGIN_TIMEOUT_S
    plan: PlanSettings = field(default_factory=PlanSettings)
    # what load() was given (flags, file, env), so a context switch resolves again the same way; None when
    # the settings were built in code (they are kept as they are)
    resolved_from: tuple[dict[str, Any], Path, Mapping[str, str] | None] | None = field(
        default=None, compare=False, repr=False)


ENVVARS_CLOUD = "envvars"  # openstacksdk's name for the cloud made of OS_* variables (config/loader.py)
KUBECONFIG_MAX_BYTES = 16 * 1024 * 1024  # read for its current-context only; bigger is not a kubeconfig


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


class _Where:
    """Where a value came from, for messages: a file and its lines, the environment, or the command line."""

    def __init__(self, kind: str, path: Path | None = None, node: Any = None, names: Mapping[str, str] | None = None):
        self.kind, self.path, self.node, self.names = kind, path, node, names or {}

    def line(self, loc: tuple[Any, ...]) -> int | None:
        from console.config_schema import line_of

        return line_of(self.node, loc) if self.node is not None else None

    def __call__(self, loc: tuple[Any, ...]) -> str:
        if self.kind == "file":
            line = self.line(loc)
            return f"{self.path}:{line}" if line else str(self.path)
        name = self.names.get(str(loc[0]), str(loc[0])) if loc else ""
        return f"{self.kind} {name}".rstrip()


def _file_settings(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The file's top-level settings and its per-context blocks, validated."""
    from console import config_schema as schema

    doc, node = schema.read_yaml(path)
    if doc is None:  # no file, an empty one, or only comments
        return {}, {}
    if not isinstance(doc, dict):
        kind = "a list" if isinstance(doc, list) else repr(doc)
        raise ConfigError(f"{path}:1: expected a mapping of settings at the top level (key: value lines), not {kind}")
    values = schema.normalise_keys(doc)
    if isinstance(values.get("contexts"), dict):
        values["contexts"] = {name: schema.normalise_keys(block) if isinstance(block, dict) else block
                              for name, block in values["contexts"].items()}
    checked = schema.validate(schema.FileSettings, values, _Where("file", path, node))
    per_context = {name: block or {} for name, block in (checked.pop("contexts", None) or {}).items()}
    return checked, {name: {k: v for k, v in block.items() if v is not None} for name, block in per_context.items()}


def _env_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """CONSOLE_<KEY> variables (strings), turned into typed values; an empty variable is not set."""
    from console import config_schema as schema

    names = {}
    values: dict[str, Any] = {}
    for key in schema.SETTING_NAMES:
        var = f"CONSOLE_{key.upper()}"
        if key != "contexts" and env.get(var, "") != "":
            names[key], values[key] = var, env[var]
    if env.get("CONSOLE_LIBVIRT_URI", "") != "":
        names["libvirt_uris"], values["libvirt_uris"] = "CONSOLE_LIBVIRT_URI", env["CONSOLE_LIBVIRT_URI"]
    if "OS_CLOUD" in env and "cloud" not in values:
        names["cloud"], values["cloud"] = "OS_CLOUD", env["OS_CLOUD"]
    if "read_only" in values:
        values["read_only"] = schema.env_bool(values["read_only"])
    for key in ("node_debug_tolerations", "key_overrides", "plan", "exec_plugin_timeout"):  # YAML (or JSON) text
        if key in values:
            values[key], _ = schema.parse_yaml(values[key], f"environment {names[key]}")
    return schema.validate(schema.FileSettings, values, _Where("environment", names=names))


def _flag_settings(flags: Mapping[str, Any]) -> dict[str, Any]:
    from console import config_schema as schema

    names = {k: "--" + k.replace("_", "-") for k in flags}
    values = {k: list(v) if isinstance(v, tuple) else v for k, v in schema.normalise_keys(flags).items()}
    return schema.validate(schema.FileSettings, values, _Where("command line", names=names))


def kubeconfig_current_context(kubeconfig: str | None, env: Mapping[str, str]) -> str | None:
    """The current-context kubectl would use: of --kubeconfig's file alone, else of the first file in
    $KUBECONFIG that sets one (client-go clientcmd/loader.go: "the first file to set a particular map key
    wins", and current-context is merged the same way), else of $HOME/.kube/config. Never raises: a missing
    or unreadable file means no context here, and the connection says what is wrong with it."""
    if kubeconfig:
        paths = [kubeconfig]
    elif env.get("KUBECONFIG"):
        paths = list(dict.fromkeys(p for p in env["KUBECONFIG"].split(os.pathsep) if p))
    elif env.get("HOME"):
        paths = [str(Path(env["HOME"]) / ".kube" / "config")]
    else:
        paths = []
    for path in paths:
        name = _current_context_of(Path(path))
        if name:
            return name
    return None


def _current_context_of(path: Path) -> str | None:
    import yaml
    from yaml.nodes import MappingNode, ScalarNode

    from console.config_schema import too_deep
    from console.userfile import open_regular

    try:
        with open_regular(path) as f:  # a FIFO is skipped here, never waited on (the kubeconfig load refuses it)
            data = f.read(KUBECONFIG_MAX_BYTES + 1)
        text = data.decode("utf-8")
        if len(data) > KUBECONFIG_MAX_BYTES or too_deep(text, 64):
            return None
        node = yaml.compose(text, Loader=yaml.SafeLoader)  # nodes only: aliases are not expanded
    except (OSError, ValueError, yaml.YAMLError, RecursionError):
        return None
    if not isinstance(node, MappingNode):
        return None
    for key, value in node.value:
        if isinstance(key, ScalarNode) and key.value == "current-context" and isinstance(value, ScalarNode):
            return value.value or None
    return None


def load(
    flags: dict[str, Any] | None = None, *, path: Path | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Resolve settings in precedence order; `flags` holds only options the user gave (None = not given).

    defaults < file top level < file `contexts.<context in use>` < CONSOLE_* environment < flags, where the
    context in use is --context / CONSOLE_CONTEXT / `context:` / the kubeconfig's current-context.
    Raises ConfigError (file, line, key, what is expected) for any bad value, from any of these sources.
    """
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    env_map = os.environ if env is None else env
    path = path or config_path()
    file_values, per_context = _file_settings(path)
    env_values = _env_settings(env_map)
    flag_values = _flag_settings(given)
    chosen = {**file_values, **env_values, **flag_values}
    context = chosen.get("context") or kubeconfig_current_context(chosen.get("kubeconfig"), env_map)
    block = per_context.get(context, {}) if context else {}
    values = {**file_values, **block, **env_values, **flag_values}
    # `plan` keys override one by one (a context's flavor_prices do not drop the top level's weights)
    plan = {k: v for src in (file_values, block, env_values, flag_values) for k, v in (src.get("plan") or {}).items()}
    values["plan"] = PlanSettings(**plan)
    for key in ("libvirt_uris", "image_pull_secrets", "node_debug_tolerations"):
        if key in values:
            values[key] = tuple(values[key])
    settings = Settings(**values, resolved_from=(given, path, env))
    if not settings.cloud and env_map.get("OS_AUTH_URL"):  # OS_CLOUD="" names no cloud either
        # an openrc and no named cloud: openstacksdk's loader serves the OS_* variables as this cloud
        settings = replace(settings, cloud=env_map.get("OS_CLOUD_NAME") or ENVVARS_CLOUD)
    return settings


def for_context(settings: Settings, context: str) -> Settings:
    """The settings after switching this session to `context` (the TUI's `:ctx NAME`): resolved again as
    load() resolved them, with NAME as if given by --context. The session's connections (kubeconfig, cloud,
    libvirt URIs) stay as they are. Settings built in code (not by load) are kept, with the new context."""
    if settings.resolved_from is None:
        return replace(settings, context=context)
    flags, path, env = settings.resolved_from
    new = load({**flags, "context": context}, path=path, env=env)
    return replace(new, kubeconfig=settings.kubeconfig, cloud=settings.cloud, libvirt_uris=settings.libvirt_uris)
