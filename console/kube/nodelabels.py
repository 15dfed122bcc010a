"""Node labels grouped by where they come from: NFD feature sources, hooks/feature files, rules, other."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from console.nfd.labels import is_nfd_label_ns, split_ns

# NFD's built-in feature sources, in the order the console lists them
SOURCES = ("cpu", "kernel", "memory", "network", "pci", "usb", "system", "storage")
GROUPS = (*SOURCES, "local/hooks", "rules", "other")
FEATURE_LABELS_ANNOTATION = "nfd.node.kubernetes.io/feature-labels"


def feature_label_keys(annotations: Mapping[str, str]) -> set[str]:
    """Label keys NFD says it manages (its feature-labels annotation, names without the default namespace)."""
    raw = annotations.get(FEATURE_LABELS_ANNOTATION, "")
    keys = set()
    for item in raw.split(","):
        item = item.strip()
        if item:
            keys.add(item if "/" in item else f"feature.node.kubernetes.io/{item}")
    return keys


def label_group(key: str, managed: Collection[str] = (), rule_keys: Collection[str] = (),
                rule_namespaces: Collection[str] = ()) -> str:
    """The group one label belongs to.

    `managed`: keys from NFD's feature-labels annotation; `rule_keys`: keys NodeFeatureRules
    produce (when known); `rule_namespaces`: namespaces only rules write to.
    """
    ns, name = split_ns(key)
    if key in rule_keys or (ns and ns in rule_namespaces):
        return "rules"
    if is_nfd_label_ns(ns):
        source = name.split("-", 1)[0] if "-" in name else ""
        if source in SOURCES:
            return source
        if source == "custom" or name.startswith("rule."):
            return "rules"
        if source == "local":
            return "local/hooks"
        return "local/hooks"
    if key in managed:
        return "rules"  # NFD manages it but it is outside its namespaces: only rules (extra namespaces) do that
    return "other"


def group_labels(labels: Mapping[str, str], annotations: Mapping[str, str] | None = None,
                 rule_keys: Collection[str] = (), rule_namespaces: Collection[str] = ()) -> dict[str, dict[str, str]]:
    """Labels by group, groups in GROUPS order, empty groups left out, keys sorted."""
    managed = feature_label_keys(annotations or {})
    out: dict[str, dict[str, str]] = {g: {} for g in GROUPS}
    for key in sorted(labels):
        out[label_group(key, managed, rule_keys, rule_namespaces)][key] = labels[key]
    return {g: v for g, v in out.items() if v}


def nfd_label_count(labels: Mapping[str, str]) -> int:
    return sum(1 for k in labels if is_nfd_label_ns(split_ns(k)[0]))
