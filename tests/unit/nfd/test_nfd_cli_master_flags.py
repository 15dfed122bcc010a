"""`nfd local` / `nfd dryrun` with nfd-master's own flags, config files and nfd-worker.conf (subprocesses).

References (github:kubernetes-sigs/node-feature-discovery): cmd/nfd-master/main.go (flag names; -extra-label-ns,
-deny-label-ns, -resource-labels are comma lists, pkg/utils/flags.go StringSetVal.Set, a repeated flag replaces
the earlier one), pkg/nfd-master/nfd-master.go `configure` (flags override nfd-master.conf) and
filterFeatureLabel (v0.16.0: any namespace but kubernetes.io; v0.8.2: only feature.node.kubernetes.io unless
-extra-label-ns), pkg/nfd-worker/nfd-worker.go getFeatureLabels (core.labelWhiteList) and configureCore
(core.labelSources), source/local/local.go (hooksEnabled, v0.14-v0.16 default false).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_nfd_cli import FIX, FNS, cli


def local_json(features: Path, *args: str, hooks: Path | None = None) -> dict:
    extra = ("--hooks-dir", str(hooks)) if hooks else ()
    p = cli("local", "--features-dir", str(features), *extra, "-o", "json", *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture
def gpu_features(tmp_path: Path) -> Path:
    d = tmp_path / "features.d"
    d.mkdir()
    (d / "gpu").write_text("nvidia.com/gpu.present=true\nnvidia.com/gpu.count=4\nrack=r42\ncards=2\n")
    return d


def test_extra_label_ns_differs_exactly_where_nfd_says_v0_8(gpu_features: Path) -> None:
    """v0.8.2 filterFeatureLabels: nvidia.com labels need -extra-label-ns=nvidia.com; nothing else changes."""
    default = local_json(gpu_features, "--nfd-version", "v0.8.2")
    with_ns = local_json(gpu_features, "--nfd-version", "v0.8.2", "--extra-label-ns=nvidia.com")
    nvidia = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "4"}
    assert with_ns["labels"] == {**default["labels"], **nvidia}
    assert not set(nvidia) & set(default["labels"])
    assert {d["key"] for d in default["dropped"]} == set(nvidia)
    assert with_ns["dropped"] == [] and with_ns["master"]["extra-label-ns"] == ["nvidia.com"]


def test_comma_list_and_last_flag_wins(gpu_features: Path) -> None:
    """StringSetVal.Set splits on ',' and replaces the set: the last -extra-label-ns is the one in effect."""
    two = local_json(gpu_features, "--nfd-version", "v0.12.0", "--extra-label-ns=example.com,nvidia.com")
    assert two["master"]["extra-label-ns"] == ["example.com", "nvidia.com"]
    assert "nvidia.com/gpu.count" in two["labels"]
    last = local_json(gpu_features, "--nfd-version", "v0.12.0", "--extra-label-ns=nvidia.com",
                      "--extra-label-ns", "example.com")
    assert last["master"]["extra-label-ns"] == ["example.com"]
    assert "nvidia.com/gpu.count" not in last["labels"]


def test_deny_label_ns_v0_16(gpu_features: Path) -> None:
    """v0.16.0: nvidia.com is allowed by default; -deny-label-ns=nvidia.com drops it; -extra-label-ns re-allows."""
    assert "nvidia.com/gpu.count" in local_json(gpu_features, "--nfd-version", "v0.16.0")["labels"]
    denied = local_json(gpu_features, "--nfd-version", "v0.16.0", "--deny-label-ns=nvidia.com")
    assert not any(k.startswith("nvidia.com/") for k in denied["labels"])
    again = local_json(gpu_features, "--nfd-version", "v0.16.0", "--deny-label-ns=*.com,nvidia.com",
                       "--extra-label-ns=nvidia.com")
    assert again["labels"]["nvidia.com/gpu.count"] == "4"


def test_resource_labels_and_master_whitelist(gpu_features: Path) -> None:
    """-resource-labels=cards (v0.16.0) makes feature.node.kubernetes.io/cards an extended resource;
    -label-whitelist matches the name without the namespace."""
    out = local_json(gpu_features, "--nfd-version", "v0.16.0", "--resource-labels=cards,gpu.count",
                     "--label-whitelist=^(cards|rack|gpu\\.count)$")
    assert out["extendedResources"] == {f"{FNS}/cards": "2"}  # nvidia.com/gpu.count is not in the default ns
    assert out["labels"] == {f"{FNS}/rack": "r42", "nvidia.com/gpu.count": "4"}
    removed = local_json(gpu_features, "--nfd-version", "v0.17.0", "--resource-labels=cards")
    assert removed["extendedResources"] == {} and removed["labels"][f"{FNS}/cards"] == "2"
    assert any("removed in v0.17.0" in w for w in removed["warnings"])


def test_master_config_file_and_flag_precedence(gpu_features: Path, tmp_path: Path) -> None:
    """configure (v0.16.0): the file sets denyLabelNs and resourceLabels (keys match case-insensitively, as
    encoding/json does); a flag given on the command line replaces the file's value."""
    conf = tmp_path / "nfd-master.conf"
    conf.write_text("denyLabelNs: [nvidia.com]\nResourceLabels: [cards]\nunknownKey: 1\n")
    out = local_json(gpu_features, "--nfd-version", "v0.16.0", "--master-config", str(conf))
    assert out["extendedResources"] == {f"{FNS}/cards": "2"}
    assert not any(k.startswith("nvidia.com/") for k in out["labels"])
    flag = local_json(gpu_features, "--nfd-version", "v0.16.0", "--master-config", str(conf), "--deny-label-ns=x.io")
    assert flag["labels"]["nvidia.com/gpu.count"] == "4" and flag["master"]["deny-label-ns"] == ["x.io"]


