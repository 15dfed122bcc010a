"""Commands on a lab node, run for real: bubblewrap over the node's directory tree (issue 11, deliverable 7).

(Signature stub; the implementation follows in the next commits.)
"""

from __future__ import annotations

from collections.abc import Mapping

from console.lab.guestroot import GuestRoot


def run_hook(root: GuestRoot, hook_guest_path: str, *, timeout: float, max_output: int,
             env: Mapping[str, str] | None = None) -> tuple[int | None, str, str, bool]:
    """Run the executable at `hook_guest_path` (a path in the node, e.g.
    /etc/kubernetes/node-feature-discovery/source.d/my-script) as nfd-worker runs a hook: the node's tree at
    /host-proc, /host-sys, /host-etc, /host-boot, /host-usr/lib, /host-lib (as NFD's worker DaemonSet mounts
    them), source.d and features.d at their own paths, with `env` (plus PATH) and no stdin.

    Returns (exit code, stdout, stderr, timed_out): exit code None when it was killed on `timeout` (seconds);
    stdout/stderr hold at most `max_output` bytes each (decoded as UTF-8, errors replaced).
    """
    raise NotImplementedError
