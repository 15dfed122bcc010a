"""console/lab/nfd_deploy.py: NFD's manifests per version, and reading the deployed args and configs back.

Sources (github:kubernetes-sigs/node-feature-discovery): v0.8.2 nfd-master.yaml.template and
nfd-worker-daemonset.yaml.template; v0.10.1 / v0.16.4 / v0.19.0 deployment/base/{master,worker-daemonset},
deployment/components/common/worker-mounts.yaml, deployment/base/nfd-crds; cmd/nfd-master/main.go and
cmd/nfd-worker/main.go for the flags; Go's time.ParseDuration for core.sleepInterval.
"""

from __future__ import annotations

import pytest

from console.lab import nfd_deploy as D
from console.nfd.versions import parse_version


def _by(objs, resource, name):
    return next(o for r, o in objs if r == resource and o["metadata"]["name"] == name)


def _volumes(ds):
    return {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}


def test_v082_template_era_objects():
    objs = D.objects(D.Manifest(parse_version("v0.8.2"), worker_config="core: {sleepInterval: 2s}\n"))
    kinds = [(r, o["metadata"]["name"]) for r, o in objs]
    assert not any(r.startswith("customresourcedefinitions") for r, _ in kinds)  # no CRDs before v0.10
    assert ("configmaps", "nfd-master-conf") not in kinds  # no master config file before v0.13
    master = _by(objs, "deployments.apps", "nfd-master")
    c = master["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "k8s.gcr.io/nfd/node-feature-discovery:v0.8.2" and c["command"] == ["nfd-master"]
    ds = _by(objs, "daemonsets.apps", "nfd-worker")
    wc = ds["spec"]["template"]["spec"]["containers"][0]
    assert wc["args"] == ["--server=nfd-master:8080"]
    vols = _volumes(ds)
    assert list(vols) == ["host-boot", "host-os-release", "host-sys", "source-d", "features-d", "nfd-worker-conf"]
    assert vols["source-d"]["hostPath"]["path"] == "/etc/kubernetes/node-feature-discovery/source.d/"
    assert vols["nfd-worker-conf"]["configMap"]["name"] == "nfd-worker-conf"
    mounts = {m["name"]: m["mountPath"] for m in wc["volumeMounts"]}
    assert mounts["nfd-worker-conf"] == "/etc/kubernetes/node-feature-discovery"
    assert _by(objs, "configmaps", "nfd-worker-conf")["data"] == {"nfd-worker.conf": "core: {sleepInterval: 2s}\n"}


def test_crds_and_volumes_per_version():
    def crds(v):
        return sorted(o["metadata"]["name"] for r, o in D.objects(D.Manifest(parse_version(v)))
                      if r.startswith("customresourcedefinitions"))
    assert crds("v0.10.1") == ["nodefeaturerules.nfd.k8s-sigs.io"]
    assert crds("v0.12.1") == ["nodefeaturerules.nfd.k8s-sigs.io", "nodefeatures.nfd.k8s-sigs.io"]
    assert crds("v0.16.4") == ["nodefeaturegroups.nfd.k8s-sigs.io", "nodefeaturerules.nfd.k8s-sigs.io",
                               "nodefeatures.nfd.k8s-sigs.io"]
    # NFD's own CRDs for the release (deployment/base/nfd-crds): their schemas, what a real API server validates by
    for v, short in (("v0.10.1", None), ("v0.19.0", ["nfr"])):
        rule_crd = _by(D.objects(D.Manifest(parse_version(v))), "customresourcedefinitions.apiextensions.k8s.io",
                       "nodefeaturerules.nfd.k8s-sigs.io")
        schema = rule_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert schema["required"] == ["spec"] and schema["properties"]["spec"]["required"] == ["rules"]
        assert schema["properties"]["spec"]["properties"]["rules"]["type"] == "array"
        assert rule_crd["spec"]["names"].get("shortNames") == short
    v16 = D.objects(D.Manifest(parse_version("v0.16.4"), features_configmap="nfd-features",
                               features_files=(("inventory", "rack=r7\n"),)))
    vols = _volumes(_by(v16, "daemonsets.apps", "nfd-worker"))
    assert "source-d" in vols and "host-proc-swaps" in vols and "host-lib" in vols
    assert vols["features-d"] == {"name": "features-d", "configMap": {"name": "nfd-features"}}
    assert _by(v16, "configmaps", "nfd-features")["data"] == {"inventory": "rack=r7\n"}
    assert _by(v16, "configmaps", "nfd-master-conf")["data"] == {"nfd-master.conf": ""}
    v19 = D.objects(D.Manifest(parse_version("v0.19.0")))
    ds19 = _by(v19, "daemonsets.apps", "nfd-worker")
    assert "source-d" not in _volumes(ds19)  # hooks were removed in v0.17: the manifests dropped the mount
    assert "args" not in ds19["spec"]["template"]["spec"]["containers"][0]  # no -server once gRPC is gone
    img = _by(v19, "deployments.apps", "nfd-master")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert img == "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"


def test_go_flag_syntax():
    flags = D.go_flags(["-extra-label-ns=nvidia.com", "--deny-label-ns", "a.io,b.io", "-enable-taints",
                        "-feature-gates=NodeFeatureAPI=false", "-feature-gates=DisableAutoPrefix=true"],
                       frozenset({"enable-taints"}))
    assert flags == {"extra-label-ns": "nvidia.com", "deny-label-ns": "a.io,b.io", "enable-taints": "true",
                     "feature-gates": "NodeFeatureAPI=false,DisableAutoPrefix=true"}
    assert D.go_flags(["-port=8080", "stray", "-x=1"], frozenset()) == {"port": "8080"}  # stops at a non-flag


def test_master_settings_flags_win_over_config_file():
    conf = "extraLabelNs: [example.com]\nenableTaints: true\nlabelWhiteList: '^cpu'\n"
    s = D.master_settings(parse_version("v0.16.4"), "gpu-operator", ["-extra-label-ns=nvidia.com"], conf)
    assert s.config.extra_label_ns == {"nvidia.com"} and s.config.enable_taints
    assert s.config.label_whitelist == "^cpu" and s.config.namespace == "gpu-operator" and s.node_feature_api
    off = D.master_settings(parse_version("v0.16.4"), "ns", ["-feature-gates=NodeFeatureAPI=false"], "")
    assert not off.node_feature_api
    assert not D.master_settings(parse_version("v0.12.1"), "ns", [], "").node_feature_api  # opt-in in v0.12-v0.13
    assert D.master_settings(parse_version("v0.12.1"), "ns", ["-enable-nodefeature-api"], "").node_feature_api
    assert D.master_settings(parse_version("v0.14.0"), "ns", [], "").node_feature_api  # default true in v0.14
    assert not D.master_settings(parse_version("v0.8.2"), "ns", [], "").node_feature_api


def test_worker_settings_from_config():
    s = D.worker_settings([], "core:\n  sleepInterval: 1m30s\n  labelSources: [cpu, local]\n"
                              "  labelWhiteList: '^cpu-'\nsources:\n  local:\n    hooksEnabled: true\n")
    assert s.sleep_interval == 90 and s.sources == {"cpu", "local"} and s.hooks_enabled is True
    assert s.label_whitelist == "^cpu-"
    assert D.worker_settings([], "").sleep_interval == 60  # nfd-worker's default
    assert D.worker_settings(["-sleep-interval=5s"], "core: {sleepInterval: 2s}").sleep_interval == 5
    assert D.worker_settings([], "core: {sources: [all]}").sources is None
    bad = D.worker_settings([], "core: [\n")
    assert bad.errors and bad.sleep_interval == 60


@pytest.mark.parametrize(("text", "seconds"), [("2s", 2), ("500ms", 0.5), ("1h2m3s", 3723), ("1.5s", 1.5), ("0", 0)])
def test_go_duration(text, seconds):
    assert D.go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["2", "s", "2x", "1s2"])
