"""console/faults.py on the exceptions the real clients raise (built as the libraries build them; the lab-backed
sweep is tests/integration/faults/test_fault_sweep.py).

Shapes followed: kubernetes-client/python rest.py (ApiException with the Status body, headers kept apart),
urllib3 connectionpool (MaxRetryError.reason wrapping SSLError/NewConnectionError), keystoneauth1
exceptions (Unauthorized 401, DiscoveryFailure raised from ConnectFailure), libvirt virerror.h codes.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import pytest

from console import faults


@pytest.fixture
def kubeconfig(tmp_path: Path) -> faults.Where:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: prod\n"
                    "clusters: [{name: prod-cluster, cluster: {server: 'https://10.0.0.1:6443'}}]\n"
                    "users: [{name: alice, user: {token: sekrit-token-123}}]\n"
                    "contexts: [{name: prod, context: {cluster: prod-cluster, user: alice}}]\n")
    return faults.Where(str(path))


def _api_exception(status: int, message: str) -> Exception:
    from kubernetes.client.exceptions import ApiException

    e = ApiException(status=status, reason="Forbidden" if status == 403 else "Unauthorized")
    e.body = json.dumps({"kind": "Status", "status": "Failure", "message": message, "code": status})
    e.headers = {"Www-Authenticate": "Bearer sekrit-token-123"}
    return e


def test_401_names_user_context_and_what_to_do_never_the_token(kubeconfig: faults.Where) -> None:
    f = faults.classify(_api_exception(401, "Unauthorized"), kubeconfig)
    assert f is not None and f.kind == "kube-unauthorized" and f.exit_code == 6
    assert "user alice in context prod" in f.message and "credentials" in f.message and "refresh" in f.message
    assert "https://10.0.0.1:6443" in f.message
    assert "sekrit" not in f.message and "HTTPHeaderDict" not in f.message


def test_403_reads_the_status_message(kubeconfig: faults.Where) -> None:
    msg = 'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope'
    f = faults.classify(_api_exception(403, msg), kubeconfig)
    assert f is not None and f.kind == "kube-forbidden" and msg in f.message and "RBAC" in f.message
    assert f.to_json() == {"status": "error", "error": "kube-forbidden", "message": f.message, "exit_code": 6}


def test_ca_failure_says_ca_not_network(kubeconfig: faults.Where) -> None:
    from urllib3.exceptions import MaxRetryError, SSLError

    cause = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                                            "unable to get local issuer certificate (_ssl.c:1006)")
    e = MaxRetryError(None, "/api/v1/nodes", SSLError(cause))  # type: ignore[arg-type]
    f = faults.classify(e, kubeconfig)
    assert f is not None and f.kind == "kube-tls"
    assert "not trusted by the CA in" in f.message and "certificate-authority-data of cluster prod-cluster" in f.message
    assert "not the network" in f.message and "VPN" not in f.message


def test_refused_and_dns(kubeconfig: faults.Where) -> None:
    from urllib3.exceptions import MaxRetryError, NameResolutionError, NewConnectionError

    refused = NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused")
    f = faults.classify(MaxRetryError(None, "/api", refused), kubeconfig)  # type: ignore[arg-type]
    assert f is not None and f.kind == "kube-unreachable" and "refused" in f.message
    dns = NameResolutionError("kube.example", None, OSError("[Errno -2] Name or service not known"))  # type: ignore[arg-type]
    f = faults.classify(MaxRetryError(None, "/api", dns), kubeconfig)  # type: ignore[arg-type]
    assert f is not None and f.kind == "kube-unreachable" and "DNS" in f.message


def test_keystone_wrong_password_and_unreachable() -> None:
    from keystoneauth1 import exceptions as ks

    f = faults.classify(ks.Unauthorized("The request you have made requires authentication.", http_status=401),
                        faults.Where(cloud="prod"))
    assert f is not None and f.kind == "keystone-auth" and "Keystone (cloud prod)" in f.message
    assert "password" in f.message
    try:
        try:
            raise ks.ConnectFailure("Unable to establish connection to http://keystone:5000/v3: refused") \
                from ConnectionRefusedError(111, "Connection refused")
        except ks.ConnectFailure as inner:
            raise ks.DiscoveryFailure("Could not find versioned identity endpoints. Unable to establish "
                                      "connection to http://keystone:5000/v3: refused") from inner
    except ks.DiscoveryFailure as e:
        f = faults.classify(e)
    assert f is not None and f.kind == "keystone-unreachable"
    assert "http://keystone:5000/v3" in f.message and "refused" in f.message


def test_wrapped_faults_are_found_through_the_cause_chain() -> None:
    """The console wraps library errors (InfraError, PlanRefused, SessionError): the cause decides."""
    import libvirt

    from console.infra.protocol import InfraError

    err = libvirt.libvirtError("Failed to connect socket to '/run/x.sock': No such file or directory")
    # what libvirt sets for a socket it cannot connect to (VIR_ERR_SYSTEM_ERROR); a hand-made error would
    # otherwise carry this thread's last libvirt error, whatever an earlier test left
    err.err = (libvirt.VIR_ERR_SYSTEM_ERROR, 7, str(err), 2, None, None, None, -1, 0)
    try:
        try:
            raise err
        except libvirt.libvirtError as e:
            raise InfraError("cannot connect to libvirt at qemu+unix:///system?socket=/run/x.sock: ...") from e
    except InfraError as e:
        wrapped = e
    f = faults.classify(wrapped)
    assert f is not None and f.kind == "libvirt-unreachable"
    assert f.message.startswith("libvirt at qemu+unix:///system?socket=/run/x.sock: cannot connect")
    assert faults.is_fault(wrapped)


def test_a_libvirt_answer_is_not_a_connection_fault() -> None:
    """A domain shut off under a live read (VIR_ERR_OPERATION_INVALID, virerror.h) is libvirt answering: the
    caller words it; only connection and auth codes are the backend being unusable (found as a CI flake: a
    second scale-up read a VM mid-resize and said "cannot connect", exit 6)."""
    import libvirt

    def error(code: int, msg: str) -> libvirt.libvirtError:
        e = libvirt.libvirtError(msg)
        e.err = (code, 10, msg, 2, None, None, None, 0, 0)  # virGetLastError()'s tuple, as libvirt sets it
        return e

    assert faults.classify(error(libvirt.VIR_ERR_OPERATION_INVALID,
                                 "Requested operation is not valid: domain is not running")) is None
    f = faults.classify(error(libvirt.VIR_ERR_NO_CONNECT, "no connection driver available"))
    assert f is not None and f.kind == "libvirt-unreachable"


def test_other_errors_are_not_faults() -> None:
    from kubernetes.client.exceptions import ApiException

    assert faults.classify(KeyError("x")) is None
    assert faults.classify(ApiException(status=404, reason="Not Found")) is None  # an answer, not a fault


def test_redact() -> None:
    assert faults.redact("Authorization: Bearer abc.def token=xyz password: hunter2") == \
        "Authorization: Bearer *** token=*** password: ***"


def test_an_unreachable_catalog_endpoint_is_not_keystone() -> None:
    """keystoneauth raises ConnectFailure for any endpoint; only the identity one is Keystone (Nova's is not)."""
    from keystoneauth1 import exceptions as ks

    def refused(url: str) -> BaseException:
        try:
            raise ks.ConnectFailure(f"Unable to establish connection to {url}: refused") \
                from ConnectionRefusedError(111, "Connection refused")
        except ks.ConnectFailure as e:
            return e

    nova = faults.classify(refused("http://nova:8774/v2.1/servers/detail"), faults.Where(cloud="prod"))
    assert nova is not None and nova.kind == "openstack-unreachable" and "Keystone" not in nova.message
    assert "http://nova:8774/v2.1/servers/detail" in nova.message and "refused" in nova.message
    ks_ = faults.classify(refused("http://keystone:5000/v3/auth/tokens"), faults.Where(cloud="prod"))
    assert ks_ is not None and ks_.kind == "keystone-unreachable"


def test_hostname_mismatch_says_the_name_not_the_ca(kubeconfig: faults.Where) -> None:
    from urllib3.exceptions import MaxRetryError, SSLError

    cause = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname "
                                            "mismatch, certificate is not valid for 'kube.example'. (_ssl.c:1006)")
    f = faults.classify(MaxRetryError(None, "/api", SSLError(cause)), kubeconfig)  # type: ignore[arg-type]
    assert f is not None and f.kind == "kube-tls" and "not valid for that name" in f.message
    assert "server URL of cluster prod-cluster" in f.message


