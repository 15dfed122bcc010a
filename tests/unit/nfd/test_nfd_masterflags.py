"""nfd-master / nfd-worker command lines and config files (console/nfd/masterflags.py).

References (kubernetes-sigs/node-feature-discovery): Go's flag package syntax (golang/go src/flag/flag.go
parseOne), cmd/nfd-master/main.go and pkg/nfd-master/nfd-master.go `configure` at v0.16.4 (defaults < config
file < -options < flags), pkg/utils/flags.go (StringSetVal, DurationVal), and the upstream tests ported below:
pkg/nfd-master/nfd-master-internal_test.go TestConfigParse, pkg/nfd-worker/nfd-worker-internal_test.go
TestConfigParse and cmd/nfd-worker/main_test.go TestParseArgs, all at tag v0.16.4.
"""

from __future__ import annotations

import pytest
import yaml

from console.nfd.masterflags import (
    FlagError,
    WorkerConfig,
    feature_gates,
    go_duration,
    hooks_on,
    parse_go_flags,
    parse_master,
    parse_worker,
    unknown_flags,
)
from console.nfd.versions import parse_version

V0_8, V0_12, V0_13, V0_14, V0_16, V0_17, V0_19 = (parse_version(v) for v in (
    "v0.8.2", "v0.12.1", "v0.13.0", "v0.14.0", "v0.16.4", "v0.17.0", "v0.19.0"))


def test_go_flag_forms() -> None:
    """-flag=value, --flag=value, -flag value, booleans standing alone or with =false; stops at `--` / a non-flag."""
    got = parse_go_flags(["-extra-label-ns=nvidia.com", "--deny-label-ns", "bad.io", "-enable-taints",
                          "-no-publish=false", "--", "-prune"])
    assert got == [("extra-label-ns", "nvidia.com"), ("deny-label-ns", "bad.io"), ("enable-taints", "true"),
                   ("no-publish", "false")]
    assert parse_go_flags(["-v=2", "stray", "-prune"]) == [("v", "2")]
    # a boolean never takes the next argument (flag.go: boolFlag), so "false" is a stray argument here
    assert parse_go_flags(["-prune", "false"]) == [("prune", "true")]


@pytest.mark.parametrize("argv, error", [(["-label-whitelist"], "needs an argument"),
                                         (["-enable-taints=yes"], "invalid boolean"),
                                         (["---x"], "bad flag syntax"), (["-=x"], "bad flag syntax")])
def test_go_flag_errors(argv: list[str], error: str) -> None:
    with pytest.raises(FlagError, match=error):
        parse_go_flags(argv)


@pytest.mark.parametrize("text, seconds", [("60s", 60), ("1m30s", 90), ("1.5h", 5400), ("300ms", 0.3), ("0", 0),
                                           ("-1s", -1), ("2h45m", 9900)])
def test_go_duration(text: str, seconds: float) -> None:
    """time.ParseDuration (golang/go src/time/format.go): what core.sleepInterval / -sleep-interval accept."""
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["60", "", "s", "1x", "1.s2"])
def test_go_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        go_duration(text)


def test_upstream_master_overrides_without_file() -> None:
    """nfd-master-internal_test.go TestConfigParse "and no core cmdline flags have been specified" (v0.16.4):
    -options alone."""
    overrides = ('{"noPublish": true, "enableTaints": true, "extraLabelNs": ["added.ns.io","added.kubernetes.io"], '
                 '"denyLabelNs": ["denied.ns.io","denied.kubernetes.io"], "resourceLabels": '
                 '["vendor-1.com/feature-1","vendor-2.io/feature-2"], "labelWhiteList": "foo"}')
    s = parse_master([f"-options={overrides}"], None, V0_16)
    assert s.no_publish and s.config.enable_taints
    assert s.config.extra_label_ns == {"added.ns.io", "added.kubernetes.io"}
    assert s.config.deny_label_ns == {"denied.ns.io", "denied.kubernetes.io"}
    assert s.config.resource_labels == {"vendor-1.com/feature-1", "vendor-2.io/feature-2"}
    assert s.config.label_whitelist == "foo"
    # "and a non-accessible file, but cmdline flags and some overrides are specified": the flags win
    s = parse_master([f"-options={overrides}", "-extra-label-ns=override.added.ns.io",
                      "-deny-label-ns=override.denied.ns.io"], None, V0_16)
    assert s.config.extra_label_ns == {"override.added.ns.io"} and s.config.deny_label_ns == {"override.denied.ns.io"}
    assert s.no_publish and s.config.enable_taints


MASTER_CONF = yaml.safe_load("""
noPublish: true
denyLabelNs: ["denied.ns.io","denied.kubernetes.io"]
resourceLabels: ["vendor-1.com/feature-1","vendor-2.io/feature-2"]
enableTaints: false
labelWhiteList: "foo"
leaderElection:
  leaseDuration: 20s
  renewDeadline: 4s
  retryPeriod: 30s
""")  # nfd-master-internal_test.go TestConfigParse's temporary config file (v0.16.4)


