"""NFD's deployment model from Deployment / DaemonSet / ConfigMap dicts (console/nfd/deployment.py).

The objects are NFD's own manifests as the API returns them: the Helm chart at v0.16.4
(deployment/helm/node-feature-discovery/templates/master.yaml, worker.yaml, nfd-worker-conf.yaml, rendered with
release `gpu-operator` in namespace `gpu-operator` and `master.extraLabelNs: [nvidia.com]`, as the NVIDIA GPU
operator's values do), and v0.8.2's nfd-daemonset-combined.yaml.template (master and worker in one DaemonSet,
k8s.gcr.io image, hostPath source.d / features.d).
"""

from __future__ import annotations

import copy
from typing import Any

from console.nfd.deployment import Mount, from_objects, image_version, wanted_config_maps
from console.nfd.versions import parse_version

IMAGE = "registry.k8s.io/nfd/node-feature-discovery:v0.16.4"
NFD_ETC = "/etc/kubernetes/node-feature-discovery"


def helm_master(ns: str = "gpu-operator", release: str = "gpu-operator") -> dict[str, Any]:
    return {"kind": "Deployment", "metadata": {"name": f"{release}-node-feature-discovery-master", "namespace": ns},
            "spec": {"template": {"spec": {
                "containers": [{"name": "master", "image": IMAGE, "command": ["nfd-master"],
                                "args": ["-extra-label-ns=nvidia.com", "-crd-controller=true",
                                         "-feature-gates=NodeFeatureAPI=true", "-metrics=8081"],
                                "volumeMounts": [{"name": "nfd-master-conf", "mountPath": NFD_ETC, "readOnly": True}]}],
                "volumes": [{"name": "nfd-master-conf", "configMap": {
                    "name": f"{release}-node-feature-discovery-master-conf",
                    "items": [{"key": "nfd-master.conf", "path": "nfd-master.conf"}]}}],
                "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "",
                                 "effect": "NoSchedule"}]}}}}


def helm_worker(ns: str = "gpu-operator", release: str = "gpu-operator") -> dict[str, Any]:
    return {"kind": "DaemonSet", "metadata": {"name": f"{release}-node-feature-discovery-worker", "namespace": ns},
            "spec": {"template": {"spec": {
                "containers": [{"name": "worker", "image": IMAGE, "command": ["nfd-worker"],
                                "args": ["-feature-gates=NodeFeatureAPI=true", "-metrics=8081"],
                                "volumeMounts": [
                                    {"name": "host-sys", "mountPath": "/host-sys", "readOnly": True},
                                    {"name": "source-d", "mountPath": f"{NFD_ETC}/source.d/", "readOnly": True},
                                    {"name": "features-d", "mountPath": f"{NFD_ETC}/features.d/", "readOnly": True},
                                    {"name": "nfd-worker-conf", "mountPath": NFD_ETC, "readOnly": True}]}],
                "volumes": [
                    {"name": "host-sys", "hostPath": {"path": "/sys"}},
                    {"name": "source-d", "hostPath": {"path": f"{NFD_ETC}/source.d/"}},
                    {"name": "features-d", "hostPath": {"path": f"{NFD_ETC}/features.d/"}},
                    {"name": "nfd-worker-conf", "configMap": {
                        "name": f"{release}-node-feature-discovery-worker-conf",
                        "items": [{"key": "nfd-worker.conf", "path": "nfd-worker.conf"}]}}]}}}}


def config_maps(ns: str = "gpu-operator", release: str = "gpu-operator") -> dict[tuple[str, str], Any]:
    worker_conf = "core:\n  sleepInterval: 60s\nsources:\n  local:\n    hooksEnabled: true\n"
    return {(ns, f"{release}-node-feature-discovery-master-conf"): {"data": {"nfd-master.conf": "null\n"}},
            (ns, f"{release}-node-feature-discovery-worker-conf"): {"data": {"nfd-worker.conf": worker_conf}}}