def test_go_duration_rejects(text):
    with pytest.raises(ValueError, match="invalid duration"):
        D.go_duration(text)


def test_rbac_as_each_versions_manifests_have_it():
    """v0.8.2 nfd-master.yaml.template and deployment/base/rbac at v0.10.1 / v0.12.1 / v0.19.0: nfd-master's
    ServiceAccount and ClusterRole always, nfd-worker's ServiceAccount and Role from v0.12 (before, the DaemonSet
    named no service account); the bindings' subjects in NFD's namespace (kustomize's namespace transformer)."""
    def kinds(v, ns="node-feature-discovery"):
        return [(r, o["metadata"]["name"]) for r, o in D.rbac_objects(parse_version(v), ns)]

    assert kinds("v0.8.2") == [("serviceaccounts", "nfd-master"),
                               ("clusterroles.rbac.authorization.k8s.io", "nfd-master"),
                               ("clusterrolebindings.rbac.authorization.k8s.io", "nfd-master")]
    assert ("rolebindings.rbac.authorization.k8s.io", "nfd-worker") in kinds("v0.12.1")
    ds08 = _by(D.objects(D.Manifest(parse_version("v0.8.2"))), "daemonsets.apps", "nfd-worker")
    assert "serviceAccountName" not in ds08["spec"]["template"]["spec"]
    ds19 = _by(D.objects(D.Manifest(parse_version("v0.19.0"))), "daemonsets.apps", "nfd-worker")
    assert ds19["spec"]["template"]["spec"]["serviceAccountName"] == "nfd-worker"

    def rules(v):
        return {(tuple(r["apiGroups"]), tuple(r["resources"])): r["verbs"]
                for r in D.master_cluster_role(parse_version(v))["rules"]}

    assert rules("v0.10.1")[(("nfd.k8s-sigs.io",), ("nodefeaturerules",))] == ["get", "list", "watch"]
    v19 = rules("v0.19.0")
    assert v19[(("",), ("nodes", "nodes/status"))] == ["get", "patch", "update", "list"]
    assert v19[(("nfd.k8s-sigs.io",), ("nodefeaturegroups/status",))] == ["patch", "update"]
    assert v19[(("",), ("namespaces",))] == ["watch", "list"]
    binding = _by(D.rbac_objects(parse_version("v0.16.4"), "gpu-operator"),
                  "clusterrolebindings.rbac.authorization.k8s.io", "nfd-master")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "nfd-master", "namespace": "gpu-operator"}]
    assert [r for r, _ in D.objects(D.Manifest(parse_version("v0.19.0")))].count("serviceaccounts") == 2


def test_upstream_nfd_objects_carry_no_status_and_end_with_the_scenarios_rules():
    """What a user applies to a real cluster: no status (the server's controllers write it); the scenario's
    NodeFeatureRules after NFD's manifests (their CRD first), and not among the workloads."""
    import dataclasses

    from console.lab import scenarios, seed

    rule = {"metadata": {"name": "r"}, "spec": {"rules": []}}
    sc = dataclasses.replace(scenarios.get("default"),
                             objects=(*scenarios.get("default").objects, ("nodefeaturerules.nfd.k8s-sigs.io", rule)))
    objs = seed.upstream_nfd_objects(sc)
    assert all("status" not in o for _, o in objs)
    assert objs[0][0] == "customresourcedefinitions.apiextensions.k8s.io"
    assert objs[-1] == ("nodefeaturerules.nfd.k8s-sigs.io", rule)
    up = seed.upstream_objects(sc.objects)
    assert "nodefeaturerules.nfd.k8s-sigs.io" not in [*(r for r, _ in [*up.first, *up.last]),
                                                       *(p.resource for p in up.placed)]
