"""nfd-master.conf / nfd-worker.conf as NFD parses them.

References (github:kubernetes-sigs/node-feature-discovery): pkg/nfd-master/nfd-master.go NFDConfig per tag
(autoDefaultNs v0.15.0-v0.17.x, restrictions v0.17.0+, resourceLabels to v0.16.x), pkg/nfd-worker/nfd-worker.go
v0.16.0 configure (core.sources replaces core.labelSources) and configureCore ("all", "-name"),
pkg/utils/flags.go DurationVal (string via time.ParseDuration, number = nanoseconds).
"""

from __future__ import annotations

import pytest

from console.nfd.master import MasterConfig
from console.nfd.masterconf import MasterConfigError, master_config_from_file
from console.nfd.versions import parse_version
from console.nfd.workerconfig import (
    WorkerConfig,
    WorkerConfigError,
    local_labels_enabled,
    parse_go_duration,
    worker_config_from_file,
)


def _m(version: str, data: dict) -> MasterConfig:
    return master_config_from_file(data, MasterConfig(version=parse_version(version)))


def test_master_fields_per_version() -> None:
    assert _m("v0.12.0", {"extraLabelNs": ["a.io"]}).extra_label_ns == frozenset()  # no config file before v0.13
    assert _m("v0.13.0", {"EXTRALABELNS": ["a.io"]}).extra_label_ns == {"a.io"}  # encoding/json: any case
    assert _m("v0.16.0", {"resourceLabels": ["x"]}).resource_labels == {"x"}
    assert _m("v0.17.0", {"resourceLabels": ["x"]}).resource_labels == frozenset()
    assert _m("v0.15.0", {"autoDefaultNs": False}).disable_auto_prefix
    assert not _m("v0.18.0", {"autoDefaultNs": False}).disable_auto_prefix  # field gone in v0.18
    assert not _m("v0.16.0", {"restrictions": {"disableLabels": True}}).disable_labels
    assert _m("v0.17.0", {"restrictions": {"disableLabels": True}}).disable_labels
    assert _m("v0.16.0", {"labelWhiteList": "", "enableTaints": True}).label_whitelist is None


@pytest.mark.parametrize("data", [{"extraLabelNs": "a.io"}, {"enableTaints": "yes"}, {"labelWhiteList": "("},
                                  {"restrictions": []}])
def test_master_file_nfd_would_refuse(data: dict) -> None:
    with pytest.raises(MasterConfigError):
        _m("v0.17.0", data)


def test_worker_file() -> None:
    v16, v8 = parse_version("v0.16.0"), parse_version("v0.8.2")
    wc = worker_config_from_file({"core": {"sleepInterval": "1m30s", "labelWhiteList": "^a", "noPublish": True,
                                           "labelSources": ["cpu", "local"]},
                                  "sources": {"local": {"hooksEnabled": True}}}, v16)
    assert wc == WorkerConfig(90.0, True, "^a", ("cpu", "local"), True)
    assert worker_config_from_file({"core": {"labelSources": ["cpu"], "sources": ["all"]}}, v16).sources is None
    assert worker_config_from_file({"core": {"sleepInterval": 2_000_000_000}}, v16).sleep_interval == 2.0
    assert worker_config_from_file({"core": {"sources": ["local"]}}, v8).sources == ("local",)
    with pytest.raises(WorkerConfigError):
        worker_config_from_file({"core": {"sleepInterval": "10"}}, v16)


def test_label_sources() -> None:
    v16, v8 = parse_version("v0.16.0"), parse_version("v0.8.2")
    assert local_labels_enabled(None, v16)
    assert local_labels_enabled(("cpu", "local"), v16) and not local_labels_enabled(("cpu",), v16)
    assert not local_labels_enabled(("all", "-local"), v16) and local_labels_enabled(("-local", "all"), v16)
    assert local_labels_enabled((" local",), v8) and local_labels_enabled(("all",), v8)


def test_go_durations() -> None:
    """time.ParseDuration (github:golang/go src/time/format.go)."""
    assert parse_go_duration("60s") == 60 and parse_go_duration("1.5h") == 5400 and parse_go_duration("0") == 0
    assert parse_go_duration("-2s") == -2 and parse_go_duration("300ms") == pytest.approx(0.3)
    for bad in ("", "10", "s", "1x", "1s2"):
        with pytest.raises(ValueError):
            parse_go_duration(bad)


def test_no_publish_is_said(tmp_path) -> None:
    """nfd-worker.go (v0.16.0): core.noPublish skips the NodeFeature update; the preview says so."""
    from console.nfd.local import local_source

    d = tmp_path / "features.d"
    d.mkdir()
    (d / "f").write_text("a=1\n")
    res = local_source(d, None, "v0.16.0", worker=WorkerConfig(no_publish=True))
    assert res.labels == {"feature.node.kubernetes.io/a": "1"} and any("noPublish" in w for w in res.warnings)