def v082_combined() -> dict[str, Any]:
    """nfd-daemonset-combined.yaml.template at v0.8.2 (the nfd-worker-conf volume mounts the whole directory)."""
    image = "k8s.gcr.io/nfd/node-feature-discovery:v0.8.2"
    return {"kind": "DaemonSet", "metadata": {"name": "nfd", "namespace": "node-feature-discovery"},
            "spec": {"template": {"spec": {
                "containers": [
                    {"name": "nfd-master", "image": image, "command": ["nfd-master"]},
                    {"name": "nfd-worker", "image": image, "command": ["nfd-worker"], "volumeMounts": [
                        {"name": "host-boot", "mountPath": "/host-boot", "readOnly": True},
                        {"name": "source-d", "mountPath": f"{NFD_ETC}/source.d/", "readOnly": True},
                        {"name": "features-d", "mountPath": f"{NFD_ETC}/features.d/", "readOnly": True},
                        {"name": "nfd-worker-conf", "mountPath": NFD_ETC, "readOnly": True}]}],
                "volumes": [
                    {"name": "host-boot", "hostPath": {"path": "/boot"}},
                    {"name": "source-d", "hostPath": {"path": f"{NFD_ETC}/source.d/"}},
                    {"name": "features-d", "hostPath": {"path": f"{NFD_ETC}/features.d/"}},
                    {"name": "nfd-worker-conf", "configMap": {"name": "nfd-worker-conf"}}]}}}}


def test_gpu_operator_helm_release() -> None:
    d = from_objects([helm_master(), helm_worker()], config_maps(), crd_served=True)
    assert d is not None and d.namespace == "gpu-operator"
    assert d.version == parse_version("v0.16.4") and d.version_source == f"image {IMAGE}"
    assert d.master is not None and d.master.name == "gpu-operator-node-feature-discovery-master"
    assert d.master.args[0] == "-extra-label-ns=nvidia.com" and d.master.config == {}
    assert d.master.config_source == ("configmap gpu-operator/gpu-operator-node-feature-discovery-master-conf "
                                      "key nfd-master.conf")
    assert d.master_config().extra_label_ns == {"nvidia.com"} and d.master_config().namespace == "gpu-operator"
    assert d.worker is not None and d.worker.config == {"core": {"sleepInterval": "60s"},
                                                       "sources": {"local": {"hooksEnabled": True}}}
    assert d.worker_config().sleep_interval == 60.0 and d.hooks_enabled()
    assert d.node_feature_api
    assert d.mounts["hook"] == Mount("hook", "hostPath", f"{NFD_ETC}/source.d", volume="source-d",
                                     host_path=f"{NFD_ETC}/source.d")
    assert d.mounts["feature"].source == "hostPath"
    assert d.status_line() == ("NFD v0.16.4 in gpu-operator · master -extra-label-ns=nvidia.com · hooks enabled · "
                               "relabel every 60s")  # the chart's default -feature-gates=NodeFeatureAPI=true: not shown
    c = helm_master()["spec"]["template"]["spec"]["containers"][0]
    c["args"] += ["-feature-gates=DisableAutoPrefix=true", "-enable-taints", "-no-publish=false"]
    d2 = from_objects([{**helm_master(), "spec": {"template": {"spec": {"containers": [c]}}}}, helm_worker()],
                      config_maps())
    assert d2 is not None and d2.status_line().startswith(
        "NFD v0.16.4 in gpu-operator · master -extra-label-ns=nvidia.com -feature-gates=DisableAutoPrefix=true "
        "-enable-taints · hooks")
    assert d2.master_config().disable_auto_prefix and d2.master_config().enable_taints
    doc = d.as_dict()
    assert doc["namespace"] == "gpu-operator" and doc["version"] == "v0.16.4" and doc["nodeFeatureAPI"] is True
    assert doc["master"]["image"] == IMAGE and doc["master"]["args"][0] == "-extra-label-ns=nvidia.com"
    assert doc["master"]["effective"]["extraLabelNs"] == ["nvidia.com"]
    assert doc["worker"]["config"]["core"]["sleepInterval"] == "60s"
    assert doc["mounts"]["feature"] == {"source": "hostPath", "mountPath": f"{NFD_ETC}/features.d",
                                        "volume": "features-d", "hostPath": f"{NFD_ETC}/features.d"}
    assert wanted_config_maps([helm_master(), helm_worker()]) == set(config_maps())


def test_v082_combined_daemonset() -> None:
    """v0.8.2: both programs in one DaemonSet, no NodeFeature API, hooks always on, worker config from the
    whole-directory ConfigMap mount (key = the file's name)."""
    cms = {("node-feature-discovery", "nfd-worker-conf"): {"data": {"nfd-worker.conf": "core:\n  sleepInterval: 2s\n"}}}
    d = from_objects([v082_combined()], cms, crd_served=True)  # the CRD may be installed; v0.8 never reads it
    assert d is not None and d.version == parse_version("v0.8.2") and not d.node_feature_api
    assert d.master is not None and d.worker is not None and d.master.name == d.worker.name == "nfd"
    assert d.master.config_source == "" and d.worker.config_source.endswith("nfd-worker-conf key nfd-worker.conf")
    assert d.status_line() == ("NFD v0.8.2 in node-feature-discovery · master defaults · hooks enabled · "
                               "relabel every 2s")


