"""ConfigMapTarget against a lab through the real kubernetes client: the ConfigMap an nfd-worker DaemonSet mounts
at features.d / source.d, edited with resourceVersion, through the guard, refused where the kubelet or NFD would
not deliver the file.

The test makes the DaemonSet itself, shaped as the NFD article's alternative to NFD's hostPath volumes
(deployment/base/worker-daemonset with `features-d: configMap: {name: nfd-features}` mounted at
/etc/kubernetes/node-feature-discovery/features.d). Volume semantics from the Kubernetes API reference
(ConfigMapVolumeSource: defaultMode 0644 when unset, `items` project only the listed keys and a listed key
missing from the ConfigMap fails the volume setup).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nfdcm
import pytest
from kubernetes import client
from labstart import start_lab
from labtools import wait_for
from nfdcm import create_worker, scheduled

from console.audit import AuditLog
from console.guard import Guard, ReadOnly
from console.kube.access import Access
from console.kube.connection import connect
from console.kube.nfdfiles import differences, file_target
from console.kube.nfdfiles_cm import ConfigMapTarget
from console.kube.nfdstore import NfdStoreError, StoreForbidden
from console.lab.world import Lab
from console.nfd.deployment import NfdDeployment

pytestmark = pytest.mark.lab

NS = "nfd-cm-test"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The default lab on libvirt's test driver: only Kubernetes is needed."""
    yield from start_lab("default", tmp_path_factory.mktemp("lab-cm-target"), libvirt="test")


@pytest.fixture(scope="module")
def api(lab: Lab) -> Iterator[Any]:
    api_client, _ = connect(str(lab.state.kubeconfig))
    create_worker(api_client, NS, {"rack": "example.com/rack=r1\n"})
    try:
        yield api_client
    finally:
        api_client.close()


def deployment(**mount: Any) -> NfdDeployment:
    kind = mount.pop("kind", "feature")
    d = nfdcm.deployment(NS, hooks_mode=mount.pop("default_mode", None) if kind == "hook" else None, **mount)
    return NfdDeployment(d.namespace, d.version, d.version_source, None, d.worker, True, {kind: d.mounts[kind]})


def cm(api: Any, name: str = "nfd-features") -> Any:
    return client.CoreV1Api(api).read_namespaced_config_map(name, NS)


def shown(target: ConfigMapTarget, name: str) -> dict[str, str | None]:
    """Each node's version of `name` as a listing shows it: what a caller (the TUI, the CLI) carries."""
    return {ls.node: target.version(ls, name) for ls in target.list(target.nodes())}


