"""NFD in the field report's world, as upstream's v0.9.0 runs it (v0.8.2, the report's, is not served by the Go module
proxy here; v0.9.0 is the oldest release the lab builds, of the same design: docs/CONTRIBUTING.md): nfd-master and
nfd-worker from their kustomize manifests (deployment/overlays/default at v0.9.0), hooks from the nodes' source.d
(hostPath), hook naming, gRPC from worker to master through the nfd-master Service, gRPC-era annotations, no
NodeFeature API (no CRDs at all before v0.10), bad hooks as v0.9.0's source/local/local.go and
pkg/nfd-worker/nfd-worker.go treat them."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from labtools import lab_env, run

from console.lab import scenarios

pytestmark = pytest.mark.lab

NS = "node-feature-discovery"
FNS = "feature.node.kubernetes.io"
GROUP, VERSION = "nfd.k8s-sigs.io", "v1alpha1"
WORKERS = ("kube-worker01", "kube-worker02")
# files and hooks wait for the worker's next pass (core.sleepInterval 2s in the lab) and the master's relabel;
# generous (a full-suite run once missed 15 s, cause not found): each poll returns as soon as it holds
SETTLE = 60.0
SOURCE_D = "/etc/kubernetes/node-feature-discovery/source.d/"
# a patch of the DaemonSet or the Deployment: the controllers replace the pods (the DaemonSet one node at a time)
ROLLOUT = 90.0


@pytest.fixture(scope="module")
def kube(seed_resize_lab):
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(seed_resize_lab.state.kubeconfig))
    yield client
    client.close()


def node(kube, name):
    from kubernetes import client

    return client.CoreV1Api(kube).read_node(name).metadata


def poll(predicate, timeout, interval=0.02):
    t0 = time.monotonic()
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"not true after {timeout}s; last value {value!r}")
        time.sleep(interval)


def warnings_for(kube, name, reason, namespace=NS):
    from kubernetes import client

    evs = client.CoreV1Api(kube).list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
    return [e.message for e in evs.items if e.reason == reason and e.type == "Warning"]


def cpu_family(lab, node: str) -> str:
    """What the seeded cpuinfo hook reads: it runs in the node's sandbox, so the node's /proc/cpuinfo."""
    text = lab.guest_roots[node].path("/proc/cpuinfo").read_text()
    return next(ln for ln in text.splitlines() if ln.startswith("cpu family")).partition(":")[2].strip()


def test_v08_hook_and_feature_file_naming(seed_resize_lab, kube):
    assert seed_resize_lab.scenario.nfd_version == "v0.9.0"
    for w in WORKERS:
        labels = node(kube, w).labels
        # field report 1: hook `cpuinfo` printing family=6 -> feature.node.kubernetes.io/cpuinfo-family
        assert labels[f"{FNS}/cpuinfo-family"] == cpu_family(seed_resize_lab, w)
        assert labels[f"{FNS}/inventory-rack"] == "r1"  # feature file `inventory`, line rack=r1
        assert labels[f"{FNS}/lab.inventory"] == "true"  # `/lab.inventory` drops the file-name prefix
        assert labels[f"{FNS}/kernel-version.full"] == "5.4.0-165-generic"
        assert labels[f"{FNS}/system-os_release.VERSION_ID"] == "20.04"
        assert not any(k.startswith(f"{FNS}/cpu-model.") for k in labels)  # cpu-model.* came with v0.11
    assert node(kube, "kube-worker02").labels[f"{FNS}/cpu-cpuid.AVX512F"] == "true"
    assert f"{FNS}/cpu-cpuid.AVX512F" not in node(kube, "kube-worker01").labels


def test_v08_version_annotations_and_no_nodefeature_api(seed_resize_lab, kube):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    for name in ("kube-controlplane01", *WORKERS):
        ann = node(kube, name).annotations
        assert ann["nfd.node.kubernetes.io/worker.version"] == "v0.9.0"
        assert "cpuinfo-family" in ann["nfd.node.kubernetes.io/feature-labels"].split(",")
    assert node(kube, "kube-controlplane01").annotations["nfd.node.kubernetes.io/master.version"] == "v0.9.0"
    assert "nfd.node.kubernetes.io/master.version" not in node(kube, "kube-worker01").annotations
    # v0.9's workers send labels to nfd-master over gRPC: the API server serves no NFD resources at all
    with pytest.raises(ApiException) as err:
        client.CustomObjectsApi(kube).list_namespaced_custom_object(GROUP, VERSION, NS, "nodefeatures")
    assert err.value.status == 404
    env = lab_env(seed_resize_lab)
    out = run(["kubectl", "get", "nodefeatures", "-A"], env, check=False)
    assert out.returncode != 0 and "the server doesn't have a resource type" in out.stderr
    assert GROUP not in run(["kubectl", "api-versions"], env).stdout


def test_v08_manifests(seed_resize_lab):
    env = lab_env(seed_resize_lab)
    ds = json.loads(run(["kubectl", "-n", NS, "get", "ds", "nfd-worker", "-o", "json"], env).stdout)
    c = ds["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "k8s.gcr.io/nfd/node-feature-discovery:v0.9.0" and c["args"] == ["-server=nfd-master:8080"]
    vols = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    assert vols["source-d"]["hostPath"]["path"] == SOURCE_D
    dep = json.loads(run(["kubectl", "-n", NS, "get", "deploy", "nfd-master", "-o", "json"], env).stdout)
    assert dep["spec"]["template"]["spec"]["containers"][0]["command"] == ["nfd-master"]
    cms = run(["kubectl", "-n", NS, "get", "cm", "-o", "name"], env).stdout.split()
    assert "configmap/nfd-worker-conf" in cms and "configmap/nfd-master-conf" not in cms  # no master config in v0.9
    svc = json.loads(run(["kubectl", "-n", NS, "get", "service", "nfd-master", "-o", "json"], env).stdout)
    assert svc["spec"]["ports"][0]["port"] == 8080  # what the workers dial


def write_hook(lab, node_name, name, script):
    path = lab.guest_roots[node_name].path(SOURCE_D + name)
    path.write_text(script)
    path.chmod(0o755)
    return path


def test_field_report_hook_pushed_to_one_node(seed_resize_lab, kube):
    """Field report 1: the sysctl hook `my-script` in kube-worker01's source.d only: within the worker's interval
    kube-worker01 gets feature.node.kubernetes.io/my-script-kernel.pid_max, no other node does."""
    # the hook runs in kube-worker01's sandbox: the node's own /proc, not this machine's
    pid_max = seed_resize_lab.guest_roots["kube-worker01"].path("/proc/sys/kernel/pid_max").read_text().strip()
    path = write_hook(seed_resize_lab, "kube-worker01", "my-script", scenarios.SYSCTL_HOOK)
    try:
        poll(lambda: node(kube, "kube-worker01").labels.get(f"{FNS}/my-script-kernel.pid_max") == pid_max, SETTLE)
        assert all(f"{FNS}/my-script-kernel.pid_max" not in node(kube, n).labels
                   for n in ("kube-controlplane01", "kube-worker02"))
    finally:
        path.unlink()
    poll(lambda: f"{FNS}/my-script-kernel.pid_max" not in node(kube, "kube-worker01").labels, SETTLE)


def test_v08_hook_on_one_node_and_master_namespaces(seed_resize_lab, kube):
    """Field report 1: a `/`-prefixed key drops the hook-name prefix; a key with its own namespace needs
    nfd-master's --extra-label-ns (v0.9.0 cmd/nfd-master/main.go); only the node that has the hook is labelled.
    Patching the master's args restarts its pod; the workers' gRPC channel reconnects through the Service."""
    env = lab_env(seed_resize_lab)
    path = write_hook(seed_resize_lab, "kube-worker01", "variants",
                      "#!/bin/sh\necho /kernel.x=1\necho example.dev/kernel.y=2\n")
    try:
        poll(lambda: node(kube, "kube-worker01").labels.get(f"{FNS}/kernel.x") == "1", SETTLE)
        assert "example.dev/kernel.y" not in node(kube, "kube-worker01").labels  # not an allowed namespace
        assert f"{FNS}/kernel.x" not in node(kube, "kube-worker02").labels
        add = [{"op": "add", "path": "/spec/template/spec/containers/0/args",
                "value": ["--extra-label-ns=example.dev"]}]
        run(["kubectl", "-n", NS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(add)], env)
        poll(lambda: node(kube, "kube-worker01").labels.get("example.dev/kernel.y") == "2", ROLLOUT)
    finally:
        path.unlink()
        remove = [{"op": "remove", "path": "/spec/template/spec/containers/0/args"}]
        run(["kubectl", "-n", NS, "patch", "deployment", "nfd-master", "--type=json", "-p", json.dumps(remove)], env,
            check=False)
    poll(lambda: f"{FNS}/kernel.x" not in node(kube, "kube-worker01").labels
         and "example.dev/kernel.y" not in node(kube, "kube-worker01").labels, SETTLE)


def test_v08_has_no_node_feature_rules(kube):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    rule = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeFeatureRule", "metadata": {"name": "lab-v08-rule"},
            "spec": {"rules": [{"name": "always", "labels": {"always": "true"}}]}}
    with pytest.raises(ApiException) as err:  # no CRD before v0.10: `kubectl apply` says "no matches for kind"
        client.CustomObjectsApi(kube).create_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", rule)
    assert err.value.status == 404


NOISY = "#!/bin/sh\necho 'this is not a label'\nprintf 'bin\\001\\002ary=x\\n'\necho ok.value=1\n"
BROKEN = "#!/bin/sh\necho lost=1\nexit 3\n"


def worker_log(lab, node_name: str) -> str:
    env = lab_env(lab)
    pod = run(["kubectl", "-n", NS, "get", "pods", "-l", "app=nfd-worker", "--field-selector",
               f"spec.nodeName={node_name}", "-o", "name"], env).stdout.split()[0]
    return run(["kubectl", "-n", NS, "logs", pod], env).stdout


def test_bad_hooks_are_discarded_and_reported(seed_resize_lab, kube):
    """A hook that exits non-zero gives nothing (local.go runHook: "source local failed running hook"); a line
    that is no valid label name is dropped by the worker ("ignoring invalid feature name"), the rest of its
    output kept. v0.9 runs hooks without a time limit (exec.Command, cmd.Run), so a hanging hook is not tried."""
    paths = [write_hook(seed_resize_lab, "kube-worker01", n, s) for n, s in (("noisy", NOISY), ("broken", BROKEN))]
    try:
        poll(lambda: node(kube, "kube-worker01").labels.get(f"{FNS}/noisy-ok.value") == "1", SETTLE)
        poll(lambda: "source local failed running hook 'broken': exit status 3" in worker_log(seed_resize_lab,
                                                                                              "kube-worker01"), SETTLE)
        labels = node(kube, "kube-worker01").labels
        assert f"{FNS}/cpuinfo-family" in labels  # the good hook still labels
        assert not any(k.startswith(f"{FNS}/broken-") for k in labels)
        assert "ignoring invalid feature name 'noisy-this is not a label'" in worker_log(seed_resize_lab,
                                                                                         "kube-worker01")
    finally:
        for p in paths:
            p.unlink()
    poll(lambda: f"{FNS}/noisy-ok.value" not in node(kube, "kube-worker01").labels, SETTLE)


def test_hooks_see_their_node_name(seed_resize_lab, kube):
    """nfd-worker's DaemonSet sets NODE_NAME from spec.nodeName; each node runs its own source.d."""
    paths = [write_hook(seed_resize_lab, w, "whoami", '#!/bin/sh\necho "/lab.node=$NODE_NAME"\n') for w in WORKERS]
    try:
        for w in WORKERS:
            poll(lambda w=w: node(kube, w).labels.get(f"{FNS}/lab.node") == w, SETTLE)
        assert f"{FNS}/lab.node" not in node(kube, "kube-controlplane01").labels  # its tree has no such hook
    finally:
        for p in paths:
            p.unlink()
    poll(lambda: all(f"{FNS}/lab.node" not in node(kube, w).labels for w in WORKERS), SETTLE)


