"""Running a shell script on a node as root: a privileged node-debug pod (default), SSH or the guest agent.

The debug pod (shared/reference/scale-up.md 5.2): `spec.nodeName`, `hostPID`,
a privileged container, `tolerations: [{operator: Exists}]`, `restartPolicy:
Never`, command `nsenter -t 1 -m -u -i -n -p -- sh -c SCRIPT`. We wait for it
to finish by watching it, read its log, then delete it. Logs pass through the
kubelet: a script that restarts the kubelet may lose the end of its log, and
its exit status only arrives once the kubelet is back, so a run-to-completion
pod with `systemctl restart --no-block` is what callers should send.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Protocol

from console.kube.nodes_ops import _core, watch_until

DEFAULT_IMAGE = "registry.lab/util-linux:2.38"
MANAGED_BY = {"app.kubernetes.io/managed-by": "console"}


class NodeAccessError(Exception):
    """The script could not be run (not configured, pod never started, timed out)."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None  # None: finished state never seen (e.g. the kubelet did not come back)
    output: str
    log_cut: bool = False  # the log stream ended early (kubelet restarted under it)

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
    method = "ssh"

    def run(self, node: str, script: str, *, timeout: float = 60.0) -> ExecResult:
        raise NodeAccessError(
            "node access over SSH is not configured in this version; set node_access: debug-pod in "
            "$XDG_CONFIG_HOME/console/config.yaml (or CONSOLE_NODE_ACCESS=debug-pod)"
        )


class GuestAgentAccess:
    method = "guest-agent"

    def run(self, node: str, script: str, *, timeout: float = 60.0) -> ExecResult:
        raise NodeAccessError(
            "node access through the qemu guest agent is not configured in this version (it can only toggle "
            "vCPUs, not restart the kubelet); set node_access: debug-pod"
        )


def node_access(method: str, api_client: Any) -> NodeAccess:
    """The NodeAccess for Settings.node_access."""
    if method == "debug-pod":
        return DebugPodAccess(api_client)
    if method == "ssh":
        return SshAccess()
    if method == "guest-agent":
        return GuestAgentAccess()
    raise NodeAccessError(f"unknown node access method {method!r}; use debug-pod, ssh or guest-agent")
