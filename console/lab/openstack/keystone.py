"""Keystone v3 password auth and tokens for the users of one project (no HTTP).

The project has an admin (roles admin, member, reader: Keystone's default role
implications) and may have more users, e.g. a plain `member` as most cloud
users are. Passwords are kept only to compare them (constant time); they are
never logged, never part of a repr and never echoed in an error.
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


# keystone's default implied roles (`keystone-manage bootstrap`): admin → member → reader
ADMIN_ROLES: tuple[str, ...] = ("admin", "member", "reader")
MEMBER_ROLES: tuple[str, ...] = ("member", "reader")


@dataclass(frozen=True)
class User:
    id: str
    name: str
    password: str = field(repr=False)
    roles: tuple[str, ...]  # effective roles on the project


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
    roles: tuple[str, ...] = ()  # empty for an unscoped token

    @property
    def scoped(self) -> bool:
        return self.project_id is not None

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


class Keystone:
    """One domain ("Default"), one project, its admin user and any users added with `add_user`."""

    def __init__(self, *, username: str, password: str, project: str, user_id: str, project_id: str,
                 token_ttl: float = 3600.0) -> None:
        self.username, self.project, self.user_id, self.project_id = username, project, user_id, project_id
        self._users: dict[str, User] = {username: User(user_id, username, password, ADMIN_ROLES)}
        self._ttl = timedelta(seconds=token_ttl)
        self._tokens: dict[str, Token] = {}
        self._lock = threading.Lock()

    def add_user(self, name: str, password: str, *, user_id: str, roles: tuple[str, ...] = MEMBER_ROLES) -> User:
        """`openstack user create` + `openstack role add --project <project> --user <name> <role>`."""
        user = User(user_id, name, password, roles)
        with self._lock:
            self._users[name] = user
        return user

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
            user = self._check_password(identity.get("password"))
        elif "token" in methods:
            token_id = (identity.get("token") or {}).get("id")
            old = self.validate(token_id) if isinstance(token_id, str) else None
            if old is None:
                raise AuthError("The request you have made requires authentication.")
            user = self._users[old.user_name]
        else:
            raise AuthError(f"Attempted to authenticate with an unsupported method: {list(methods)}")
        scoped = self._scope(body["auth"].get("scope"))
        now = datetime.now(UTC)
        token = Token(id="gAAAAA" + secrets.token_urlsafe(48), user_id=user.id, user_name=user.name,
                      project_id=self.project_id if scoped else None, project_name=self.project if scoped else None,
                      methods=methods, issued_at=now, expires_at=now + self._ttl,
                      roles=user.roles if scoped else ())
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

    def _check_password(self, password_block: Any) -> User:
        try:
            user = password_block["user"]
            given = user["password"]
        except (KeyError, TypeError) as exc:
            raise MalformedAuth("Invalid input for field 'identity/password/user': it is a required property") from exc
        with self._lock:
            known = self._users.get(user.get("name")) or next(
                (u for u in self._users.values() if u.id == user.get("id")), None)
        domain = user.get("domain") or {"id": DEFAULT_DOMAIN_ID}
        domain_ok = "id" in user or domain.get("id") == DEFAULT_DOMAIN_ID or domain.get("name") == DEFAULT_DOMAIN_NAME
        expected = known.password if known else secrets.token_urlsafe(18)  # compare anyway: same timing
        password_ok = isinstance(given, str) and hmac.compare_digest(given.encode(), expected.encode())
        if not (known and domain_ok and password_ok):
            raise AuthError()  # same answer for unknown user and wrong password, like Keystone
        return known

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
