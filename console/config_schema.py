"""The settings file's schema (pydantic v2, strict types) and errors that read `FILE:LINE: KEY: expected …, not …`.

The YAML is composed first (node marks give every key its line), checked for shape (nesting depth, alias
expansion, duplicate keys) without building anything, then constructed and validated. One error is
reported: the first by line, with how many more there are.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from console.config_error import ConfigError

# a settings file is a few dozen lines; the cap keeps a wrong file (a log, a dump) from being parsed at all.
# A small local cap: the general bounded loader (console/bounded.py) is another slice's.
MAX_BYTES = 1024 * 1024
MAX_DEPTH = 16  # the deepest real setting is contexts.NAME.node_debug_tolerations[i].key: 5 levels
MAX_NODES = 10_000  # YAML nodes counted with aliases expanded: no "billion laughs"

HookStore = Literal["cluster", "directory"]
NodeAccess = Literal["debug-pod", "ssh", "guest-agent"]
SshTarget = Literal["name", "internal-ip"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]  # "" too, in a toleration: every effect
CHOICES = {"hook_store": get_args(HookStore), "node_access": get_args(NodeAccess), "ssh_target": get_args(SshTarget)}
_TOLERATION_EXAMPLE = "[{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]"
# what a key's value should be, in the words of the error message
EXPECTED = {
    "read_only": "true or false",
    "libvirt_uris": "a list of libvirt URIs, e.g. [qemu+ssh://cmp001/system]",
    "image_pull_secrets": "a list of secret names, e.g. [regcred]",
    "node_debug_tolerations": f"a list of tolerations, e.g. {_TOLERATION_EXAMPLE}",
    "key_overrides": "a mapping of binding id to keys, e.g. {nodes-filter: f}",
    "contexts": "a mapping of kube context name to settings, e.g. {prod: {read_only: true}}",
    "tolerationSeconds": "a whole number of seconds",
    "plan": "a mapping of planner settings, e.g. {max_unavailable: 2, flavor_prices: {m1.large: 0.25}}",
    "vcpu_weight": "a number (the cost of one vCPU added)",
    "memory_gib_weight": "a number (the cost of one GiB of memory added)",
    "flavor_prices": "a mapping of flavor name to price, e.g. {m1.large: 0.25}",
    "avoid_pdb_blocked": "true or false",
    "prefer_live": "true or false",
    "max_unavailable": "a whole number, at least 1",
    "exec_plugin_timeout": "a number of seconds, more than 0",
    **{k: "one of " + ", ".join(v) for k, v in CHOICES.items()},
}
_WORDS_TRUE = ("true", "yes", "on", "1")
_WORDS_FALSE = ("false", "no", "off", "0")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Toleration(_Strict):
    """A Kubernetes toleration, checked as the API server checks a pod's
    (kubernetes pkg/apis/core/validation/validation.go, ValidateTolerations)."""

    key: StrictStr | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: StrictStr | None = None
    effect: Literal["", TaintEffect] | None = None
    tolerationSeconds: StrictInt | None = None  # the API's field name

    @model_validator(mode="after")
    def _consistent(self) -> Toleration:
        if not self.key and self.operator != "Exists":
            raise ValueError("operator must be Exists when key is empty (that matches every taint)")
        if self.tolerationSeconds is not None and self.effect != "NoExecute":
            raise ValueError("effect must be NoExecute when tolerationSeconds is set")
        if self.operator == "Exists" and self.value:
            raise ValueError("value must be empty when operator is Exists")
        return self


class PlanKeys(_Strict):
    """`plan:` — the capacity planner's cost model and preferences (`console plan`, the TUI's "plan all")."""

    vcpu_weight: float | None = Field(None, ge=0, description=(
        "cost of one vCPU added, for a size without a price"))
    memory_gib_weight: float | None = Field(None, ge=0, description=(
        "cost of one GiB of memory added, for a size without a price"))
    flavor_prices: dict[StrictStr, float] | None = Field(None, description=(
        "price per flavor name, e.g. `{m1.large: 0.25}`; a growth costs the new flavor's price minus the "
        "current one's (both priced), else the weights"))
    price_extra_spec: StrictStr | None = Field(None, description=(
        "a flavor extra_spec holding its price (e.g. `console:price`), read where `flavor_prices` has none"))
    avoid_pdb_blocked: StrictBool | None = Field(None, description=(
        "grow a node whose pods a PodDisruptionBudget will not let go only when no other node does"))
    prefer_live: StrictBool | None = Field(None, description=(
        "between equal costs, a live (no-reboot) libvirt scale-up before a Nova resize"))
    max_unavailable: StrictInt | None = Field(None, ge=1, description=(
        "`plan --apply`: nodes that may be unavailable at once (the fleet stops at this many)"))


def _words(value: Any) -> Any:
    """A list setting may also be one string of names separated by commas or spaces."""
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    return value


class ContextSettings(_Strict):
    """What a `contexts.NAME` block may set: every setting but the choice of kubeconfig and context."""

    theme: StrictStr | None = Field(None, description=(
        "colour theme: dark, light, high-contrast, or the name of a YAML theme in "
        "`$XDG_DATA_HOME/console/themes/`"))
    read_only: StrictBool | None = Field(None, description=(
        "hide every action that changes something, and refuse it headless (exit 2); plans and `--dry-run` "
        "still work"))
    nfd_version: StrictStr | None = Field(None, description=(
        "the NFD version to assume for label naming and previews (e.g. `v0.19.0`), instead of the one "
        "detected on the cluster"))
    hook_store: HookStore | None = Field(None, description=(
        "where hooks and feature files are edited: `cluster` (where nfd-worker reads them: its DaemonSet's "
        "hostPath or ConfigMap volumes) or `directory` (a local directory, offline)"))
    hook_dir: StrictStr | None = Field(None, description=(
        "with `hook_store: directory`, the local `source.d` directory (features.d beside it)"))
    cloud: StrictStr | None = Field(None, description=(
        "the clouds.yaml cloud for Nova (default `$OS_CLOUD`, else the OS_* variables of a sourced openrc)"))
    libvirt_uris: list[StrictStr] | None = Field(None, description=(
        "libvirt URIs of the compute hosts (e.g. `[qemu+ssh://cmp001/system]`); also `$CONSOLE_LIBVIRT_URI`; "
        "enough for the VM column without a cloud"))
    node_access: NodeAccess | None = Field(None, description=(
        "how the console runs commands on a node (CPU onlining, kubelet restart, hostPath hook files): "
        "`debug-pod` (as `kubectl debug node/…`), `ssh` or `guest-agent`"))
    ssh_config: StrictStr | None = Field(None, description=(
        "with `node_access: ssh`, an OpenSSH client config (`ssh -F`)"))
    ssh_user: StrictStr | None = Field(None, description=(
        "with `node_access: ssh`, the login (default: `User` from ssh_config, else your login name); not "
        "root: commands run with `sudo -n`"))
    ssh_target: SshTarget | None = Field(None, description=(
        "what `ssh` is given for a node: `name` (the node name) or `internal-ip`"))
    lease_namespace: StrictStr | None = Field(None, description=(
        "where a scale-up run holds its Lease `console-scale-up-<node>` (RBAC: get/create/update leases "
        "there)"))
    node_debug_image: StrictStr | None = Field(None, description=(
        "with `node_access: debug-pod`, an image with `nsenter` the nodes can pull; on air-gapped clusters "
        "your registry's copy"))
    node_debug_namespace: StrictStr | None = Field(None, description=(
        "where debug pods run; must allow privileged pods (PodSecurity `enforce: privileged` or no label)"))
    image_pull_secrets: list[StrictStr] | None = Field(None, description=(
        "secrets in node_debug_namespace for pulling node_debug_image (`CONSOLE_IMAGE_PULL_SECRETS=a,b`)"))
    node_debug_tolerations: list[Toleration] | None = Field(None, description=(
        "extra tolerations of the debug pod, a list of toleration objects (it already tolerates every taint)"))
    kubelet_unit: StrictStr | None = Field(None, description=(
        "the kubelet's systemd unit the scale-up restarts (default: from node info — `kubelet`, "
        "`k3s`/`k3s-agent`, `rke2-server`/`rke2-agent`)"))
    key_overrides: dict[StrictStr, StrictStr] | None = Field(None, description=(
        "remap keys by binding id, e.g. `{nodes-filter: f}` (`?` in the console shows the ids)"))
    exec_plugin_timeout: float | None = Field(None, gt=0, allow_inf_nan=False, description=(
        "seconds a kubeconfig exec credential plugin may run without the terminal before it is stopped (a "
        "headless command, the TUI's token refresh); with the terminal it is never cut, only said to be "
        "still running"))
    plan: PlanKeys | None = Field(None, description=(
        "the capacity planner's costs and preferences (`console plan`): the keys `plan.*` below; a context's "
        "`plan` keys override the top level's one by one"))

    @field_validator("read_only", mode="before")
    @classmethod
    def _no_empty_switch(cls, value: Any) -> Any:
        if value is None:  # `read_only:` with nothing after it: a safety switch is never guessed
            raise ValueError("empty")
        return value

    @field_validator("libvirt_uris", "image_pull_secrets", mode="before")
    @classmethod
    def _one_string_is_a_list(cls, value: Any) -> Any:
        return _words(value)


class FileSettings(ContextSettings):
    """The top level of config.yaml."""

    kubeconfig: StrictStr | None = Field(None, description=(
        "the kubeconfig file (default: every file of `$KUBECONFIG`, else `~/.kube/config`)"))
    context: StrictStr | None = Field(None, description=(
        "the kube context to use (default: the kubeconfig's current-context)"))
    contexts: dict[StrictStr, ContextSettings | None] | None = Field(None, description=(
        "per kube context overrides of any key above but kubeconfig and context, e.g. `{prod: {read_only: "
        "true}}`"))


SETTING_NAMES = tuple(FileSettings.model_fields)


# -- reading YAML with its marks ---------------------------------------------------------------------------
def read_yaml(path: Path, max_bytes: int = MAX_BYTES) -> tuple[Any, Node | None]:
    """The file's data and its node tree (for line numbers); (None, None) when there is no file.
    Every problem is a ConfigError naming the file (and the line where there is one)."""
    from console.userfile import open_regular

    try:
        with open_regular(path) as f:  # a FIFO or a device is refused, never waited on
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it: {e.strerror or e}; fix or move the file") from e
    if len(data) > max_bytes:
        raise ConfigError(f"{path}: larger than {max_bytes / 2**20:g} MiB; a settings file is a few lines "
                          "— is this the right file?")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        key = _key_on_line(data.decode("utf-8", "replace"), line)
        raise ConfigError(f"{path}:{line}: {key}not UTF-8 text (byte 0x{data[e.start]:02x}); "
                          "save the file as UTF-8") from None
    return parse_yaml(text, str(path))


def parse_yaml(text: str, where: str) -> tuple[Any, Node | None]:
    """Compose, check the shape, construct: (data, node). `where` starts every message."""
    loader = None
    try:
        _check_depth(text, where)
        loader = yaml.SafeLoader(text)
        node = loader.get_single_node()
        if node is None:
            return None, None
        _check_shape(node, where)
        return loader.construct_document(node), node
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        key = _key_on_line(text, mark.line + 1) if mark else ""
        detail = "; ".join(p for p in (e.context, e.problem) if p)
        raise ConfigError(f"{where}{f':{mark.line + 1}' if mark else ''}: {key}not valid YAML: {detail}") from None
    except yaml.reader.ReaderError as e:
        line = text[: e.position].count("\n") + 1
        raise ConfigError(f"{where}:{line}: {_key_on_line(text, line)}not valid YAML: character {chr(e.character)!r} "
                          "is not allowed") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: not valid YAML: {e}") from None
    except RecursionError:  # _check_depth keeps the composer from getting here; this is the last resort
        raise ConfigError(f"{where}: nested too deeply; no setting is") from None
    finally:
        if loader is not None:
            loader.dispose()


def _check_depth(text: str, where: str) -> None:
    line = too_deep(text, MAX_DEPTH)
    if line:
        raise ConfigError(f"{where}:{line}: {_key_on_line(text, line)}nested deeper than {MAX_DEPTH} levels; "
                          "no setting is")


def too_deep(text: str, limit: int) -> int | None:
    """The line where nesting passes `limit`, from the parser's events (the parser is iterative; PyYAML's
    composer and constructor recurse, so this runs first). Raises yaml.YAMLError for bad YAML."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > limit:
                return event.start_mark.line + 1 if event.start_mark is not None else 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None


