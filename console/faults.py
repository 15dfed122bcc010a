"""Ordinary faults of the backends, classified: what failed, why, what to check, and the exit code.

`classify(exc, where)` walks the exception and its causes (`raise X from e`, urllib3's MaxRetryError.reason)
for an error of a client library the console uses — kubernetes/urllib3/ssl, keystoneauth1/openstacksdk,
libvirt, yaml, the kubeconfig loader, the settings file — and returns one `Fault`, or None for anything
else (a bug: the caller's last-resort handler says so). Headless: no textual/rich.

Exit codes (README "Exit codes"): 6 a backend could not be used (unreachable, TLS/CA, 401, 403; nothing was
changed), 2 a bad file or setting (kubeconfig, clouds.yaml, config, theme). With `-o json` the fault is
`Fault.to_json()`: {"status": "error", "error": KIND, "message": ..., "exit_code": N}.
Messages never carry credentials: server bodies and library texts pass through `redact`.
"""

from __future__ import annotations

import json
import re
import ssl
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

EXIT_BACKEND = 6
EXIT_BAD_FILE = 2

# A secret's key and its value: `Bearer VALUE`, `token=VALUE`, `"password": "VALUE"`, `X-Auth-Token: VALUE`. After
# `KEY: ` unquoted the next word may be the console's own prose ("its token: run it by hand"): `_secret` keeps a
# short lowercase word that more words follow, and redacts anything else (digits, dots, capitals: a token's shape)
_SECRET_RE = re.compile(
    r"(?P<key>\b(?:Bearer|Basic)\s+"
    r"|\b[\w-]*(?:token|password|passwd|secret)(?P<q1>['\"]?)\s*(?P<sep>[=:])\s*(?P<q2>['\"]?))"
    r"(?P<value>[^\s'\",}]+)(?P<more>(?=\s+[A-Za-z]))?",
    re.IGNORECASE)
_WORD = re.compile(r"[a-z]{1,20}")


def _secret(m: re.Match[str]) -> str:
    prose = (m.group("sep") == ":" and not m.group("q1") and not m.group("q2") and m.group("more") is not None
             and _WORD.fullmatch(m.group("value")))
    return m.group(0) if prose else m.group("key") + "***"


def redact(text: str) -> str:
    """`text` with the values of tokens and passwords as `***` (server bodies, library texts, messages)."""
    return _SECRET_RE.sub(_secret, text)


@dataclass(frozen=True)
class Fault:
    kind: str  # kube-unreachable, kube-tls, kube-unauthorized, kube-forbidden, keystone-auth, ...
    what: str  # what failed: "the Kubernetes API server https://10.0.0.1:6443"
    why: str
    check: str
    exit_code: int = EXIT_BACKEND

    @property
    def message(self) -> str:
        head = f"{self.what}: {self.why}" if self.what else self.why
        return redact(head + (f" — {self.check}" if self.check else ""))

    def to_json(self) -> dict[str, Any]:
        return {"status": "error", "error": self.kind, "message": self.message, "exit_code": self.exit_code}


class FaultError(Exception):
    """A classified fault raised on purpose (e.g. a bad theme named by --theme)."""

    def __init__(self, fault: Fault) -> None:
        super().__init__(fault.message)
        self.fault = fault


@dataclass(frozen=True)
class Where:
    """What the failing call was pointed at, for the message (each part optional)."""

    kubeconfig: str = ""
    context: str = ""
    cloud: str = ""
    server: str = ""  # when known better than the kubeconfig's (the TUI's live connection)

    def kube(self) -> dict[str, str]:
        """The kubeconfig's context, cluster, user, server and how the user authenticates, from the merged
        kubeconfig kubectl would read (read leniently: a bad file gives empty parts)."""
        from console.kube.kubeconfig import describe

        out = describe(self.kubeconfig or None, self.context)
        if self.server:
            out["server"] = self.server
        return out


def chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes/contexts, and urllib3's wrapped `reason`s, outermost first."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        for nxt in (getattr(e, "reason", None), e.__cause__, e.__context__, *getattr(e, "args", ())[:2]):
            if isinstance(nxt, BaseException):
                todo.append(nxt)


def status_message(exc: Any) -> str:
    """The `message` of a Kubernetes Status in an ApiException's body (never the headers)."""
    try:
        return str((json.loads(exc.body or "{}") or {}).get("message") or "")
    except (ValueError, TypeError, AttributeError):
        return ""


def classify(exc: BaseException, where: Where | None = None) -> Fault | None:
    where = where or Where()
    for e in chain(exc):
        fault = _one(e, where)
        if fault is not None:
            if fault.kind.startswith("libvirt"):  # libvirt's message lacks the URI; the console's wrapper has it
                uri = re.search(r"\b[a-z]+(?:\+[a-z]+)?://[^\s:]*[^\s:.,;]", str(exc))
                fault = replace(fault, what=f"libvirt at {uri.group(0)}") if uri else fault
            return fault
    return None


def describe(exc: BaseException) -> str:
    """One line saying what failed, in words, for an error that need not be a classified fault (a step's, a
    worker's, a write's): the fault's message when it is one; an HTTP answer as `the server answered HTTP 503
    Service Unavailable` (and its Status message); a request urllib3 gave up on, with its URL and why; a file or
    socket error by its own words and file; the console's own errors by their message (they are worded);
    anything else by its text as an unexpected error. Never a bare exception class name. Redacted."""
    fault = classify(exc)
    if fault is not None:
        return fault.message
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None)
    if isinstance(status, int) and isinstance(reason, str) and reason:  # kubernetes' ApiException and alike
        said = status_message(exc)
        return redact(f"the server answered HTTP {status} {reason}" + (f": {said}" if said else ""))
    if isinstance(exc, loaded("urllib3.exceptions:MaxRetryError")):
        return redact(f"the request for {getattr(exc, 'url', '') or 'the API'} failed after retries: "
                      f"{_first_line(getattr(exc, 'reason', None)) or 'no answer'}")
    if isinstance(exc, OSError) and exc.strerror:
        return redact(exc.strerror + (f": {exc.filename}" if exc.filename else ""))
    text = _first_line(exc)
    if isinstance(exc, OSError) or type(exc).__module__.split(".")[0] == "console":
        return redact(text or "failed, without a message")
    return redact(f"unexpected error: {text}" if text else "unexpected error, without a message")


def _first_line(value: object) -> str:
    text = str(value or "").strip()
    return text.splitlines()[0][:300] if text else ""


def is_fault(exc: BaseException) -> bool:
    """A wrapper (PlanRefused, SessionError, InfraError) around a classified fault: let it reach cli.main."""
    return classify(exc) is not None