def test_401_says_who_you_are_403_what_you_may_do(kubeconfig: faults.Where) -> None:
    """Authentication vs authorization (k8s.io/apiserver responsewriters): a 401 is about the credentials, a 403
    about RBAC; both quote the server's Status message when it says more than the reason."""
    unauth = faults.classify(_api_exception(401, "token has expired"), kubeconfig)
    assert unauth is not None
    assert "does not accept these credentials (user alice in context prod" in unauth.message
    assert "'token has expired'" in unauth.message and "RBAC" not in unauth.message
    msg = 'nodes "w1" is forbidden: User "alice" cannot patch resource "nodes" in API group "" at the cluster scope'
    forbidden = faults.classify(_api_exception(403, msg), kubeconfig)
    assert forbidden is not None and forbidden.message.startswith(f"the Kubernetes API server https://10.0.0.1:6443: "
                                                                  f"{msg} (403 Forbidden: the API server knows who")
    assert "credentials" not in forbidden.message


def test_unreachable_names_the_host_from_the_connection_without_the_deprecated_pool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no server in any kubeconfig the message names the host:port urllib3 tried. urllib3 2.x deprecates
    NewConnectionError.pool (a FutureWarning; "will be removed in urllib3 v3.0. Use 'conn' instead" —
    urllib3/src/urllib3/exceptions.py): the host comes from `.conn` (an HTTPConnection) or a pool error's
    ConnectionPool, and no warning is raised either way."""
    import warnings

    from urllib3.connection import HTTPSConnection
    from urllib3.connectionpool import HTTPSConnectionPool
    from urllib3.exceptions import MaxRetryError, NewConnectionError, ReadTimeoutError

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path))
    refused = NewConnectionError(HTTPSConnection("kube.example", 6443),
                                 "Failed to establish a new connection: [Errno 111] Connection refused")
    slow = ReadTimeoutError(HTTPSConnectionPool("slow.example", 8443), "/api", "Read timed out. (read timeout=5)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = faults.classify(MaxRetryError(None, "/api", refused))  # type: ignore[arg-type]
        t = faults.classify(slow)
    assert f is not None and f.kind == "kube-unreachable"
    assert f.message.startswith("the Kubernetes API server https://kube.example:6443: cannot reach it: the "
                                "connection was refused"), f.message
    assert t is not None and t.kind == "kube-unreachable"
    assert t.message.startswith("the Kubernetes API server https://slow.example:8443: cannot reach it: the "
                                "connection timed out"), t.message


def test_unreachable_with_a_kubeconfig_server_touches_no_deprecated_attribute(kubeconfig: faults.Where) -> None:
    import warnings

    from urllib3.connection import HTTPConnection
    from urllib3.exceptions import MaxRetryError, NewConnectionError

    refused = NewConnectionError(HTTPConnection("10.0.0.1", 6443), "Failed to establish a new connection: "
                                                                    "[Errno 111] Connection refused")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = faults.classify(MaxRetryError(None, "/api", refused), kubeconfig)  # type: ignore[arg-type]
    assert f is not None and f.message.startswith("the Kubernetes API server https://10.0.0.1:6443: cannot reach")