def _key_on_line(text: str, line: int) -> str:
    """`KEY: ` for a `KEY: value` line (where the reader or parser gave up), else ""."""
    rows = text.split("\n")
    row = rows[line - 1].strip().removeprefix("- ") if 0 < line <= len(rows) else ""
    key = row.split(":", 1)[0].strip() if ":" in row else ""
    return f"{key}: " if key and len(key) < 60 and " " not in key else ""


def _check_shape(root: Node, where: str) -> None:
    """Depth, alias expansion and duplicate keys, walked without recursion and without building anything."""
    stack: list[tuple[Node, int]] = [(root, 1)]
    seen_maps: set[int] = set()
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        line = node.start_mark.line + 1
        if count > MAX_NODES:
            raise ConfigError(f"{where}:{line}: more than {MAX_NODES} YAML values (aliases expanded); "
                              "a settings file is a few lines")
        if depth > 2 * MAX_DEPTH:  # through aliases (keys and values count apart here)
            raise ConfigError(f"{where}:{line}: nested deeper than {MAX_DEPTH} levels; no setting is")
        if isinstance(node, MappingNode):
            if id(node) not in seen_maps:
                seen_maps.add(id(node))
                _no_duplicate_keys(node, where)
            for k, v in node.value:
                stack += [(k, depth + 1), (v, depth + 1)]
        elif isinstance(node, SequenceNode):
            stack += [(v, depth + 1) for v in node.value]


