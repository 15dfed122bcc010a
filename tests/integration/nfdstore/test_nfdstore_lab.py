"""nfdstore against the default lab through the real kubernetes client: rules, conflicts, dry-run."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from labtools import wait_for

from console.audit import AuditLog
from console.guard import Guard
from console.kube.nfdstore import (
    RuleStore,
    StoreConflict,
    StoreNotFound,
    StoreRejected,
    detect_nfd_version,
    list_node_features,
    list_nodes,
)
from console.lab.world import Lab
from console.nfd import versions as V
from console.nfd.master import MasterConfig
from console.nfd_preview import RULE_TEMPLATES, dry_run_rule

pytestmark = pytest.mark.lab


def avx_rule(name: str = "avx512-test") -> dict[str, Any]:
    import yaml

    obj = yaml.safe_load(RULE_TEMPLATES["AVX512F nodes"])
    obj["metadata"]["name"] = name
    return obj


@pytest.fixture
def guard(tmp_path) -> Guard:
    return Guard(read_only=False, audit=AuditLog(tmp_path / "audit.log"))


def test_rule_store_dry_run_create_replace_conflict(default_lab: Lab, api_client: Any, guard: Guard) -> None:
    rules = RuleStore(api_client, guard=guard)
    obj = avx_rule()
    out = rules.create(obj, dry_run=True)
    assert out["metadata"]["name"] == "avx512-test"
    with pytest.raises(StoreNotFound):
        rules.get("avx512-test")  # the server-side dry-run persisted nothing

    created = rules.create(obj)
    rv = created["metadata"]["resourceVersion"]
    assert "avx512-test" in [r["metadata"]["name"] for r in rules.list()]
    with pytest.raises(StoreConflict):
        rules.create(obj)  # already exists

    obj["spec"]["rules"][0]["labels"] = {"example.dev/avx512": "yes"}
    dry = rules.replace(obj, resource_version=rv, dry_run=True)
    assert dry["spec"]["rules"][0]["labels"] == {"example.dev/avx512": "yes"}
    assert rules.get("avx512-test")["metadata"]["resourceVersion"] == rv  # dry-run changed nothing
    replaced = rules.replace(obj, resource_version=rv)
    assert replaced["metadata"]["resourceVersion"] != rv

    with pytest.raises(StoreConflict) as exc:
        rules.replace(obj, resource_version=rv)  # stale
    assert exc.value.current_version == replaced["metadata"]["resourceVersion"]

    bad = avx_rule("bad-rule")
    bad["spec"] = {"rules": "not a list"}
    with pytest.raises(StoreRejected):
        rules.create(bad, dry_run=True)

    rules.delete("avx512-test", resource_version=replaced["metadata"]["resourceVersion"])
    with pytest.raises(StoreNotFound):
        rules.get("avx512-test")
    # the lab's nfd-master takes the deleted rule's labels off (later tests dry-run this rule on a clean lab)
    core = client.CoreV1Api(api_client)
    wait_for(lambda: not core.list_node(label_selector="example.dev/avx512").items, 30,
             what="the deleted rule's labels to be removed")


def test_version_detection_and_cluster_dry_run(default_lab: Lab, api_client: Any) -> None:
    nfs = list_node_features(api_client)
    nodes = list_nodes(api_client)
    assert set(nfs) == set(nodes)
    detected = detect_nfd_version(nfs, nodes.values())
    assert detected == default_lab.scenario.nfd_version
    result = dry_run_rule(avx_rule(), RuleStore(api_client).list(), nfs, nodes,
                          MasterConfig(version=V.parse_version(detected)))
    assert result.error == ""
    changed = {n.node: n for n in result.affected}
    assert set(changed) == {"kube-worker02", "kube-worker03"}  # Skylake and Ice Lake have AVX512F
    assert changed["kube-worker02"].labels.added == {"example.dev/avx512": "true"}
    assert changed["kube-worker02"].matched == ["cpu has AVX512F"]
