"""Running a shell script on a node as root: a privileged node-debug pod (default), SSH or the guest agent.

SSH uses the OpenSSH client (`ssh -o BatchMode=yes [-F ssh_config] NODE SCRIPT`),
never a Python SSH library: the admin's ssh_config, keys, agent, known_hosts
and jump hosts apply as they do in their shell. An SSH session does not pass
through the kubelet, so a kubelet restart does not cut it.

The guest agent (libvirt's qemuAgentCommand) lives in console/infra/guest_agent.py,
since console/infra owns every libvirt call; node_access() hands it out.

The debug pod (shared/reference/scale-up.md 5.2): `spec.nodeName`, `hostPID`,
a privileged container, `tolerations: [{operator: Exists}]` (plus the
configured extra ones), `restartPolicy: Never`, command `nsenter -t 1 -m -u -i
-n -p -- sh -c SCRIPT`, in `node_debug_namespace` (default `default`, as
`kubectl debug node/...`) from `node_debug_image` (default busybox, which has
nsenter, as k9s's node shell uses: internal/config/shell_pod.go
defaultDockerShellImage), with `image_pull_secrets`. We wait for it to finish
by watching it, read its log, then delete it. A pod that cannot start is
reported at once with the cluster's reason (the container's waiting reason and
message, e.g. ErrImagePull, and the pod's Warning events), and a refused create
quotes the API server (PodSecurity admission naming the namespace's enforce
level, RBAC naming verb and resource). Logs pass through the kubelet: a script
that restarts the kubelet may lose the end of its log, and its exit status only
arrives once the kubelet is back, so a run-to-completion pod with `systemctl
restart --no-block` is what callers should send.

Debug pods carry `app.kubernetes.io/managed-by=console` (the drain skips them
by it) and `app.kubernetes.io/component=node-debug`; before its first command
on a node, an access removes such pods left on that node by a killed run.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess
from typing import Any

from console.config import DEFAULT_NODE_DEBUG_IMAGE
from console.kube import rest
from console.kube.nodes_ops import POD, _raw, get_node_raw, watch_until
from console.kube.nodeshell import ExecResult, NodeAccess, NodeAccessError

__all__ = ["DebugPodAccess", "ExecResult", "NodeAccess", "NodeAccessError", "SshAccess", "node_access"]

DEFAULT_IMAGE = DEFAULT_NODE_DEBUG_IMAGE
MANAGED_BY = {"app.kubernetes.io/managed-by": "console"}
DEBUG_LABELS = {**MANAGED_BY, "app.kubernetes.io/component": "node-debug"}
DEBUG_SELECTOR = ",".join(f"{k}={v}" for k, v in DEBUG_LABELS.items())
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
# waiting reasons after which a container will not start without someone changing something
# (kubelet: pkg/kubelet/images/types.go, pkg/kubelet/kuberuntime/kuberuntime_container.go)
CANNOT_START = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                "CreateContainerConfigError", "CreateContainerError", "RunContainerError")
IMAGE_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")


def api_message(e: Any) -> str:
    """The API server's own message from an ApiException (its Status body), else HTTP status and reason."""
    try:
        body = json.loads(e.body or "")
    except (TypeError, ValueError):
        body = None
    msg = body.get("message") if isinstance(body, dict) else None
    return str(msg) if msg else f"{e.status} {e.reason}"