def _no_duplicate_keys(node: MappingNode, where: str) -> None:
    first: dict[str, int] = {}
    for k, _ in node.value:
        if not isinstance(k, ScalarNode) or k.value == "<<":
            continue
        line = k.start_mark.line + 1
        if k.value in first:  # PyYAML keeps the last silently; Kubernetes' strict decoding refuses it too
            raise ConfigError(f"{where}:{line}: {k.value}: given twice (first on line {first[k.value]}); "
                              "keep one")
        first[k.value] = line


def line_of(node: Node | None, loc: tuple[Any, ...]) -> int | None:
    """The line of the deepest part of `loc` (keys and list indexes) found in the node tree."""
    line = None
    for part in loc:
        if isinstance(node, MappingNode):
            match = [(k, v) for k, v in node.value if isinstance(k, ScalarNode)
                     and (k.value == str(part) or k.value.replace("-", "_") == str(part))]
            if not match:
                break
            key, node = match[-1]
            line = key.start_mark.line + 1
        elif isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    if line is None and node is not None:
        line = node.start_mark.line + 1
    return line


# -- validation and its messages ---------------------------------------------------------------------------
def normalise_keys(values: Mapping[Any, Any]) -> dict[Any, Any]:
    """`read-only` is `read_only` (as before); other keys are left for the schema to name."""
    return {k.replace("-", "_") if isinstance(k, str) else k: v for k, v in values.items()}


