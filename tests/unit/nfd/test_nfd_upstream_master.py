"""nfd-master's own unit tests, ported: label filtering and -resource-labels per version.

Reference: github:kubernetes-sigs/node-feature-discovery, pkg/nfd-master/nfd-master-internal_test.go and
pkg/nfd-master/nfd-master.go (filterFeatureLabels, filterFeatureLabel, filterExtendedResource) at the tag
each test names.
"""

from __future__ import annotations

import pytest

from console.nfd.labels import LabelPolicy, resolve_dynamic_value
from console.nfd.master import MasterConfig, compute_node_outcome, go_atoi_ok
from console.nfd.model import Features, make_node_feature
from console.nfd.versions import parse_version

from .conftest import nfr

FNS = "feature.node.kubernetes.io"


def _outcome(labels: dict[str, str], version: str, **cfg: object):
    nf = make_node_feature("node-1", Features(), labels)
    return compute_node_outcome([nf], (), config=MasterConfig(version=parse_version(version), **cfg))  # type: ignore[arg-type]


def test_set_labels_resource_labels_v0_16() -> None:
    """v0.16.0 nfd-master-internal_test.go TestSetLabels "When -resource-labels is specified": feature-1 and
    feature-3 (one given with its namespace, one without) leave the labels and become extended resources."""
    labels = {f"{FNS}/feature-1": "1", "example.io/feature-2": "val-2", f"{FNS}/feature-3": "3"}
    out = _outcome(labels, "v0.16.0", resource_labels=frozenset({f"{FNS}/feature-3", "feature-1"}))
    assert out.labels == {"example.io/feature-2": "val-2"}
    assert out.extended_resources == {f"{FNS}/feature-1": "1", f"{FNS}/feature-3": "3"}
    assert out.annotations["nfd.node.kubernetes.io/extended-resources"] == "feature-1,feature-3"
    assert out.annotations["nfd.node.kubernetes.io/feature-labels"] == "example.io/feature-2"


def test_set_labels_resource_labels_v0_8_2() -> None:
    """v0.8.2 nfd-master-internal_test.go TestSetLabels "When --resource-labels is specified": labels from the
    worker without a namespace; the ER annotation lists feature-1,feature-3, capacity gets
    feature.node.kubernetes.io/feature-1 and -3, and only feature-2 stays a label."""
    out = _outcome({"feature-1": "1", "feature-2": "val-2", "feature-3": "3"}, "v0.8.2",
                   resource_labels=frozenset({"feature-3", "feature-1"}))
    assert out.labels == {f"{FNS}/feature-2": "val-2"}
    assert out.extended_resources == {f"{FNS}/feature-1": "1", f"{FNS}/feature-3": "3"}
    assert out.annotations["nfd.node.kubernetes.io/extended-resources"] == "feature-1,feature-3"
    assert out.annotations["nfd.node.kubernetes.io/feature-labels"] == "feature-2"


@pytest.mark.parametrize("version", ["v0.8.2", "v0.12.0", "v0.14.0", "v0.16.0"])
def test_resource_label_needs_an_integer(version: str) -> None:
    """filterFeatureLabels (v0.6.0-v0.16.x): `strconv.Atoi(value)` fails -> `continue` before the delete,
    so a non-integer value stays a label and no extended resource is made."""
    out = _outcome({"cores": "4", "speed": "fast", "big": "1.5"}, version,
                   resource_labels=frozenset({"cores", "speed", "big"}))
    assert out.extended_resources == {f"{FNS}/cores": "4"}
    assert out.labels == {f"{FNS}/speed": "fast", f"{FNS}/big": "1.5"}
    assert any("stays a label" in w and "speed" in w for w in out.warnings)


