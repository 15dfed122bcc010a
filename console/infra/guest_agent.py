"""Running a script on a node through the QEMU guest agent, over libvirt (console/infra owns every libvirt call).

`guest-exec` + `guest-exec-status` through libvirt's qemuAgentCommand, and
`setGuestVcpus` (guest-set-vcpus) for onlining vCPUs; the domain is found by the
node's systemUUID, else its name, on the configured libvirt URIs. It needs
qemu-guest-agent in the guest and the virtio channel in the domain
(https://wiki.qemu.org/Features/GuestAgent, libvirt's virDomainQemuAgentCommand).
It is one of the console's NodeAccess methods (console/kube/nodeaccess.py).
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from console.kube.nodes_ops import get_node_raw
from console.kube.nodeshell import ExecResult, NodeAccessError

# libvirt error codes (virErrorNumber)
VIR_ERR_ARGUMENT_UNSUPPORTED = 74
VIR_ERR_AGENT_UNRESPONSIVE = 86
AGENT_HOWTO = ("install and start qemu-guest-agent in the guest, and give the domain the virtio channel "
               "<channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel> "
               "(OpenStack: image property hw_qemu_guest_agent=yes, then a hard reboot or rebuild); "
               "or choose node_access: debug-pod or ssh")


class GuestAgentAccess:
    """guest-exec through libvirt's qemuAgentCommand; vCPUs through setGuestVcpus."""

    method = "guest-agent"

    def __init__(self, api_client: Any, uris: list[str] | tuple[str, ...], *, poll: float = 0.1) -> None:
        self.api = api_client
        self.uris = list(uris)
        self.poll = poll
        self._libvirt: Any = None

    def domain(self, node: str) -> Any:
        """The node's domain, found as the runbook's libvirt backend finds it (systemUUID, then name)."""
        from console.infra.libvirt import LibvirtBackend
        from console.infra.protocol import InfraError
        from console.kube.model import NodeInfo

        if not self.uris:
            raise NodeAccessError("node access through the guest agent needs a libvirt URI: set libvirt_uris "
                                  "in the console config (or CONSOLE_LIBVIRT_URI)")
        raw = get_node_raw(self.api, node) if self.api is not None else {"metadata": {"name": node}}
        try:
            self._libvirt = self._libvirt or LibvirtBackend(self.uris)
            return self._libvirt.domain(*self._libvirt.find_domain(NodeInfo.from_api(raw)))
        except InfraError as e:
            raise NodeAccessError(str(e)) from e

    def _agent_error(self, node: str, dom: Any, e: Any) -> NodeAccessError:
        code, msg = e.get_error_code(), e.get_error_message()
        name = dom.name()
        if code == VIR_ERR_AGENT_UNRESPONSIVE:
            return NodeAccessError(f"the qemu guest agent of {node} (domain {name}) is not responding ({msg}): "
                                   + AGENT_HOWTO)
        if code == VIR_ERR_ARGUMENT_UNSUPPORTED and "not configured" in msg:
            return NodeAccessError(f"domain {name} of {node} has no guest agent channel ({msg}): " + AGENT_HOWTO)
        if "disabled" in msg or "has been disabled" in msg:
            return NodeAccessError(f"the guest agent of {node} refuses the command ({msg}): allow guest-exec in "
                                   "qemu-guest-agent (e.g. --allow-rpcs / FILTER_RPC_ARGS in /etc/sysconfig/qemu-ga)")
        return NodeAccessError(f"guest agent of {node} (domain {name}): {msg}")

    def _agent(self, node: str, dom: Any, command: dict[str, Any], timeout: int = 10) -> Any:
        import libvirt
        import libvirt_qemu

        try:
            reply = libvirt_qemu.qemuAgentCommand(dom, json.dumps(command), timeout, 0)
        except libvirt.libvirtError as e:
            raise self._agent_error(node, dom, e) from e
        return json.loads(reply).get("return")

    def prepare(self, node: str) -> list[str]:
        return []  # guest-exec leaves nothing behind

    def run(self, node: str, script: str, *, timeout: float = 60.0) -> ExecResult:
        dom = self.domain(node)
        started = self._agent(node, dom, {"execute": "guest-exec", "arguments": {
            "path": "/bin/sh", "arg": ["-c", script], "capture-output": True}})
        pid = started["pid"]
        deadline = time.monotonic() + timeout
        while True:
            st = self._agent(node, dom, {"execute": "guest-exec-status", "arguments": {"pid": pid}})
            if st.get("exited"):
                code = st.get("exitcode")
                if code is None and st.get("signal") is not None:
                    code = 128 + int(st["signal"])
                return ExecResult(code, _b64(st.get("out-data")), stderr=_b64(st.get("err-data")))
            if time.monotonic() > deadline:
                return ExecResult(None, "", stderr=f"guest-exec pid {pid} on {node} still running after {timeout:g}s")
            time.sleep(self.poll)

    def online_cpus(self, node: str, cpus: str) -> None:
        """Online the vCPUs in `cpus` (cpulist, e.g. "8-11") through the agent (guest-set-vcpus)."""
        import libvirt

        dom = self.domain(node)
        try:
            dom.setGuestVcpus(cpus, 1, 0)
        except libvirt.libvirtError as e:
            raise self._agent_error(node, dom, e) from e


def _b64(data: str | None) -> str:
    return base64.b64decode(data).decode(errors="replace") if data else ""

