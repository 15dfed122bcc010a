"""Addresses for the lab's nodes on the upstream control plane: one per node in 198.18.0.0/15 (RFC 2544's
benchmarking range, never routed), on `lo` for the lab's lifetime.

Not 127/8: upstream's node proxy dials only global-unicast addresses (pkg/registry/core/node/strategy.go,
isProxyableHostname: "address not allowed"), and `kubectl get --raw /api/v1/nodes/N/proxy/configz` must reach
the node's kubelet as on a cluster. Adding an address needs CAP_NET_ADMIN.
"""

from __future__ import annotations

import random
import subprocess


class AddressError(Exception):
    """No addresses could be added; the message says why and what to do."""


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


class NodeAddresses:
    def __init__(self) -> None:
        self.added: list[str] = []

    def allocate(self, count: int) -> list[str]:
        """`count` addresses of one /24 no other lab uses, added to `lo`."""
        if not 0 < count < 255:
            raise AddressError(f"{count} nodes do not fit one /24 of node addresses")
        taken = _ip("-o", "-4", "addr", "show", "dev", "lo").stdout
        subnets = [f"198.{a}.{b}" for a in (18, 19) for b in range(256)]
        random.shuffle(subnets)  # parallel labs (test workers) rarely race for the same one; `add` settles it
        for subnet in subnets:
            if f" {subnet}." in taken:
                continue
            try:
                for host in range(1, count + 1):
                    self._add(f"{subnet}.{host}")
            except FileExistsError:
                self.release()
                continue
            return list(self.added)
        raise AddressError("no free /24 left in 198.18.0.0/15 on lo")

    def _add(self, address: str) -> None:
        done = _ip("addr", "add", f"{address}/32", "dev", "lo")
        if done.returncode == 0:
            self.added.append(address)
            return
        if "File exists" in done.stderr:
            raise FileExistsError(address)
        self.release()
        raise AddressError(f"cannot add the node address {address} to lo ({done.stderr.strip()}): the lab's nodes "
                           "need addresses the API server's node proxy may dial; run the lab as root (or with "
                           "CAP_NET_ADMIN)")

    def release(self) -> None:
        while self.added:
            _ip("addr", "del", f"{self.added.pop()}/32", "dev", "lo")
