"""Exec credential plugins (kubelogin, aws eks get-token, gke-gcloud-auth-plugin), run as client-go runs them.

k8s.io/client-go plugin/pkg/client/auth/exec/exec.go: the plugin gets KUBERNETES_EXEC_INFO (an ExecCredential
with spec.interactive), prints an ExecCredential (client.authentication.k8s.io/v1 or v1beta1) whose status has
a token (or a client certificate) and maybe expirationTimestamp; the credential is reused until it expires.
`interactiveMode`: Never (no stdin), IfAvailable (stdin when it is a terminal; v1beta1's default), Always (a
terminal is required: "exec plugin cannot support interactive mode: standard input is not a terminal").
kubernetes-python's ExecProvider reads the kubeconfig stanza (command, args, env, provideClusterInfo) and is
used for that; its run() ignores interactiveMode, decides interactivity from stdout and swallows failures, so
the run is done here. A plugin that needs the terminal never runs under the TUI: the TUI registers a
`terminal` runner (it suspends the App) and interactive runs go through it.

client-go waits for a plugin as long as it takes (kubectl hangs with a plugin that hangs); it decided against
killing one on a request's timeout because a slow interactive login would be cut (kubernetes/kubernetes#108849).
So a run without the terminal — nobody can answer a prompt there — is bounded by `timeout` (setting
exec_plugin_timeout): the plugin and everything it started (its own session) are stopped and the error names
the plugin and what to do. A run with the terminal is not cut: past `timeout` one line on stderr says which
plugin is still running and that Ctrl-C stops it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from console.kube.kubeconfig import KubeConfigError

T = TypeVar("T")
Runner = Callable[[Callable[[], T]], T]

_terminal_lock = threading.Lock()
_terminal: list[Runner[Any]] = []  # the runner of whoever holds the terminal now (the TUI), innermost last


EXEC_PLUGIN_TIMEOUT_S = 60.0  # the default of the setting exec_plugin_timeout
STOP_GRACE_S = 1.0  # SIGTERM, then SIGKILL: a plugin may hold its token cache's lock


class ExecPluginError(KubeConfigError):
    """The exec plugin could not give a credential; the message says which plugin and what to do."""


@contextmanager
def terminal_owner(runner: Runner[Any]) -> Iterator[None]:
    """While the TUI holds the terminal, interactive plugins run through `runner(fn)` (App.suspend)."""
    with _terminal_lock:
        _terminal.append(runner)
    try:
        yield
    finally:
        with _terminal_lock:
            _terminal.remove(runner)


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # closed
        return False


@dataclass(frozen=True)
class ExecResult:
    token: str | None
    cert_data: str | None
    key_data: str | None
    expires: float | None  # time.time(); None: valid until the server says 401


class ExecPlugin:
    """One kubeconfig user's exec stanza; `run()` executes it once."""

    def __init__(self, exec_config: Any, base_path: str, cluster: Any, user: str, *,
                 timeout: float = EXEC_PLUGIN_TIMEOUT_S) -> None:
        from kubernetes.config.config_exception import ConfigException
        from kubernetes.config.exec_provider import ExecProvider

        try:
            self._provider = ExecProvider(exec_config, base_path, cluster)
        except ConfigException as e:
            raise ExecPluginError(f"user {user}: {e}") from e
        self.user = user
        self.command = self._provider.args[0]
        self.timeout = timeout
        mode = exec_config.safe_get("interactiveMode") or "IfAvailable"
        if mode not in ("Never", "IfAvailable", "Always"):
            raise ExecPluginError(f"user {user}: exec interactiveMode {mode!r} is not Never, IfAvailable or Always")
        self.mode = mode

    def needs_terminal(self) -> bool:
        """Whether a run would read the terminal (client-go: Always, or IfAvailable with stdin a terminal)."""
        return self.mode == "Always" or (self.mode == "IfAvailable" and _stdin_is_terminal())

    def run(self) -> ExecResult:
        interactive = self.needs_terminal()
        if interactive and not _stdin_is_terminal():
            raise ExecPluginError(
                f"the exec plugin {self.command} of user {self.user} needs a terminal (interactiveMode: Always) and "
                "standard input is not one: run the console (or `kubectl get nodes` with this context) in a "
                "terminal once, or use a context whose plugin is not interactive")
        if not interactive:
            return self._run(False)
        with _terminal_lock:
            runner = _terminal[-1] if _terminal else None
        return runner(lambda: self._run(True)) if runner else self._run(True)

    def _run(self, interactive: bool) -> ExecResult:
        from kubernetes.config.dateutil import parse_rfc3339

        p = self._provider
        info: dict[str, Any] = {"apiVersion": p.api_version, "kind": "ExecCredential",
                                "spec": {"interactive": interactive}}
        if p.cluster is not None:  # provideClusterInfo: the cluster, with its exec extension as `config`
            cluster = dict(p.cluster.value)
            ext = next((e.get("extension") for e in cluster.get("extensions") or []
                        if isinstance(e, dict) and e.get("name") == "client.authentication.k8s.io/exec"), None)
            if ext is not None:
                cluster["config"] = ext
            info["spec"]["cluster"] = cluster
        env = {**p.env, "KUBERNETES_EXEC_INFO": json.dumps(info)}
        stdout, stderr, returncode = self._execute(p.args, env, p.cwd, interactive)
        if returncode != 0:
            err = (stderr or "").strip().splitlines()[-1:] if stderr else []
            raise ExecPluginError(f"the exec plugin {self.command} of user {self.user} exited {returncode}"
                                  + (f": {err[0][:300]}" if err else "") + "; run it by hand to see why "
                                  "(a login may be needed)")
        try:
            data = json.loads(stdout)
            status = data["status"]
            if data.get("kind") != "ExecCredential" or data.get("apiVersion") != p.api_version:
                raise ValueError(f"expected an ExecCredential of {p.api_version}, got {data.get('kind')} of "
                                 f"{data.get('apiVersion')}")
            expiry = status.get("expirationTimestamp")
            expires = parse_rfc3339(expiry).timestamp() if expiry else None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ExecPluginError(f"the exec plugin {self.command} of user {self.user} printed no valid "
                                  f"ExecCredential: {str(e)[:200]}") from e
        token, cert, key = status.get("token"), status.get("clientCertificateData"), status.get("clientKeyData")
        if not token and not (cert and key):
            raise ExecPluginError(f"the exec plugin {self.command} of user {self.user} returned neither a token "
                                  "nor a client certificate and key")
        return ExecResult(token or None, cert, key, expires)

    def _execute(self, argv: list[str], env: dict[str, str], cwd: str | None,
                 interactive: bool) -> tuple[str, str | None, int]:
        """Run the plugin: (stdout, stderr or None when it went to the terminal, exit status). Without the
        terminal it runs in a session of its own, stopped whole after `timeout`; with it, in ours (it must read
        the terminal), never cut, and said to be still running after `timeout`."""
        try:
            proc = subprocess.Popen(argv, env=env, cwd=cwd, text=True, stdout=subprocess.PIPE,
                                    stdin=None if interactive else subprocess.DEVNULL,
                                    stderr=None if interactive else subprocess.PIPE,
                                    start_new_session=not interactive)
        except OSError as e:
            raise ExecPluginError(f"cannot run the exec plugin {self.command} of user {self.user}: "
                                  f"{e.strerror or e}; check its command in the kubeconfig and PATH") from e
        try:
            try:
                out, err = proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                if not interactive:
                    raise ExecPluginError(
                        f"the exec plugin {self.command} of user {self.user} gave no credential within "
                        f"{self.timeout:g}s and was stopped: run it by hand (the command and args of that user's "
                        "exec in the kubeconfig) to see what it waits for — a login, a prompt, the network — or "
                        "raise the setting exec_plugin_timeout") from None
                print(f"console: the exec plugin {self.command} of user {self.user} is still running after "
                      f"{self.timeout:g}s; if it is not waiting for you, Ctrl-C stops it", file=sys.stderr,
                      flush=True)
                out, err = proc.communicate()
        finally:
            if proc.poll() is None:  # timed out, or Ctrl-C: nothing of the plugin is left running
                _stop(proc, group=not interactive)
        return out, err, proc.returncode


def _stop(proc: subprocess.Popen[str], *, group: bool) -> None:
    """SIGTERM, then SIGKILL after STOP_GRACE_S, to the plugin (and its session: whatever it started)."""
    def send(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(proc.pid, sig)  # a session leader's pid is its process group's id
            else:
                proc.send_signal(sig)

    send(signal.SIGTERM)
    try:
        proc.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait()
    if group:  # what it started may ignore SIGTERM and outlive it
        send(signal.SIGKILL)
    for pipe in (proc.stdout, proc.stderr):  # not read again: a child it left could hold them open
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