def test_upstream_master_config_file_and_flags() -> None:
    """"and a proper config file is specified": the file's settings, the -extra-label-ns flag over it."""
    s = parse_master(["-extra-label-ns=override.added.ns.io"], MASTER_CONF, V0_16)
    assert s.no_publish and not s.config.enable_taints
    assert s.config.extra_label_ns == {"override.added.ns.io"}
    assert s.config.resource_labels == {"vendor-1.com/feature-1", "vendor-2.io/feature-2"}
    assert s.config.deny_label_ns == {"denied.ns.io", "denied.kubernetes.io"}
    assert s.config.label_whitelist == "foo"
    # "and a proper config file and overrides are given": -options over the file, the flag over both
    s = parse_master(['-options={"extraLabelNs": ["added.ns.io"], "noPublish": true}', "-deny-label-ns=denied.ns.io"],
                     MASTER_CONF, V0_16)
    assert s.config.extra_label_ns == {"added.ns.io"} and s.config.deny_label_ns == {"denied.ns.io"}


def test_master_string_sets_as_go_reads_them() -> None:
    """StringSetVal.Set splits on "," (empty parts kept); the last occurrence of a flag wins; UnmarshalJSON adds to
    the set it has, so -options extends the config file's list (pkg/utils/flags.go, v0.16.4)."""
    s = parse_master(["-extra-label-ns=a.io,b.io", "-extra-label-ns=nvidia.com"], None, V0_16)
    assert s.config.extra_label_ns == {"nvidia.com"}
    assert parse_master(["-extra-label-ns="], None, V0_16).config.extra_label_ns == {""}
    s = parse_master(['-options={"extraLabelNs": ["b.io"]}'], {"extraLabelNs": ["a.io"]}, V0_16)
    assert s.config.extra_label_ns == {"a.io", "b.io"}
    # encoding/json matches field names case-insensitively (sigs.k8s.io/yaml)
    assert parse_master([], {"ExtraLabelNS": ["x.io"]}, V0_16).config.extra_label_ns == {"x.io"}
    with pytest.raises(ValueError, match="list of strings"):
        parse_master([], {"extraLabelNs": "a.io,b.io"}, V0_16)


def test_master_versions() -> None:
    """No config file before v0.13 (cmd/nfd-master/main.go v0.12.x has no -config); -deny-label-ns from v0.13,
    -enable-taints from v0.12, -resource-labels gone in v0.17; the NodeFeature API: -enable-nodefeature-api
    default false at v0.12-v0.13, true at v0.14, the NodeFeatureAPI gate at v0.16, always from v0.17."""
    s = parse_master(["-extra-label-ns=vendor.io", "-resource-labels=vendor.io/gpu"], {"enableTaints": True}, V0_8)
    assert s.config.extra_label_ns == {"vendor.io"} and s.config.resource_labels == {"vendor.io/gpu"}
    assert not s.config.enable_taints and s.warnings and s.config_path == "" and not s.node_feature_api
    assert not parse_master(["-deny-label-ns=x.io"], None, V0_12).config.deny_label_ns
    assert parse_master(["-enable-taints"], None, V0_12).config.enable_taints
    assert not parse_master([], None, V0_12).node_feature_api
    assert parse_master(["-enable-nodefeature-api"], None, V0_12).node_feature_api
    assert parse_master([], None, V0_14).node_feature_api
    assert not parse_master(["-feature-gates=NodeFeatureAPI=false"], None, V0_16).node_feature_api
    assert parse_master(["-enable-nodefeature-api=false"], None, V0_17).node_feature_api
    assert parse_master(["-resource-labels=a/b"], {"resourceLabels": ["c/d"]}, V0_17).config.resource_labels == set()
    assert parse_master([], None, V0_16).config_path == "/etc/kubernetes/node-feature-discovery/nfd-master.conf"
    assert parse_master(["-config=/etc/nfd/m.conf"], None, V0_16).config_path == "/etc/nfd/m.conf"


def test_master_auto_prefix_and_gates() -> None:
    """autoDefaultNs (v0.15-v0.18 config) and the DisableAutoPrefix gate (v0.16+); the Helm chart passes one
    -feature-gates flag per gate (templates/master.yaml), and they merge (component-base featuregate)."""
    args = ["-feature-gates=NodeFeatureAPI=true", "-feature-gates=DisableAutoPrefix=true"]
    assert feature_gates(args) == {"NodeFeatureAPI": True, "DisableAutoPrefix": True}
    assert parse_master(args, None, V0_16).config.disable_auto_prefix
    assert parse_master([], {"autoDefaultNs": False}, V0_16).config.disable_auto_prefix
    assert not parse_master([], {"autoDefaultNs": False}, V0_19).config.disable_auto_prefix  # removed in v0.19
    with pytest.raises(FlagError):
        feature_gates(["-feature-gates=NodeFeatureAPI=maybe"])


