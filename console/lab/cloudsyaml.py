"""Write a clouds.yaml and openrc files that point openstacksdk and the `openstack` CLI at the lab."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

import yaml


def write_clouds_yaml(
    path: str | os.PathLike[str],
    cloud: str = "lab",
    *,
    auth_url: str,
    username: str,
    password: str,
    project: str,
    region: str = "RegionOne",
    more: Mapping[str, tuple[str, str]] | None = None,
) -> Path:
    """Write (replace) the file with mode 0600: it holds a password.

    `more` adds clouds for other users of the same project: {cloud: (username, password)}.
    """
    def entry(user: str, secret: str) -> dict[str, object]:
        return {
            "auth": {"auth_url": auth_url, "username": user, "password": secret, "project_name": project,
                     "user_domain_name": "Default", "project_domain_name": "Default"},
            "region_name": region,
            "interface": "public",
            "identity_api_version": 3,
        }

    clouds = {cloud: entry(username, password)}
    clouds |= {name: entry(user, secret) for name, (user, secret) in (more or {}).items()}
    _write_private(Path(path), yaml.safe_dump({"clouds": clouds}, sort_keys=False))
    return Path(path)


def write_openrc(path: str | os.PathLike[str], *, auth_url: str, username: str, password: str, project: str,
                 region: str = "RegionOne") -> Path:
    """An openrc as Horizon's "OpenStack RC File" download has it (`source` it), mode 0600."""
    values = {
        "OS_AUTH_URL": auth_url, "OS_USERNAME": username, "OS_PASSWORD": password, "OS_PROJECT_NAME": project,
        "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default", "OS_REGION_NAME": region,
        "OS_INTERFACE": "public", "OS_IDENTITY_API_VERSION": "3",
    }
    _write_private(Path(path), "".join(f"export {k}={shlex.quote(v)}\n" for k, v in values.items()))
    return Path(path)


def _write_private(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)  # O_CREAT's mode is masked by umask and ignored for an existing file
    os.replace(tmp, target)
