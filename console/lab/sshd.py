"""The lab nodes' SSH daemons (asyncssh): one listener per node on 127.0.0.1, port 0.

Real clusters reach a node at its InternalIP on port 22; every lab node is
127.0.0.1, so each gets its own ephemeral port, and the state directory gets
an OpenSSH client config that maps `Host <node> <InternalIP>` to that port.

Like sshd on the nodes: a host key per node (generated per lab), public-key
auth only, user root; the client key pair is written to the state dir. An
exec request runs its command the way sshd does (`sh -c COMMAND`), for real
in the node's sandbox (console/lab/sandbox.py), with stdout, stderr and the
exit status. A session without a command reads its script from stdin (or, with a pty, is a
small line-by-line shell). SSH does not go through the kubelet, so
`systemctl restart kubelet` does not cut the session (a debug pod's log
stream is cut); a node whose guest is off refuses the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

log = logging.getLogger(__name__)

USER = "root"
PROMPT = "root@{node}:~# "


@dataclass(frozen=True)
class NodeListener:
    node: str
    port: int
    internal_ip: str
    host_key_public: str  # "ssh-ed25519 AAAA..."


class LabSshd:
    """SSH servers for the lab's VM nodes; `start()`/`stop()` run on the lab's asyncio loop."""

    def __init__(self, node_exec: Any, nodes: dict[str, str]) -> None:
        """`nodes`: node name -> InternalIP (only written into ssh_config, the listeners are on loopback)."""
        self.node_exec = node_exec
        self.nodes = dict(nodes)
        self.client_key = asyncssh.generate_private_key("ssh-ed25519", comment="console-lab")
        self._host_keys = {n: asyncssh.generate_private_key("ssh-ed25519", comment=f"root@{n}") for n in nodes}
        self._authorized = asyncssh.import_authorized_keys(
            self.client_key.export_public_key("openssh").decode())
        self._acceptors: dict[str, Any] = {}
        self.listeners: dict[str, NodeListener] = {}

    async def start(self) -> None:
        for node, ip in self.nodes.items():
            acceptor = await asyncssh.create_server(
                lambda node=node: _NodeServer(self, node), "127.0.0.1", 0,
                server_host_keys=[self._host_keys[node]],
                process_factory=lambda proc, node=node: self._session(node, proc),
                password_auth=False, kbdint_auth=False, x509_trusted_certs=None,
                allow_scp=False, agent_forwarding=False, sftp_factory=None,
            )
            self._acceptors[node] = acceptor
            pub = self._host_keys[node].export_public_key("openssh").decode().split()
            self.listeners[node] = NodeListener(node, acceptor.get_port(), ip, f"{pub[0]} {pub[1]}")

    async def stop(self) -> None:
        for acceptor in self._acceptors.values():
            acceptor.close()
        for acceptor in self._acceptors.values():
            await acceptor.wait_closed()
        self._acceptors.clear()

    # -- files for clients -----------------------------------------------------------------------
    def write_client_files(self, root: Path) -> Path:
        """id_ed25519(.pub), an empty known_hosts and ssh_config in `root`; returns the ssh_config path."""
        key = root / "id_ed25519"
        key.unlink(missing_ok=True)
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(self.client_key.export_private_key("openssh"))
        (root / "id_ed25519.pub").write_bytes(self.client_key.export_public_key("openssh"))
        known = root / "known_hosts"
        known.write_text("")  # StrictHostKeyChecking accept-new fills it on first contact
        os.chmod(known, 0o600)
        config = root / "ssh_config"
        config.write_text(self.ssh_config(root))
        os.chmod(config, 0o600)  # OpenSSH refuses a config others may write
        return config

    def ssh_config(self, root: Path) -> str:
        blocks = ["# The lab's nodes: ssh -F " + shlex.quote(str(root / "ssh_config")) + " <node> <command>\n"]
        for node, lst in self.listeners.items():
            blocks.append(
                f"Host {node} {lst.internal_ip}\n"
                f"    HostName 127.0.0.1\n"
                f"    Port {lst.port}\n"
                f"    User {USER}\n"
                f"    HostKeyAlias {node}\n"  # known_hosts names the node, not 127.0.0.1:<port>
                f"    IdentityFile {root / 'id_ed25519'}\n"
                f"    IdentitiesOnly yes\n"
                f"    StrictHostKeyChecking accept-new\n"
                f"    UserKnownHostsFile {root / 'known_hosts'}\n"
                f"    LogLevel ERROR\n"
            )
        return "\n".join(blocks)

    # -- sessions --------------------------------------------------------------------------------
    def guest_running(self, node: str) -> bool:
        guest = self.node_exec.guests.get(node)
        return guest is not None and guest.running

    async def _session(self, node: str, process: Any) -> None:
        try:
            if process.command is not None:
                code = await self._run(node, process, process.command, "")
            elif process.get_terminal_type():
                code = await self._interactive(node, process)
            else:
                code = await self._run(node, process, await process.stdin.read(), "")
        except Exception:  # a broken session must not take the daemon down; the client sees status 255
            log.exception("lab sshd: session on %s failed", node)
            code = 255
        process.exit(code)

    async def _interactive(self, node: str, process: Any) -> int:
        code = 0
        process.stdout.write(f"Welcome to {node} (lab)\n")
        while True:
            process.stdout.write(PROMPT.format(node=node))
            line = await process.stdin.readline()
            if not line or line.strip() in ("exit", "logout"):
                return code
            if line.strip():
                code = await self._run(node, process, line, "")

    async def _run(self, node: str, process: Any, command: str, stdin: str) -> int:
        loop = asyncio.get_running_loop()

        def writer(stream: Any) -> Callable[[str], None]:
            def write(text: str) -> None:
                loop.call_soon_threadsafe(_safe_write, stream, text)
            return write

        return await loop.run_in_executor(
            None, self._shell, node, command, stdin, writer(process.stdout), writer(process.stderr))

    def _shell(self, node: str, command: str, stdin: str, out: Callable[[str], None],
               err: Callable[[str], None]) -> int:
        from console.lab.sandbox import SandboxError

        if not self.guest_running(node):
            err("Connection to the node lost (the guest is off)\n")
            return 255
        # no on_kubelet_restart: SSH does not pass through the kubelet, nothing is cut
        try:
            res = self.node_exec.run(node, ["sh", "-c", command], stdin=stdin, stdout=out, stderr=err, cwd="/root")
        except SandboxError as e:
            err(f"{e}\n")
            return 255
        return 255 if res.code is None else res.code


def _safe_write(stream: Any, text: str) -> None:
    # the client may have gone away; the command still ran, as on a real node
    with contextlib.suppress(OSError, asyncssh.Error):
        stream.write(text)


class _NodeServer(asyncssh.SSHServer):
    """Per connection: refuse when the guest is off, public-key auth for root only."""

    def __init__(self, sshd: LabSshd, node: str) -> None:
        self.sshd = sshd
        self.node = node
        self.conn: Any = None

    def connection_made(self, conn: Any) -> None:
        self.conn = conn
        if not self.sshd.guest_running(self.node):
            conn.abort()  # the VM is off: nothing answers at its address

    def begin_auth(self, username: str) -> bool:
        if username == USER:
            self.conn.set_authorized_keys(self.sshd._authorized)
        return True

    def public_key_auth_supported(self) -> bool:
        return True  # the only method offered, for every user (sshd says "Permission denied (publickey)")

    def validate_public_key(self, username: str, key: Any) -> bool:
        return False  # reached only for users other than root: no authorized_keys for them
