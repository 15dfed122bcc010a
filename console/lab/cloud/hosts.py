"""The lab's compute hosts as the lab tells Nova's process about them (hosts.json): each host's size, what Nova
reserves and overcommits there, and the libvirt URI of its own daemon."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass

HOSTS_ENV = "CONSOLE_LAB_CLOUD_HOSTS"  # the hosts.json the lab's virt driver reads (console/lab/cloud/virt.py)
FAULTS_FILE = "faults.json"  # beside hosts.json: how the lab's hypervisor misbehaves, by server (virt.py)
_NODE_NAMESPACE = uuid.UUID("0b1c7a3e-52f4-4d7e-9a51-3c6f1e0d2b84")


@dataclass(frozen=True)
class HostSpec:
    name: str
    uri: str
    vcpus: int
    memory_mb: int
    disk_gb: int = 2000
    reserved_vcpus: int = 0
    reserved_memory_mb: int = 512  # Nova's reserved_host_memory_mb default
    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0
    domain_type: str = "qemu"


def load_hosts(path: str | os.PathLike[str]) -> dict[str, HostSpec]:
    with open(path) as fh:
        return {h["name"]: HostSpec(**h) for h in json.load(fh)["hosts"]}


def node_uuid(nodename: str) -> str:
    """A stable compute node UUID: a restarted process finds its compute nodes and resource providers again
    (Nova refuses to start on a node whose identity changed)."""
    return str(uuid.uuid5(_NODE_NAMESPACE, nodename))