def test_bad_config_file_is_a_usage_error(gpu_features: Path, tmp_path: Path) -> None:
    """A wrong type fails yaml.Unmarshal: nfd-master would not start; the preview says which key (exit 2, JSON)."""
    conf = tmp_path / "nfd-master.conf"
    conf.write_text("extraLabelNs: nvidia.com\n")
    p = cli("local", "--features-dir", str(gpu_features), "--master-config", str(conf), "-o", "json")
    assert p.returncode == 2
    doc = json.loads(p.stdout)
    assert doc["error"] == "bad-config" and "extraLabelNs must be a list" in doc["message"]
    missing = cli("local", "--features-dir", str(gpu_features), "--worker-config", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "--worker-config" in missing.stderr and "Traceback" not in missing.stderr


def test_bad_flags_exit_2(gpu_features: Path) -> None:
    p = cli("local", "--features-dir", str(gpu_features), "--enable-taints=maybe")
    assert p.returncode == 2 and "invalid boolean value" in p.stderr


def test_worker_config_whitelist_and_label_sources(gpu_features: Path, tmp_path: Path) -> None:
    """nfd-worker getFeatureLabels: core.labelWhiteList drops labels in the worker (stage "worker"); they stay
    in the local.label feature rules see. core.labelSources without local publishes no local labels."""
    conf = tmp_path / "nfd-worker.conf"
    conf.write_text("core:\n  labelWhiteList: '^rack$'\n")
    out = local_json(gpu_features, "--nfd-version", "v0.16.0", "--worker-config", str(conf))
    assert out["labels"] == {f"{FNS}/rack": "r42"}
    assert {d["stage"] for d in out["dropped"]} == {"worker"}
    assert out["features"]["local.label"]["cards"] == "2"
    conf.write_text("core:\n  labelSources: [all, -local]\n")
    none = local_json(gpu_features, "--nfd-version", "v0.16.0", "--worker-config", str(conf))
    assert none["labels"] == {} and any("leave out 'local'" in w for w in none["warnings"])


def test_worker_config_hooks_enabled_v0_16(tmp_path: Path) -> None:
    """source/local/local.go v0.16.0: hooks run only with sources.local.hooksEnabled: true."""
    hooks = tmp_path / "source.d"
    hooks.mkdir()
    (hooks / "h").write_text("#!/bin/sh\necho hooked=yes\n")
    (hooks / "h").chmod(0o755)
    features = tmp_path / "features.d"
    features.mkdir()
    off = local_json(features, "--nfd-version", "v0.16.0", hooks=hooks)
    assert off["labels"] == {} and off["hooks_status"] == "disabled"
    conf = tmp_path / "nfd-worker.conf"
    conf.write_text("sources:\n  local:\n    hooksEnabled: true\n")
    on = local_json(features, "--nfd-version", "v0.16.0", "--worker-config", str(conf), hooks=hooks)
    assert on["labels"] == {f"{FNS}/hooked": "yes"}


def test_dryrun_enable_taints_go_bool_syntax() -> None:
    """-enable-taints is a Go bool flag: `-enable-taints` and `-enable-taints=false` both parse."""
    args = ("dryrun", "--rule", str(FIX / "rules" / "doc-examples.yaml"), "--nodefeature",
            str(FIX / "nodefeature-worker-1.yaml"), "-o", "json")
    on = json.loads(cli(*args, "--enable-taints").stdout)
    off = json.loads(cli(*args, "--enable-taints=false").stdout)
    assert on["node_taints"] == [{"key": f"{FNS}/special", "value": "true", "effect": "NoSchedule"}]
    assert off["node_taints"] == [] and off["master"]["enable-taints"] is False


def test_dryrun_from_cluster_without_a_cluster_is_one_clear_error(tmp_path: Path) -> None:
    """--from-cluster with a kubeconfig that names no reachable cluster: one message, no traceback."""
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    p = cli("--kubeconfig", str(kc), "dryrun", "--rule", str(FIX / "rules" / "doc-examples.yaml"), "--nodefeature",
            str(FIX / "nodefeature-worker-1.yaml"), "--from-cluster", "-o", "json")
    assert p.returncode in (2, 6) and "Traceback" not in p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1])["exit_code"] == p.returncode