class DebugPodAccess:
    method = "debug-pod"

    def __init__(self, api_client: Any, *, namespace: str = "default", image: str = DEFAULT_IMAGE,
                 image_pull_secrets: tuple[str, ...] | list[str] = (),
                 tolerations: tuple[dict[str, Any], ...] | list[dict[str, Any]] = ()) -> None:
        self.api = api_client
        self.namespace = namespace
        self.image = image
        self.image_pull_secrets = list(image_pull_secrets)
        self.tolerations = [dict(t) for t in tolerations]
        self._prepared: set[str] = set()

    def pod_manifest(self, node: str, script: str, name: str) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "nodeName": node,
            "hostPID": True,
            "restartPolicy": "Never",
            "tolerations": [{"operator": "Exists"}, *self.tolerations],
            "containers": [
                {
                    "name": "node-shell",
                    "image": self.image,
                    "securityContext": {"privileged": True},
                    "command": ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "sh", "-c", script],
                }
            ],
        }
        if self.image_pull_secrets:
            spec["imagePullSecrets"] = [{"name": s} for s in self.image_pull_secrets]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": dict(DEBUG_LABELS)},
            "spec": spec,
        }

    def prepare(self, node: str) -> list[str]:
        """Delete this console's node-debug pods left on `node` (a killed run's); once per node and access."""
        from kubernetes.client.exceptions import ApiException

        if node in self._prepared:
            return []
        try:
            found = _raw(self.api, "/api/v1/namespaces/{namespace}/pods", {"namespace": self.namespace},
                         label_selector=DEBUG_SELECTOR,
                         field_selector=f"spec.nodeName={node}")
        except ApiException as e:
            raise self._refused(e, "list", "pods") from e
        removed = []
        for pod in found.get("items") or []:
            name = pod["metadata"]["name"]
            try:
                self._delete(name)
            except ApiException as e:
                if e.status != 404:
                    raise self._refused(e, "delete", "pods") from e
            removed.append(name)
        self._prepared.add(node)
        if not removed:
            return []
        return [f"removed {len(removed)} node-debug pod(s) left on {node} by an earlier run: "
                f"{', '.join(f'{self.namespace}/{n}' for n in removed)}"]

    def _refused(self, e: Any, verb: str, resource: str) -> NodeAccessError:
        """A clear message for an API refusal of one of the debug pod's calls, quoting the server."""
        msg = api_message(e)
        where = f"namespace {self.namespace}"
        if e.status == 403 and "violates PodSecurity" in msg:
            level = self._enforce_level()
            said = f" enforces PodSecurity level {level!r} ({ENFORCE_LABEL}={level})" if level else ""
            return NodeAccessError(
                f"the node-debug pod was refused by PodSecurity admission: {msg}. The {where}{said}; a node-debug "
                "pod is privileged and uses the host's PID namespace, which only the 'privileged' level allows: "
                f"set node_debug_namespace (--node-debug-namespace, CONSOLE_NODE_DEBUG_NAMESPACE) to a namespace "
                f"labelled {ENFORCE_LABEL}=privileged, or choose node_access: ssh or guest-agent")
        if e.status in (401, 403):
            return NodeAccessError(
                f"the cluster refused to {verb} {resource} in {where}: {msg}. The node-debug pod needs RBAC to "
                f"create, get, list, watch and delete pods and get pods/log in {where} (ask a cluster admin for a "
                "Role and RoleBinding), or choose node_access: ssh or guest-agent")
        return NodeAccessError(f"cannot {verb} {resource} for the node-debug pod in {where}: {msg}")

    def _enforce_level(self) -> str | None:
        from kubernetes.client.exceptions import ApiException

        try:
            ns = _raw(self.api, "/api/v1/namespaces/{name}", {"name": self.namespace})
        except ApiException:
            return None  # may not be allowed to read namespaces; the server's message still says why
        return ((ns.get("metadata") or {}).get("labels") or {}).get(ENFORCE_LABEL)

    def _cannot_start(self, node: str, name: str, pod: dict[str, Any]) -> NodeAccessError | None:
        """Why the pod's container will never start, from its status and Warning events (None: it may yet)."""
        for st in (pod.get("status") or {}).get("containerStatuses") or []:
            waiting = (st.get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason", "")
            if reason not in CANNOT_START:
                continue
            image = st.get("image") or self.image
            events = self._warnings(name)
            said = f"{reason}: {waiting.get('message', '')}".rstrip(": ")
            if reason in IMAGE_REASONS:
                return NodeAccessError(
                    f"the node-debug pod on {node} cannot start: image {image!r} cannot be pulled ({said})"
                    + (f"; events: {events}" if events else "")
                    + ". Set node_debug_image (--node-debug-image, CONSOLE_NODE_DEBUG_IMAGE) to an image with "
                    "nsenter that the node can pull (e.g. a copy of busybox in your registry), and "
                    "image_pull_secrets if that registry needs credentials")
            return NodeAccessError(f"the node-debug pod on {node} cannot start ({said})"
                                   + (f"; events: {events}" if events else ""))
        return None

    def _warnings(self, name: str) -> str:
        from kubernetes.client.exceptions import ApiException

        try:
            data = _raw(self.api, "/api/v1/namespaces/{namespace}/events", {"namespace": self.namespace},
                        field_selector=f"involvedObject.name={name},involvedObject.kind=Pod,type=Warning")
        except ApiException:
            return ""
        seen: list[str] = []
        for ev in data.get("items") or []:
            text = f"{ev.get('reason', '')}: {ev.get('message', '')}"
            if text not in seen:
                seen.append(text)
        return "; ".join(seen)[-600:]

    def run(self, node: str, script: str, *, timeout: float = 60.0) -> ExecResult:
        from kubernetes.client.exceptions import ApiException

        name = f"console-node-{node}-{secrets.token_hex(3)}"[:63]
        try:
            rest.send(self.api, "POST", "/api/v1/namespaces/{namespace}/pods", self.pod_manifest(node, script, name),
                      params={"namespace": self.namespace})
        except ApiException as e:
            raise self._refused(e, "create", "pods") from e
        try:
            problem: list[NodeAccessError] = []

            def finished(pod: dict[str, Any] | None) -> bool:
                if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    return True
                why = self._cannot_start(node, name, pod)
                if why is not None:
                    problem.append(why)
                return why is not None

            try:
                pod = watch_until(self.api, "pod", name, finished, timeout, namespace=self.namespace)
            except TimeoutError:
                return ExecResult(None, self._logs(name), log_cut=True,
                                  stderr=f"the node-debug pod {self.namespace}/{name} did not finish within "
                                         f"{timeout:g}s (is {node} Ready, its kubelet running?)")
            except ApiException as e:
                raise self._refused(e, "watch", "pods") from e
            if problem:
                raise problem[0]
            output = self._logs(name)
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
                self._delete(name)
            except ApiException as e:
                if e.status != 404:
                    raise

    def _delete(self, name: str) -> None:
        rest.send(self.api, "DELETE", POD, None, params={"namespace": self.namespace, "name": name},
                  grace_period_seconds=0)

    def _logs(self, name: str) -> str:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            # Accept: application/json, as the generated read_namespaced_pod_log sends it: the server answers
            # text/plain either way, and 406 to an Accept of text/plain alone
            response = rest.request(self.api, "GET", POD + "/log", params={"namespace": self.namespace, "name": name})
            return bytes(response.data).decode("utf-8", "replace")
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

    def prepare(self, node: str) -> list[str]:
        return []  # an SSH session leaves nothing behind on the node

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


def node_access(method: str, api_client: Any, settings: Any = None) -> NodeAccess:
    """The NodeAccess for Settings.node_access (debug-pod, SSH and guest-agent details from `settings`)."""
    if method == "debug-pod":
        return DebugPodAccess(api_client, namespace=getattr(settings, "node_debug_namespace", "default"),
                              image=getattr(settings, "node_debug_image", DEFAULT_IMAGE),
                              image_pull_secrets=getattr(settings, "image_pull_secrets", ()),
                              tolerations=getattr(settings, "node_debug_tolerations", ()))
    if method == "ssh":
        return SshAccess(api_client, ssh_config=getattr(settings, "ssh_config", None),
                         user=getattr(settings, "ssh_user", None), target=getattr(settings, "ssh_target", "name"))
    if method == "guest-agent":
        from console.infra.guest_agent import GuestAgentAccess
        from console.infra.libvirt import libvirt_uris

        return GuestAgentAccess(api_client, libvirt_uris(getattr(settings, "libvirt_uris", ())))
    raise NodeAccessError(f"unknown node access method {method!r}; use debug-pod, ssh or guest-agent")
