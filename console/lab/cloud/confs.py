"""The services' configuration files, as DevStack writes them for one machine (lib/keystone, lib/nova,
lib/placement): SQLite databases named relative to the services' working directory (so a copied template works
in any state directory), keystonemiddleware auth_token with a service user per service, Nova reaching Placement
with a Keystone token and the endpoint from the catalog.

Two settings are the lab's own, for speed on a small machine (the real-OpenStack probe measured token
validation at 1.5-1.9 s without them): Keystone's in-memory cache and a low bcrypt cost for the passwords it
hashes from now on."""

from __future__ import annotations

import configparser
import io
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

REGION = "RegionOne"
ADMIN_USER, ADMIN_PROJECT = "admin", "admin"
BOOTSTRAP_PASSWORD_ENV = "OS_BOOTSTRAP_PASSWORD"  # keystone-manage bootstrap reads the admin's password there
SERVICE_PROJECT = "service"
# the SQLite files, each relative to the services' working directory (the cloud's state directory)
# the lab's node image (in Nova's Glance fixture): the lab's guests boot nothing, so any image would do; a named
# one reads better in `openstack server show`
LAB_IMAGE_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "console-lab/node-image"))
LAB_IMAGE_NAME = "lab-node"
DATABASES = ("keystone.sqlite", "nova_api.sqlite", "nova_cell0.sqlite", "nova_cell1.sqlite", "placement.sqlite")


def api_paste_ini() -> Path:
    """Nova's stock api-paste.ini, installed by the nova wheel as a data file (etc/nova under the prefix)."""
    return Path(sys.prefix) / "etc" / "nova" / "api-paste.ini"


@dataclass(frozen=True)
class Ports:
    keystone: int
    nova: int
    placement: int
    image: int


@dataclass(frozen=True)
class Secrets:
    """Passwords of the services' own users (Keystone's `nova` and `placement` in project `service`)."""

    nova: str
    placement: str


@dataclass(frozen=True)
class CloudConf:
    root: Path  # the services' working directory
    ports: Ports
    secrets: Secrets
    allow_resize_to_same_host: bool = False

    @property
    def keystone_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.keystone}"

    @property
    def auth_url(self) -> str:
        return f"{self.keystone_url}/v3"

    @property
    def nova_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.nova}/v2.1"

    @property
    def placement_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.placement}"

    @property
    def image_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.image}"

    def write(self) -> None:
        (self.root / "keystone").mkdir(parents=True, exist_ok=True)
        (self.root / "placement").mkdir(parents=True, exist_ok=True)
        _write(self.root / "keystone" / "keystone.conf", self.keystone())
        _write(self.root / "placement" / "placement.conf", self.placement())
        _write(self.root / "nova.conf", self.nova())

    def keystone(self) -> dict[str, dict[str, str]]:
        keys = str(self.root / "fernet-keys")
        return {
            "DEFAULT": {"debug": "False", "use_stderr": "True"},
            "database": {"connection": "sqlite:///keystone.sqlite"},
            "token": {"provider": "fernet", "expiration": "7200"},
            "fernet_tokens": {"key_repository": keys},
            "fernet_receipts": {"key_repository": keys},
            "credential": {"key_repository": str(self.root / "credential-keys")},
            "cache": {"enabled": "True", "backend": "oslo_cache.dict"},
            "identity": {"password_hash_rounds": "4"},
        }

    def _authtoken(self, user: str, password: str) -> dict[str, str]:
        return {
            "auth_type": "password",
            "auth_url": self.keystone_url,
            "www_authenticate_uri": self.keystone_url,
            "username": user,
            "password": password,
            "user_domain_name": "Default",
            "project_name": SERVICE_PROJECT,
            "project_domain_name": "Default",
            "region_name": REGION,
        }

    def placement(self) -> dict[str, dict[str, str]]:
        return {
            "DEFAULT": {"debug": "False", "use_stderr": "True"},
            "api": {"auth_strategy": "keystone"},
            "placement_database": {"connection": "sqlite:///placement.sqlite"},
            "keystone_authtoken": self._authtoken("placement", self.secrets.placement),
        }

    def nova(self) -> dict[str, dict[str, str]]:
        password = {
            "auth_type": "password",
            "auth_url": self.auth_url,
            "username": "nova",
            "password": self.secrets.nova,
            "user_domain_name": "Default",
            "project_name": SERVICE_PROJECT,
            "project_domain_name": "Default",
        }
        conf = {
            "DEFAULT": {
                "transport_url": "fake://",
                "compute_driver": "lab.LabDriver",  # nova.virt.lab: console/lab/cloud/virt.py
                "state_path": str(self.root / "state"),
                "instances_path": str(self.root / "instances"),
                "host": "controller",
                "my_ip": "127.0.0.1",
                "debug": "False",
                "use_stderr": "True",
                "allow_resize_to_same_host": str(self.allow_resize_to_same_host),
                "report_interval": "10",
            },
            "api": {"auth_strategy": "keystone"},
            "wsgi": {"api_paste_config": str(api_paste_ini())},
            "api_database": {"connection": "sqlite:///nova_api.sqlite"},
            "database": {"connection": "sqlite:///nova_cell1.sqlite"},
            "keystone_authtoken": {
                **self._authtoken("nova", self.secrets.nova),
                "service_token_roles_required": "True",
            },
            "service_user": {"send_service_user_token": "True", **password},
            "placement": {
                **{**password, "username": "placement", "password": self.secrets.placement},
                "region_name": REGION,
                "valid_interfaces": "internal,public",
            },
            "keystone": {"region_name": REGION, "valid_interfaces": "internal,public"},
            "glance": {"api_servers": self.image_url},
            "oslo_concurrency": {"lock_path": str(self.root / "lock")},
            "scheduler": {"discover_hosts_in_cells_interval": "-1"},
        }
        return conf


def _write(path: Path, sections: dict[str, dict[str, str]]) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    for name, values in sections.items():
        if name == "DEFAULT":
            parser["DEFAULT"] = values
        else:
            parser[name] = values
    out = io.StringIO()
    parser.write(out)
    path.write_text(out.getvalue())
    path.chmod(0o600)  # service passwords
