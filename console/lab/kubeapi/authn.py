"""Short-lived bearer tokens, as a token authenticator (OIDC, a webhook) checks them: signed, with an expiry.

The lab's `lab-exec` user gets its tokens from an exec plugin the lab writes into its state dir; the plugin
mints an HS256 JWT (RFC 7519: `sub`, `iat`, `exp`) with the lab's key and prints an ExecCredential
(client.authentication.k8s.io/v1, `status.token` + `status.expirationTimestamp`, as
k8s.io/client-go/plugin/pkg/client/auth/exec/exec.go reads it). The API server accepts a token until its
`exp` and then answers 401 Unauthorized (kube-apiserver's generic Status: expiry is never told to the client).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import sys
import time
from pathlib import Path

EXEC_USER = "lab-exec"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def mint(key: bytes, user: str, ttl: float, now: float | None = None) -> tuple[str, float]:
    """A token for `user` valid for `ttl` seconds, and its expiry (time.time())."""
    now = time.time() if now is None else now
    exp = now + ttl
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps({"sub": user, "iat": int(now), "exp": exp}).encode())
    sig = _b64(hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest())
    return f"{head}.{body}.{sig}", exp


def verify(key: bytes, token: str, now: float | None = None) -> str | None:
    """The user a token authenticates, or None (not signed with `key`, malformed, or expired)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    head, body, sig = parts
    good = _b64(hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(sig.encode(), good.encode()):
        return None
    try:
        claims = json.loads(_unb64(body))
        exp, user = float(claims["exp"]), str(claims["sub"])
    except (ValueError, KeyError, TypeError):
        return None
    return user if (time.time() if now is None else now) < exp else None


_PLUGIN = '''#!{python}
"""The lab's exec credential plugin (client.authentication.k8s.io/v1): a token valid for {ttl} s."""
import base64, datetime, hashlib, hmac, json, sys, time

KEY, USER, TTL = bytes.fromhex("{key}"), "{user}", {ttl}
b64 = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=").decode()
now = time.time()
exp = now + TTL
head = b64(json.dumps({{"alg": "HS256", "typ": "JWT"}}).encode())
body = b64(json.dumps({{"sub": USER, "iat": int(now), "exp": exp}}).encode())
sig = b64(hmac.new(KEY, (head + "." + body).encode(), hashlib.sha256).digest())
stamp = datetime.datetime.fromtimestamp(exp, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
json.dump({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
           "status": {{"token": head + "." + body + "." + sig, "expirationTimestamp": stamp}}}}, sys.stdout)
'''


def write_plugin(path: Path, key: bytes, ttl: float, user: str = EXEC_USER) -> Path:
    """Write the plugin script (0700: it holds the signing key). Its expirationTimestamp is whole seconds
    (RFC 3339, as metav1.Time marshals), never later than the token's `exp`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o700)
    with os.fdopen(fd, "w") as fh:
        fh.write(_PLUGIN.format(python=sys.executable, key=key.hex(), user=user, ttl=float(ttl)))
    os.chmod(path, 0o700)
    return path
