"""The lab's registry list (containerd's reference rules).

Sources: containerd/docker reference normalisation (docker.io/library/ for bare names, :latest by default).
"""

from __future__ import annotations

from console.config import DEFAULT_NODE_DEBUG_IMAGE
from console.lab import images


def test_references_resolve_like_containerd():
    assert images.normalize("nginx") == ("docker.io/library/nginx", "latest")
    assert images.normalize("library/nginx:1.21") == ("docker.io/library/nginx", "1.21")
    assert images.normalize("registry.lab/app:1") == ("registry.lab/app", "1")
    assert images.normalize("localhost:5000/x") == ("localhost:5000/x", "latest")
    assert images.can_pull(DEFAULT_NODE_DEBUG_IMAGE) and images.can_pull("nginx") and images.can_pull("nginx:1.21")
    assert not images.can_pull("busybox:0.0.404") and not images.can_pull("quay.io/nobody/nothing:1")
