"""Keystone v3 password auth and tokens for one user in one project (no HTTP).

The password is kept only to compare it (constant time); it is never logged,
never part of a repr and never echoed in an error.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

DEFAULT_DOMAIN_ID, DEFAULT_DOMAIN_NAME = "default", "Default"
UNAUTHORIZED_MESSAGE = "The request you have made requires authentication."


class AuthError(Exception):
    """An identity error with Keystone's status and title."""

    status, title = 401, "Unauthorized"

    def __init__(self, message: str = UNAUTHORIZED_MESSAGE):
        super().__init__(message)
        self.message = message


class MalformedAuth(AuthError):
    status, title = 400, "Bad Request"


@dataclass(frozen=True)
class Token:
    id: str = field(repr=False)
    user_id: str
    user_name: str
    project_id: str | None
    project_name: str | None
    methods: tuple[str, ...]
    issued_at: datetime
    expires_at: datetime

    @property
    def scoped(self) -> bool:
        return self.project_id is not None


class Keystone:
    """One domain ("Default"), one user, one project, role "admin"."""

    def __init__(self, *, username: str, password: str, project: str, user_id: str, project_id: str,
                 token_ttl: float = 3600.0) -> None:
        self.username, self.project, self.user_id, self.project_id = username, project, user_id, project_id
        self._password = password
        self._ttl = timedelta(seconds=token_ttl)
        self._tokens: dict[str, Token] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Keystone(username={self.username!r}, project={self.project!r})"

    def authenticate(self, body: Any) -> Token:
        """POST /v3/auth/tokens: password or token method, optional project scope."""
        try:
            identity = body["auth"]["identity"]
            methods = tuple(identity["methods"])
        except (KeyError, TypeError) as exc:
            raise MalformedAuth(f"Invalid input for field '{exc}': it is a required property") from exc
        if "password" in methods:
            self._check_password(identity.get("password"))
        elif "token" in methods:
            token_id = (identity.get("token") or {}).get("id")
            if not isinstance(token_id, str) or self.validate(token_id) is None:
                raise AuthError("The request you have made requires authentication.")
        else:
            raise AuthError(f"Attempted to authenticate with an unsupported method: {list(methods)}")
        scoped = self._scope(body["auth"].get("scope"))
        now = datetime.now(UTC)
        token = Token(id="gAAAAA" + secrets.token_urlsafe(48), user_id=self.user_id, user_name=self.username,
                      project_id=self.project_id if scoped else None, project_name=self.project if scoped else None,
                      methods=methods, issued_at=now, expires_at=now + self._ttl)
        with self._lock:
            self._tokens[token.id] = token
        return token

    def validate(self, token_id: str | None) -> Token | None:
        if not token_id:
            return None
        with self._lock:
            token = self._tokens.get(token_id)
            if token is not None and token.expires_at <= datetime.now(UTC):
                del self._tokens[token_id]
                return None
            return token

    def revoke(self, token_id: str) -> bool:
        with self._lock:
            return self._tokens.pop(token_id, None) is not None

    def _check_password(self, password_block: Any) -> None:
        try:
            user = password_block["user"]
            given = user["password"]
        except (KeyError, TypeError) as exc:
            raise MalformedAuth("Invalid input for field 'identity/password/user': it is a required property") from exc
        name_ok = user.get("name") == self.username or user.get("id") == self.user_id
        domain = user.get("domain") or {"id": DEFAULT_DOMAIN_ID}
        domain_ok = "id" in user or domain.get("id") == DEFAULT_DOMAIN_ID or domain.get("name") == DEFAULT_DOMAIN_NAME
        password_ok = isinstance(given, str) and hmac.compare_digest(given.encode(), self._password.encode())
        if not (name_ok and domain_ok and password_ok):
            raise AuthError()  # same answer for unknown user and wrong password, like Keystone

    def _scope(self, scope: Any) -> bool:
        if not scope:
            return False
        project = scope.get("project") if isinstance(scope, dict) else None
        if not isinstance(project, dict):
            raise AuthError("Only project scope is supported by the lab's Keystone.")
        domain = project.get("domain") or {}
        by_id = project.get("id") == self.project_id
        by_name = project.get("name") == self.project and (
            domain.get("id") == DEFAULT_DOMAIN_ID or domain.get("name") == DEFAULT_DOMAIN_NAME)
        if not (by_id or by_name):
            raise AuthError()
        return True
