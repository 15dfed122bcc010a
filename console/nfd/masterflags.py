"""nfd-master and nfd-worker command lines and config files -> MasterConfig / WorkerConfig, per NFD version.

Pure. The flags are parsed as Go's `flag` package parses them (src/flag/flag.go parseOne): `-name`, `--name`,
`-name=value`, `-name value` (not for booleans, which take only `-name=false`), parsing stops at `--` or the
first non-flag argument; a flag given twice keeps the last value. Comma lists are utils.StringSetVal /
StringSliceVal (`strings.Split(val, ",")`, so `-extra-label-ns=` is the set {""}); `-feature-gates` is
component-base's map flag (`A=true,B=false`, repeated flags merge). The config files are YAML read with
sigs.k8s.io/yaml into Go structs, so keys match field names case-insensitively (encoding/json).

Precedence, as nfd-master's `configure` does it (pkg/nfd-master/nfd-master.go, v0.13+): defaults, then the
config file (`-config`, default /etc/kubernetes/node-feature-discovery/nfd-master.conf), then `-options`
(YAML), then the flags the command line set (cmd/nfd-master/main.go `flags.Visit`). Before v0.13 the master
has no config file: flags only. nfd-worker (pkg/nfd-worker/nfd-worker.go `configure`, v0.8+) the same with
nfd-worker.conf; v0.6-v0.7 parse `--flag=value` with docopt, which this parser also reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from console.nfd import versions as V
from console.nfd.master import MasterConfig
from console.nfd.workerconfig import WorkerConfig, json_field
from console.nfd.workerconfig import parse_go_duration as go_duration

MASTER_CONFIG_PATH = "/etc/kubernetes/node-feature-discovery/nfd-master.conf"
WORKER_CONFIG_PATH = "/etc/kubernetes/node-feature-discovery/nfd-worker.conf"

# boolean flags of nfd-master / nfd-worker across v0.8-v0.19 (cmd/nfd-*/main.go) and klog's (klog.InitFlags):
# only these may stand alone; any other flag takes the next argument as its value
_BOOL_FLAGS = frozenset({
    "version", "prune", "no-publish", "enable-taints", "enable-nodefeature-api", "featurerules-controller",
    "crd-controller", "verify-node-name", "enable-leader-election", "oneshot", "no-owner-refs", "owner-refs",
    "no-publish-features", "logtostderr", "alsologtostderr", "add_dir_header", "skip_headers",
    "skip_log_headers", "one_output", "help", "h",
})
_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}  # strconv.ParseBool
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


# the flags each release defines (cmd/nfd-master/main.go, cmd/nfd-worker/main.go at v0.<minor>.0), besides klog's
# and, from v0.16, -feature-gates; anything else makes the program exit at start ("flag provided but not defined")
_M8 = "ca-file cert-file extra-label-ns instance key-file kubeconfig label-whitelist no-publish port prune " \
      "resource-labels verify-node-name version"
_M12 = _M8 + " featurerules-controller crd-controller enable-nodefeature-api enable-taints"
_M14 = _M12 + " config deny-label-ns options enable-leader-election metrics nfd-api-parallelism resync-period"
_M17 = "config deny-label-ns enable-leader-election enable-taints extra-label-ns instance kubeconfig label-whitelist " \
       "nfd-api-parallelism no-publish options prune resync-period version"
_W8 = "ca-file cert-file config key-file label-whitelist no-publish oneshot options server server-name-override " \
      "sleep-interval sources version"
_W12 = "ca-file cert-file config enable-nodefeature-api feature-sources key-file kubeconfig label-sources no-publish " \
       "oneshot options server server-name-override version"
_W17 = "config feature-sources kubeconfig label-sources no-owner-refs no-publish oneshot options version"
KNOWN_FLAGS: dict[str, dict[int, frozenset[str]]] = {
    "master": {m: frozenset(f.split()) for m, f in {
        8: _M8, 10: _M8 + " featurerules-controller", 12: _M12, 13: _M12 + " config deny-label-ns options",
        14: _M14, 17: _M17 + " grpc-health metrics", 18: _M17 + " informer-page-size port"}.items()},
    "worker": {m: frozenset(f.split()) for m, f in {
        8: _W8, 10: _W8 + " feature-sources label-sources", 12: _W12, 14: _W12 + " metrics",
        17: _W17 + " grpc-health metrics", 18: _W17 + " port",
        19: _W17 + " port no-publish-features owner-refs"}.items()},
}
_KLOG_FLAGS = frozenset({"v", "vmodule", "logtostderr", "alsologtostderr", "log_dir", "log_file", "log_file_max_size",
                         "skip_headers", "skip_log_headers", "add_dir_header", "one_output", "stderrthreshold",
                         "log_backtrace_at"})


def unknown_flags(program: str, version: V.NfdVersion, args: Sequence[str]) -> list[str]:
    """The flags in `args` that this nfd-master / nfd-worker release does not define (v0.8+; docopt before)."""
    table = KNOWN_FLAGS[program]
    since = [m for m in table if m <= version.minor]
    if version.major != 0 or not since:
        return []
    known = table[max(since)] | _KLOG_FLAGS | ({"feature-gates"} if version.at_least(16) else set())
    try:
        names = [n for n, _v in parse_go_flags(args)]
    except FlagError:
        return []
    return sorted({n for n in names if n not in known})


class FlagError(ValueError):
    """A command line nfd-master / nfd-worker itself would refuse (flag.ExitOnError: exit 2)."""


def parse_go_flags(args: Sequence[str]) -> list[tuple[str, str]]:
    """(name, value) per flag set, in order, as Go's flag.FlagSet.Parse reads them; a boolean set without a value
    is "true". Stops at "--" or the first argument that is not a flag."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        s = args[i]
        if len(s) < 2 or s[0] != "-":
            break
        minuses = 2 if s[1] == "-" else 1
        if minuses == 2 and len(s) == 2:  # "--" terminates the flags
            break
        name = s[minuses:]
        if not name or name[0] in "-=":
            raise FlagError(f"bad flag syntax: {s}")
        i += 1
        name, eq, value = name.partition("=")
        if name in _BOOL_FLAGS:
            if eq and value not in _GO_TRUE | _GO_FALSE:
                raise FlagError(f"invalid boolean value {value!r} for -{name}")
            out.append((name, "true" if not eq or value in _GO_TRUE else "false"))
            continue
        if not eq:
            if i >= len(args):
                raise FlagError(f"flag needs an argument: -{name}")
            value = args[i]
            i += 1
        out.append((name, value))
    return out


