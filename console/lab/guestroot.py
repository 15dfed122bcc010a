"""One lab node's filesystem as a real directory tree on the lab host (issue 11, deliverable 7).

`GuestRoot(root)` owns `<state>/guests/<node>/`; `path("/etc/kubernetes/...")` is the host path of a
guest path, never outside the root. The NFD directories are where nfd-worker's manifests mount them
(NFD deployment/base/worker-daemonset: hostPath /etc/kubernetes/node-feature-discovery/{source.d,features.d}).
"""

from __future__ import annotations

import posixpath
from pathlib import Path

NFD_SOURCE_D = "/etc/kubernetes/node-feature-discovery/source.d"
NFD_FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"


class GuestRoot:
    """A node's `/`, as a directory on the lab host."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        for d in (NFD_SOURCE_D, NFD_FEATURES_D):
            self.path(d).mkdir(parents=True, exist_ok=True)

    def path(self, guest_path: str) -> Path:
        """The host path of absolute `guest_path` (`..` cannot leave the root)."""
        norm = posixpath.normpath("/" + guest_path.lstrip("/"))
        return self.root / norm.lstrip("/") if norm != "/" else self.root
