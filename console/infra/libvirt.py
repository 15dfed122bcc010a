"""libvirt backend (libvirt-python): map node → domain, raise maxima, restart, hot-add vCPUs and memory.

Facts from shared/reference/scale-up.md §3: the vCPU maximum changes only in the
persistent config (CONFIG|VCPU_MAXIMUM) and applies on a new QEMU process; with
a `<topology>` the QEMU driver refuses a maximum that is not its product
("CPU topology doesn't match the desired vcpu count") — redefine the inactive
XML instead; the memory maximum is MEM_MAXIMUM|MEM_CONFIG; live growth is
setVcpusFlags(n, LIVE) and setMemoryFlags(kib, MEM_LIVE) within the live maxima.
"""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from console.infra.protocol import InfraError, NotMapped, VmDescription
from console.infra.sizes import FlavorInfo
from console.kube.model import NodeInfo

TOPOLOGY_ERROR = "CPU topology doesn't match"


def libvirt_uris(configured: Sequence[str] = ()) -> list[str]:
    """The configured URIs and those of $CONSOLE_LIBVIRT_URI (space-separated, as the settings read it)."""
    uris = list(configured)
    for uri in os.environ.get("CONSOLE_LIBVIRT_URI", "").split():
        if uri not in uris:
            uris.append(uri)
    return uris