def flag_values(args: Sequence[str]) -> dict[str, str]:
    """The last value of each flag set (Go's flag.Value.Set replaces, so the last one wins)."""
    return dict(parse_go_flags(args))


def go_bool(value: str) -> bool:
    return value in _GO_TRUE


def string_set(value: str) -> frozenset[str]:
    """utils.StringSetVal.Set: strings.Split(val, ",") into a set (empty parts kept, as Go keeps them)."""
    return frozenset(value.split(","))


def feature_gates(args: Sequence[str]) -> dict[str, bool]:
    """`-feature-gates=A=true,B=false` (component-base featuregate.Set; every occurrence merges)."""
    gates: dict[str, bool] = {}
    for name, value in parse_go_flags(args):
        if name != "feature-gates":
            continue
        for part in value.split(","):
            key, _, val = part.strip().partition("=")
            if key:
                if val.strip() not in _GO_TRUE | _GO_FALSE:
                    raise FlagError(f"invalid value of {key}: {val!r}, err: strconv.ParseBool")
                gates[key.strip()] = go_bool(val.strip())
    return gates


def _duration_value(v: Any) -> float:
    """utils.DurationVal.UnmarshalJSON: a number (nanoseconds) or a Go duration string."""
    if isinstance(v, bool):
        raise ValueError(f"invalid duration {v!r}")
    if isinstance(v, int | float):
        return float(v) / 1e9
    return go_duration(str(v))


def _get(doc: Any, key: str) -> Any:
    """encoding/json's case-insensitive field match (what sigs.k8s.io/yaml unmarshals through)."""
    return json_field(doc, key) if isinstance(doc, Mapping) else None


def _str_list(v: Any, what: str) -> list[str]:
    if isinstance(v, str):  # a JSON string does not unmarshal into []string / StringSetVal
        raise ValueError(f"{what}: expected a list of strings, got the string {v!r}")
    if not isinstance(v, list):
        raise ValueError(f"{what}: expected a list of strings, got {type(v).__name__}")
    return [str(x) for x in v]


