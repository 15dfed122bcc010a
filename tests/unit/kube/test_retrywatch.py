"""Which failures a wait waits out (console/kube/retrywatch.transient), after client-go's RetryWatcher: the server
unreachable or the connection cut, and answers that say "later" (429, 5xx); not TLS trust, not 401/403/404."""

from __future__ import annotations

import ssl

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError, ReadTimeoutError, SSLError

from console.kube.retrywatch import Waited, transient


def _refused() -> MaxRetryError:
    cause = NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused")
    return MaxRetryError(None, "/api/v1/nodes/n", cause)


@pytest.mark.parametrize(("error", "waited_out"), [
    (_refused(), True),
    (ProtocolError("Connection broken: IncompleteRead(0 bytes read)", ConnectionResetError(104, "reset")), True),
    (ReadTimeoutError(None, "/api/v1/nodes", "Read timed out."), True),
    (MaxRetryError(None, "/", SSLError(ssl.SSLEOFError(8, "EOF occurred in violation of protocol"))), True),
    (MaxRetryError(None, "/", SSLError(ssl.SSLCertVerificationError(1, "certificate verify failed"))), False),
    (ApiException(status=503, reason="Service Unavailable"), True),
    (ApiException(status=429, reason="Too Many Requests"), True),
    (ApiException(status=401, reason="Unauthorized"), False),
    (ApiException(status=403, reason="Forbidden"), False),
    (ApiException(status=404, reason="Not Found"), False),
    (ValueError("a bug"), False),
])
def test_transient(error: BaseException, waited_out: bool) -> None:
    assert transient(error) is waited_out


def test_the_outage_note_says_since_when_and_why() -> None:
    assert Waited(True).outage == ""
    note = Waited(False, 0.0, "connection refused").outage
    assert note.startswith("; the API server has not answered since ") and note.endswith(" (connection refused)")
