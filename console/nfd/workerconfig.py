"""nfd-worker's configuration as far as it changes labels: nfd-worker.conf and the worker flags.

`WorkerConfig` has the field names of the issue-11 contract (console/nfd/deployment.py, owned by the
discovery slice); until that module lands this is the one definition, to be unified there.

Reference (github:kubernetes-sigs/node-feature-discovery): pkg/nfd-worker/nfd-worker.go `coreConfig`,
`configure` (sigs.k8s.io/yaml: YAML -> JSON -> encoding/json, so keys match case-insensitively and unknown
keys are ignored; the deprecated `core.sources` replaces `core.labelSources` from v0.10), `configureCore`
(label sources: "all", names, "-name" to drop one), `getFeatureLabels` (core.labelWhiteList: a Go regexp
matched, unanchored, against the name after the namespace); source/local/local.go `HooksEnabled`
(v0.12-v0.16, default true until v0.13, false from v0.14); pkg/utils/flags.go `DurationVal`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from console.nfd import versions as V


@dataclass(frozen=True)
class WorkerConfig:
    sleep_interval: float = 60.0  # core.sleepInterval (Go duration) / -sleep-interval
    hooks_enabled: bool | None = None  # sources.local.hooksEnabled (v0.12-v0.16); None = the version's default
    label_whitelist: str | None = None  # core.labelWhiteList (RE2)
    sources: tuple[str, ...] | None = None  # core.labelSources / -label-sources ("all" -> None)
    no_publish: bool = False


class WorkerConfigError(ValueError):
    """nfd-worker.conf that nfd-worker itself would refuse to parse (it exits: "failed to parse config file")."""


def json_field(m: Mapping[str, Any], name: str) -> Any:
    """encoding/json field lookup: the exact key, else a case-insensitive one."""
    if name in m:
        return m[name]
    low = name.lower()
    for k, v in m.items():
        if isinstance(k, str) and k.lower() == low:
            return v
    return None


_DURATION_RE = re.compile(r"(\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> float:
    """time.ParseDuration in seconds: "60s", "1m30s", "1.5h", "-1s", "0"; ValueError in Go's words otherwise."""
    s = text.strip() if isinstance(text, str) else ""
    sign = -1.0 if s.startswith("-") else 1.0
    s = s[1:] if s[:1] in "+-" else s
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"time: invalid duration {text!r}")
    total, pos = 0.0, 0
    for m in _DURATION_RE.finditer(s):
        if m.start() != pos or m.group(1) in ("", "."):
            raise ValueError(f"time: invalid duration {text!r}")
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
    if pos != len(s):
        raise ValueError(f"time: missing unit in duration {text!r}" if pos == 0 else f"time: invalid duration {text!r}")
    return sign * total


def regexp_field(value: Any, key: str, error: type[ValueError]) -> str | None:
    """A config file's Go regexp string (RegexpVal.UnmarshalJSON: regexp.Compile), None for "" (matches all)."""
    from console.nfd.regex import RegexpError, compile_regexp

    if not isinstance(value, str):
        raise error(f"{key} must be a string (a Go regexp), not {value!r}")
    try:
        compile_regexp(value)
    except RegexpError as exc:
        raise error(f"{key} {value!r}: {exc.describe()}") from None
    return value or None


def _string_list(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise WorkerConfigError(f"{key} must be a list of strings, not {value!r}")
    return tuple(value)


def worker_config_from_file(data: Mapping[str, Any] | None, version: V.NfdVersion,
                            base: WorkerConfig | None = None) -> WorkerConfig:
    """The settings of an nfd-worker.conf (already YAML-parsed) over `base` (default: NFD's defaults)."""
    base = base or WorkerConfig()
    if data is None:
        return base
    if not isinstance(data, Mapping):
        raise WorkerConfigError(f"nfd-worker.conf must be a mapping, not {type(data).__name__}")
    fields: dict[str, Any] = {f: getattr(base, f) for f in WorkerConfig.__dataclass_fields__}
    core = json_field(data, "core") or {}
    if not isinstance(core, Mapping):
        raise WorkerConfigError(f"core must be a mapping, not {core!r}")
    wl = json_field(core, "labelWhiteList")
    if wl is not None:
        fields["label_whitelist"] = regexp_field(wl, "core.labelWhiteList", WorkerConfigError)
    npub = json_field(core, "noPublish")
    if npub is not None:
        if not isinstance(npub, bool):
            raise WorkerConfigError(f"core.noPublish must be true or false, not {npub!r}")
        fields["no_publish"] = npub
    si = json_field(core, "sleepInterval")
    if si is not None:
        try:  # DurationVal: a string Go duration, or a JSON number of nanoseconds
            fields["sleep_interval"] = si / 1e9 if isinstance(si, int | float) and not isinstance(si, bool) \
                else parse_go_duration(si)
        except ValueError as exc:
            raise WorkerConfigError(f"core.sleepInterval: {exc}") from None
    names = ("sources",) if not V.rules_supported(version) else ("labelSources", "sources")
    for key in names:  # v0.10+: a (deprecated) core.sources replaces core.labelSources
        val = json_field(core, key)
        if val is not None:
            srcs = _string_list(val, f"core.{key}")
            fields["sources"] = None if srcs == ("all",) else srcs
    local = json_field(json_field(data, "sources") or {}, "local")
    if isinstance(local, Mapping):
        he = json_field(local, "hooksEnabled")
        if he is not None:
            if not isinstance(he, bool):
                raise WorkerConfigError(f"sources.local.hooksEnabled must be true or false, not {he!r}")
            fields["hooks_enabled"] = he
    return WorkerConfig(**fields)


def local_labels_enabled(sources: Sequence[str] | None, version: V.NfdVersion) -> bool:
    """Whether the `local` label source runs under core.labelSources (None = all).

    v0.10+ configureCore: entries in order, "all" adds every default source, a name adds it, "-name"
    drops it. v0.8-v0.9: "all" or names (entries trimmed), no "-name".
    """
    if sources is None:
        return True
    if not V.rules_supported(version):
        return any(s.strip() in ("all", "local") for s in sources)
    enabled = False
    for s in sources:
        if s == "all" or s == "local":
            enabled = True
        elif s == "-local":
            enabled = False
    return enabled


def hooks_enabled(config: WorkerConfig, version: V.NfdVersion) -> bool | None:
    """sources.local.hooksEnabled as nfd-worker of `version` reads it (before v0.12 there is no such key)."""
    return config.hooks_enabled if version.at_least(12) else None