def test_resource_label_only_after_the_label_filters() -> None:
    """v0.16.0 filterFeatureLabels: ERs are taken from outLabels, i.e. labels the whitelist and namespace
    checks kept; a denied or non-whitelisted label gives no extended resource."""
    out = _outcome({"gpus": "2", "vendor.io/cards": "3"}, "v0.16.0",
                   resource_labels=frozenset({"gpus", "vendor.io/cards"}), label_whitelist="^cards$")
    assert out.extended_resources == {"vendor.io/cards": "3"}
    assert out.labels == {}
    assert {d.key for d in out.dropped} == {f"{FNS}/gpus"}


def test_rule_extended_resource_wins_over_resource_label() -> None:
    """v0.16.0 refreshNodeFeatures: `maps.Copy(extendedResources, crExtendedResources)` after the resource
    labels, so a NodeFeatureRule ER of the same name overrides the label's value."""
    nf = make_node_feature("node-1", Features(), {"gpus": "2"})
    rules = [nfr("r", {"name": "er", "extendedResources": {"gpus": "8"}})]
    cfg = MasterConfig(version=parse_version("v0.16.0"), resource_labels=frozenset({"gpus"}))
    out = compute_node_outcome([nf], rules, config=cfg)
    assert out.extended_resources == {f"{FNS}/gpus": "8"}
    assert f"{FNS}/gpus" not in out.labels


def test_resource_labels_removed_in_v0_17() -> None:
    """v0.17.0 cmd/nfd-master/main.go has no -resource-labels flag (and NFDConfig no ResourceLabels): the
    label stays a label; the preview says the option does not exist there."""
    out = _outcome({"gpus": "2"}, "v0.17.0", resource_labels=frozenset({"gpus"}))
    assert out.labels == {f"{FNS}/gpus": "2"} and out.extended_resources == {}
    assert any("removed in v0.17.0" in w for w in out.warnings)


def test_go_atoi() -> None:
    """strconv.Atoi (github:golang/go src/strconv/atoi.go): optional sign, base 10, no underscores, int64."""
    assert go_atoi_ok("42") and go_atoi_ok("+7") and go_atoi_ok("-3") and go_atoi_ok(str(2**63 - 1))
    for bad in ("", "1_000", "0x10", "1.0", " 1", str(2**63), "１"):
        assert not go_atoi_ok(bad), bad


# v0.16.0 nfd-master-internal_test.go TestFilterLabels: ExtraLabelNs {example.io}; denied normal
# {"", kubernetes.io, denied.ns}, wildcard {.kubernetes.io, .denied.subns} (the test sets m.deniedNs
# directly; "" denies unprefixed names, which validate.Label rejects anyway).
_FILTER_CASES = [
    ("Static value", "example.io/test", "test-val", None, "test-val"),
    ("Dynamic value", "example.io/testLabel", "@test.feature.LSM", {"test.feature": {"LSM": "123"}}, "123"),
    ("Unprefixed should be denied", "test-label", "test-value", None, None),
    ("kubernetes.io ns should be denied", "kubernetes.io/test-label", "test-value", None, None),
    ("*.kubernetes.io ns should be denied", "sub.ns.kubernetes.io/test-label", "test-value", None, None),
    ("denied.ns ns should be denied", "denied.ns/test-label", "test-value", None, None),
    ("*.denied.subns ns should be denied", "my.denied.subns/test-label", "test-value", None, None),
]


@pytest.mark.parametrize(("desc", "name", "value", "attrs", "expected"), _FILTER_CASES,
                         ids=[c[0] for c in _FILTER_CASES])
def test_filter_labels_v0_16(desc: str, name: str, value: str, attrs: dict | None, expected: str | None) -> None:
    """v0.16.0 nfd-master-internal_test.go TestFilterLabels (each case by its description)."""
    policy = LabelPolicy(parse_version("v0.16.0"), extra_label_ns=frozenset({"example.io"}),
                         deny_label_ns=frozenset({"denied.ns", "*.denied.subns"}))
    got, reason = policy.filter_label(name, value, attrs or {})
    if expected is None:
        assert got is None and reason, desc
    else:
        assert (got, reason) == (expected, ""), desc


