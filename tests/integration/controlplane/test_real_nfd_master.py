"""Upstream nfd-master (the newest release the lab builds, console/lab/upstream/nfd-v0.19.0) on the upstream control
plane, the first step of issue 22: the labels a node gets come from the real master, not from the console's engine.

Run as its manifests run it, outside a pod: `-kubeconfig`, the node it runs on in NODE_NAME (it patches that Node
at start and exits if it cannot: cmd/nfd-master, pkg/nfd-master/nfd-master.go), its namespace from
KUBERNETES_NAMESPACE (no service-account file here). Its CRDs are the release's own
(deployment/base/nfd-crds/nfd-api-crds.yaml). A worker's NodeFeature (label nfd.node.kubernetes.io/node-name)
and a NodeFeatureRule matching one of its attributes give the node the rule's label, prefixed with
feature.node.kubernetes.io/ as NFD does for a name without a namespace, and the NodeFeature's own labels.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labtools import wait_for
from realnfd import crds, feature_labels, node_object, send, start_master

from console.lab.controlplane import ControlPlane
from console.lab.upstream.build import NFD, binary

NS = "nfd-conformance"
NODE = "nfd-node-1"


@pytest.fixture
def nfd_master(control_plane: ControlPlane, kubectl: Any, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    program = NFD["v0.19.0"]
    kubectl("apply", "-f", str(crds(program)))
    kubectl("create", "namespace", NS)
    send(kubectl, "create", tmp_path, node_object(NODE))
    proc = start_master(control_plane, binary(program, command="nfd-master"), NODE, NS, tmp_path / "nfd-master.log")
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(30)
        kubectl("delete", "namespace", NS, "--wait=false")
        kubectl("delete", "node", NODE, "--wait=false")
        kubectl("delete", "nodefeaturerule", "conformance-kernel", "--ignore-not-found", "--wait=false")
        kubectl("delete", "-f", str(crds(program)))  # waited for: the package's other tests apply them again


def test_the_real_master_labels_the_node_from_its_nodefeature_and_a_rule(
    nfd_master: Any, kubectl: Any, tmp_path: Path
) -> None:
    send(
        kubectl,
        "apply",
        tmp_path,
        {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeature",
            "metadata": {"name": NODE, "namespace": NS, "labels": {"nfd.node.kubernetes.io/node-name": NODE}},
            "spec": {
                "features": {"attributes": {"kernel.version": {"elements": {"major": "6", "minor": "1"}}}},
                "labels": {"feature.node.kubernetes.io/from-worker": "yes"},
            },
        },
    )
    send(
        kubectl,
        "apply",
        tmp_path,
        {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeatureRule",
            "metadata": {"name": "conformance-kernel"},
            "spec": {
                "rules": [
                    {
                        "name": "kernel 6",
                        "labels": {"kernel-major-6": "true"},
                        "matchFeatures": [
                            {
                                "feature": "kernel.version",
                                "matchExpressions": {"major": {"op": "In", "value": ["6"]}},
                            }
                        ],
                    },
                    {
                        "name": "kernel 5",
                        "labels": {"kernel-major-5": "true"},
                        "matchFeatures": [
                            {
                                "feature": "kernel.version",
                                "matchExpressions": {"major": {"op": "In", "value": ["5"]}},
                            }
                        ],
                    },
                ]
            },
        },
    )

    assert nfd_master.poll() is None, "nfd-master exited"
    wait_for(lambda: len(feature_labels(kubectl, NODE)) == 2, timeout=60, what="the real master's labels on the node")
    assert feature_labels(kubectl, NODE) == {"kernel-major-6": "true", "from-worker": "yes"}
