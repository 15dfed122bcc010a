"""Running a shell script on a node as root: a privileged node-debug pod (default), SSH or the guest agent.

SSH uses the OpenSSH client (`ssh -o BatchMode=yes [-F ssh_config] NODE SCRIPT`),
never a Python SSH library: the admin's ssh_config, keys, agent, known_hosts
and jump hosts apply as they do in their shell. An SSH session does not pass
through the kubelet, so a kubelet restart does not cut it.

The guest agent goes through libvirt (`guest-exec` + `guest-exec-status`, and
`setGuestVcpus` for onlining vCPUs); the domain is found by the node's
systemUUID, else its name, on the configured libvirt URIs. It needs
qemu-guest-agent in the guest and the virtio channel in the domain.

The debug pod (shared/reference/scale-up.md 5.2): `spec.nodeName`, `hostPID`,
a privileged container, `tolerations: [{operator: Exists}]`, `restartPolicy:
Never`, command `nsenter -t 1 -m -u -i -n -p -- sh -c SCRIPT`. We wait for it
to finish by watching it, read its log, then delete it. Logs pass through the
kubelet: a script that restarts the kubelet may lose the end of its log, and
its exit status only arrives once the kubelet is back, so a run-to-completion
pod with `systemctl restart --no-block` is what callers should send.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shlex
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Protocol

from console.kube.nodes_ops import _core, get_node_raw, watch_until

DEFAULT_IMAGE = "registry.lab/util-linux:2.38"
MANAGED_BY = {"app.kubernetes.io/managed-by": "console"}


class NodeAccessError(Exception):
    """The script could not be run (not configured, pod never started, timed out)."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None  # None: finished state never seen (e.g. the kubelet did not come back)
    output: str
    log_cut: bool = False  # the log stream ended early (kubelet restarted under it)
    stderr: str = ""  # kept apart by SSH and the guest agent (a debug pod's log mixes both into output)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class NodeAccess(Protocol):
    method: str

    def run(self, node: str, script: str, *, timeout: float = 60.0) -> ExecResult: ...


class DebugPodAccess:
    method = "debug-pod"

    def __init__(self, api_client: Any, *, namespace: str = "default", image: str = DEFAULT_IMAGE) -> None:
        self.api = api_client
        self.namespace = namespace
        self.image = image

    def pod_manifest(self, node: str, script: str, name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": dict(MANAGED_BY)},
            "spec": {
                "nodeName": node,
                "hostPID": True,
                "restartPolicy": "Never",
                "tolerations": [{"operator": "Exists"}],
                "containers": [
                    {
                        "name": "node-shell",
                        "image": self.image,
                        "securityContext": {"privileged": True},
                        "command": ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "sh", "-c", script],
                    }
                ],
            },
        }

    def run(self, node: str, script: str, *, timeout: float = 60.0) -> ExecResult:
        from kubernetes.client.exceptions import ApiException

        core = _core(self.api)
        name = f"console-node-{node}-{secrets.token_hex(3)}"[:63]
        try:
            core.create_namespaced_pod(self.namespace, self.pod_manifest(node, script, name))
        except ApiException as e:
            raise NodeAccessError(f"cannot create node-debug pod on {node}: {e.status} {e.reason}") from e
        try:
            def finished(pod: dict[str, Any] | None) -> bool:
                return pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")

            try:
                pod = watch_until(self.api, "pod", name, finished, timeout, namespace=self.namespace)
            except TimeoutError:
                pod = None
                output = self._logs(core, name)
                return ExecResult(None, output, log_cut=True)
            output = self._logs(core, name)
            code = None
            for st in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
                term = (st.get("state") or {}).get("terminated")
                if term:
                    code = int(term.get("exitCode", 1))
                    if term.get("reason") == "StartError":
                        raise NodeAccessError(f"node-debug pod on {node} did not start: {term.get('message', '')}")
            return ExecResult(code, output)
        finally:
            try:
                core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)
            except ApiException as e:
                if e.status != 404:
                    raise

    def _logs(self, core: Any, name: str) -> str:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return core.read_namespaced_pod_log(name, self.namespace)
        except (ApiException, HTTPError):
            return ""  # the stream was cut (kubelet restart) or the pod is gone


