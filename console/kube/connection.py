"""Connecting to a cluster as kubectl does: the merged kubeconfig (kubeconfig.py) or, in a pod, the service
account; credentials kept current for a session of hours.

kubernetes-python's KubeConfigLoader reads the cluster, TLS, client certificates (data and file), tokens and
proxy-url (socks5 through urllib3.contrib.socks, which needs PySocks); exec plugins run through execauth.py.
The bearer token is refreshed before its expirationTimestamp (exec) or re-read every minute (token files,
the rotating service-account token), and a 401 reloads the credentials and retries the request once — as
client-go's exec round tripper refreshes on 401 — before the 401 reaches the caller as a fault.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.kube.execauth import EXEC_PLUGIN_TIMEOUT_S
from console.kube.kubeconfig import (
    KubeConfigError,
    candidate_files,
    check_named_files,
    load,
    not_a_kubeconfig,
    shape_errors,
)

__all__ = ["KubeConfigError", "KubeTarget", "connect", "connect_for", "contexts", "default_kubeconfig",
           "require_context"]

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_FILE_PERIOD = 60.0  # client-go re-reads token files (and kubernetes-python the in-cluster token) each minute


@dataclass(frozen=True)
class KubeTarget:
    kubeconfig: str  # --kubeconfig as given, "" for $KUBECONFIG / ~/.kube/config (pass it back as is)
    context: str
    server: str
    files: tuple[str, ...] = ()  # the kubeconfig files read, in precedence order
    user: str = ""


def default_kubeconfig() -> str:
    """The kubeconfig files kubectl reads without --kubeconfig, os.pathsep-joined (for messages)."""
    return os.pathsep.join(candidate_files())


def contexts(kubeconfig: str | None = None) -> tuple[list[str], str]:
    """Context names of the merged kubeconfig and the current one."""
    merged = load(kubeconfig or None)
    if merged is None:
        if _in_cluster_env():
            return [], ""
        raise KubeConfigError(f"no kubeconfig at {default_kubeconfig()}. Set KUBECONFIG or pass --kubeconfig.")
    return merged.context_names(), merged.current_context


class Credentials:
    """The Authorization header of one connection, fetched again when it is about to expire, or on demand
    after a 401. `fetch()` -> (header or None, expiry as time.time() or None). Thread-safe: the caches' threads
    share it and a plugin runs once per refresh."""

    def __init__(self, user: str, fetch: Callable[[], tuple[str | None, float | None]], header: str | None,
                 expires: float | None) -> None:
        self.user = user
        self._fetch = fetch
        self._lock = threading.Lock()
        self._set(header, expires)

    def _set(self, header: str | None, expires: float | None) -> None:
        now = time.time()
        self._header = header
        self._expires = expires
        # refresh a little before the expiry (a fifth of the lifetime, at most a minute): the request is not
        # sent with a token that dies on the way
        self._refresh_at = None if expires is None else expires - min(60.0, max(0.0, expires - now) / 5)

    def header(self, *, force: bool = False) -> str | None:
        with self._lock:
            now = time.time()
            if force or (self._refresh_at is not None and now >= self._refresh_at):
                try:
                    self._set(*self._fetch())
                except KubeConfigError:
                    if force or self._expires is None or now >= self._expires:
                        raise
                    self._refresh_at = now + 1.0  # the old token still works: use it, try again shortly
            return self._header

    def apply(self, configuration: Any) -> None:
        """The kubernetes client's refresh_api_key_hook: called before every request."""
        header = self.header()
        if header:
            configuration.api_key["BearerToken"] = header


@functools.cache
def _api_client_class() -> type:
    from kubernetes.client import ApiClient

    class ReloadingApiClient(ApiClient):
        """An ApiClient that, on a 401, reloads the credentials and sends the request once more."""

        credentials: Credentials | None = None

        def call_api(self, method: str, url: str, header_params: dict[str, Any] | None = None, body: Any = None,
                     post_params: Any = None, _request_timeout: Any = None) -> Any:
            response = super().call_api(method, url, header_params, body, post_params, _request_timeout)
            if response.status != 401 or self.credentials is None:
                return response
            response.read()  # release the connection
            header = self.credentials.header(force=True)  # an ExecPluginError says why it cannot
            if header:
                header_params = {**(header_params or {}), "authorization": header}
            return super().call_api(method, url, header_params, body, post_params, _request_timeout)

    return ReloadingApiClient


def connect(kubeconfig: str | None = None, context: str | None = None, *,
            exec_timeout: float = EXEC_PLUGIN_TIMEOUT_S) -> tuple[Any, KubeTarget]:
    """An ApiClient for the context (default: current) and what it points at. `exec_timeout`: how long an exec
    plugin may run without the terminal (the setting exec_plugin_timeout; console/kube/execauth.py)."""
    from kubernetes.client import Configuration

    merged = load(kubeconfig or None)
    configuration = type.__call__(Configuration)
    if merged is None:
        if not _in_cluster_env():
            raise KubeConfigError(f"no kubeconfig at {default_kubeconfig()}. Set KUBECONFIG or pass --kubeconfig.")
        credentials = _in_cluster(configuration)
        target = KubeTarget("", "", configuration.host, (), "serviceaccount")
    else:
        name = context or merged.current_context
        if not name:
            raise KubeConfigError(f"kubeconfig {merged.display} sets no current-context: pass --context "
                                  f"(one of: {', '.join(merged.context_names()) or 'none'})")
        _require_context(merged, name)
        check_named_files(merged, name)  # before the client opens them: a FIFO there would block it for ever
        credentials = _from_kubeconfig(merged, name, configuration, exec_timeout)
        target = KubeTarget(kubeconfig or "", name, configuration.host, merged.files, credentials.user)
    client = _api_client_class()(configuration=configuration)
    client.credentials = credentials
    return client, target


