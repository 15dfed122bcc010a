"""Kubernetes label syntax and nfd-master's per-version label namespace policy.

Invalid labels are dropped with a reason, never truncated (no NFD version truncates).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from console.nfd.regex import Regexp, RegexpError, compile_regexp
from console.nfd.versions import CURRENT, NfdVersion, auto_prefix_mode, label_dynamic_values, label_namespace_era

FEATURE_NS = "feature.node.kubernetes.io"
PROFILE_NS = "profile.node.kubernetes.io"
ANNOTATION_NS = "nfd.node.kubernetes.io"
FEATURE_SUB = "." + FEATURE_NS
PROFILE_SUB = "." + PROFILE_NS

_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_FMT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def qualified_name_errors(key: str) -> list[str]:
    """k8s IsQualifiedName: optional DNS-1123 subdomain prefix (<=253) + '/' + name (<=63)."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            errs.append("prefix part must be no more than 253 characters")
        elif not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            errs.append(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character"
            )
    else:
        return [f"a qualified name {_NAME_FMT} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append(f"name part must be no more than 63 characters (has {len(name)})")
    elif not _NAME_RE.fullmatch(name):
        errs.append(f"name part {_NAME_FMT}")
    return errs


def label_value_errors(value: str) -> list[str]:
    """k8s IsValidLabelValue."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append(f"must be no more than 63 characters (has {len(value)})")
    if not _VALUE_RE.fullmatch(value):
        errs.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return errs


def split_ns(key: str) -> tuple[str, str]:
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", key)


def add_ns(key: str, ns: str = FEATURE_NS) -> str:
    return key if "/" in key else f"{ns}/{key}"


def add_ns_to_keys(labels: Mapping[str, str], ns: str = FEATURE_NS) -> dict[str, str]:
    """addNsToMapKeys: a prefixed key wins over the same unprefixed key."""
    out: dict[str, str] = {}
    for k, v in labels.items():
        if "/" in k:
            out[k] = v
        else:
            fqn = f"{ns}/{k}"
            if fqn not in labels:
                out[fqn] = v
    return out


def is_kubernetes_ns(ns: str) -> bool:
    return ns == "kubernetes.io" or ns.endswith(".kubernetes.io")


def is_nfd_label_ns(ns: str) -> bool:
    return ns in (FEATURE_NS, PROFILE_NS) or ns.endswith(FEATURE_SUB) or ns.endswith(PROFILE_SUB)


@dataclass(frozen=True)
class DroppedItem:
    """A label (or annotation, ER, taint) nfd would not write, and why."""

    key: str
    value: str
    reason: str
    stage: str = "master"  # "worker" or "master"

    def as_dict(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "reason": self.reason, "stage": self.stage}


@dataclass
class LabelPolicy:
    """nfd-master's label options for one NFD version (flags/config of the master)."""

    version: NfdVersion = CURRENT
    extra_label_ns: frozenset[str] = frozenset()
    deny_label_ns: frozenset[str] = frozenset()
    label_whitelist: str | None = None
    disable_auto_prefix: bool = False
    _whitelist_re: Regexp | None = field(default=None, init=False, repr=False)
    _cache: dict[tuple[str, str], tuple[str | None, str]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.extra_label_ns = frozenset(self.extra_label_ns)
        self.deny_label_ns = frozenset(self.deny_label_ns)
        if self.label_whitelist:
            try:  # nfd-master's -label-whitelist is a Go regexp (pkg/utils/flags.go RegexpVal)
                self._whitelist_re = compile_regexp(self.label_whitelist)
            except RegexpError as exc:
                raise ValueError(f"invalid label whitelist regexp {self.label_whitelist!r}: {exc.describe()}") from None

    @property
    def prefix_mode(self) -> str:
        return auto_prefix_mode(self.version, self.disable_auto_prefix)

    def _denied(self, ns: str) -> bool:
        denied = set(self.deny_label_ns)
        if label_namespace_era(self.version) == "deny-list":
            denied |= {"kubernetes.io", "*.kubernetes.io"}  # v0.13-v0.14 force these into the deny list
        for d in denied:
            if d.startswith("*"):
                if ns.endswith(d.lstrip("*")):
                    return True
            elif ns == d:
                return True
        return False

    def whitelist_error(self, key: str) -> str | None:
        _, base = split_ns(key)
        if self._whitelist_re is not None and not self._whitelist_re.match_string(base):
            return f"{base} ({key}) does not match the whitelist ({self.label_whitelist})"
        return None

    def filter_label(self, key: str, value: str, attributes: Mapping[str, Mapping[str, str]] | None = None
                     ) -> tuple[str | None, str]:
        """nfd-master's filterFeatureLabel for this version: (value, "") or (None, reason).

        `key` must already be auto-prefixed where the version does so; `attributes` are the node's
        attribute features for `@` values.
        """
        v = self.version
        if value.startswith("@") and label_dynamic_values(v):
            resolved, err = resolve_dynamic_value(value, attributes or {})
            if err:
                return None, err
            value = resolved
        # The verdict depends only on (key, value) and the policy: memoise it across nodes.
        hit = self._cache.get((key, value))
        if hit is None:
            hit = self._filter(key, value)
            if len(self._cache) < 100_000:
                self._cache[(key, value)] = hit
        return hit

    def _filter(self, key: str, value: str) -> tuple[str | None, str]:
        v = self.version
        era = label_namespace_era(v)
        ns, _ = split_ns(key)
        if era == "validate":
            err, ns_err, unprefixed = _validate_label(key, value)
            if ns_err or self._denied(ns):
                if ns not in self.extra_label_ns:
                    return None, f"namespace {ns!r} is not allowed" + _ns_hint(v, ns)
            elif err and not (unprefixed and self.prefix_mode == "keep-unprefixed"):
                return None, err
        else:
            errs = qualified_name_errors(key)
            if errs:
                return None, f"invalid label key {key!r}: " + "; ".join(errs)
            if era == "deny-list":
                if not is_nfd_label_ns(ns) and self._denied(ns) and ns not in self.extra_label_ns:
                    return None, f"namespace {ns!r} is not allowed" + _ns_hint(v, ns)
            elif not _legacy_ns_allowed(era, ns) and ns not in self.extra_label_ns:
                return None, f"namespace {ns!r} is not allowed" + _ns_hint(v, ns)
            verrs = label_value_errors(value)
            if verrs:
                hint = "" if era == "deny-list" else (
                    f" (nfd-master {v} does not check values: the API server would reject the whole node update)")
                return None, f"invalid value {value!r}: " + "; ".join(verrs) + hint
        wl = self.whitelist_error(key)
        if wl:
            return None, wl
        return value, ""


def _legacy_ns_allowed(era: str, ns: str) -> bool:
    if ns == FEATURE_NS:
        return True
    if era in ("feature-subns", "feature-profile") and ns.endswith(FEATURE_SUB):
        return True
    return era == "feature-profile" and (ns == PROFILE_NS or ns.endswith(PROFILE_SUB))


def _ns_hint(v: NfdVersion, ns: str) -> str:
    era = label_namespace_era(v)
    if era in ("validate", "deny-list") and is_kubernetes_ns(ns):
        return f" (NFD {v} denies kubernetes.io and *.kubernetes.io; re-allow with -extra-label-ns={ns})"
    if era in ("validate", "deny-list"):
        return f" (denied by -deny-label-ns in NFD {v}; re-allow with -extra-label-ns={ns})"
    return f" (NFD {v} allows only its own namespaces without configuration; add -extra-label-ns={ns})"


def _validate_label(key: str, value: str) -> tuple[str, bool, bool]:
    """validate.Label (v0.15+): (error, namespace-not-allowed, unprefixed)."""
    errs = qualified_name_errors(key)
    if errs:
        return f"invalid label key {key!r}: " + "; ".join(errs), False, False
    ns, _ = split_ns(key)
    if not ns:
        return "unprefixed keys are not allowed", False, True
    if is_kubernetes_ns(ns) and not is_nfd_label_ns(ns):
        return "namespace is not allowed", True, False
    verrs = label_value_errors(value)
    if verrs:
        return f"invalid value {value!r}: " + "; ".join(verrs), False, False
    return "", False, False


def resolve_dynamic_value(value: str, attributes: Mapping[str, Mapping[str, str]]) -> tuple[str, str]:
    """getDynamicValue: `@domain.feature.element` from an attribute feature; ("", error) on failure."""
    split = value[1:].split(".", 2)
    if len(split) != 3:
        return "", f"value {value} is not in the form of '@domain.feature.element'"
    feature = f"{split[0]}.{split[1]}"
    attrs = attributes.get(feature)
    if attrs is None:
        return "", f"feature {feature} not found"
    if split[2] not in attrs:
        return "", f"element {split[2]} not found on feature {feature}"
    return attrs[split[2]], ""


def worker_label_check(key: str, value: str) -> str:
    """nfd-worker's GetFeatureLabels check for local/custom labels; returns the reason or ""."""
    errs = qualified_name_errors(key)
    if errs:
        return f"invalid label name {key!r}: " + "; ".join(errs)
    verrs = label_value_errors(value)
    if verrs:
        return f"invalid label value {value!r} for {key!r}: " + "; ".join(verrs)
    return ""


def tracking_list(keys: Iterable[str], ns: str = FEATURE_NS) -> str:
    """The sorted, comma-separated tracking-annotation value (default-ns names without prefix)."""
    return ",".join(sorted(k[len(ns) + 1:] if k.startswith(ns + "/") else k for k in keys))