class LibvirtBackend:
    kind = "libvirt"

    def __init__(self, uris: Sequence[str]) -> None:
        if not uris:
            raise InfraError("no libvirt URI configured: set libvirt_uris in the config or CONSOLE_LIBVIRT_URI")
        self.uris = list(uris)
        self._conns: dict[str, Any] = {}

    def close(self) -> None:
        for c in self._conns.values():
            try:
                c.close()
            except Exception as e:  # closing a dead connection: nothing left to do but say so
                raise InfraError(f"closing libvirt connection: {e}") from e
        self._conns.clear()

    def _conn(self, uri: str) -> Any:
        import libvirt

        if uri not in self._conns:
            # errors come back as exceptions; without a handler libvirt also prints them to stderr
            libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
            try:
                self._conns[uri] = libvirt.open(uri)
            except libvirt.libvirtError as e:
                raise InfraError(f"cannot connect to libvirt at {uri}: {e.get_error_message()}") from e
        return self._conns[uri]

    def connection(self, uri: str) -> Any:
        """The open connection to `uri` (opened on first use); InfraError names the URI when it fails."""
        return self._conn(uri)

    def forget(self, uri: str) -> None:
        """Drop the connection to `uri`: the next call reconnects (libvirtd restarted, say)."""
        self._conns.pop(uri, None)

    # -- mapping ---------------------------------------------------------------------------------
    def domain_by_uuid(self, uuid: str) -> tuple[str, str] | None:
        """(uri, domain name) of the domain with this UUID (a Nova server id), or None."""
        import libvirt

        for uri in self.uris:
            try:
                return uri, self._conn(uri).lookupByUUIDString(uuid.lower()).name()
            except libvirt.libvirtError:
                continue
        return None

    def find_domain(self, node: NodeInfo, instance_name: str | None = None, *,
                    server_id: str | None = None) -> tuple[str, str]:
        """(uri, domain name) by systemUUID (case-insensitive), else Nova server id (the domain UUID,
        guest.uuid = instance.uuid in Nova's libvirt driver), else node name, else Nova instance_name; on the
        host where it runs, else where it is defined."""
        import libvirt

        keys = (("uuid", node.system_uuid.lower()), ("uuid", (server_id or "").lower()), ("name", node.name),
                ("name", instance_name))
        defined: tuple[str, str] | None = None
        for uri in self.uris:
            conn = self._conn(uri)
            for how, key in keys:
                if not key:
                    continue
                try:
                    dom = conn.lookupByUUIDString(key) if how == "uuid" else conn.lookupByName(key)
                except libvirt.libvirtError:
                    continue
                # a resized Nova server is defined on two hosts until the resize is confirmed or reverted (the
                # source keeps its stopped domain, nova/virt/libvirt/driver.py _cleanup_resize): the one that
                # runs is the VM
                if dom.isActive():
                    return uri, dom.name()
                defined = defined or (uri, dom.name())
                break
        if defined is not None:
            return defined
        raise NotMapped(
            f"no libvirt domain for node {node.name} (systemUUID {node.system_uuid or '-'}, "
            f"instance {instance_name or '-'}) on {', '.join(self.uris)}"
        )

    def domain(self, uri: str, name: str) -> Any:
        import libvirt

        try:
            return self._conn(uri).lookupByName(name)
        except libvirt.libvirtError as e:
            raise InfraError(f"domain {name}: {e.get_error_message()}") from e

    def describe_domain(self, uri: str, name: str) -> VmDescription:
        import libvirt

        for attempt in range(3):
            try:
                return self._describe_domain(uri, name)
            except libvirt.libvirtError as e:
                # started or shut off between isActive() and a live read (a resize or a restart in progress):
                # read it again in its new state
                if e.get_error_code() != libvirt.VIR_ERR_OPERATION_INVALID or attempt == 2:
                    raise InfraError(f"domain {name}: {e.get_error_message()}") from e
        raise AssertionError("unreachable")

    def _describe_domain(self, uri: str, name: str) -> VmDescription:
        import libvirt

        dom = self.domain(uri, name)
        running = bool(dom.isActive())
        cfg = libvirt.VIR_DOMAIN_AFFECT_CONFIG
        live = libvirt.VIR_DOMAIN_AFFECT_LIVE
        mx = libvirt.VIR_DOMAIN_VCPU_MAXIMUM
        inactive = ET.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
        cfg_mem_kib = int(inactive.findtext("memory") or 0)
        state, max_kib, cur_kib, _nvcpu, _t = dom.info()
        return VmDescription(
            backend="libvirt", ref=name, name=name, running=running,
            vcpus=dom.vcpusFlags(live) if running else dom.vcpusFlags(cfg),
            vcpus_max_live=dom.vcpusFlags(live | mx) if running else 0,
            vcpus_config=dom.vcpusFlags(cfg), vcpus_max_config=dom.vcpusFlags(cfg | mx),
            memory_mib=cur_kib // 1024 if running else 0, memory_max_mib=max_kib // 1024 if running else 0,
            memory_max_config_mib=cfg_mem_kib // 1024, status="running" if running else f"state {state}",
            host=uri, nova_server_id=dom.UUIDString(), instance_name=name, from_hypervisor=running,
        )

    def describe(self, node: NodeInfo, instance_name: str | None = None, *,
                 server_id: str | None = None) -> VmDescription:
        uri, name = self.find_domain(node, instance_name, server_id=server_id)
        return self.describe_domain(uri, name)

    def host_cpus(self, uri: str) -> int:
        """Physical CPUs of the host behind `uri` (libvirt's node info), for the overcommit warning."""
        import libvirt

        try:
            return int(self._conn(uri).getInfo()[2])
        except libvirt.libvirtError as e:
            raise InfraError(f"reading the host's CPUs at {uri}: {e.get_error_message()}") from e

    def flavors(self) -> list[FlavorInfo]:
        return []  # libvirt has no flavors: targets are vCPUs and memory

    # -- mutations -------------------------------------------------------------------------------
    def raise_maxima(self, uri: str, name: str, vcpus: int, memory_mib: int) -> list[str]:
        """Persistent maxima (next boot): vCPU maximum (fixing the topology) and memory maximum. Returns notes."""
        import libvirt

        notes = []
        dom = self.domain(uri, name)
        cfg, mx = libvirt.VIR_DOMAIN_AFFECT_CONFIG, libvirt.VIR_DOMAIN_VCPU_MAXIMUM
        if dom.vcpusFlags(cfg | mx) < vcpus:
            try:
                dom.setVcpusFlags(vcpus, cfg | mx)
            except libvirt.libvirtError as e:
                msg = e.get_error_message()
                if TOPOLOGY_ERROR not in msg:
                    raise InfraError(f"raising the vCPU maximum of {name} to {vcpus}: {msg}") from e
                notes.append(f"libvirt refused the new maximum ({msg}); redefining the XML with a matching topology")
                self._redefine_topology(uri, dom, vcpus)
        kib = memory_mib * 1024
        inactive = ET.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
        if int(inactive.findtext("memory") or 0) < kib:
            try:
                dom.setMemoryFlags(kib, libvirt.VIR_DOMAIN_MEM_MAXIMUM | libvirt.VIR_DOMAIN_MEM_CONFIG)
            except libvirt.libvirtError as e:
                raise InfraError(f"raising the memory maximum of {name} to {memory_mib} MiB: "
                                 f"{e.get_error_message()}") from e
        return notes

    def _redefine_topology(self, uri: str, dom: Any, vcpus: int) -> None:
        import libvirt

        xml = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
        root = ET.fromstring(xml)
        vcpu = root.find("vcpu")
        if vcpu is None:
            raise InfraError(f"domain {dom.name()} has no <vcpu> element")
        current = vcpu.get("current") or (vcpu.text or "1").strip()
        vcpu.set("current", current)
        vcpu.text = str(vcpus)
        topo = root.find("cpu/topology")
        if topo is not None:
            per_socket = int(topo.get("dies", "1")) * int(topo.get("cores", "1")) * int(topo.get("threads", "1"))
            if vcpus % per_socket:
                topo.set("cores", "1")
                topo.set("threads", "1")
                topo.set("dies", "1") if topo.get("dies") else None
                per_socket = 1
            topo.set("sockets", str(vcpus // per_socket))
        for cell in root.findall("cpu/numa/cell"):
            if len(root.findall("cpu/numa/cell")) == 1:
                cell.set("cpus", f"0-{vcpus - 1}")
        try:
            self._conn(uri).defineXML(ET.tostring(root, encoding="unicode"))
        except libvirt.libvirtError as e:
            raise InfraError(f"redefining {dom.name()} with {vcpus} vCPUs: {e.get_error_message()}") from e

    def restart(self, uri: str, name: str, *, timeout: float = 60.0) -> None:
        """A new QEMU process through libvirt: ACPI shutdown, destroy if it does not stop, then start."""
        import libvirt

        dom = self.domain(uri, name)
        try:
            if dom.isActive():
                dom.shutdown()
                deadline = time.monotonic() + min(timeout, 10.0)
                while dom.isActive() and time.monotonic() < deadline:
                    time.sleep(0.2)
                if dom.isActive():
                    dom.destroy()
            dom.create()
        except libvirt.libvirtError as e:
            raise InfraError(f"restarting {name} through libvirt: {e.get_error_message()}") from e

    def set_live(self, uri: str, name: str, vcpus: int, memory_mib: int) -> None:
        """Hot-add vCPUs and balloon memory up, live and persisted in the config."""
        import libvirt

        dom = self.domain(uri, name)
        live, cfg = libvirt.VIR_DOMAIN_AFFECT_LIVE, libvirt.VIR_DOMAIN_AFFECT_CONFIG
        try:
            if dom.vcpusFlags(live) < vcpus:
                dom.setVcpusFlags(vcpus, live)
            if dom.vcpusFlags(cfg) < vcpus:
                dom.setVcpusFlags(vcpus, cfg)
            kib = memory_mib * 1024
            # always: without a guest balloon driver libvirt reports the boot size, not the target
            # (info()[2], live <currentMemory>), so it cannot tell whether the balloon was raised; it is idempotent
            dom.setMemoryFlags(kib, libvirt.VIR_DOMAIN_MEM_LIVE)
            cur_cfg = ET.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)).findtext("currentMemory")
            if cur_cfg and int(cur_cfg) < kib:
                dom.setMemoryFlags(kib, libvirt.VIR_DOMAIN_MEM_CONFIG)
        except libvirt.libvirtError as e:
            raise InfraError(f"hot-adding to {name} ({vcpus} vCPUs, {memory_mib} MiB): {e.get_error_message()}") from e
