"""An openrc (OS_* variables) with no clouds.yaml cloud named selects openstacksdk's "envvars" cloud.

openstacksdk openstack/config/loader.py: the OS_* variables form a cloud named $OS_CLOUD_NAME
(default "envvars"), the default cloud unless OS_CLOUD names another.
"""

from __future__ import annotations

from pathlib import Path

from console.config import load

OPENRC = {"OS_AUTH_URL": "https://keystone.example:5000/v3", "OS_USERNAME": "alice", "OS_PASSWORD": "s3cret",
          "OS_PROJECT_NAME": "k8s", "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default"}


def test_openrc_alone_means_the_envvars_cloud(tmp_path: Path) -> None:
    assert load(path=tmp_path / "none.yaml", env=dict(OPENRC)).cloud == "envvars"
    assert load(path=tmp_path / "none.yaml", env=OPENRC | {"OS_CLOUD_NAME": "mine"}).cloud == "mine"


def test_a_named_cloud_wins_over_the_openrc(tmp_path: Path) -> None:
    assert load(path=tmp_path / "none.yaml", env=OPENRC | {"OS_CLOUD": "prod"}).cloud == "prod"
    cfg = tmp_path / "config.yaml"
    cfg.write_text("cloud: lab\n")
    assert load(path=cfg, env=dict(OPENRC)).cloud == "lab"
    assert load({"cloud": "flag"}, path=cfg, env=dict(OPENRC)).cloud == "flag"


def test_no_openstack_at_all(tmp_path: Path) -> None:
    assert load(path=tmp_path / "none.yaml", env={"OS_REGION_NAME": "RegionOne"}).cloud is None
