"""NFD v0.9.0 (field report 1's `seed-resize` world, upstream's release): no third-party NodeFeatures, so
`nfd publish` refuses.

nfd-master merges third-party NodeFeature objects from v0.14 (NodeFeature API on by default; before it the
worker sent its labels over gRPC and the master read no NodeFeature: NFD docs/usage/customization-guide.md,
v0.14.0 release notes). The refusal comes before anything is sent or audited.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client, config
from publishtools import audit, publish, xdg

from console.lab.world import Lab

pytestmark = pytest.mark.lab


def test_publish_refused_on_nfd_v0_8(seed_resize_lab: Lab, tmp_path: Path) -> None:
    env = xdg(tmp_path)
    for extra in (("--label", "rack=r1"), ("--dry-run", "--label", "rack=r1"), ("--delete",)):
        code, doc, err = publish(seed_resize_lab, env, "--node", "kube-worker01", *extra, "--yes")
        assert code == 2, err
        assert doc["status"] == "refused" and doc["error"] == "nfd-too-old"
        assert "v0.9.0" in doc["message"] and "v0.14" in doc["message"]
    assert audit(env) == []
    api = config.new_client_from_config(config_file=str(seed_resize_lab.state.kubeconfig))
    try:
        labels = client.CoreV1Api(api).read_node("kube-worker01").metadata.labels
    finally:
        api.close()
    assert "feature.node.kubernetes.io/rack" not in labels