def test_features_from_a_configmap_volume() -> None:
    """The NFD article's alternative: features.d (or source.d) from a ConfigMap, hooks needing an executable mode."""
    ds = helm_worker("nfd", "nfd")
    spec = ds["spec"]["template"]["spec"]
    spec["volumes"][2] = {"name": "features-d", "configMap": {"name": "nfd-features", "defaultMode": 0o644}}
    items = [{"key": "sysctl", "path": "sysctl", "mode": 0o700}]
    spec["volumes"][1] = {"name": "source-d", "configMap": {"name": "nfd-hooks", "defaultMode": 0o755, "items": items}}
    d = from_objects([ds], {}, crd_served=False)
    assert d is not None and d.master is None and d.namespace == "nfd"
    feature, hook = d.mounts["feature"], d.mounts["hook"]
    assert (feature.source, feature.config_map, feature.default_mode, feature.volume) == (
        "configMap", "nfd-features", 0o644, "features-d")
    assert hook.items == (("sysctl", "sysctl", 0o700),) and hook.default_mode == 0o755
    assert hook.as_dict()["defaultMode"] == "0755" and hook.as_dict()["items"][0]["mode"] == "0700"
    assert "no nfd-master found" in d.status_line() and not d.node_feature_api
    assert any("could not be read" in w for w in d.warnings)  # the worker's config ConfigMap was not given


def test_mount_none_other_and_subpath() -> None:
    ds = helm_worker()
    c = ds["spec"]["template"]["spec"]["containers"][0]
    c["volumeMounts"] = [m for m in c["volumeMounts"] if m["name"] != "source-d"]
    ds["spec"]["template"]["spec"]["volumes"][2] = {"name": "features-d", "emptyDir": {}}
    d = from_objects([ds], config_maps())
    assert d is not None
    # source.d is under the config ConfigMap's directory mount: nothing can put a hook there
    assert d.mounts["hook"] == Mount("hook", "none", f"{NFD_ETC}/source.d")
    assert d.mounts["feature"].source == "other" and d.mounts["feature"].volume == "features-d"
    # a hostPath parent of features.d: the files are in that directory's features.d on the node
    c["volumeMounts"] = [{"name": "etc", "mountPath": "/etc/kubernetes"}]
    ds["spec"]["template"]["spec"]["volumes"] = [{"name": "etc", "hostPath": {"path": "/etc/kubernetes"}}]
    d = from_objects([ds])
    assert d is not None and d.mounts["feature"].host_path == f"{NFD_ETC}/features.d"
    # the worker config from a subPath mount of one key
    c["volumeMounts"] = [{"name": "conf", "mountPath": f"{NFD_ETC}/nfd-worker.conf", "subPath": "worker.yaml"}]
    ds["spec"]["template"]["spec"]["volumes"] = [{"name": "conf", "configMap": {"name": "my-conf"}}]
    d = from_objects([ds], {("gpu-operator", "my-conf"): {"data": {"worker.yaml": "core: {sleepInterval: 5s}"}}})
    assert d is not None and d.worker is not None and d.worker.config_source.endswith("my-conf key worker.yaml")
    assert d.worker_config().sleep_interval == 5.0


def test_recognised_by_program_not_by_name_and_version_fallbacks() -> None:
    """nfd-gc and nfd-topology-updater run the same image and are not master/worker; an image without a version
    tag takes the caller's hint (NodeFeature / Node annotation)."""
    gc = {"kind": "Deployment", "metadata": {"name": "nfd-gc", "namespace": "gpu-operator"},
          "spec": {"template": {"spec": {"containers": [{"name": "gc", "image": IMAGE, "command": ["nfd-gc"]}]}}}}
    assert from_objects([gc]) is None
    other = {"kind": "Deployment", "metadata": {"name": "nfd-master", "namespace": "x"},
             "spec": {"template": {"spec": {"containers": [{"name": "nfd-master", "image": "nginx:1.25"}]}}}}
    assert from_objects([other]) is None
    ds = helm_worker()
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = "quay.io/vendor/nfd@sha256:" + "0" * 64
    hint = (parse_version("v0.14.2"), "NodeFeature annotation nfd.node.kubernetes.io/worker.version")
    d = from_objects([ds, gc], config_maps(), version_hint=hint)
    assert d is not None and d.version == parse_version("v0.14.2") and d.version_source.startswith("NodeFeature")
    d = from_objects([ds], config_maps())
    assert d is not None and d.version is None and any("version is unknown" in w for w in d.warnings)
    assert d.status_line().startswith("NFD (version unknown) in gpu-operator")