def test_upstream_worker_config_parse() -> None:
    """nfd-worker-internal_test.go TestConfigParse (v0.16.4): -options, the config file, -label-sources over it."""
    overrides = ('{"core": {"labelSources": ["fake"],"noPublish": true},"sources": {"cpu": {"cpuid": '
                 '{"attributeBlacklist": ["foo","bar"]}}}}')
    w = parse_worker([f"-options={overrides}"], None, V0_16)
    assert w.sources == ("fake",) and w.no_publish
    w = parse_worker([f"-options={overrides}", "-label-sources=cpu,kernel,pci"], None, V0_16)
    assert w.sources == ("cpu", "kernel", "pci") and w.no_publish
    conf = yaml.safe_load("""
core:
  noPublish: false
  featureSources: ["memory", "storage"]
  sources: ["system"]
  labelWhiteList: "foo"
  sleepInterval: "10s"
sources:
  kernel:
    configOpts:
      - "DMI"
""")
    w = parse_worker(["-label-sources=cpu,kernel,pci"], conf, V0_16)
    assert w == WorkerConfig(sleep_interval=10.0, label_whitelist="foo", sources=("cpu", "kernel", "pci"))
    assert parse_worker([], conf, V0_16).sources == ("system",)  # deprecated core.sources -> labelSources


def test_upstream_worker_parse_args() -> None:
    """cmd/nfd-worker/main_test.go TestParseArgs (v0.16.4): "-no-publish -feature-sources=cpu
    -label-sources=fake1,fake2,fake3"."""
    w = parse_worker(["-no-publish", "-feature-sources=cpu", "-label-sources=fake1,fake2,fake3"], None, V0_16)
    assert w.no_publish and w.sources == ("fake1", "fake2", "fake3")
    assert parse_worker(["-oneshot"], None, V0_16) == WorkerConfig()


def test_worker_old_flags_and_hooks() -> None:
    """v0.8's -sleep-interval / -label-whitelist / -sources override the file (cmd/nfd-worker/main.go v0.8.2,
    `--sleep-interval` also, as Go's flag takes two dashes and v0.6's docopt used them); they are gone in v0.12.
    sources.local.hooksEnabled: v0.12-v0.16 (source/local/local.go), default on until v0.13, off v0.14-v0.16."""
    w = parse_worker(["--sleep-interval=5s", "-label-whitelist=^cpu", "-sources=cpu,local"],
                     {"core": {"sleepInterval": "60s"}}, V0_8)
    assert (w.sleep_interval, w.label_whitelist, w.sources) == (5.0, "^cpu", ("cpu", "local"))
    assert parse_worker(["-sleep-interval=5s"], None, V0_12).sleep_interval == 60.0
    assert parse_worker([], {"core": {"sleepInterval": 2_000_000_000}}, V0_16).sleep_interval == 2.0  # nanoseconds
    assert parse_worker([], {"core": {"labelSources": ["all"]}}, V0_16).sources is None
    on = parse_worker([], {"sources": {"local": {"hooksEnabled": True}}}, V0_16)
    assert on.hooks_enabled is True and hooks_on(V0_16, on)
    assert not hooks_on(V0_16, WorkerConfig()) and hooks_on(V0_13, WorkerConfig()) and hooks_on(V0_8, WorkerConfig())
    assert not hooks_on(V0_17, on)
    assert parse_worker([], {"sources": {"local": {"hooksEnabled": True}}}, V0_17).hooks_enabled is None


def test_unknown_flags_per_release() -> None:
    """A flag the release does not define makes it exit at start (flag.ExitOnError): -resource-labels went in
    v0.17, -deny-label-ns came in v0.13, -sleep-interval left nfd-worker in v0.12, -feature-gates came in v0.16
    (cmd/nfd-master/main.go, cmd/nfd-worker/main.go at each v0.<minor>.0); klog's flags are always there."""
    assert unknown_flags("master", V0_17, ["-resource-labels=a/b", "-extra-label-ns=x", "-v=2"]) == ["resource-labels"]
    assert unknown_flags("master", V0_12, ["-deny-label-ns=x"]) == ["deny-label-ns"]
    assert unknown_flags("master", V0_13, ["-deny-label-ns=x", "-config=/c"]) == []
    assert unknown_flags("worker", V0_12, ["-sleep-interval=5s"]) == ["sleep-interval"]
    assert unknown_flags("worker", V0_8, ["-sleep-interval=5s", "-sources=cpu"]) == []
    assert unknown_flags("master", V0_14, ["-feature-gates=NodeFeatureAPI=true"]) == ["feature-gates"]
    assert unknown_flags("master", V0_16, ["-feature-gates=NodeFeatureAPI=true", "-port=8080"]) == []
    assert unknown_flags("worker", parse_version("v0.6.0"), ["--sleep-interval=5s"]) == []  # docopt: not checked