def loaded(*names: str) -> tuple[type[BaseException], ...]:
    """The exception classes "module:Name" whose module is imported. The SDKs are imported where they are used,
    not to classify an error: an exception of a class whose module was never imported cannot exist, so
    `isinstance(e, loaded(...))` classifies by type (subclasses included) without importing anything."""
    out: list[type[BaseException]] = []
    for name in names:
        module, _, attr = name.partition(":")
        cls = getattr(sys.modules.get(module), attr, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            out.append(cls)
    return tuple(out)


KUBE_API_ERROR = "kubernetes.client.exceptions:ApiException"  # every HTTP answer of the API (404, 409, …)
KUBE_CONFIG_ERROR = "kubernetes.config.config_exception:ConfigException"
OPENSTACK_ERRORS = ("keystoneauth1.exceptions.base:ClientException", "openstack.exceptions:SDKException")
LIBVIRT_ERROR = "libvirt:libvirtError"
URLLIB3_UNREACHABLE = ("urllib3.exceptions:NewConnectionError", "urllib3.exceptions:ConnectTimeoutError",
                       "urllib3.exceptions:ReadTimeoutError", "urllib3.exceptions:ProtocolError")


def _one(e: BaseException, where: Where) -> Fault | None:
    from console.config import ConfigError
    from console.kube.execauth import ExecPluginError
    from console.kube.kubeconfig import KubeConfigError

    if isinstance(e, FaultError):
        return e.fault
    if isinstance(e, ConfigError):
        return Fault("bad-config", "", str(e), "", EXIT_BAD_FILE)  # it names the file, line and key
    if isinstance(e, ExecPluginError):  # the credential plugin failed (a login needed, no terminal): like a 401
        return Fault("kube-exec-plugin", "", str(e), "", EXIT_BACKEND)  # it names the plugin, user and fix
    if isinstance(e, KubeConfigError):
        return Fault("bad-kubeconfig", "", str(e), "", EXIT_BAD_FILE)  # it names the file and what to do
    if isinstance(e, loaded(KUBE_API_ERROR)):
        return _kube_api(e, where)
    if isinstance(e, loaded(KUBE_CONFIG_ERROR)):
        k = where.kube()
        return Fault("bad-kubeconfig", f"kubeconfig {k['kubeconfig']}", str(e),
                     "fix the file or pick another context with --context", EXIT_BAD_FILE)
    if isinstance(e, ssl.SSLCertVerificationError) or (isinstance(e, ssl.SSLError)
                                                      and "CERTIFICATE" in str(e).upper()):
        return _tls(e, where)
    if isinstance(e, loaded(*OPENSTACK_ERRORS)):
        return _openstack(e, where)
    if isinstance(e, loaded(LIBVIRT_ERROR)):
        return _libvirt(e)
    if isinstance(e, loaded("yaml:YAMLError")):
        return Fault("bad-yaml", "a YAML file", f"not valid YAML: {e}", "fix the file", EXIT_BAD_FILE)
    if isinstance(e, loaded(*URLLIB3_UNREACHABLE)):
        return _unreachable(e, where)
    return None


def _kube_api(e: Any, where: Where) -> Fault | None:
    k = where.kube()
    status = getattr(e, "status", None)
    server = f"the Kubernetes API server {k['server']}".rstrip()
    msg = redact(status_message(e))
    who = f"user {k['user'] or '?'} in context {k['context'] or '?'} of {k['kubeconfig']}"
    # 401 is about who you are (authentication), 403 about what you may do (authorization: RBAC): the API
    # server's Status message is quoted for both (k8s.io/apiserver responsewriters Unauthorized / Forbidden)
    if status == 401:
        said = f": the server said {msg!r}" if msg and msg != "Unauthorized" else ""
        return Fault("kube-unauthorized", server,
                     f"the API server does not accept these credentials ({who}; 401 Unauthorized{said}): "
                     "it cannot tell who you are — the token or client certificate is expired, revoked or wrong",
                     _refresh_advice(k))
    if status == 403:
        what = msg or "forbidden (403)"
        return Fault("kube-forbidden", server,
                     f"{what} (403 Forbidden: the API server knows who you are — {who} — but RBAC does not allow "
                     "this)", "ask for RBAC permission (a Role/ClusterRole binding) or use a context that has it")
    return None  # other statuses (404, 409, 422) are answers, not faults of the backend


def _refresh_advice(k: dict[str, str]) -> str:
    auth = k.get("auth", "")
    if auth.startswith("exec plugin"):
        return (f"the console ran the {auth} again and the server still refused its token: run it by hand (or "
                "`kubectl get nodes` with this context) to log in again, then retry")
    if auth.startswith("token file"):
        return f"the {auth} was read again and is still refused: renew the token in it"
    return "refresh them (your cloud's login, or a new kubeconfig)"


def _tls(e: BaseException, where: Where) -> Fault:
    k = where.kube()
    text = str(e)
    if "hostname" in text.lower() or "IP address mismatch" in text:
        return Fault("kube-tls", f"the Kubernetes API server {k['server']}",
                     f"its certificate is not valid for that name ({getattr(e, 'verify_message', '') or text})",
                     f"check the server URL of cluster {k['cluster'] or '?'} in {k['kubeconfig']} (the "
                     "certificate's names must include its host)")
    reason = getattr(e, "verify_message", "") or text
    return Fault("kube-tls", f"the Kubernetes API server {k['server']}",
                 f"its certificate is not trusted by the CA in {k['kubeconfig']} (certificate-authority-data of "
                 f"cluster {k['cluster'] or '?'}): {reason}",
                 "check the kubeconfig's CA, not the network")


def _unreachable(e: BaseException, where: Where) -> Fault:
    k = where.kube()
    text = str(e)
    dns = isinstance(e, loaded("urllib3.exceptions:NameResolutionError"))
    if "Name or service not known" in text or dns or "nodename nor" in text:
        why = "its host name does not resolve (DNS)"
    elif "timed out" in text.lower() or _timed_out(e):
        why = "the connection timed out"
    elif "refused" in text.lower():
        why = "the connection was refused (nothing listens on that port)"
    elif isinstance(e, loaded("urllib3.exceptions:ProtocolError")):
        why = "the connection dropped (the server went away, or something between cut it)"
    else:
        why = text.split(": ", 1)[-1][:200]
    return Fault("kube-unreachable", f"the Kubernetes API server {k['server'] or _endpoint(e)}".rstrip(),
                 f"cannot reach it: {why}",
                 f"check the server URL of cluster {k['cluster'] or '?'} in {k['kubeconfig']}, the network/VPN, "
                 "or pick another context")


def _endpoint(e: BaseException) -> str:
    """The URL urllib3 tried: a NewConnectionError's `conn` (its `pool` is deprecated, gone in urllib3 v3) or a
    pool error's ConnectionPool (ReadTimeoutError), each with host and port; "" when neither is there."""
    target = getattr(e, "conn", None) or vars(e).get("pool")
    host, port = getattr(target, "host", None), getattr(target, "port", None)
    if not host:
        return ""
    scheme = getattr(target, "scheme", None) or ("https" if "HTTPS" in type(target).__name__ else "http")
    return f"{scheme}://{host}" + (f":{port}" if port else "")


def _timed_out(e: BaseException) -> bool:
    """A timeout of the socket, urllib3, requests or keystoneauth1 (whose ConnectTimeout wraps requests')."""
    timeouts: tuple[type[BaseException], ...] = (
        TimeoutError, *loaded("urllib3.exceptions:TimeoutError", "requests.exceptions:Timeout",
                              "keystoneauth1.exceptions.connection:ConnectTimeout"))
    # urllib3's NewConnectionError derives from its ConnectTimeoutError: a refused or unresolved connection
    return isinstance(e, timeouts) and not isinstance(e, loaded("urllib3.exceptions:NewConnectionError"))


def _cloud(where: Where) -> str:
    import os

    name = where.cloud or os.environ.get("OS_CLOUD") or ""
    return f"cloud {name}" if name else "OS_AUTH_URL"


# Keystone's URLs: devstack's /identity, the v3/v2.0 roots and their token paths, the classic ports
_IDENTITY_URL = re.compile(r"/identity\b|/v3(/auth\b|/?$)|/v2\.0(/tokens\b|/?$)|:5000\b|:35357\b")


KS = "keystoneauth1.exceptions"


def _openstack(e: BaseException, where: Where) -> Fault | None:
    cloud = _cloud(where)
    text = redact(str(e))
    if isinstance(e, loaded(f"{KS}.http:Unauthorized")) or getattr(e, "http_status", None) == 401:
        return Fault("keystone-auth", f"Keystone ({cloud})",
                     "it rejected the user name or password (401 Unauthorized)",
                     "check username, password, project and domain in clouds.yaml (or OS_PASSWORD)")
    discovery = isinstance(e, loaded(f"{KS}.discovery:DiscoveryFailure"))
    if discovery or isinstance(e, loaded(f"{KS}.connection:ConnectionError")):  # ConnectFailure, ConnectTimeout, …
        url = re.search(r"connection to (\S+?):? ", text)
        causes = list(chain(e))
        why = ("the connection was refused" if any(isinstance(c, ConnectionRefusedError) for c in causes) else
               "the connection timed out" if any(_timed_out(c) for c in causes) else text[:200])
        target = url.group(1) if url else ""
        if discovery or not target or _IDENTITY_URL.search(target):
            return Fault("keystone-unreachable", f"Keystone ({cloud})", f"cannot reach {target or 'its auth_url'}: "
                         f"{why}", "check auth_url in clouds.yaml (or OS_AUTH_URL) and the network")
        # an endpoint of the catalog (Nova): Keystone answered, the service did not
        return Fault("openstack-unreachable", f"the OpenStack API ({cloud})", f"cannot reach {target}: {why}",
                     "check the service's endpoint in the catalog (openstack endpoint list) and the network")
    if isinstance(e, loaded("openstack.exceptions:ConfigException")):  # = openstack.config's OpenStackConfigException
        return Fault("bad-clouds-yaml", "clouds.yaml", text + _clouds_yaml_problem(),
                     "check OS_CLOUD / the cloud name and the file (OS_CLIENT_CONFIG_FILE)", EXIT_BAD_FILE)
    if (isinstance(e, loaded("openstack.exceptions:ForbiddenException", f"{KS}.http:Forbidden"))
            or getattr(e, "http_status", None) == 403):
        return Fault("openstack-forbidden", f"OpenStack ({cloud})", f"the request was forbidden: {text[:240]}",
                     "ask for the role the action needs, or use a cloud entry that has it")
    if isinstance(e, loaded(f"{KS}.catalog:EndpointNotFound", f"{KS}.http:NotFound")) and "project" in text.lower():
        return Fault("keystone-auth", f"Keystone ({cloud})", text[:240], "check project_name in clouds.yaml")
    return None


def _clouds_yaml_problem() -> str:
    """openstacksdk skips a clouds.yaml it cannot parse and then reports the cloud missing: say why."""
    import os

    path = os.environ.get("OS_CLIENT_CONFIG_FILE")
    if not path:
        return ""
    try:
        import yaml

        from console.userfile import open_regular

        with open_regular(path) as f:
            yaml.safe_load(f.read(1 << 20).decode("utf-8"))
    except OSError as e:
        return f" ({path}: {e.strerror})"
    except (ValueError, yaml.YAMLError) as e:
        return f" ({path} is not valid YAML: {str(e).splitlines()[0]})"
    return ""


def _libvirt(e: Any) -> Fault | None:
    msg = e.get_error_message() if hasattr(e, "get_error_message") else str(e)
    code = e.get_error_code() if hasattr(e, "get_error_code") else None
    # libvirt virerror.h: VIR_ERR_AUTH_FAILED 45, _CANCELLED 79, _UNAVAILABLE 94; VIR_ERR_NO_CONNECT 5,
    # VIR_ERR_SYSTEM_ERROR 38 (socket), VIR_ERR_RPC 39. Anything else is the hypervisor answering, not a fault
    # of the connection (a domain shut off under a call is VIR_ERR_OPERATION_INVALID 55): the caller words it
    if code in (45, 79, 94):
        kind, why = "libvirt-auth", "authentication failed"
    elif code in (5, 38, 39, None):
        kind, why = "libvirt-unreachable", "cannot connect"
    else:
        return None
    return Fault(kind, "libvirt", f"{why}: {msg}", "check libvirt_uris in the config / CONSOLE_LIBVIRT_URI and "
                 "that libvirtd runs and lets you in")