# --- nfd-master ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MasterSettings:
    """What one nfd-master runs with: the label-changing MasterConfig plus the rest the status shows."""

    config: MasterConfig
    no_publish: bool = False
    node_feature_api: bool = False  # the master reads NodeFeature objects (not gRPC from the workers)
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    config_path: str = ""           # the config file it reads ("" before v0.13: none)
    warnings: tuple[str, ...] = ()  # what the master would ignore or refuse, in its own words


def master_config_path(version: V.NfdVersion, args: Sequence[str]) -> str:
    if not version.at_least(13):
        return ""
    return flag_values(args).get("config", MASTER_CONFIG_PATH)


def parse_master(args: Sequence[str], config: Mapping[str, Any] | None, version: V.NfdVersion,
                 namespace: str = "") -> MasterSettings:
    """nfd-master's configuration from its args (command[1:] + args) and its parsed config file ({} / None: none).
    FlagError / ValueError for what nfd-master would refuse to start with."""
    flags = flag_values(args)
    warnings: list[str] = []
    c = MasterConfig(version=version, namespace=namespace or MasterConfig.namespace)
    no_publish = False
    gates = feature_gates(args) if version.at_least(16) else {}
    auto_default_ns = True
    if config and not version.at_least(13):
        warnings.append(f"nfd-master {version} has no config file (v0.13+): its content is ignored")
    layers: list[tuple[str, Any]] = []
    if version.at_least(13):
        layers.append(("config file", config or {}))
        if flags.get("options"):
            import yaml

            layers.append(("-options", yaml.safe_load(flags["options"]) or {}))
    # StringSetVal.UnmarshalJSON adds to the set it has (pkg/utils/flags.go), so -options extends the file's sets
    for what, doc in layers:
        if not isinstance(doc, Mapping):
            raise ValueError(f"nfd-master {what}: expected a mapping, got {type(doc).__name__}")
        v = _get(doc, "extraLabelNs")
        if v is not None:
            c = replace(c, extra_label_ns=c.extra_label_ns | set(_str_list(v, f"{what} extraLabelNs")))
        v = _get(doc, "denyLabelNs")
        if v is not None:
            c = replace(c, deny_label_ns=c.deny_label_ns | set(_str_list(v, f"{what} denyLabelNs")))
        v = _get(doc, "labelWhiteList")
        if v is not None:
            c = replace(c, label_whitelist=str(v))
        v = _get(doc, "resourceLabels")
        if v is not None:
            if version.at_least(17):
                warnings.append(f"{what}: resourceLabels is not read by nfd-master {version} (removed in v0.17)")
            else:
                c = replace(c, resource_labels=c.resource_labels | set(_str_list(v, f"{what} resourceLabels")))
        v = _get(doc, "enableTaints")
        if v is not None:
            c = replace(c, enable_taints=bool(v))
        v = _get(doc, "noPublish")
        if v is not None:
            no_publish = bool(v)
        v = _get(doc, "autoDefaultNs")
        if v is not None and version.at_least(15) and not version.at_least(19):
            auto_default_ns = bool(v)
    # the flags the command line set override the file (cmd/nfd-master/main.go flags.Visit)
    if "extra-label-ns" in flags:
        c = replace(c, extra_label_ns=string_set(flags["extra-label-ns"]))
    if "deny-label-ns" in flags and version.at_least(13):
        c = replace(c, deny_label_ns=string_set(flags["deny-label-ns"]))
    if "label-whitelist" in flags:
        c = replace(c, label_whitelist=flags["label-whitelist"])
    if "resource-labels" in flags and not version.at_least(17):
        c = replace(c, resource_labels=string_set(flags["resource-labels"]))
    if "enable-taints" in flags and version.at_least(12):
        c = replace(c, enable_taints=go_bool(flags["enable-taints"]))
    if "no-publish" in flags:
        no_publish = go_bool(flags["no-publish"])
    if "instance" in flags:
        c = replace(c, instance=flags["instance"])
    c = replace(c, disable_auto_prefix=gates.get("DisableAutoPrefix", False) or not auto_default_ns)
    return MasterSettings(config=c, no_publish=no_publish, node_feature_api=_master_nf_api(version, flags, gates),
                          feature_gates=gates, config_path=master_config_path(version, args),
                          warnings=tuple(warnings))


