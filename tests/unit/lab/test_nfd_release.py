"""The lab's overlay over an NFD release's own kustomize manifests (console/lab/nfd_release.py), rendered by
upstream's kustomize: what the scenario sets lands in the release's objects, and only that.

Kustomize semantics relied on: configMapGenerator `behavior: replace` over a base's generated ConfigMap keeps
the name and hashes the new content; JSON 6902 patches by target kind and name
(https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from console.lab import nfd_release, scenarios
from console.lab.upstream.build import NFD


def test_every_scenario_runs_a_release_the_lab_builds() -> None:
    assert nfd_release.program(scenarios.get("default")) is NFD["v0.19.0"]
    for name in scenarios.SCENARIOS:
        assert nfd_release.program(scenarios.get(name)) is not None, name
    assert nfd_release.program(scenarios.scale(10, 1)) is not None


def test_the_features_configmap_replaces_the_hostpath_and_the_scale_world_gets_only_crds(tmp_path: Path) -> None:
    """nfd-configmap: the generated ConfigMap (its name unhashed, in NFD's namespace) mounted at features.d in
    place of the hostPath (a strategic merge patch: volumes merge by name); the scale world: CRDs only."""
    objects = nfd_release.objects(scenarios.get("nfd-configmap"), tmp_path / "cm")
    cm = next(o for _, o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "nfd-features")
    assert cm["metadata"]["namespace"] == "node-feature-discovery" and "example.com/rack=r7" in cm["data"]["inventory"]
    worker = next(o for _, o in objects if o["kind"] == "DaemonSet")["spec"]["template"]["spec"]
    features_d = next(v for v in worker["volumes"] if v["name"] == "features-d")
    assert features_d == {"name": "features-d", "configMap": {"name": "nfd-features"}}
    scale = nfd_release.objects(scenarios.scale(10, 1), tmp_path / "scale")
    assert scale and {o["kind"] for _, o in scale} == {"CustomResourceDefinition"}


def test_v0_9_has_the_grpc_service_and_no_crds(tmp_path: Path) -> None:
    """v0.9.0's deployment/overlays/default: nfd-master's Service (the workers dial nfd-master:8080), no CRDs."""
    kinds = {(o["kind"], o["metadata"]["name"]) for _, o in nfd_release.objects(scenarios.get("seed-resize"), tmp_path)}
    assert ("Service", "nfd-master") in kinds and not any(k == "CustomResourceDefinition" for k, _ in kinds)


def test_the_release_objects_carry_the_scenarios_settings(tmp_path: Path) -> None:
    base = scenarios.get("planner")
    setup = dataclasses.replace(base.nfd, namespace="nfd-lab", master_args=("-extra-label-ns=vendor.example.com",))
    objects = nfd_release.objects(dataclasses.replace(base, nfd=setup), tmp_path)
    by = {
        (o["kind"], o["metadata"]["name"].rsplit("-", 1)[0] if o["kind"] == "ConfigMap" else o["metadata"]["name"]): o
        for _, o in objects
    }
    assert all(o["metadata"].get("namespace", "nfd-lab") == "nfd-lab" for _, o in objects)
    worker = by[("DaemonSet", "nfd-worker")]["spec"]["template"]["spec"]
    keys = [t["key"] for t in worker["tolerations"]]
    assert keys[:2] == ["node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane"]
    assert "dedicated" in keys  # the planner scenario's HPC pool
    master = by[("Deployment", "nfd-master")]["spec"]["template"]["spec"]
    assert master["containers"][0]["args"] == ["-extra-label-ns=vendor.example.com"]
    assert master["containers"][0]["image"] == "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"
    conf = by[("ConfigMap", "nfd-worker-conf")]
    assert conf["data"]["nfd-worker.conf"] == scenarios.LAB_WORKER_CONF
    mounted = next(v["configMap"]["name"] for v in worker["volumes"] if v["name"] == "nfd-worker-conf")
    assert mounted == conf["metadata"]["name"]  # the hashed name, referenced where the release mounts it
    assert all("status" not in o for _, o in objects)
    assert {nfd_release.resource_of(o) for _, o in objects} >= {
        "customresourcedefinitions.apiextensions.k8s.io",
        "daemonsets.apps",
        "deployments.apps",
    }


def test_an_unbuilt_release_is_refused_with_the_reason(tmp_path: Path) -> None:
    old = dataclasses.replace(scenarios.get("seed-resize"), nfd_version="v0.8.2")  # not served by the module proxy
    with pytest.raises(nfd_release.ReleaseError, match=r"does not build NFD v0\.8\.2"):
        nfd_release.render(old, tmp_path)