def validate(model: type[_Strict], values: Mapping[str, Any], where: Any) -> dict[str, Any]:
    """The given settings, typed and normalised (`null` = not set here); the first error as ConfigError.
    `where(loc)` says where a value came from, e.g. `FILE:LINE` or `environment CONSOLE_READ_ONLY`."""
    try:
        checked = model.model_validate(values)
    except ValidationError as e:
        problems = sorted((_line(where, err["loc"]), i, err["loc"], _problem(err))
                          for i, err in enumerate(e.errors(include_url=False)))
        _, _, first_loc, text = problems[0]
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
        raise ConfigError(f"{where(first_loc)}: {_dotted(first_loc)}: {text}{more}") from None
    return {k: v for k, v in checked.model_dump(exclude_unset=True).items() if v is not None}


def _line(where: Any, loc: tuple[Any, ...]) -> int:
    return getattr(where, "line", lambda _loc: 0)(loc) or 0


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if part == "[key]":
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return str(value)


def _problem(err: Mapping[str, Any]) -> str:
    loc, kind, given = err["loc"], err["type"], err.get("input")
    name = next((p for p in reversed(loc) if isinstance(p, str) and p != "[key]"), "")
    field = loc[0] if loc else ""
    nested = len(loc) > 1 and field in ("libvirt_uris", "image_pull_secrets", "key_overrides")
    if kind == "extra_forbidden":
        if "node_debug_tolerations" in loc:
            return f"unknown field (a toleration has {', '.join(Toleration.model_fields)})"
        if "plan" in loc[:3] and loc[-1] != "plan":
            return f"unknown planner setting; known: {', '.join(PlanKeys.model_fields)}"
        in_block = "contexts" in loc[:1] and len(loc) > 2
        if in_block and name in FileSettings.model_fields:
            return "cannot be set per context (it chooses the context); set it at the top level"
        known = ContextSettings.model_fields if in_block else FileSettings.model_fields
        from difflib import get_close_matches

        close = get_close_matches(str(name), known, n=1)
        return (f"unknown setting{f' (did you mean {close[0]}?)' if close else ''}; "
                f"known: {', '.join(sorted(known))}")
    if kind in ("invalid_key",) or loc[-1:] == ("[key]",):
        return f"expected a name (a string) as the key, not {_shown(given)}"
    if kind == "value_error":
        if name == "read_only":
            return "expected true or false, not nothing (an empty value)"
        return str(err["msg"]).removeprefix("Value error, ")
    if nested:
        expected = "a string"
    elif "flavor_prices" in loc[:-1]:
        expected = "a number (the flavor's price)"
    elif "node_debug_tolerations" in loc and isinstance(loc[-1], int):
        expected = f"a toleration (a mapping), e.g. {_TOLERATION_EXAMPLE[1:-1]}"
    elif "contexts" in loc[:1] and len(loc) == 2:
        expected = "a mapping of settings for that context, e.g. {read_only: true}"
    elif name == "effect" and "node_debug_tolerations" in loc:
        expected = "one of " + ", ".join(get_args(TaintEffect))
    elif name == "operator" and "node_debug_tolerations" in loc:
        expected = "one of Equal, Exists"
    else:
        expected = EXPECTED.get(str(name), "a string")
    hint = ""
    if isinstance(given, str) and expected == "true or false" and given.strip().lower() in _WORDS_TRUE + _WORDS_FALSE:
        hint = " (a quoted string; write true or false without quotes)"
    elif isinstance(given, int | float | date) and not isinstance(given, bool) and expected == "a string":
        hint = f" (quote it: '{given}')"
    return f"expected {expected}, not {_shown(given)}{hint}"


def env_bool(text: str) -> bool | str:
    """An environment switch: true/false, yes/no, on/off, 1/0 in any case; anything else is returned as is,
    for the schema to refuse with the variable's name."""
    word = text.strip().lower()
    if word in _WORDS_TRUE:
        return True
    if word in _WORDS_FALSE:
        return False
    return text