def test_extra_label_ns_reallows_a_denied_namespace() -> None:
    """v0.16.0 filterFeatureLabel: a namespace that validate.Label refuses (ErrNSNotAllowed) or the deny list
    names is still allowed when -extra-label-ns lists it."""
    v = parse_version("v0.16.0")
    assert LabelPolicy(v, extra_label_ns=frozenset({"sub.kubernetes.io"})).filter_label(
        "sub.kubernetes.io/x", "1") == ("1", "")
    assert LabelPolicy(v, extra_label_ns=frozenset({"denied.ns"}), deny_label_ns=frozenset({"denied.ns"})
                       ).filter_label("denied.ns/x", "1") == ("1", "")
    assert LabelPolicy(v).filter_label("sub.kubernetes.io/x", "1")[0] is None


def test_v0_8_2_only_the_feature_namespace_or_extra() -> None:
    """v0.8.2 filterFeatureLabels: `if ns != LabelNs` the namespace must be in -extra-label-ns; the whitelist
    matches the name without the namespace."""
    v = parse_version("v0.8.2")
    assert LabelPolicy(v).filter_label("vendor.io/x", "1")[0] is None
    assert LabelPolicy(v, extra_label_ns=frozenset({"vendor.io"})).filter_label("vendor.io/x", "1") == ("1", "")
    wl = LabelPolicy(v, label_whitelist="^x")
    assert wl.filter_label(f"{FNS}/xa", "1") == ("1", "")
    assert wl.filter_label(f"{FNS}/ax", "1")[0] is None


@pytest.mark.parametrize(("value", "attrs", "want"), [
    ("@test.feature.LSM", {"test.feature": {"LSM": "123"}}, "123"),
    ("@invalid", {}, None),
    ("@test.feature.LSM", {}, None),
])
def test_get_dynamic_value(value: str, attrs: dict, want: str | None) -> None:
    """v0.16.0 nfd-master-internal_test.go TestGetDynamicValue ("Valid dynamic value", "Invalid feature name",
    "Element not found")."""
    got, err = resolve_dynamic_value(value, attrs)
    assert (got, bool(err)) == (want or "", want is None)


def test_dynamic_label_value_v0_14() -> None:
    """v0.14.0 nfd-master-internal_test.go TestFilterLabels "When using dynamic values": testLabel=@test.feature.LSM
    resolves to 123 (unprefixed name, default namespace added first)."""
    policy = LabelPolicy(parse_version("v0.14.0"))
    assert policy.filter_label(f"{FNS}/testLabel", "@test.feature.LSM", {"test.feature": {"LSM": "123"}}) == ("123", "")
    assert LabelPolicy(parse_version("v0.13.0")).filter_label(f"{FNS}/x", "@test.feature.LSM")[0] is None  # no @ yet


def test_deny_list_era_forces_kubernetes_io_v0_13() -> None:
    """v0.13.0 nfd-master.go configure: kubernetes.io and *.kubernetes.io are always added to the denied
    namespaces; the NFD namespaces (feature./profile.node.kubernetes.io and their sub-namespaces) pass."""
    v = parse_version("v0.13.0")
    assert LabelPolicy(v).filter_label("kubernetes.io/x", "1")[0] is None
    assert LabelPolicy(v).filter_label("sub.kubernetes.io/x", "1")[0] is None
    assert LabelPolicy(v).filter_label("vendor.feature.node.kubernetes.io/x", "1") == ("1", "")
    assert LabelPolicy(v).filter_label("example.com/x", "1") == ("1", "")


def test_flags_a_version_does_not_have() -> None:
    """cmd/nfd-master/main.go: -deny-label-ns from v0.13.0, -enable-taints from v0.12.0 (v0.8.2 has neither)."""
    out = _outcome({"a": "1"}, "v0.8.2", deny_label_ns=frozenset({"x.io"}), enable_taints=True)
    assert sum("has no such flag" in w for w in out.warnings) == 2
    assert not [w for w in _outcome({"a": "1"}, "v0.13.0", deny_label_ns=frozenset({"x.io"})).warnings
                if "no such flag" in w]