def audit(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_nodes_listing_push_noop_and_remove(lab: Lab, api: Any, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    target = file_target(deployment(), "feature", api_client=api, settings=None,
                         guard=Guard(read_only=False, audit=AuditLog(log)))
    assert isinstance(target, ConfigMapTarget)
    # the nodes its pods are on: the workers (the control plane's NoSchedule taint is not tolerated)
    reach = wait_for(lambda: scheduled(api, NS), what="nfd-worker pods scheduled")
    all_nodes = sorted(n.metadata.name for n in client.CoreV1Api(api).list_node().items)
    assert target.nodes() == reach and set(reach) < set(all_nodes)
    assert f"ConfigMap {NS}/nfd-features (volume features-d, mode 0644" in target.description
    assert f"all {len(reach)} nodes nfd-worker runs on (its pods)" in target.description
    assert target.nodes(names=[reach[0]]) == [reach[0]]
    worker = next(n for n in client.CoreV1Api(api).list_node().items if n.metadata.name == reach[0])
    host = worker.metadata.labels["kubernetes.io/hostname"]
    assert target.nodes(selector=f"kubernetes.io/hostname={host}") == [reach[0]]

    outside = next(n for n in all_nodes if n not in reach)
    listings = target.list([*reach, outside])
    by_node = {x.node: x for x in listings}
    assert [(f.name, f.size, f.mode) for f in by_node[reach[0]].files] == [("rack", 20, 0o644)]
    assert "has no pod on" in by_node[outside].error and differences(listings) == []
    rv = cm(api).metadata.resource_version
    read = target.read(reach[0], "rack")
    assert read.content == "example.com/rack=r1\n" and read.version == f"{rv}/{by_node[reach[0]].files[0].sha256}"

    results = target.push("rack", "example.com/rack=r42\n", [reach[0]], expected={reach[0]: read.version})
    assert {r.node for r in results} == set(reach) and all(r.ok and r.changed for r in results)
    after = cm(api)
    assert after.data == {"rack": "example.com/rack=r42\n"} and after.metadata.resource_version != rv
    intent, outcome = audit(log)
    assert intent["action"] == "nfd.feature.push" and intent["target"] == f"configmap {NS}/nfd-features key rack"
    # what the write replaces, on disk before it is sent
    assert intent["before"] == {"resourceVersion": rv, "sha256": by_node[reach[0]].files[0].sha256,
                                "content": "example.com/rack=r1\n"}
    assert outcome["result"] == "ok" and outcome["after"] == "example.com/rack=r42\n"
    assert f"-> {after.metadata.resource_version}" in outcome["detail"]

    # the same content again: nothing sent, nothing audited
    again = target.push("rack", "example.com/rack=r42\n", reach, expected=shown(target, "rack"))
    assert all(r.ok and not r.changed for r in again) and len(again) == len(reach)
    assert cm(api).metadata.resource_version == after.metadata.resource_version and len(audit(log)) == 2

    # a node the DaemonSet does not run on cannot get the file: said per node, the others still get it
    extra = target.push("zone", "example.com/zone=z1\n", [outside], expected=shown(target, "zone"))
    assert [r.node for r in extra if not r.ok] == [outside] and all(r.changed for r in extra if r.node != outside)
    assert target.remove("zone", reach, expected=shown(target, "zone"))[0].changed
    assert "zone" not in (cm(api).data or {})
    assert all(not r.changed for r in target.remove("zone", reach, expected=shown(target, "zone")))


def test_conflict_when_the_configmap_changes_between_read_and_write(lab: Lab, api: Any, tmp_path: Path) -> None:
    """A second admin updates the ConfigMap after the push read it and before its PUT: the API server's
    resourceVersion check answers 409 and nothing of the push is written."""
    lab_kubeconfig = str(lab.state.kubeconfig)
    other, _ = connect(lab_kubeconfig)
    raced = threading.Event()

    class RacingClient(type(api)):  # type: ignore[misc]
        def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            if method == "PUT" and "/configmaps/" in url and not raced.is_set():
                raced.set()
                body = client.CoreV1Api(other).read_namespaced_config_map("nfd-features", NS)
                body.data = {**(body.data or {}), "theirs": "example.com/theirs=1\n"}
                client.CoreV1Api(other).replace_namespaced_config_map("nfd-features", NS, body)
            return super().call_api(method, url, *args, **kwargs)

    racing = RacingClient(api.configuration)
    log = tmp_path / "audit.log"
    try:
        target = ConfigMapTarget(deployment(), "feature", api_client=racing,
                                 guard=Guard(read_only=False, audit=AuditLog(log)))
        results = target.push("mine", "example.com/mine=1\n", [], expected=shown(target, "mine"))
    finally:
        racing.close()
        other.close()
    assert raced.is_set() and results and all(not r.ok and not r.changed and r.conflict for r in results)
    assert "changed by someone else" in results[0].error and "409" in results[0].error
    # what is there now, for the caller to show: the key (absent still) at the ConfigMap's new resourceVersion
    assert results[0].current is None and results[0].version == f"{cm(api).metadata.resource_version}/"
    data = cm(api).data
    assert "theirs" in data and "mine" not in data
    assert [e["result"] for e in audit(log)] == ["pending", "conflict"]


def test_hook_needs_an_executable_default_mode(lab: Lab, api: Any, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    guard = Guard(read_only=False, audit=AuditLog(log))
    target = ConfigMapTarget(deployment(kind="hook"), "hook", api_client=api, guard=guard)
    assert "mode 0644 (defaultMode unset)" in target.description
    with pytest.raises(NfdStoreError) as err:
        target.push("my-script", "#!/bin/sh\necho A=1\n", [], expected={})
    text = str(err.value)
    assert "mode 0644" in text and "defaultMode: 0755" in text and "volume source-d" in text
    assert "NFD would not run it" in text
    assert not audit(log)
    with pytest.raises(client.ApiException):
        cm(api, "nfd-hooks")  # nothing was created
    # with defaultMode 0755 the same push creates the ConfigMap the DaemonSet names
    ok = ConfigMapTarget(deployment(kind="hook", default_mode=0o755), "hook", api_client=api, guard=guard)
    assert all(r.ok and r.changed for r in ok.push("my-script", "#!/bin/sh\necho A=1\n", [],
                                                   expected=shown(ok, "my-script")))
    assert cm(api, "nfd-hooks").data == {"my-script": "#!/bin/sh\necho A=1\n"}
    assert [f.mode for f in ok.list(ok.nodes())[0].files] == [0o755]


def test_items_map_keys_to_paths(lab: Lab, api: Any, tmp_path: Path) -> None:
    client.CoreV1Api(api).create_namespaced_config_map(NS, {"metadata": {"name": "nfd-mapped"},
                                                            "data": {"rack-key": "r=1\n", "unlisted": "u=1\n"}})
    d = deployment(items=(("rack-key", "rack", 0o600),), config_map="nfd-mapped")
    target = ConfigMapTarget(d, "feature", api_client=api, guard=Guard(read_only=False,
                                                                      audit=AuditLog(tmp_path / "a.log")))
    node = target.nodes()[0]
    assert [(f.name, f.mode) for f in target.list([node])[0].files] == [("rack", 0o600)]
    assert target.read(node, "rack").content == "r=1\n" and target.read(node, "unlisted").content is None
    with pytest.raises(NfdStoreError, match="none is projected as other"):
        target.push("other", "x=1\n", [], expected=shown(target, "other"))
    with pytest.raises(NfdStoreError, match="cannot set up the volume"):
        target.remove("rack", [], expected=shown(target, "rack"))
    assert target.push("rack", "r=2\n", [], expected=shown(target, "rack"))[0].changed
    assert cm(api, "nfd-mapped").data == {"rack-key": "r=2\n", "unlisted": "u=1\n"}


def test_read_only_and_missing_rbac_refuse_before_anything_is_sent(lab: Lab, api: Any, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    rv = cm(api).metadata.resource_version
    ro = ConfigMapTarget(deployment(), "feature", api_client=api, guard=Guard(read_only=True, audit=AuditLog(log)))
    with pytest.raises(ReadOnly, match="read-only: push of feature x"):
        ro.push("x", "x=1\n", [], expected={})
    with pytest.raises(ReadOnly):
        ro.remove("rack", [], expected={})
    # RBAC as a SelfSubjectRulesReview reports it: get and list ConfigMaps in the namespace, no update
    reads = Access(user="viewer", rules={NS: (({"verbs": ["get", "list"], "apiGroups": [""],
                                               "resources": ["configmaps"]},), True)})
    viewer = ConfigMapTarget(deployment(), "feature", api_client=api,
                             guard=Guard(read_only=False, audit=AuditLog(log)), access=reads)
    with pytest.raises(StoreForbidden) as err:
        viewer.push("x", "x=1\n", [], expected={})
    assert err.value.missing == [f"update configmaps in {NS}"]
    assert cm(api).metadata.resource_version == rv and not audit(log)


def test_a_push_carries_the_version_read_and_meets_a_change_made_since(lab: Lab, api: Any, tmp_path: Path) -> None:
    """Issue 20, point 1 (ConfigMap): admin A reads `rack` (the editor loads it); admin B patches that key as
    `kubectl patch` does; A's push carrying what A read is a conflict on every node the ConfigMap reaches: nothing
    sent, B's content kept, the result carrying B's content and version; A's overwrite carries that version and is
    written. A change B makes to another key meanwhile is not a conflict, and A's update keeps it. Kubernetes API
    conventions, "Concurrency Control and Consistency": resourceVersion is opaque, compared for equality only."""
    log = tmp_path / "audit.log"
    core = client.CoreV1Api(api)
    core.patch_namespaced_config_map("nfd-features", NS, {"data": {"rack": "example.com/rack=r1\n"}})
    target = ConfigMapTarget(deployment(), "feature", api_client=api, guard=Guard(read_only=False,
                                                                                 audit=AuditLog(log)))
    reach = target.nodes()
    loaded = target.read(reach[0], "rack")
    core.patch_namespaced_config_map("nfd-features", NS, {"data": {"rack": "example.com/rack=theirs\n"}})
    theirs_rv = cm(api).metadata.resource_version
    results = target.push("rack", "example.com/rack=mine\n", reach, expected=dict.fromkeys(reach, loaded.version))
    assert {r.node for r in results} == set(reach)
    assert all(r.conflict and not r.ok and not r.changed for r in results)
    assert results[0].current == "example.com/rack=theirs\n" and results[0].version.startswith(f"{theirs_rv}/")
    shown_rv = loaded.version.partition("/")[0]
    assert f"resourceVersion {shown_rv} → {theirs_rv}" in results[0].error
    assert cm(api).data["rack"] == "example.com/rack=theirs\n" and cm(api).metadata.resource_version == theirs_rv
    assert audit(log) == []  # nothing was sent: refused on the version read, before any write

    # overwrite with mine: carries their version, still there
    done = target.push("rack", "example.com/rack=mine\n", reach, expected={reach[0]: results[0].version})
    assert all(r.ok and r.changed for r in done) and cm(api).data["rack"] == "example.com/rack=mine\n"
    intent, outcome = audit(log)
    assert outcome["result"] == "ok"
    assert intent["before"] == {"resourceVersion": theirs_rv, "content": "example.com/rack=theirs\n",
                                "sha256": hashlib.sha256(b"example.com/rack=theirs\n").hexdigest()}
    mine = hashlib.sha256(b"example.com/rack=mine\n").hexdigest()
    assert done[0].version == f"{cm(api).metadata.resource_version}/{mine}"  # the base of the next push

    # another key changed since A read `rack`: A's update goes through and keeps it
    loaded = target.read(reach[0], "rack")
    core.patch_namespaced_config_map("nfd-features", NS, {"data": {"zone": "example.com/zone=z9\n"}})
    assert all(r.ok and r.changed for r in target.push("rack", "example.com/rack=mine2\n", reach,
                                                       expected={reach[0]: loaded.version}))
    data = cm(api).data
    assert (data["rack"], data["zone"]) == ("example.com/rack=mine2\n", "example.com/zone=z9\n")

    # a key created by someone else since A saw it absent: a conflict
    absent = shown(target, "new")
    core.patch_namespaced_config_map("nfd-features", NS, {"data": {"new": "example.com/new=theirs\n"}})
    (first, *_) = target.push("new", "example.com/new=mine\n", reach, expected=absent)
    assert first.conflict and "created" in first.error and cm(api).data["new"] == "example.com/new=theirs\n"
    # and a removal of what changed since: left as it is
    (gone, *_) = target.remove("new", reach, expected=absent)
    assert gone.conflict and cm(api).data["new"] == "example.com/new=theirs\n"
    core.patch_namespaced_config_map("nfd-features", NS, {"data": {"new": None, "zone": None}})