class SshAccess:
    """`ssh NODE SCRIPT` with the OpenSSH client; the remote login shell runs SCRIPT (as `sh -c` would)."""

    method = "ssh"

    def __init__(self, api_client: Any = None, *, ssh_config: str | None = None, user: str | None = None,
                 target: str = "name", connect_timeout: float = 10.0, ssh: str = "/usr/bin/ssh") -> None:
        self.api = api_client
        self.ssh_config = os.path.expanduser(ssh_config) if ssh_config else None
        self.user = user
        self.target = target
        self.connect_timeout = connect_timeout
        self.ssh = ssh

    def host(self, node: str) -> str:
        """What ssh is given for the node: its name, or its InternalIP (ssh_target: internal-ip)."""
        if self.target != "internal-ip":
            return node
        if self.api is None:
            raise NodeAccessError("ssh_target internal-ip needs the cluster to look up the node's address")
        addresses = (get_node_raw(self.api, node).get("status") or {}).get("addresses") or []
        for a in addresses:
            if a.get("type") == "InternalIP":
                return str(a["address"])
        raise NodeAccessError(f"node {node} has no InternalIP in status.addresses; set ssh_target: name")

    def argv(self, node: str, script: str) -> list[str]:
        argv = [self.ssh]
        if self.ssh_config:
            argv += ["-F", self.ssh_config]
        argv += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, int(self.connect_timeout))}",
                 "-o", "ServerAliveInterval=5", "-T"]
        if self.user:
            argv += ["-l", self.user]
        command = script if self.user in (None, "root") else f"sudo -n sh -c {shlex.quote(script)}"
        return [*argv, "--", self.host(node), command]

    def run(self, node: str, script: str, *, timeout: float = 60.0) -> ExecResult:
        if self.ssh_config and not os.path.exists(self.ssh_config):
            raise NodeAccessError(f"ssh_config {self.ssh_config} does not exist; fix ssh_config in the console "
                                  "config (or CONSOLE_SSH_CONFIG)")
        argv = self.argv(node, script)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except FileNotFoundError as e:
            raise NodeAccessError(f"{self.ssh} not found: install the OpenSSH client (openssh-client)") from e
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            return ExecResult(None, out, stderr=f"ssh to {node}: no exit status after {timeout:g}s")
        if proc.returncode == 255:
            problem = ssh_problem(proc.stderr, node, argv[-2], self.ssh_config)
            if problem:
                raise NodeAccessError(problem)
        return ExecResult(proc.returncode, proc.stdout, stderr=proc.stderr)


def ssh_problem(stderr: str, node: str, host: str, ssh_config: str | None) -> str | None:
    """A clear message for ssh's own failures (exit 255), or None when the remote command exited 255."""
    where = f"ssh {host}" + (f" (ssh_config {ssh_config})" if ssh_config else "")
    last = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr or "Host key verification failed" in stderr:
        if "No " in stderr and "host key is known" in stderr:
            return (f"{where}: the host key of {node} is not known and BatchMode forbids asking; "
                    f"connect once with `ssh {host}` and check the fingerprint, or set "
                    "StrictHostKeyChecking accept-new for it in the ssh_config")
        return (f"{where}: the host key of {node} does not match known_hosts (it may have been reinstalled, or "
                f"this is not {node}); check the fingerprint with the node's admin, then remove the old key with "
                f"`ssh-keygen -R {node}` (and -f KNOWN_HOSTS_FILE if your ssh_config sets UserKnownHostsFile)")
    if "Permission denied" in stderr:
        return (f"{where}: authentication failed ({last}); add the console's public key to root's "
                "~/.ssh/authorized_keys on the node, or point IdentityFile/ssh_user at a key and user it accepts")
    unreachable = ("Connection refused", "No route to host", "Connection timed out", "Could not resolve hostname",
                   "Connection closed", "Connection reset", "Network is unreachable", "kex_exchange_identification",
                   "Operation timed out")
    if any(u in stderr for u in unreachable):
        return (f"{where}: {node} is unreachable over SSH ({last}); check that the node is up and sshd listens, "
                "or choose node_access: debug-pod")
    if stderr.strip() and not stderr.strip().startswith(("sh:", "bash:")):
        return f"{where}: ssh failed: {last}"
    return None


# libvirt error codes (virErrorNumber)
VIR_ERR_ARGUMENT_UNSUPPORTED = 74
VIR_ERR_AGENT_UNRESPONSIVE = 86
VIR_ERR_NO_DOMAIN = 42
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
        self._conns: dict[str, Any] = {}

    def domain(self, node: str) -> Any:
        import libvirt

        if not self.uris:
            raise NodeAccessError("node access through the guest agent needs a libvirt URI: set libvirt_uris "
                                  "in the console config (or CONSOLE_LIBVIRT_URI)")
        raw = get_node_raw(self.api, node) if self.api is not None else {}
        uuid = ((raw.get("status") or {}).get("nodeInfo") or {}).get("systemUUID", "").lower()
        for uri in self.uris:
            if uri not in self._conns:
                libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
                try:
                    self._conns[uri] = libvirt.open(uri)
                except libvirt.libvirtError as e:
                    raise NodeAccessError(f"cannot connect to libvirt at {uri}: {e.get_error_message()}") from e
            for lookup, key in (("uuid", uuid), ("name", node)):
                if not key:
                    continue
                try:
                    conn = self._conns[uri]
                    return conn.lookupByUUIDString(key) if lookup == "uuid" else conn.lookupByName(key)
                except libvirt.libvirtError as e:
                    if e.get_error_code() != VIR_ERR_NO_DOMAIN:
                        raise NodeAccessError(f"libvirt at {uri}: {e.get_error_message()}") from e
        raise NodeAccessError(f"no libvirt domain for node {node} (systemUUID {uuid or '-'}) on "
                              f"{', '.join(self.uris)}")

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


def node_access(method: str, api_client: Any, settings: Any = None) -> NodeAccess:
    """The NodeAccess for Settings.node_access (SSH and guest-agent details from `settings`)."""
    if method == "debug-pod":
        return DebugPodAccess(api_client)
    if method == "ssh":
        return SshAccess(api_client, ssh_config=getattr(settings, "ssh_config", None),
                         user=getattr(settings, "ssh_user", None), target=getattr(settings, "ssh_target", "name"))
    if method == "guest-agent":
        from console.infra.libvirt import libvirt_uris

        return GuestAgentAccess(api_client, libvirt_uris(getattr(settings, "libvirt_uris", ())))
    raise NodeAccessError(f"unknown node access method {method!r}; use debug-pod, ssh or guest-agent")