def test_image_version() -> None:
    assert image_version("registry.k8s.io/nfd/node-feature-discovery:v0.16.4-minimal") == parse_version("v0.16.4")
    assert image_version("localhost:5000/nfd:v0.19.0@sha256:" + "a" * 64) == parse_version("v0.19.0")
    assert image_version("localhost:5000/nfd") is None
    assert image_version("registry.redhat.io/openshift4/ose-node-feature-discovery-rhel9:v4.16") is None
    assert image_version("nfd:latest") is None


def test_two_installations_prefer_the_complete_one() -> None:
    lone = helm_worker("aaa-leftover", "old")
    d = from_objects([lone, helm_master(), helm_worker()], config_maps())
    assert d is not None and d.namespace == "gpu-operator"
    assert any("also deployed in aaa-leftover" in w for w in d.warnings)
    mixed = copy.deepcopy(helm_worker())
    mixed["spec"]["template"]["spec"]["containers"][0]["image"] = IMAGE.replace("v0.16.4", "v0.15.0")
    d = from_objects([helm_master(), mixed], config_maps())
    assert d is not None and any("different versions" in w for w in d.warnings)


def test_a_flag_the_release_lacks_is_a_warning() -> None:
    """The chart's `-resource-labels` kept on a v0.17 image: nfd-master exits at start (cmd/nfd-master/main.go
    v0.17.0 no longer defines it)."""
    master = helm_master()
    c = master["spec"]["template"]["spec"]["containers"][0]
    c["image"] = IMAGE.replace("v0.16.4", "v0.17.0")
    c["args"] = [*c["args"], "-resource-labels=vendor.io/gpu"]
    d = from_objects([master], config_maps())
    assert d is not None
    assert "nfd-master v0.17.0 has no flag -resource-labels: it exits at start (flag provided but not defined)" in (
        d.warnings)


def test_openshift_operator_worker() -> None:
    """OpenShift's NFD operator (openshift/cluster-nfd-operator internal/daemonset/testdata/
    test_worker_daemonset.yaml at 18079aac): DaemonSet nfd-worker, its config from ConfigMap `nfd-worker` key
    `nfd-worker-conf` projected as nfd-worker.conf (items), hostPath source.d / features.d."""
    etc = NFD_ETC
    ds = {"kind": "DaemonSet", "metadata": {"name": "nfd-worker", "namespace": "openshift-nfd"},
          "spec": {"template": {"spec": {
              "containers": [{"args": [], "command": ["nfd-worker"], "image": "test-image", "name": "nfd-worker",
                              "volumeMounts": [{"mountPath": "/host-boot", "name": "host-boot", "readOnly": True},
                                               {"mountPath": etc, "name": "nfd-worker-config"},
                                               {"mountPath": f"{etc}/source.d", "name": "nfd-hooks"},
                                               {"mountPath": f"{etc}/features.d", "name": "nfd-features"}]}],
              "volumes": [{"hostPath": {"path": "/boot"}, "name": "host-boot"},
                          {"hostPath": {"path": f"{etc}/source.d"}, "name": "nfd-hooks"},
                          {"hostPath": {"path": f"{etc}/features.d"}, "name": "nfd-features"},
                          {"configMap": {"items": [{"key": "nfd-worker-conf", "path": "nfd-worker.conf"}],
                                         "name": "nfd-worker"}, "name": "nfd-worker-config"}]}}}}
    assert wanted_config_maps([ds]) == {("openshift-nfd", "nfd-worker")}
    cms = {("openshift-nfd", "nfd-worker"): {"data": {"nfd-worker-conf": "core:\n  sleepInterval: 45s\n"}}}
    d = from_objects([ds], cms, version_hint=(parse_version("v0.16.4"), "NodeFeature annotation"))
    assert d is not None and d.namespace == "openshift-nfd" and d.worker is not None
    assert d.worker.config_source == "configmap openshift-nfd/nfd-worker key nfd-worker-conf"
    assert d.worker_config().sleep_interval == 45.0 and d.version == parse_version("v0.16.4")
    assert d.mounts["hook"].volume == "nfd-hooks" and d.mounts["feature"].host_path == f"{etc}/features.d"