def _master_nf_api(version: V.NfdVersion, flags: Mapping[str, str], gates: Mapping[str, bool]) -> bool:
    """v0.12-v0.13 -enable-nodefeature-api (default false), v0.14-v0.15 the same flag (default true), v0.16 that
    flag and the NodeFeatureAPI gate (default true), v0.17+ always (the gRPC API is gone)."""
    if not V.nodefeature_api(version):
        return False
    if version.at_least(17):
        return True
    enabled = go_bool(flags.get("enable-nodefeature-api", "true" if version.at_least(14) else "false"))
    return enabled and (gates.get("NodeFeatureAPI", True) if version.at_least(16) else True)


# --- nfd-worker ---------------------------------------------------------------------------------------------


def worker_config_path(args: Sequence[str]) -> str:
    return flag_values(args).get("config", WORKER_CONFIG_PATH)


def _sources(values: Iterable[str]) -> tuple[str, ...] | None:
    vals = tuple(values)
    return None if vals == ("all",) else vals


def parse_worker(args: Sequence[str], config: Mapping[str, Any] | None, version: V.NfdVersion) -> WorkerConfig:
    """nfd-worker's configuration from its args and parsed nfd-worker.conf (pkg/nfd-worker configure + the
    overrides cmd/nfd-worker/main.go visits: -sleep-interval/-label-whitelist/-sources up to v0.11,
    -label-sources v0.10+, -no-publish)."""
    flags = flag_values(args)
    w = WorkerConfig()
    layers: list[tuple[str, Any]] = [("config file", config or {})]
    if flags.get("options"):
        import yaml

        layers.append(("-options", yaml.safe_load(flags["options"]) or {}))
    for what, doc in layers:
        if not isinstance(doc, Mapping):
            raise ValueError(f"nfd-worker {what}: expected a mapping, got {type(doc).__name__}")
        core = _get(doc, "core") or {}
        v = _get(core, "sleepInterval")
        if v is not None:
            w = replace(w, sleep_interval=_duration_value(v))
        v = _get(core, "labelWhiteList")
        if v is not None:
            w = replace(w, label_whitelist=str(v))
        v = _get(core, "noPublish")
        if v is not None:
            w = replace(w, no_publish=bool(v))
        old = _get(core, "sources")  # core.sources: v0.8-v0.9, deprecated for core.labelSources from v0.10
        new = _get(core, "labelSources") if version.at_least(10) else None
        if new is not None:
            w = replace(w, sources=_sources(_str_list(new, f"{what} core.labelSources")))
        if old is not None and (new is None or not version.at_least(10)):
            w = replace(w, sources=_sources(_str_list(old, f"{what} core.sources")))
        local = _get(_get(doc, "sources") or {}, "local") or {}
        v = _get(local, "hooksEnabled")
        if v is not None and version.at_least(12) and not version.at_least(17):
            w = replace(w, hooks_enabled=bool(v))
    if "no-publish" in flags:
        w = replace(w, no_publish=go_bool(flags["no-publish"]))
    if not version.at_least(12):  # -sleep-interval, -label-whitelist and -sources went in v0.12
        if "sleep-interval" in flags:
            w = replace(w, sleep_interval=go_duration(flags["sleep-interval"]))
        if "label-whitelist" in flags:
            w = replace(w, label_whitelist=flags["label-whitelist"])
        if "sources" in flags:
            w = replace(w, sources=_sources(flags["sources"].split(",")))
    if "label-sources" in flags and version.at_least(10):
        w = replace(w, sources=_sources(flags["label-sources"].split(",")))
    return w


def hooks_on(version: V.NfdVersion, worker: WorkerConfig) -> bool:
    """Whether this worker runs source.d hooks: removed in v0.17, off by default v0.14-v0.16 (versions.py)."""
    status = V.hooks_status(version)
    if status == "removed":
        return False
    if worker.hooks_enabled is not None and version.at_least(12):
        return worker.hooks_enabled
    return status == "enabled"