def connect_for(settings: Any) -> tuple[Any, KubeTarget]:
    """connect() as the settings say: their kubeconfig, context and exec_plugin_timeout."""
    return connect(settings.kubeconfig, settings.context, exec_timeout=settings.exec_plugin_timeout)


def require_context(kubeconfig: str | None, name: str) -> None:
    """Raise KubeConfigError unless the merged kubeconfig has context `name` (before a switch says anything)."""
    merged = load(kubeconfig or None)
    if merged is not None:
        _require_context(merged, name)


def _require_context(merged: Any, name: str) -> None:
    # else the library's "Invalid kube-config file. Expected object with name … in …/contexts list"
    # (kubectl: "context was not found for specified context"): name the file(s) and the contexts there are
    if name not in merged.context_names():
        raise KubeConfigError(f'no context "{name}" in {merged.display}; contexts: '
                              f"{', '.join(merged.context_names()) or 'none'}")


def _from_kubeconfig(merged: Any, name: str, configuration: Any, exec_timeout: float) -> Credentials:
    from kubernetes import config
    from kubernetes.config.kube_config import KubeConfigLoader

    from console.kube.execauth import ExecPlugin, ExecPluginError

    class Loader(KubeConfigLoader):
        plugin: ExecPlugin | None = None
        expires: float | None = None

        def _load_from_exec_plugin(self) -> bool | None:
            cfg: Any = self._user  # set by the loader before it asks for credentials (Optional in its hints)
            if "exec" not in cfg:
                return None
            current: Any = self._current_context
            user = str(current["context"].safe_get("user") or "")
            self.plugin = ExecPlugin(cfg["exec"], self._get_base_path(cfg.path), self._cluster, user,
                                     timeout=exec_timeout)
            result = self.plugin.run()
            self.expires = result.expires
            if result.token:
                self.token = f"Bearer {result.token}"
            else:  # a client certificate: written to temporary files as upstream does
                from kubernetes.config.kube_config import FileOrData

                status = {"clientCertificateData": result.cert_data, "clientKeyData": result.key_data}
                base = self._get_base_path(cfg.path)
                self.cert_file = FileOrData(status, None, data_key_name="clientCertificateData",
                                            file_base_path=base, base64_file_content=False).as_file()
                self.key_file = FileOrData(status, None, data_key_name="clientKeyData",
                                           file_base_path=base, base64_file_content=False).as_file()
            return True

    where = merged.display
    try:
        loader = Loader(config_dict=merged.config, active_context=name, config_base_path=None)
        loader.load_and_set(configuration)
    except ExecPluginError:
        raise
    except config.ConfigException as e:
        raise KubeConfigError(f"kubeconfig {where}: {e}") from e
    except OSError as e:
        raise KubeConfigError(f"cannot read a file named in kubeconfig {where}: {e.strerror or e} "
                              f"({getattr(e, 'filename', '') or ''})") from e
    except shape_errors() as e:
        raise not_a_kubeconfig(where, e) from e
    current: Any = loader._current_context  # loaded: not None
    user = str(current["context"].safe_get("user") or "")

    def fetch() -> tuple[str | None, float | None]:
        if loader.plugin is not None:
            result = loader.plugin.run()
            return (f"Bearer {result.token}" if result.token else None), result.expires
        if loader._user is not None and loader._load_user_token():  # token or tokenFile, read again
            return loader.token, time.time() + TOKEN_FILE_PERIOD
        return getattr(loader, "token", None), None

    header = getattr(loader, "token", None)
    if loader.plugin is not None:
        expires = loader.expires
    elif loader._user is not None and "tokenFile" in loader._user:
        expires = time.time() + TOKEN_FILE_PERIOD
    else:
        expires = None
    credentials = Credentials(user, fetch, header, expires)
    configuration.refresh_api_key_hook = credentials.apply
    return credentials


def _in_cluster_env() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT"))


def _in_cluster(configuration: Any, root: Path = SERVICE_ACCOUNT) -> Credentials:
    """The pod's service account (kubernetes-python incluster_config.py); the token file rotates (bound
    service-account tokens live an hour) and is re-read each minute and after a 401."""
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    loader = InClusterConfigLoader(token_filename=str(root / "token"), cert_filename=str(root / "ca.crt"),
                                   try_refresh_token=False)
    try:
        loader.load_and_set(configuration)
    except (ConfigException, OSError) as e:
        raise KubeConfigError(f"in-cluster config (KUBERNETES_SERVICE_HOST is set, no kubeconfig): {e}; mount "
                              f"the service account token at {root} or set KUBECONFIG") from e

    def fetch() -> tuple[str | None, float | None]:
        loader._read_token_file()
        return loader.token, time.time() + TOKEN_FILE_PERIOD

    credentials = Credentials("serviceaccount", fetch, loader.token, time.time() + TOKEN_FILE_PERIOD)
    configuration.refresh_api_key_hook = credentials.apply
    return credentials
