"""The `lab-exec` user's tokens on upstream's control plane: an OIDC issuer the real kube-apiserver trusts.

kube-apiserver's structured JWT authenticator (`--authentication-config`, AuthenticationConfiguration
apiserver.config.k8s.io/v1; k8s.io/apiserver/plugin/pkg/authenticator/token/oidc/oidc.go) fetches
`{issuer}/.well-known/openid-configuration` over HTTPS, then its `jwks_uri`, and verifies each bearer token that
names the issuer in `iss`: asymmetric signature by a key of the JWKS (ES256 here), `aud` among the audiences,
`exp` not passed (go-oidc: no leeway; a token it accepted may be served from the API server's 10 s success cache).
An expired or foreign token gets 401 Unauthorized, the generic Status.

    issuer = TokenIssuer(control_plane.ca)            # TLS certificate from the cluster CA
    loop.call(issuer.start())                         # on the lab's asyncio loop (console/lab/loop.py)
    issuer.write_authentication_config(path)          # before kube-apiserver starts with --authentication-config
    issuer.write_plugin(state.exec_plugin, ttl)       # the kubeconfig's exec credential plugin (0700: holds the key)

Who a token makes its holder is the server's configuration, not the token's: the username is `sub` (no prefix;
`system:` names are refused), and the group `system:masters` is given by a CEL expression to the subject
`lab-exec` only. A token carries no groups the server reads, so any other subject signed with the same key
holds only what RBAC binds to it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from console.lab.https import serve
from console.lab.pki import CA, write_private

log = logging.getLogger(__name__)

EXEC_USER = "lab-exec"
EXEC_GROUPS = ("system:masters",)
AUDIENCE = "lab"
DISCOVERY_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _sign(key: ec.EllipticCurvePrivateKey, kid: str, claims: dict[str, Any]) -> str:
    """A compact JWS (RFC 7515) with ES256: the signature is r || s, 32 bytes each (RFC 7518 3.4)."""
    head = _b64(json.dumps({"alg": "ES256", "typ": "JWT", "kid": kid}, separators=(",", ":")).encode())
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    r, s = decode_dss_signature(key.sign(f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256())))
    return f"{head}.{body}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


class TokenIssuer:
    def __init__(self, ca: CA, *, host: str = "127.0.0.1", port: int = 0, audience: str = AUDIENCE) -> None:
        self.host = host
        self.port = port
        self.audience = audience
        self._ca_pem = ca.cert_pem
        self._serving = ca.issue("lab-token-issuer", dns=("localhost",), ips=(host,), server=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        numbers = self._key.public_key().public_numbers()
        self._jwk = {"kty": "EC", "crv": "P-256", "x": _b64(numbers.x.to_bytes(32, "big")),
                     "y": _b64(numbers.y.to_bytes(32, "big"))}
        # RFC 7638 thumbprint: the required members in lexicographic order, no whitespace
        self.kid = _b64(hashlib.sha256(json.dumps(self._jwk, sort_keys=True, separators=(",", ":"))
                                       .encode()).digest())
        self._runner: web.AppRunner | None = None

    # -- facts ------------------------------------------------------------
    @property
    def url(self) -> str:
        """The issuer: `iss` of its tokens, `issuer.url` of the authenticator and of the discovery document."""
        return f"https://{self.host}:{self.port}"

    def discovery(self) -> dict[str, Any]:
        return {"issuer": self.url, "jwks_uri": self.url + JWKS_PATH, "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["ES256"]}

    def jwks(self) -> dict[str, Any]:
        return {"keys": [{**self._jwk, "kid": self.kid, "use": "sig", "alg": "ES256"}]}

    def mint(self, subject: str, ttl: float, now: float | None = None) -> tuple[str, int]:
        """A token for `subject` valid for at most `ttl` seconds, and its `exp` (whole seconds since the epoch)."""
        now = time.time() if now is None else now
        exp = int(now + ttl)
        return _sign(self._key, self.kid, {"iss": self.url, "aud": self.audience, "sub": subject,
                                           "iat": int(now), "exp": exp}), exp

    # -- files ------------------------------------------------------------
    def authentication_config(self) -> dict[str, Any]:
        groups = json.dumps(list(EXEC_GROUPS))
        return {
            "apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration",
            "jwt": [{
                "issuer": {"url": self.url, "audiences": [self.audience],
                           "certificateAuthority": self._ca_pem.decode()},
                "claimMappings": {
                    "username": {"claim": "sub", "prefix": ""},
                    # the server, not the token, decides the groups: only lab-exec is in system:masters
                    "groups": {"expression": f"claims.sub == '{EXEC_USER}' ? {groups} : []"},
                },
                "userValidationRules": [{"expression": "!user.username.startsWith('system:')",
                                         "message": "system: usernames are the cluster's own"}],
            }],
        }

    def write_authentication_config(self, path: Path) -> Path:
        """The AuthenticationConfiguration for kube-apiserver's --authentication-config (call after start())."""
        if not self.port:
            raise RuntimeError("the token issuer has no port yet: start it first")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, yaml.safe_dump(self.authentication_config(), sort_keys=False).encode())
        return path

    def write_plugin(self, path: Path, ttl: float, subject: str = EXEC_USER) -> Path:
        """The exec credential plugin (client.authentication.k8s.io/v1), run with this Python; 0700: it holds the
        signing key. Its expirationTimestamp (RFC 3339, whole seconds as metav1.Time marshals) is the token's exp."""
        if not self.port:
            raise RuntimeError("the token issuer has no port yet: start it first")
        key_pem = self._key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()).decode()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o700)
        with os.fdopen(fd, "w") as fh:
            fh.write(_PLUGIN.format(python=sys.executable, ttl=float(ttl), key=key_pem, kid=self.kid,
                                    iss=self.url, aud=self.audience, sub=subject))
        os.chmod(path, 0o700)  # an existing file keeps its old mode through O_CREAT
        return path

    # -- lifecycle --------------------------------------------------------
    async def start(self) -> None:
        if self._runner is not None:
            return
        app = web.Application()
        app.router.add_get(DISCOVERY_PATH, self._discovery)
        app.router.add_get(JWKS_PATH, self._jwks)
        self._runner, self.port = await serve(app, self.host, self.port, self._ssl_context())
        log.info("token issuer listening on %s", self.url)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _discovery(self, _req: web.Request) -> web.Response:
        return web.json_response(self.discovery())

    async def _jwks(self, _req: web.Request) -> web.Response:
        return web.json_response(self.jwks())

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="issuer-tls-") as tmp:  # load_cert_chain only reads files
            self._serving.write(Path(tmp), "issuer")
            ctx.load_cert_chain(Path(tmp) / "issuer.crt", Path(tmp) / "issuer.key")
        return ctx

    def wait_accepted(self, api_url: str, timeout: float = 30) -> None:
        """Until kube-apiserver at `api_url` (TLS from the same CA) authenticates a token of this issuer: its
        authenticator fetches the discovery document in the background, retrying every 10 s on failure."""
        ctx = ssl.create_default_context(cadata=self._ca_pem.decode())
        # the API server is on loopback: no proxy from the environment
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx))
        deadline, last = time.monotonic() + timeout, ""
        while True:
            token, _ = self.mint(EXEC_USER, 30)
            req = urllib.request.Request(f"{api_url}/api", headers={"Authorization": f"Bearer {token}"})
            try:
                with opener.open(req, timeout=5) as resp:
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}"
            except OSError as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise TimeoutError(f"kube-apiserver did not accept the issuer's tokens after {timeout:.0f}s ({last})")
            time.sleep(0.2)


_PLUGIN = '''#!{python}
"""The lab's exec credential plugin (client.authentication.k8s.io/v1): an ES256 token of {iss}, valid {ttl} s."""
import base64, datetime, json, sys, time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

KEY = serialization.load_pem_private_key(b"""{key}""", password=None)
KID, ISS, AUD, SUB, TTL = "{kid}", "{iss}", "{aud}", "{sub}", {ttl}
b64 = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=").decode()
now = time.time()
exp = int(now + TTL)
head = b64(json.dumps({{"alg": "ES256", "typ": "JWT", "kid": KID}}, separators=(",", ":")).encode())
body = b64(json.dumps({{"iss": ISS, "aud": AUD, "sub": SUB, "iat": int(now), "exp": exp}},
                      separators=(",", ":")).encode())
r, s = decode_dss_signature(KEY.sign((head + "." + body).encode(), ec.ECDSA(hashes.SHA256())))
token = head + "." + body + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
stamp = datetime.datetime.fromtimestamp(exp, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
json.dump({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
           "status": {{"token": token, "expirationTimestamp": stamp}}}}, sys.stdout)
'''