def test_hooks_from_a_configmap_volume_need_an_executable_default_mode(seed_resize_lab, kube):
    """The article's ConfigMap alternative for source.d: the kubelet projects keys as 0644 unless the volume's
    defaultMode says otherwise (core/v1 ConfigMapVolumeSource), and nfd-worker cannot run a 0644 hook; the
    node's own source.d (the hostPath it replaces) is no longer read meanwhile."""
    lab = seed_resize_lab
    env = lab_env(lab)
    hooks = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nfd-hooks", "namespace": NS},
             "data": {"cm-hook": "#!/bin/sh\necho /from.configmap=yes\n"}}
    subprocess.run(["kubectl", "apply", "-f", "-"], env=env, input=json.dumps(hooks), capture_output=True, text=True,
                   timeout=60, check=True)
    ds = json.loads(run(["kubectl", "-n", NS, "get", "daemonset", "nfd-worker", "-o", "json"], env).stdout)
    volumes = ds["spec"]["template"]["spec"]["volumes"]
    i = next(i for i, v in enumerate(volumes) if v["name"] == "source-d")

    def mount(volume):
        patch = [{"op": "replace", "path": f"/spec/template/spec/volumes/{i}", "value": volume}]
        run(["kubectl", "-n", NS, "patch", "daemonset", "nfd-worker", "--type=json", "-p", json.dumps(patch)], env)

    assert f"{FNS}/cpuinfo-family" in node(kube, "kube-worker01").labels
    try:
        mount({"name": "source-d", "configMap": {"name": "nfd-hooks"}})
        poll(lambda: f"{FNS}/cpuinfo-family" not in node(kube, "kube-worker01").labels, ROLLOUT)
        assert f"{FNS}/from.configmap" not in node(kube, "kube-worker01").labels  # 0644: not run
        mount({"name": "source-d", "configMap": {"name": "nfd-hooks", "defaultMode": 0o755}})
        poll(lambda: all(node(kube, n.name).labels.get(f"{FNS}/from.configmap") == "yes"
                         for n in lab.scenario.nodes), ROLLOUT)
    finally:
        mount(volumes[i])
        run(["kubectl", "-n", NS, "delete", "configmap", "nfd-hooks"], env)
    poll(lambda: f"{FNS}/cpuinfo-family" in node(kube, "kube-worker01").labels
         and f"{FNS}/from.configmap" not in node(kube, "kube-worker01").labels, ROLLOUT)


def test_dryrun_from_the_cluster_needs_the_nodefeature_api(seed_resize_lab, tmp_path):
    """v0.9.0 has no NodeFeatureRule (v0.10+): `nfd dryrun --from-cluster` says so. Modelled as v0.11 (rules, no
    NodeFeature API yet), it cannot read the nodes' features from this cluster and says what to give instead
    (exit 2, as `nfd publish` refuses)."""
    rule = tmp_path / "rule.yaml"
    rule.write_text("apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {name: r}\n"
                    "spec: {rules: [{name: a, labels: {a: 'true'}}]}\n")

    def dryrun(*extra):
        out = run([sys.executable, "-m", "console", "nfd", "dryrun", "--from-cluster", "--rule", str(rule), *extra,
                   "-o", "json"], lab_env(seed_resize_lab), check=False)
        return out.returncode, json.loads(out.stdout)

    code, doc = dryrun()
    assert (code, doc["error"]) == (1, "invalid-rule") and "needs NFD v0.10+ (got v0.9.0)" in doc["message"]
    code, doc = dryrun("--nfd-version", "v0.11.0")
    assert (code, doc["error"]) == (2, "no-nodefeature-api") and "--nodefeature" in doc["message"]
