"""Write a clouds.yaml that points openstacksdk and the `openstack` CLI at the lab."""

from __future__ import annotations

import os
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
) -> Path:
    """Write (replace) the file with mode 0600: it holds a password."""
    doc = {"clouds": {cloud: {
        "auth": {"auth_url": auth_url, "username": username, "password": password, "project_name": project,
                 "user_domain_name": "Default", "project_domain_name": "Default"},
        "region_name": region,
        "interface": "public",
        "identity_api_version": 3,
    }}}
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(doc, fh, sort_keys=False)
    os.chmod(tmp, 0o600)  # O_CREAT's mode is masked by umask and ignored for an existing file
    os.replace(tmp, target)
    return target
